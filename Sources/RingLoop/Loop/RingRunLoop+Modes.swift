import CDispatchHooks
import CLibURing
import DequeModule
import Glibc
import Logging
import Synchronization

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
        guard mode != .common, !commonModeSet.contains(mode), modeState(mode, create: true) != nil else { return }
        commonModeSet.insert(mode)
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
