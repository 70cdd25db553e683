import CDispatchHooks
import CLibURing
import DequeModule
import Glibc
import Logging

// Modes: the common modes and each mode's items.
extension RingRunLoop {
    // MARK: Modes

    func modeState(_ mode: Mode) -> ModeState? { modeTable[mode] }

    func modeState(_ mode: Mode, create: Bool) -> ModeState? {
        if let state = modeTable[mode] { return state }
        guard create, mode != .common else { return nil }
        guard modeList.count < Self.maximumModeCount else {
            Self.logger.error("mode '\(mode)' refused: a loop holds at most \(Self.maximumModeCount) modes")
            return nil
        }
        let state = ModeState(mode: mode, index: modeList.count)
        state.isCommon = commonModeSet.contains(mode)
        modeTable[mode] = state
        modeList.append(state)
        return state
    }

    /// The mode the innermost run is in, or `nil` when the loop is not running.
    /// Loop thread.
    public var currentMode: Mode? {
        preconditionOnLoopThread("currentMode")
        return currentModeState?.mode
    }

    /// The modes marked common (always including ``Mode/default``). Loop thread.
    public var commonModes: Set<Mode> {
        preconditionOnLoopThread("commonModes")
        return commonModeSet
    }

    /// Every mode the loop knows. Loop thread.
    public var allModes: [Mode] {
        preconditionOnLoopThread("allModes")
        return modeList.map(\.mode)
    }

    /// Marks `mode` common: every item added to ``Mode/common`` joins it, now and later.
    public func addCommonMode(_ mode: Mode) {
        guard isOnLoopThread else {
            onLoopThread { $0.addCommonMode(mode) }
            return
        }
        guard mode != .common, !commonModeSet.contains(mode), let state = modeState(mode, create: true) else { return }
        commonModeSet.insert(mode)
        state.isCommon = true
        for item in commonItems.values { addItem(item, toConcrete: mode) }
    }

    /// Sources, port sources, observers and timers in `mode` (loop thread): what tests
    /// count to see that nothing was left behind.
    package func itemCount(in mode: Mode) -> Int {
        preconditionOnLoopThread("itemCount(in:)")
        guard let state = modeTable[mode] else { return 0 }
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
        precondition(modeTable.count == modeList.count, "RingRunLoop: \(modeTable.count) modes named, \(modeList.count) listed")
        for (index, state) in modeList.enumerated() {
            precondition(state.index == index, "RingRunLoop: mode '\(state.mode)' listed at \(index), indexed \(state.index)")
            precondition(modeTable[state.mode] === state, "RingRunLoop: mode '\(state.mode)' named for another state")
            precondition(
                state.isCommon == commonModeSet.contains(state.mode),
                "RingRunLoop: mode '\(state.mode)' \(state.isCommon ? "flagged" : "not flagged") common against the loop's common modes")
            state.checkInvariants()
        }
    }
}
#endif
