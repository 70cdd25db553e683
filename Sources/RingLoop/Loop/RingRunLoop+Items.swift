import CDispatchHooks
import CLibURing
import DequeModule
import Glibc
import Logging

// Adding and removing sources, ports, timers and observers, in one mode or the common ones.
extension RingRunLoop {
    // MARK: Adding and removing items

    /// Adds a version-0 source to `mode` (or to every common mode with ``Mode/common``).
    public func add(_ source: LoopSource, to mode: Mode) { addItem(source, to: mode) }
    /// Removes a version-0 source from `mode`.
    public func remove(_ source: LoopSource, from mode: Mode) { removeItem(source, from: mode) }
    /// Whether `mode` contains the source. Loop thread.
    public func contains(_ source: LoopSource, in mode: Mode) -> Bool { containsItem(source, in: mode) }

    /// Adds a port-backed source to `mode` (or to every common mode with ``Mode/common``).
    public func add(_ source: LoopPortSource, to mode: Mode) { addItem(source, to: mode) }
    /// Removes a port-backed source from `mode`.
    public func remove(_ source: LoopPortSource, from mode: Mode) { removeItem(source, from: mode) }
    /// Whether `mode` contains the source. Loop thread.
    public func contains(_ source: LoopPortSource, in mode: Mode) -> Bool {
        containsItem(source, in: mode)
    }

    /// Adds an observer to `mode` (or to every common mode with ``Mode/common``). An
    /// observer belongs to one loop.
    public func add(_ observer: LoopObserver, to mode: Mode) { addItem(observer, to: mode) }
    /// Removes an observer from `mode`.
    public func remove(_ observer: LoopObserver, from mode: Mode) { removeItem(observer, from: mode) }
    /// Whether `mode` contains the observer. Loop thread.
    public func contains(_ observer: LoopObserver, in mode: Mode) -> Bool {
        containsItem(observer, in: mode)
    }

    /// Adds a timer to `mode` (or to every common mode with ``Mode/common``). A timer
    /// belongs to one loop.
    public func add(_ timer: LoopTimer, to mode: Mode) { addItem(timer, to: mode) }
    /// Removes a timer from `mode`; it stays valid and can be added again.
    public func remove(_ timer: LoopTimer, from mode: Mode) { removeItem(timer, from: mode) }
    /// Whether `mode` contains the timer. Loop thread.
    public func contains(_ timer: LoopTimer, in mode: Mode) -> Bool { containsItem(timer, in: mode) }

    /// Makes a message port whose messages this loop receives; schedule a
    /// ``LoopPortSource`` for it to handle them. Safe from any thread.
    public func makeDoorbell() -> LoopDoorbell { LoopDoorbell(inbox: inbox) }

    func addItem(_ item: LoopItem, to mode: Mode) {
        guard isOnLoopThread else {
            onLoopThread { $0.addItem(item, to: mode) }
            return
        }
        guard item.isValid else { return }
        if mode == .common {
            guard modes.commonItems.updateValue(item, forKey: ObjectIdentifier(item)) == nil else { return }
            for common in modes.common.sorted(by: { $0.rawValue < $1.rawValue }) {
                addItem(item, toConcrete: common)
            }
        } else {
            addItem(item, toConcrete: mode)
        }
    }

    func addItem(_ item: LoopItem, toConcrete mode: Mode) {
        guard item.isValid, let state = modeState(mode, create: true) else { return }
        let membership = item.membership
        guard membership.modeMask & state.bit == 0 else { return }
        guard membership.bind(to: self) else {
            Self.logger.error("item not added to mode '\(mode)': it belongs to another loop")
            return
        }
        switch item {
        case let source as LoopSource:
            state.insertSource0(source)
            membership.modeMask |= state.bit
            if let schedule = source.schedule {
                Callout.toScheduleOrCancel { schedule(self, mode) }
            }
        case let source as LoopPortSource:
            if membership.modeMask == 0, !register(source) {
                membership.unbindIfUnused()
                return
            }
            state.sources1[ObjectIdentifier(source)] = source
            membership.modeMask |= state.bit
        case let observer as LoopObserver:
            let index = state.observers.lastIndex(where: { $0.order <= observer.order }).map { $0 + 1 } ?? 0
            state.observers.insert(observer, at: index)
            state.observerMask.formUnion(observer.activities)
            membership.modeMask |= state.bit
        case let timer as LoopTimer:
            membership.modeMask |= state.bit
            state.timerCount += 1
            reschedule(timer)
        default:
            preconditionFailure("\(type(of: item)) is not one of the four kinds of loop item")
        }
    }

    func removeItem(_ item: LoopItem, from mode: Mode) {
        guard isOnLoopThread else {
            onLoopThread { $0.removeItem(item, from: mode) }
            return
        }
        if mode == .common {
            guard modes.commonItems.removeValue(forKey: ObjectIdentifier(item)) != nil else { return }
            for common in modes.common { removeItem(item, fromConcrete: common) }
        } else {
            removeItem(item, fromConcrete: mode)
        }
    }

    func removeItem(_ item: LoopItem, fromConcrete mode: Mode) {
        guard let state = modes.table[mode] else { return }
        let membership = item.membership
        guard membership.modeMask & state.bit != 0 else { return }
        membership.modeMask &= ~state.bit
        switch item {
        case let source as LoopSource:
            state.removeSource0(source)
            if let cancel = source.cancel {
                Callout.toScheduleOrCancel { cancel(self, mode) }
            }
        case let source as LoopPortSource:
            state.sources1[ObjectIdentifier(source)] = nil
            if membership.modeMask == 0 { unregister(source) }
        case let observer as LoopObserver:
            state.observers.removeAll { $0 === observer }
            state.observerMask = state.observers.reduce(into: []) { $0.formUnion($1.activities) }
        case let timer as LoopTimer:
            state.timerCount -= 1
            reschedule(timer)
            state.compactTimersIfNeeded()
        default:
            preconditionFailure("\(type(of: item)) is not one of the four kinds of loop item")
        }
        membership.unbindIfUnused()
    }

    func containsItem(_ item: LoopItem, in mode: Mode) -> Bool {
        preconditionOnLoopThread("contains(_:in:)")
        if mode == .common { return modes.commonItems[ObjectIdentifier(item)] != nil }
        guard let state = modes.table[mode], item.membership.loop === self else { return false }
        return item.membership.modeMask & state.bit != 0
    }

    /// Removes an invalidated item from every mode (any thread).
    func removeEverywhere(_ item: LoopItem) {
        guard isOnLoopThread else {
            onLoopThread { $0.removeEverywhere(item) }
            return
        }
        modes.commonItems.removeValue(forKey: ObjectIdentifier(item))
        for state in modes.list where item.membership.modeMask & state.bit != 0 {
            removeItem(item, fromConcrete: state.mode)
        }
    }
}
