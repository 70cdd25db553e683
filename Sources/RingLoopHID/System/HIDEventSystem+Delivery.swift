import Dispatch
import Logging
import RingLoop
import RingLoopEvdev
import Synchronization
import SystemPackage

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
    /// kept aside instead (a removal is never lost).
    func enqueue(_ event: HIDEvent) {
        produced.apply(event)
        if !queue.push(event) {
            if event.kind == .deviceAdded || event.kind == .deviceRemoved {
                lifecycleBacklog.append(event)
            } else {
                lost.insert(event.device)
            }
        }
        dispatchSource?.signal()
    }

    /// Dedicated-thread shape: move forwarded events into the queue, and what the
    /// forwarder lost into the resync (its snapshots are the devices' states after the
    /// events it dropped).
    func takeForwarded() {
        guard let forwarder = (feed as? ThreadedDeviceFeed)?.forwarder else { return }
        let taken = forwarder.drain { enqueue($0) }
        if taken.dropped > 0 || !taken.lifecycle.isEmpty {
            forwardedDrops += taken.dropped
            for event in taken.lifecycle {
                produced.apply(event)
                lifecycleBacklog.append(event)
            }
            for (device, state) in taken.snapshots {
                produced.set(state, for: device)
                lost.insert(device)
            }
            dispatchSource?.signal()
        }
        for problem in taken.problems { report(problem) }
    }

    /// Source0: deliver every queued event to the handlers, then, after a loss, the
    /// notice and the difference that brings each affected device's view up to date.
    func drainQueue() {
        defer { afterDrain?() }
        let dropped = queue.takeDroppedCount()
        while let event = queue.pop() { deliver(event) }
        let total = dropped + forwardedDrops
        guard total > 0 || !lost.isEmpty || !lifecycleBacklog.isEmpty else { return }
        forwardedDrops = 0
        statistics.dropped += total
        if total > 0 {
            deliver(HIDEvent(device: HIDDeviceID(rawValue: 0), timestamp: .now, payload: .eventsDropped(count: total)))
        }
        let backlog = lifecycleBacklog
        let devices = lost.sorted { $0.rawValue < $1.rawValue }
        lifecycleBacklog = []
        lost = []
        for event in backlog where event.kind == .deviceAdded { deliver(event) }
        let now = MonotonicInstant.now
        for device in devices {
            for event in delivered[device].difference(to: produced[device], device: device, at: now) { deliver(event) }
        }
        for event in backlog where event.kind != .deviceAdded { deliver(event) }
    }
}
