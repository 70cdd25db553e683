import CLibURing
import CoreFoundation
import Foundation
import Glibc
import Synchronization

@testable import RingLoop

/// What a scenario records: callouts in the order they happened.
final class Trace: @unchecked Sendable {
    // @unchecked: appended from the loop thread; read after the run, or under the lock.
    private let entries = Mutex<[String]>([])
    func record(_ entry: String) { entries.withLock { $0.append(entry) } }
    var all: [String] { entries.withLock { $0 } }
}

/// Activities, named the same for both loops.
struct Activities: OptionSet, Sendable {
    let rawValue: UInt32
    static let entry = Activities(rawValue: 1 << 0)
    static let beforeTimers = Activities(rawValue: 1 << 1)
    static let beforeSources = Activities(rawValue: 1 << 2)
    static let beforeWaiting = Activities(rawValue: 1 << 5)
    static let afterWaiting = Activities(rawValue: 1 << 6)
    static let exit = Activities(rawValue: 1 << 7)
    static let all: Activities = [.entry, .beforeTimers, .beforeSources, .beforeWaiting, .afterWaiting, .exit]

    static func name(_ raw: UInt32) -> String {
        switch raw {
        case 1 << 0: "entry"
        case 1 << 1: "beforeTimers"
        case 1 << 2: "beforeSources"
        case 1 << 5: "beforeWaiting"
        case 1 << 6: "afterWaiting"
        case 1 << 7: "exit"
        default: "activity\(raw)"
        }
    }
}

/// An item a driver made; scenarios only pass it back to the same driver.
final class Handle: @unchecked Sendable {
    // @unchecked: made and used on the driver's loop thread only; it crosses no thread.
    enum Kind { case source, port, timer, observer }
    let name: String
    let kind: Kind
    let object: AnyObject
    /// For sources backed by an eventfd: the descriptor to write to make them ready.
    let eventFD: Int32
    init(name: String, kind: Kind, object: AnyObject, eventFD: Int32 = -1) {
        self.name = name
        self.kind = kind
        self.object = object
        self.eventFD = eventFD
    }
}

/// One loop implementation, driven by name-level operations. A scenario written against
/// this protocol runs unchanged on Foundation's CFRunLoop and on RingRunLoop.
protocol LoopDriver: AnyObject, Sendable {
    var trace: Trace { get }
    func source(_ name: String, order: Int, action: (@Sendable (LoopDriver) -> Void)?) -> Handle
    func portSource(_ name: String, action: (@Sendable (LoopDriver) -> Void)?) -> Handle
    func timer(_ name: String, afterMilliseconds: Double, intervalMilliseconds: Double, action: (@Sendable (LoopDriver) -> Void)?) -> Handle
    func observer(
        _ name: String, activities: Activities, repeats: Bool, order: Int, action: (@Sendable (LoopDriver, String) -> Void)?
    ) -> Handle
    func add(_ handle: Handle, _ mode: String)
    func remove(_ handle: Handle, _ mode: String)
    func contains(_ handle: Handle, _ mode: String) -> Bool
    func addCommonMode(_ mode: String)
    func run(_ mode: String, milliseconds: Double, returnAfterSourceHandled: Bool) -> String
    func stop()
    func wakeUp()
    func signal(_ handle: Handle)
    func invalidate(_ handle: Handle)
    func isValid(_ handle: Handle) -> Bool
    func perform(_ name: String, modes: [String], action: (@Sendable (LoopDriver) -> Void)?)
    func setNextFire(_ handle: Handle, millisecondsFromNow: Double)
    /// The timer's next fire date, in seconds on the loop's own timer clock (see ``now``).
    func nextFireDate(_ handle: Handle) -> Double
    /// The current time, in seconds on the clock ``nextFireDate(_:)`` uses.
    var now: Double { get }
    var currentMode: String? { get }
    /// Operations on the loop from another thread go through this handle.
    var isWaiting: Bool { get }
}

extension LoopDriver {
    func run(_ mode: String = "default", milliseconds: Double, returnAfterSourceHandled: Bool = false) -> String {
        let result = run(mode, milliseconds: milliseconds, returnAfterSourceHandled: returnAfterSourceHandled)
        trace.record("run \(mode) → \(result)")
        return result
    }

    func source(_ name: String, order: Int = 0) -> Handle { source(name, order: order, action: nil) }
    func timer(_ name: String, afterMilliseconds: Double, intervalMilliseconds: Double = 0) -> Handle {
        timer(name, afterMilliseconds: afterMilliseconds, intervalMilliseconds: intervalMilliseconds, action: nil)
    }
    func timer(
        _ name: String, afterMilliseconds: Double, intervalMilliseconds: Double = 0,
        _ action: @escaping @Sendable (LoopDriver) -> Void
    ) -> Handle {
        timer(name, afterMilliseconds: afterMilliseconds, intervalMilliseconds: intervalMilliseconds, action: action)
    }
    func source(_ name: String, order: Int, _ action: @escaping @Sendable (LoopDriver) -> Void) -> Handle {
        source(name, order: order, action: action)
    }
    func portSource(_ name: String, _ action: @escaping @Sendable (LoopDriver) -> Void) -> Handle {
        portSource(name, action: action)
    }
    func perform(_ name: String, modes: [String], _ action: @escaping @Sendable (LoopDriver) -> Void) {
        perform(name, modes: modes, action: action)
    }
    func observer(_ name: String, _ activities: Activities = .all, repeats: Bool = true, order: Int = 0) -> Handle {
        observer(name, activities: activities, repeats: repeats, order: order, action: nil)
    }
}

func makeEventFD() -> Int32 { eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC)) }

func writeEventFD(_ fd: Int32) {
    var one: UInt64 = 1
    _ = write(fd, &one, 8)
}

// MARK: - Foundation (CFRunLoop)

final class CFDriver: LoopDriver, @unchecked Sendable {
    // @unchecked: made, driven and dropped on the thread whose CFRunLoop it drives.
    let trace = Trace()
    let loop: CFRunLoop = CFRunLoopGetCurrent()
    private var descriptors: [Int32] = []

    deinit { for fd in descriptors { close(fd) } }

    private var modeStrings: [String: CFString] = [:]

    private func cfMode(_ mode: String) -> CFRunLoopMode {
        switch mode {
        case "default": return kCFRunLoopDefaultMode
        case "common": return kCFRunLoopCommonModes
        default:
            if let existing = modeStrings[mode] { return existing }
            let created = CFStringCreateWithCString(kCFAllocatorDefault, mode, CFStringBuiltInEncodings.UTF8.rawValue)!
            modeStrings[mode] = created
            return created
        }
    }

    private func foundationMode(_ mode: String) -> RunLoop.Mode {
        switch mode {
        case "default": .default
        case "common": .common
        default: RunLoop.Mode(rawValue: mode)
        }
    }

    final class Callback {
        let body: () -> Void
        init(_ body: @escaping () -> Void) { self.body = body }
    }

    func source(_ name: String, order: Int, action: (@Sendable (LoopDriver) -> Void)?) -> Handle {
        let callback = Callback { [unowned self] in
            trace.record("source \(name)")
            action?(self)
        }
        var context = CFRunLoopSourceContext(
            version: 0, info: Unmanaged.passRetained(callback).toOpaque(), retain: nil,
            release: { Unmanaged<Callback>.fromOpaque($0!).release() },
            copyDescription: nil, equal: nil, hash: nil, schedule: nil, cancel: nil,
            perform: { Unmanaged<Callback>.fromOpaque($0!).takeUnretainedValue().body() })
        return Handle(name: name, kind: .source, object: CFRunLoopSourceCreate(kCFAllocatorDefault, order, &context))
    }

    func portSource(_ name: String, action: (@Sendable (LoopDriver) -> Void)?) -> Handle {
        let fd = makeEventFD()
        descriptors.append(fd)
        final class PortCallback {
            let fd: Int32
            let body: () -> Void
            init(fd: Int32, body: @escaping () -> Void) {
                self.fd = fd
                self.body = body
            }
        }
        let callback = PortCallback(fd: fd) { [unowned self] in
            trace.record("port \(name)")
            action?(self)
        }
        var context = CFRunLoopSourceContext1(
            version: 1, info: Unmanaged.passRetained(callback).toOpaque(), retain: nil,
            release: { Unmanaged<PortCallback>.fromOpaque($0!).release() },
            copyDescription: nil, equal: nil, hash: nil,
            getPort: { info in Unmanaged<PortCallback>.fromOpaque(info!).takeUnretainedValue().fd },
            perform: { info in Unmanaged<PortCallback>.fromOpaque(info!).takeUnretainedValue().body() })
        let source = withUnsafeMutablePointer(to: &context) { pointer in
            pointer.withMemoryRebound(to: CFRunLoopSourceContext.self, capacity: 1) {
                CFRunLoopSourceCreate(kCFAllocatorDefault, 0, $0)
            }
        }
        return Handle(name: name, kind: .port, object: source!, eventFD: fd)
    }

    func timer(_ name: String, afterMilliseconds: Double, intervalMilliseconds: Double, action: (@Sendable (LoopDriver) -> Void)?) -> Handle
    {
        let timer = CFRunLoopTimerCreateWithHandler(
            kCFAllocatorDefault, CFAbsoluteTimeGetCurrent() + afterMilliseconds / 1000, intervalMilliseconds / 1000, 0, 0
        ) { [unowned self] _ in
            trace.record("timer \(name)")
            action?(self)
        }
        return Handle(name: name, kind: .timer, object: timer!)
    }

    func observer(
        _ name: String, activities: Activities, repeats: Bool, order: Int, action: (@Sendable (LoopDriver, String) -> Void)?
    ) -> Handle {
        let observer = CFRunLoopObserverCreateWithHandler(kCFAllocatorDefault, CFOptionFlags(activities.rawValue), repeats, order) {
            [unowned self] _, activity in
            let activityName = Activities.name(UInt32(activity.rawValue))
            trace.record("observer \(name) \(activityName)")
            action?(self, activityName)
        }
        return Handle(name: name, kind: .observer, object: observer!)
    }

    private func cfTimer(_ handle: Handle) -> CFRunLoopTimer {
        Unmanaged<CFRunLoopTimer>.fromOpaque(Unmanaged.passUnretained(handle.object).toOpaque()).takeUnretainedValue()
    }
    private func cfObserver(_ handle: Handle) -> CFRunLoopObserver {
        Unmanaged<CFRunLoopObserver>.fromOpaque(Unmanaged.passUnretained(handle.object).toOpaque()).takeUnretainedValue()
    }
    private func cfSource(_ handle: Handle) -> CFRunLoopSource {
        Unmanaged<CFRunLoopSource>.fromOpaque(Unmanaged.passUnretained(handle.object).toOpaque()).takeUnretainedValue()
    }

    func add(_ handle: Handle, _ mode: String) {
        switch handle.kind {
        case .timer: CFRunLoopAddTimer(loop, cfTimer(handle), cfMode(mode))
        case .observer: CFRunLoopAddObserver(loop, cfObserver(handle), cfMode(mode))
        case .source, .port: CFRunLoopAddSource(loop, cfSource(handle), cfMode(mode))
        }
    }

    func remove(_ handle: Handle, _ mode: String) {
        switch handle.kind {
        case .timer: CFRunLoopRemoveTimer(loop, cfTimer(handle), cfMode(mode))
        case .observer: CFRunLoopRemoveObserver(loop, cfObserver(handle), cfMode(mode))
        case .source, .port: CFRunLoopRemoveSource(loop, cfSource(handle), cfMode(mode))
        }
    }

    func contains(_ handle: Handle, _ mode: String) -> Bool {
        switch handle.kind {
        case .timer: CFRunLoopContainsTimer(loop, cfTimer(handle), cfMode(mode))
        case .observer: CFRunLoopContainsObserver(loop, cfObserver(handle), cfMode(mode))
        case .source, .port: CFRunLoopContainsSource(loop, cfSource(handle), cfMode(mode))
        }
    }

    func addCommonMode(_ mode: String) { CFRunLoopAddCommonMode(loop, cfMode(mode)) }

    func run(_ mode: String, milliseconds: Double, returnAfterSourceHandled: Bool) -> String {
        let result = CFRunLoopRunInMode(cfMode(mode), milliseconds / 1000, returnAfterSourceHandled)
        switch result {
        case .finished: return "finished"
        case .stopped: return "stopped"
        case .timedOut: return "timedOut"
        case .handledSource: return "handledSource"
        default: return "unknown"
        }
    }

    func stop() { CFRunLoopStop(loop) }
    func wakeUp() { CFRunLoopWakeUp(loop) }

    func signal(_ handle: Handle) {
        if handle.kind == .port { writeEventFD(handle.eventFD) } else { CFRunLoopSourceSignal(cfSource(handle)) }
    }

    func invalidate(_ handle: Handle) {
        switch handle.kind {
        case .timer: CFRunLoopTimerInvalidate(cfTimer(handle))
        case .observer: CFRunLoopObserverInvalidate(cfObserver(handle))
        case .source, .port: CFRunLoopSourceInvalidate(cfSource(handle))
        }
    }

    func isValid(_ handle: Handle) -> Bool {
        switch handle.kind {
        case .timer: CFRunLoopTimerIsValid(cfTimer(handle))
        case .observer: CFRunLoopObserverIsValid(cfObserver(handle))
        case .source, .port: CFRunLoopSourceIsValid(cfSource(handle))
        }
    }

    func perform(_ name: String, modes: [String], action: (@Sendable (LoopDriver) -> Void)?) {
        RunLoop.current.perform(inModes: modes.map(foundationMode)) { [unowned self] in
            trace.record("block \(name)")
            action?(self)
        }
    }

    func setNextFire(_ handle: Handle, millisecondsFromNow: Double) {
        CFRunLoopTimerSetNextFireDate(cfTimer(handle), CFAbsoluteTimeGetCurrent() + millisecondsFromNow / 1000)
    }

    func nextFireDate(_ handle: Handle) -> Double {
        CFRunLoopTimerGetNextFireDate(cfTimer(handle))
    }

    var now: Double { CFAbsoluteTimeGetCurrent() }

    var currentMode: String? {
        guard let mode = CFRunLoopCopyCurrentMode(loop) else { return nil }
        let name = String(describing: mode)
        return name == "kCFRunLoopDefaultMode" ? "default" : name
    }

    var isWaiting: Bool { CFRunLoopIsWaiting(loop) }
}
