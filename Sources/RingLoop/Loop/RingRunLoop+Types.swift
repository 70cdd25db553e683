extension RingRunLoop {
    /// A run loop mode: a named set of sources, timers and observers. Running a loop in a
    /// mode watches only that mode's items.
    ///
    /// ```swift
    /// let tracking = RingRunLoop.Mode("tracking")
    /// loop.add(timer, to: tracking)
    /// loop.run(mode: tracking, for: .seconds(1))
    /// ```
    public struct Mode: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public init(_ name: String) { self.rawValue = name }
        public init(stringLiteral value: String) { self.rawValue = value }

        /// The default mode (`kCFRunLoopDefaultMode`), always one of the common modes.
        public static let `default` = Mode("kCFRunLoopDefaultMode")
        /// The pseudo-mode standing for every mode marked common
        /// (`kCFRunLoopCommonModes`). Items added to it appear in each common mode,
        /// including modes marked common later. A loop cannot run in it.
        public static let common = Mode("kCFRunLoopCommonModes")
        /// The mode a loop runs in while the user drags (UIKit's `UITrackingRunLoopMode`):
        /// an input system that tracks interactions runs its loop in it, nested, for the
        /// length of a drag, and marks it common, so that items in the common modes go on
        /// while those of the default mode wait.
        public static let tracking = Mode("RingLoopTrackingMode")

        public var description: String { rawValue }
    }

    /// The stages of a run that observers can watch (`CFRunLoopActivity`).
    public struct Activity: OptionSet, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }

        /// The run is starting.
        public static let entry = Activity(rawValue: 1 << 0)
        /// The loop is about to fire timers.
        public static let beforeTimers = Activity(rawValue: 1 << 1)
        /// The loop is about to perform signalled sources.
        public static let beforeSources = Activity(rawValue: 1 << 2)
        /// The loop is about to sleep.
        public static let beforeWaiting = Activity(rawValue: 1 << 5)
        /// The loop woke up, before handling what woke it.
        public static let afterWaiting = Activity(rawValue: 1 << 6)
        /// The run is ending.
        public static let exit = Activity(rawValue: 1 << 7)
        /// Every activity.
        public static let all = Activity(rawValue: 0x0FFF_FFFF)

        public var description: String {
            let names: [(Activity, String)] = [
                (.entry, "entry"), (.beforeTimers, "beforeTimers"), (.beforeSources, "beforeSources"),
                (.beforeWaiting, "beforeWaiting"), (.afterWaiting, "afterWaiting"), (.exit, "exit"),
            ]
            let present = names.filter { contains($0.0) }.map(\.1)
            return present.isEmpty ? "[]" : present.joined(separator: "|")
        }
    }

    /// Why a run returned (`CFRunLoopRunResult`).
    public enum RunResult: Int32, Sendable, CustomStringConvertible {
        /// The mode had no sources, timers or blocks left (or never had any).
        case finished = 1
        /// ``RingRunLoop/stop()`` ended the run.
        case stopped = 2
        /// The run's deadline passed.
        case timedOut = 3
        /// A source was handled and the run was asked to return after one.
        case handledSource = 4
        /// The loop could not wait: its ring failed eight times in a row
        /// (``RingRunLoop/lastError`` says why). Not a result CFRunLoop has.
        case failed = 5

        public var description: String {
            switch self {
            case .finished: "finished"
            case .stopped: "stopped"
            case .timedOut: "timedOut"
            case .handledSource: "handledSource"
            case .failed: "failed"
            }
        }
    }
}
