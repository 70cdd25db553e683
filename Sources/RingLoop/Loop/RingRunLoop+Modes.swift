import CDispatchHooks
import CLibURing
import DequeModule
import Glibc
import Logging

// Modes: the common modes and each mode's items.
extension RingRunLoop {
    // MARK: Modes

    func modeState(_ mode: Mode) -> ModeState? { modes.table[mode] }

    func modeState(_ mode: Mode, create: Bool) -> ModeState? {
        if let state = modes.table[mode] { return state }
        guard create, mode != .common else { return nil }
        guard modes.list.count < Self.maximumModeCount else {
            Self.logger.error("mode '\(mode)' refused: a loop holds at most \(Self.maximumModeCount) modes")
            return nil
        }
        let state = ModeState(mode: mode, index: modes.list.count)
        state.isCommon = modes.common.contains(mode)
        modes.table[mode] = state
        modes.list.append(state)
        return state
    }

    /// The mode the innermost run is in, or `nil` when the loop is not running.
    /// Loop thread.
    public var currentMode: Mode? {
        preconditionOnLoopThread("currentMode")
        return modes.current?.mode
    }

    /// The modes marked common (always including ``Mode/default``). Loop thread.
    public var commonModes: Set<Mode> {
        preconditionOnLoopThread("commonModes")
        return modes.common
    }

    /// Every mode the loop knows. Loop thread.
    public var allModes: [Mode] {
        preconditionOnLoopThread("allModes")
        return modes.list.map(\.mode)
    }

    /// Marks `mode` common: every item added to ``Mode/common`` joins it, now and later.
    public func addCommonMode(_ mode: Mode) {
        guard isOnLoopThread else {
            onLoopThread { $0.addCommonMode(mode) }
            return
        }
        guard mode != .common, !modes.common.contains(mode), let state = modeState(mode, create: true) else { return }
        modes.common.insert(mode)
        state.isCommon = true
        for item in modes.commonItems.values { addItem(item, toConcrete: mode) }
    }

    /// Sources, port sources, observers and timers in `mode` (loop thread): what tests
    /// count to see that nothing was left behind.
    package func itemCount(in mode: Mode) -> Int {
        preconditionOnLoopThread("itemCount(in:)")
        guard let state = modes.table[mode] else { return 0 }
        return state.sources0.count + state.sources1.count + state.observers.count + state.timerCount
    }
}

#if DEBUG
extension RingRunLoop {
    /// Traps unless the mode table and every mode's state are consistent (debug builds
    /// only; tests call it after operations): each mode's state is listed at its index
    /// and found by its name, flagged common exactly when the loop's common modes list it,
    /// and holds its own invariants (``ModeState/checkInvariants()``).
    /// Loop thread.
    func checkInvariants() {
        preconditionOnLoopThread("checkInvariants()")
        precondition(modes.table.count == modes.list.count, "RingRunLoop: \(modes.table.count) modes named, \(modes.list.count) listed")
        for (index, state) in modes.list.enumerated() {
            precondition(state.index == index, "RingRunLoop: mode '\(state.mode)' listed at \(index), indexed \(state.index)")
            precondition(modes.table[state.mode] === state, "RingRunLoop: mode '\(state.mode)' named for another state")
            precondition(
                state.isCommon == modes.common.contains(state.mode),
                "RingRunLoop: mode '\(state.mode)' \(state.isCommon ? "flagged" : "not flagged") common against the loop's common modes")
            state.checkInvariants()
        }
    }
}
#endif
