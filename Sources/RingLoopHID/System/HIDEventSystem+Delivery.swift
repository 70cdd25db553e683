import Logging
import RingLoop
import RingLoopEvdev

#if canImport(Glibc)
import Glibc
#endif

// The chain from readers to handlers: the queue, forwarded batches, losses and resync.
extension HIDEventSystem {
    // MARK: The chain

    func report(_ error: HIDError) {
        problems.append(error)
        Self.logger.warning("\(error)")
    }

    /// Source1 side: queue an event and signal the dispatch source0. An event that finds
    /// the queue full is counted and its device marked for resync; a lifecycle event is
    /// kept aside instead (a removal is never lost). Returns whether the queue took it.
    @discardableResult
    func enqueue(_ event: HIDEvent) -> Bool {
        ledgers.read.apply(event)
        let queued = queue.push(event)
        if !queued {
            if event.kind.isDeviceLifecycle {
                ledgers.lifecycleBacklog.append(event)
            } else {
                ledgers.lost.insert(event.device)
            }
        }
        dispatchSource?.signal()
        return queued
    }

    /// Puts an event the app made into this system's chain where the devices' events
    /// enter — an on-screen keyboard's keys, a touch replayed by a test rig, a key press
    /// for a test of the app's own handlers — as `IOHIDEventSystemClientDispatchEvent`
    /// does for an app's event system client. The event waits in the queue behind the
    /// events already there, and the same source0 hands it to the same handlers, in their
    /// order, through key repeat, coalescing, gesture recognizers and the handlers'
    /// filters.
    ///
    /// It stays in this process: a client of an event server does not send it to the
    /// server, and the server's own system forwards it to clients only under the id of a
    /// device it described.
    ///
    /// The event is filed under `event.device` and taken as that device's:
    /// - A handler that filters by device class sees it, and the gesture recognizers see a
    ///   touch frame, only when an attached device with that id has the class (a touch
    ///   surface for the recognizers).
    /// - Its timestamp is taken as the kernel's: statistics count it late, and gestures
    ///   time it, by that instant. Stamp it `.now`.
    /// - When the chain makes key repeats itself
    ///   (``HIDEventSystem/Configuration/keyRepeat``), a posted key `.repeat` is dropped,
    ///   as a device's are.
    /// - What was posted is not what the device's reader knows: when a device goes, the
    ///   chain releases what the device held, not what was posted under its id; and the
    ///   repair after a loss brings the handlers to what the reader knows (in the
    ///   dedicated-thread shape, whose reader keeps the state, that leaves out what was
    ///   posted). Post the up of every down you post; an id no device uses keeps what
    ///   was posted apart from every device's state.
    /// - With the pointer stage (``HIDEventSystem/Configuration/pointer``), motion and
    ///   scrolling are made again as a device's: a mouse's motion from its raw `dx`/`dy`,
    ///   a touchpad's from its ``PointerMotionEvent/unacceleratedDX`` and
    ///   ``PointerMotionEvent/unacceleratedDY``, scrolling from its
    ///   ``ScrollEvent/unscaledVertical`` and ``ScrollEvent/unscaledHorizontal``: the
    ///   accelerated deltas and the scaled amounts posted are ignored.
    ///
    /// Make the payload with its public initializer:
    ///
    /// ```swift
    /// let press = HIDEvent(
    ///     device: keyboard.id, timestamp: .now,
    ///     payload: .key(KeyEvent(usage: HIDUsage.forLinuxKey(30), code: 30, state: .down)))
    /// try system.post(press)
    /// ```
    ///
    /// - Returns: `false` when the queue was full: the event was dropped and counted, and
    ///   the handlers get ``HIDEvent/Payload/eventsDropped(count:)`` and then the
    ///   difference that brings the device's state up to date, as for a device's event.
    /// - Throws: ``HIDError/configuration(_:)`` when the system is not started, or for an
    ///   event of a kind only the chain makes (`deviceAdded`, `deviceRemoved`,
    ///   `eventsDropped`).
    ///
    /// Client loop thread, as the system's other members.
    @discardableResult
    public func post(_ event: HIDEvent) throws(HIDError) -> Bool {
        loop.preconditionOnLoopThread("HIDEventSystem.post")
        guard dispatchSource != nil else {
            throw .configuration("post(_:): the event system is not started (start() it first)")
        }
        switch event.kind {
        case .deviceAdded, .deviceRemoved, .eventsDropped, .focusChanged:
            throw .configuration(
                "post(_:): \(event.kind.rawValue) events are the chain's own; post an input event (keys, buttons, motion, touches…)"
            )
        default:
            return enqueue(event)
        }
    }

    /// Dedicated-thread shape: move forwarded events into the queue, and what the
    /// forwarder lost into the resync (its snapshots are the devices' states after the
    /// events it dropped).
    func takeForwarded() {
        guard let taken = feed?.takeForwarded({ enqueue($0) }) else { return }
        if taken.dropped > 0 || !taken.lifecycle.isEmpty {
            ledgers.forwardedDrops += taken.dropped
            for event in taken.lifecycle {
                ledgers.read.apply(event)
                ledgers.lifecycleBacklog.append(event)
            }
            for (device, state) in taken.snapshots {
                ledgers.read.set(state, for: device)
                ledgers.lost.insert(device)
            }
            dispatchSource?.signal()
        }
        for problem in taken.problems { report(problem) }
    }

    /// Source0: hand every queued event to the stages, then, after a loss, the notice and
    /// the difference that brings each affected device's view up to date.
    func drainQueue() {
        defer {
            pipeline.drained()
            feed?.drained()
        }
        let dropped = queue.takeDroppedCount()
        while let event = queue.pop() { take(event) }
        let total = dropped + ledgers.forwardedDrops
        guard total > 0 || !ledgers.lost.isEmpty || !ledgers.lifecycleBacklog.isEmpty else { return }
        ledgers.forwardedDrops = 0
        statistics.dropped += total
        if total > 0 {
            pipeline.run(HIDEvent(device: HIDDeviceID(rawValue: 0), timestamp: .now, payload: .eventsDropped(count: total)))
        }
        let backlog = ledgers.lifecycleBacklog
        let devices = ledgers.lost.sorted { $0.rawValue < $1.rawValue }
        ledgers.lifecycleBacklog = []
        ledgers.lost = []
        for event in backlog where event.kind == .deviceAdded { take(event) }
        let now = MonotonicInstant.now
        for device in devices {
            let repair = ledgers.delivered[device].difference(to: ledgers.read[device], device: device, at: now)
            for event in repair { pipeline.run(event) }
        }
        for event in backlog where event.kind != .deviceAdded { take(event) }
    }

    /// Hands one event from the queue to the stages; a change of focus tells every stage
    /// first (a stage that holds state for the focused client lets it go).
    @inline(__always)
    private func take(_ event: HIDEvent) {
        if case .focusChanged(let isFocused) = event.payload { pipeline.focusChanged(isFocused: isFocused) }
        pipeline.run(event)
    }
}

/// What the chain knows of each device at its boundaries: what the events taken in say
/// (`read`: the decoder drops nothing, so this is the truth) and what the handlers
/// were given (`delivered`); and, since the last repair, the devices whose events were
/// lost and the lifecycle events that found the queue full (those are never dropped).
/// After a loss the difference between the two views is what the handlers get. Client
/// loop thread.
struct DeliveryLedgers {
    var read = VisibleStates()
    var delivered = VisibleStates()
    var lost = Set<HIDDeviceID>()
    var lifecycleBacklog: [HIDEvent] = []
    var forwardedDrops = 0
}

extension HIDEventSystem {
    /// Runs `body` once the input on its way has been delivered: at the first
    /// BeforeWaiting, after the stages' turn, where the queue is empty, no device holds input
    /// its reader has not taken and nothing waits in the hand-off from the event-system
    /// thread (``DeviceFeed/hasInputOnTheWay()``). Whatever is still on its way wakes the
    /// loop again, and it looks again then: a readable device on this loop, a batch the
    /// event-system thread forwards, or that thread's notice that it has read everything
    /// its devices held (``DeviceFeed/expectDeliveryCheck()``: also when what it read
    /// decodes to no event). For input that has stopped coming (a replay that has written
    /// its last frame): a device that keeps sending may never let it run, nor, on the
    /// client-loop shape, another source of this loop whose completions are always waiting
    /// at BeforeWaiting (any completion the loop has not handled counts as possible input).
    /// Dropped at ``stop()``. Client loop thread, while started.
    package func afterInputDelivered(_ body: @escaping () -> Void) {
        loop.preconditionOnLoopThread("HIDEventSystem.afterInputDelivered")
        guard let feed else { return }
        deliveryWaiters.append(body)
        // Asked for each waiter: the answer comes from a look after this call.
        feed.expectDeliveryCheck()
        guard deliveryObserver == nil else { return }
        let system = UnownedLoopReference(self, loop: loop)
        let observer = LoopObserver(
            activities: [.beforeWaiting], order: HIDEventPipeline.observerOrder + 1, label: "HIDEventSystem input delivered"
        ) { _, _ in system.value.runDeliveryWaiters() }
        deliveryObserver = observer
        loop.add(observer, to: .common)
        loop.wakeUp()
    }

    /// BeforeWaiting: runs what waits for delivery once nothing is on its way.
    private func runDeliveryWaiters() {
        guard !deliveryWaiters.isEmpty, queue.isEmpty, let feed, !feed.hasInputOnTheWay() else { return }
        let waiters = deliveryWaiters
        deliveryWaiters = []
        deliveryObserver?.invalidate()
        deliveryObserver = nil
        for body in waiters { body() }
    }
}
