import Glibc
import Logging
import RingLoop

// Clients attaching, acknowledging, asking for the focus and going.
extension HIDEventServer {
    // MARK: Messages from clients

    func received(_ message: ReceivedMessage) -> [UInt8]? {
        let sender: PeerCredentials
        switch message.sender {
        case .thisProcess: sender = .ofThisProcess
        case .process(let credentials): sender = credentials
        }
        do throws(ServerWire.Violation) {
            switch ServerWire.MessageID(rawValue: message.msgid) {
            case .hello:
                return attach(try ServerWire.Hello(decoding: message.data), from: sender).encoded
            case .ack:
                let ack = try ServerWire.Ack(decoding: message.data)
                if let client = client(ack.token, sender) { acknowledged(ack.sequence, by: client) }
                armWatch()
            case .requestFocus:
                guard let client = client(try ServerWire.decodeToken(message.data), sender) else { break }
                if configuration.focusRequestAccess.admits(sender) {
                    focus(client.id)
                } else {
                    Self.logger.notice(
                        "event server '\(configuration.name)': \(client.hello.name) (\(sender)) may not take the focus")
                }
            case .goodbye:
                if let client = client(try ServerWire.decodeToken(message.data), sender) { detach(client) }
            case .rumble:
                let request = try ServerWire.Rumble(decoding: message.data)
                guard let client = client(request.token, sender) else { break }
                rumble(request, from: client)
            default:
                logAboutPeer(.warning, "event server '\(configuration.name)': message \(message.msgid) from \(sender) is not a client's")
            }
        } catch {
            if case .version = error {
                // A client of another version of the format is answered at once, not left
                // to wait for a welcome that would never come: the welcome carries this
                // server's version, which the client's own check names beside its own. So the
                // refusal reaches a client of another version only as that line in its log
                // (it refuses the welcome by its version before reading the reason); the
                // reason is for a peer that reads this version.
                let reason = error.description
                logAboutPeer(.notice, "event server '\(configuration.name)' refuses a client of \(sender): \(reason)")
                return ServerWire.Welcome(focused: false, window: 1, refusal: reason).encoded
            }
            // A process that breaks the format loses its clients, as ``ServerWire/Violation``
            // says (its token cannot be trusted to say which one sent it).
            let offenders = order.filter { $0.credentials.pid == sender.pid && $0.credentials.uid == sender.uid }
            logAboutPeer(
                .warning,
                "event server '\(configuration.name)': drops a message from \(sender)\(offenders.isEmpty ? "" : " and its \(offenders.count) client(s)"): \(error)"
            )
            for client in offenders { detach(client) }
        }
        return nil
    }

    /// Logs a line about what a client's process did, within `peerLines` (the next line
    /// that goes out says how many were held back).
    func logAboutPeer(_ level: Logger.Level, _ line: @autoclosure () -> String) {
        guard let held = peerLines.admit() else { return }
        Self.logger.log(level: level, "\(LogBudget.line(line(), afterHolding: held))")
    }

    /// The client with `token`, if the message comes from its process.
    func client(_ token: UInt64, _ sender: PeerCredentials) -> ServedClient? {
        guard let client = byToken[token], client.credentials.pid == sender.pid, client.credentials.uid == sender.uid else {
            return nil
        }
        return client
    }

    func attach(_ hello: ServerWire.Hello, from sender: PeerCredentials) -> ServerWire.Welcome {
        func refuse(_ reason: String) -> ServerWire.Welcome {
            logAboutPeer(.notice, "event server '\(configuration.name)' refuses \(hello.name) (\(sender)): \(reason)")
            return ServerWire.Welcome(focused: false, window: 1, refusal: reason)
        }
        guard order.count < configuration.maximumClients else {
            return refuse("the server has \(order.count) clients, as many as it allows")
        }
        if let reason = shareRefusal(for: sender) { return refuse(reason) }
        guard byToken[hello.token] == nil else { return refuse("another client has its token") }
        // One port, one client: hellos naming a port already served would fill the
        // server's client slots with one process's port.
        guard !order.contains(where: { !$0.gone && $0.hello.port == hello.port }) else {
            return refuse("its port '\(hello.port)' is another client's")
        }
        let remote: RemoteMessagePort
        do {
            // One try: the server's loop never waits on a client (a port whose backlog is
            // full is the client's problem, and its hello is refused at once).
            // The server never asks a client anything: no reply is taken (a client's port
            // that streams one is skipped as it comes; 16 MiB each was the default).
            remote = try RemoteMessagePort(
                name: hello.port, namespace: configuration.namespace, trusting: .users([sender.uid]), maximumReplySize: 0,
                connectTimeout: .zero)
        } catch {
            return refuse("its port '\(hello.port)': \(error)")
        }
        guard remote.owner.pid == sender.pid else {
            return refuse("its port '\(hello.port)' is held by pid \(remote.owner.pid), not by the client")
        }
        var hello = hello
        hello.kinds.formIntersection(Self.unfocusedKinds)
        // Observing without the focus: keyboards (what is typed: passwords) have a grant
        // of their own; the other classes share one.
        if hello.deviceClasses.contains(.keyboard), !configuration.keyboardObserverAccess.admits(sender) {
            Self.logger.notice(
                "event server '\(configuration.name)': \(hello.name) (\(sender)) may not observe keyboards without the focus")
            hello.deviceClasses.remove(.keyboard)
        }
        if !hello.deviceClasses.subtracting([.keyboard]).isEmpty, !configuration.observerAccess.admits(sender) {
            Self.logger.notice(
                "event server '\(configuration.name)': \(hello.name) (\(sender)) may not observe devices without the focus")
            hello.deviceClasses.formIntersection([.keyboard])
        }
        let client = ServedClient(
            id: HIDServerClient.ID(rawValue: nextClientID), hello: hello, credentials: sender, port: remote,
            serverName: configuration.name, window: configuration.maximumOutstandingBatches, encoding: batchEncoding)
        nextClientID += 1
        served[client.id] = client
        order.append(client)
        byToken[hello.token] = client
        let handle = handle
        let loop = loop
        let id = client.id
        remote.setInvalidationCallback { _ in
            loop.perform(inModes: [.common]) {
                guard let server = handle.server, let client = server.served[id] else { return }
                server.clientWentAway(client)
            }
            loop.wakeUp()
        }
        Self.logger.debug("event server '\(configuration.name)': client \(hello.name) (\(sender)) attached")
        introduce(client)
        // Focus on attach is a focus the client did not ask for but gets: only for those
        // who may ask for it (``Configuration/focusRequestAccess``).
        let wantsFocus =
            configuration.focusRequestAccess.admits(sender)
            && (hello.wantsFocus || configuration.focusOnAttach == .newest
                || (configuration.focusOnAttach == .first && focused == nil))
        notify(.attached(client.info))
        if wantsFocus { focus(client.id) }
        flush(client)
        armWatch()
        return ServerWire.Welcome(
            focused: focused === client, window: UInt32(clamping: max(1, configuration.maximumOutstandingBatches)),
            layoutNames: system.pipeline.keymap?.keyboard.keymap.layoutNames ?? [])
    }

    /// Why a client of `sender`'s user is refused a slot, if it is: a user other than the
    /// server's own has at most ``Configuration/maximumClientsPerUser`` clients, and
    /// those users together at most ``Configuration/maximumClients`` less one share, so
    /// the server's own user always has room (as dbus limits connections per user).
    func shareRefusal(for sender: PeerCredentials) -> String? {
        let own = geteuid()
        guard sender.uid != own else { return nil }
        let share = max(0, configuration.maximumClientsPerUser)
        let ofUser = order.count { $0.credentials.uid == sender.uid }
        guard ofUser < share else { return "uid \(sender.uid) has \(ofUser) clients, its share (at most \(share) a user)" }
        let othersLimit = max(0, configuration.maximumClients - share)
        let ofOthers = order.count { $0.credentials.uid != own }
        guard ofOthers < othersLimit else {
            return "users other than the server's hold \(ofOthers) of its \(configuration.maximumClients) clients:"
                + " the last \(share) are kept for uid \(own)"
        }
        return nil
    }

    /// A new client gets the devices attached, and the state of what it subscribed to
    /// that is not bound to the focus (switches).
    func introduce(_ client: ServedClient) {
        let now = MonotonicInstant.now
        for (id, device) in liveDevices.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            announce(device, HIDEvent(device: id, timestamp: now, payload: .deviceAdded), to: client)
        }
        for id in liveDevices.keys.sorted(by: { $0.rawValue < $1.rawValue }) {
            var target = VisibleState()
            if client.hello.kinds.contains(.switchChanged) { target.switches = offered[id].switches }
            for event in VisibleState().difference(to: target, device: id, at: now) { deliver(event, to: client) }
        }
    }

    /// A client said goodbye, or its process ended.
    /// A client's rumble: played (or stopped) on the server's device only while the client
    /// has the focus (the focus moving stops it); refused otherwise, in the log.
    func rumble(_ request: ServerWire.Rumble, from client: ServedClient) {
        guard client === focused else {
            logAboutPeer(
                .notice,
                "event server '\(configuration.name)': \(client.hello.name) (\(client.credentials)) may rumble only while it has the focus")
            return
        }
        do throws(HIDError) {
            if let effect = request.effect {
                try system.rumble(
                    request.device, strong: effect.strong, weak: effect.weak, duration: .milliseconds(Int(effect.milliseconds)))
                rumbling[request.device] = client.id
            } else {
                try system.stopRumble(request.device)
                rumbling[request.device] = nil
            }
        } catch {
            logAboutPeer(.notice, "event server '\(configuration.name)': \(client.hello.name)'s rumble: \(error)")
        }
    }

    /// Stops the rumbles `client` started (it lost the focus, or went).
    func stopRumbles(of client: ServedClient) {
        for (device, owner) in rumbling where owner == client.id {
            try? system.stopRumble(device)
            rumbling[device] = nil
        }
    }

    func detach(_ client: ServedClient) {
        clientWentAway(client)
    }

    func clientWentAway(_ client: ServedClient) {
        guard !client.gone, served[client.id] != nil else { return }
        stopRumbles(of: client)
        client.leave()
        served[client.id] = nil
        order.removeAll { $0 === client }
        byToken[client.hello.token] = nil
        focusHistory.removeAll { $0 == client.id }
        Self.logger.debug("event server '\(configuration.name)': client \(client.hello.name) (\(client.credentials)) detached")
        notify(.detached(client.info))
        if focused === client {
            focused = nil
            let next = focusHistory.last
            notify(.focusChanged(from: client.id, to: nil))
            if let next { focus(next) }
        }
    }
}
