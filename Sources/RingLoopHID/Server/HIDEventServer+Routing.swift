import RingLoop

// The last stage of the server's chain: what the server's handlers left goes to clients.
extension HIDEventServer {
    /// Routes one event that no handler of the server consumed (server loop).
    func route(_ event: HIDEvent) {
        offered.apply(event)
        // A new frame: the clients' frames of the one before go out first, together (a
        // client's own frame change would send each on its own).
        if routedFrame?.device != event.device || routedFrame?.timestamp != event.timestamp {
            routedFrame = (event.device, event.timestamp)
            sendFrames()
        }
        let clients = order
        switch event.kind {
        case .deviceAdded:
            guard let device = system.device(event.device) else { return }
            liveDevices[event.device] = device
            for client in clients where !client.gone { announce(device, event, to: client) }
        case .deviceRemoved:
            guard liveDevices.removeValue(forKey: event.device) != nil else { return }
            for client in clients where !client.gone { deliver(event, to: client) }
        case .eventsDropped:
            for client in clients where !client.gone { deliver(event, to: client) }
        default:
            // The device's description is copied out (a struct with a name, roles, codes)
            // only for a client that is not focused and may observe it.
            guard let live = liveDevices.index(forKey: event.device) else { return }
            let bound = !Self.unfocusedKinds.contains(event.kind)
            for client in clients where !client.gone {
                let wanted =
                    (bound ? client === focused : client.hello.kinds.contains(event.kind))
                    || client.observes(liveDevices.values[live])
                guard wanted, let admitted = Self.admit(event, seen: client.routed[event.device]) else { continue }
                deliver(admitted, to: client)
            }
        }
    }

    /// Sends every client's gathered frame (after the server's queue drained, and before
    /// its loop waits), all of them in one call into the kernel
    /// (`RemoteMessagePort.sendWithoutWaiting`), not one a client. A client whose port is
    /// full lags, as with a send of its own; one whose port is gone is detached.
    func flushAll() {
        sendFrames()
        armWatch()
    }

    /// Sends the frames the clients gathered, all in one call into the kernel (clients sent
    /// the same frame share its encoding's body; each has its own sequence number).
    private func sendFrames() {
        var sending: [ServedClient] = []
        var batches: [(port: RemoteMessagePort, msgid: Int32, lead: [UInt8], body: [UInt8])] = []
        for client in order where !client.gone {
            guard let batch = client.frameToSend() else { continue }
            sending.append(client)
            batches.append((client.port, ServerWire.MessageID.batch.rawValue, batch.lead, batch.body))
        }
        if !batches.isEmpty {
            let failures = RemoteMessagePort.sendWithoutWaiting(batches)
            // Every client's outcome is recorded before any client is detached: detaching
            // a focused client moves the focus, which flushes the next client's frame, and
            // that frame must already be marked sent (or it would go twice, under the same
            // sequence number).
            let gone = zip(sending, failures).filter { client, failure in client.frameWent(failure) == .gone }
            for (client, _) in gone { clientWentAway(client) }
        }
    }

    /// What of `event` a client that has seen `seen` of its device may get: no release of
    /// what it never saw pressed, no move or end of a touch that began elsewhere (a touch
    /// stays with the client where it began), no pen leaving that it never saw come.
    /// `seen` is read only for the events it decides (not for motion, scroll, axes…).
    static func admit(_ event: HIDEvent, seen: @autoclosure () -> VisibleState) -> HIDEvent? {
        switch event.payload {
        case .key(let key) where key.state != .down:
            return seen().holds(key.code, as: .key) ? event : nil
        case .button(let button) where !button.isDown:
            return seen().holds(button.code, as: .button) ? event : nil
        case .gamepadButton(let button) where !button.isDown:
            return seen().holds(button.code, as: .gamepadButton) ? event : nil
        case .pen(let pen) where !pen.inProximity:
            return seen().pen != nil ? event : nil
        case .digitizer(let frame):
            let seen = seen()
            var kept = DigitizerFrame()
            kept.isBoundingBox = frame.isBoundingBox
            kept.buttonDown = frame.buttonDown
            var live = 0
            for index in 0..<frame.count {
                let contact = frame[index]
                guard contact.phase == .began || seen.touches.index(of: contact.trackingID) != nil else { continue }
                kept.append(contact)
                if contact.phase != .ended && contact.phase != .cancelled { live += 1 }
            }
            if kept.count == frame.count { return event }
            if kept.count == 0 { return nil }
            kept.fingerCount = live
            var admitted = event
            admitted.payload = .digitizer(kept)
            return admitted
        default:
            return event
        }
    }

    // MARK: Not responding

    /// Arms the timer that looks for clients that stopped acknowledging, if one is needed
    /// and none is armed.
    func armWatch() {
        guard watchTimer == nil, let deadline = earliestDeadline() else { return }
        let handle = handle
        let timer = LoopTimer(fireDate: deadline) { _ in handle.server?.checkResponding() }
        watchTimer = timer
        loop.add(timer, to: .common)
    }

    private func earliestDeadline() -> MonotonicInstant? {
        order.lazy.filter { !$0.gone && !$0.notResponding }.compactMap { client -> MonotonicInstant? in
            guard let oldest = client.outstanding.first else { return nil }
            return max(oldest.sentAt, client.lastAckAt).advanced(by: self.configuration.notRespondingTimeout)
        }.min()
    }

    func checkResponding() {
        watchTimer = nil
        let now = MonotonicInstant.now
        for client in order where !client.gone && !client.notResponding {
            guard let oldest = client.outstanding.first,
                now >= max(oldest.sentAt, client.lastAckAt).advanced(by: configuration.notRespondingTimeout)
            else { continue }
            let outcome = client.stopResponding()
            let info = client.info
            if outcome == .gone { clientWentAway(client) }
            Self.logger.warning(
                "event server '\(configuration.name)': client \(client.hello.name) (\(client.credentials)) is not responding: \(client.outstanding.count) batches unacknowledged for \(configuration.notRespondingTimeout); its events are dropped until it catches up"
            )
            notify(.notResponding(info))
        }
        armWatch()
    }
}

extension ServedClient {
    /// Whether the client receives every event of `device` whatever the focus (it
    /// subscribed to one of the device's roles, and the server allowed it). A device that
    /// is a keyboard among its roles (a keyboard with a touchpad) is observed only by a
    /// client that subscribed to keyboards, which it keeps only with the keyboard grant
    /// (``HIDEventServer/Configuration/keyboardObserverAccess``).
    func observes(_ device: HIDDeviceInfo) -> Bool {
        // (A device's roles include its class.)
        guard !device.roles.contains(.keyboard) || hello.deviceClasses.contains(.keyboard) else { return false }
        return !hello.deviceClasses.isDisjoint(with: device.roles)
    }
}
