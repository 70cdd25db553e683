import CLibURing
import CoreFoundation
import Foundation
import Glibc
import Synchronization
import SystemPackage

@testable import RingLoop

// MARK: - RingRunLoop

final class RingDriver: LoopDriver, @unchecked Sendable {
    // @unchecked: made, driven and dropped on the thread whose loop it drives; its item
    // callbacks run on that thread too.
    let trace = Trace()
    let loop = RingRunLoop.current
    private var descriptors: [Int32] = []

    deinit { for fd in descriptors { close(fd) } }

    private func mode(_ name: String) -> RingRunLoop.Mode {
        switch name {
        case "default": .default
        case "common": .common
        default: RingRunLoop.Mode(name)
        }
    }

    func source(_ name: String, order: Int, action: (@Sendable (LoopDriver) -> Void)?) -> Handle {
        let source = LoopSource(order: order) { [unowned self] in
            trace.record("source \(name)")
            action?(self)
        }
        return Handle(name: name, kind: .source, object: source)
    }

    func portSource(_ name: String, action: (@Sendable (LoopDriver) -> Void)?) -> Handle {
        let fd = makeEventFD()
        descriptors.append(fd)
        let source = LoopPortSource(fileDescriptor: FileDescriptor(rawValue: fd)) { [unowned self] _ in
            var value: UInt64 = 0
            _ = read(fd, &value, 8)
            trace.record("port \(name)")
            action?(self)
        }
        return Handle(name: name, kind: .port, object: source, eventFD: fd)
    }

    func timer(_ name: String, afterMilliseconds: Double, intervalMilliseconds: Double, action: (@Sendable (LoopDriver) -> Void)?) -> Handle
    {
        let timer = LoopTimer(
            after: .nanoseconds(Int64(afterMilliseconds * 1_000_000)),
            repeating: intervalMilliseconds > 0 ? .nanoseconds(Int64(intervalMilliseconds * 1_000_000)) : nil
        ) { [unowned self] _ in
            trace.record("timer \(name)")
            action?(self)
        }
        return Handle(name: name, kind: .timer, object: timer)
    }

    func observer(
        _ name: String, activities: Activities, repeats: Bool, order: Int, action: (@Sendable (LoopDriver, String) -> Void)?
    ) -> Handle {
        let observer = LoopObserver(
            activities: RingRunLoop.Activity(rawValue: activities.rawValue), repeats: repeats, order: order
        ) { [unowned self] _, activity in
            let activityName = Activities.name(activity.rawValue)
            trace.record("observer \(name) \(activityName)")
            action?(self, activityName)
        }
        return Handle(name: name, kind: .observer, object: observer)
    }

    func add(_ handle: Handle, _ name: String) {
        switch handle.object {
        case let item as LoopTimer: loop.add(item, to: mode(name))
        case let item as LoopObserver: loop.add(item, to: mode(name))
        case let item as LoopPortSource: loop.add(item, to: mode(name))
        case let item as LoopSource: loop.add(item, to: mode(name))
        default: fatalError("unknown handle")
        }
    }

    func remove(_ handle: Handle, _ name: String) {
        switch handle.object {
        case let item as LoopTimer: loop.remove(item, from: mode(name))
        case let item as LoopObserver: loop.remove(item, from: mode(name))
        case let item as LoopPortSource: loop.remove(item, from: mode(name))
        case let item as LoopSource: loop.remove(item, from: mode(name))
        default: fatalError("unknown handle")
        }
    }

    func contains(_ handle: Handle, _ name: String) -> Bool {
        switch handle.object {
        case let item as LoopTimer: loop.contains(item, in: mode(name))
        case let item as LoopObserver: loop.contains(item, in: mode(name))
        case let item as LoopPortSource: loop.contains(item, in: mode(name))
        case let item as LoopSource: loop.contains(item, in: mode(name))
        default: false
        }
    }

    func addCommonMode(_ name: String) { loop.addCommonMode(mode(name)) }

    func run(_ name: String, milliseconds: Double, returnAfterSourceHandled: Bool) -> String {
        loop.run(
            mode: mode(name), for: .nanoseconds(Int64(milliseconds * 1_000_000)),
            returnAfterSourceHandled: returnAfterSourceHandled
        ).description
    }

    func stop() { loop.stop() }
    func wakeUp() { loop.wakeUp() }

    func signal(_ handle: Handle) {
        if handle.eventFD >= 0 { writeEventFD(handle.eventFD) } else { (handle.object as! LoopSource).signal() }
    }

    func invalidate(_ handle: Handle) {
        switch handle.object {
        case let item as LoopTimer: item.invalidate()
        case let item as LoopObserver: item.invalidate()
        case let item as LoopPortSource: item.invalidate()
        case let item as LoopSource: item.invalidate()
        default: break
        }
    }

    func isValid(_ handle: Handle) -> Bool {
        switch handle.object {
        case let item as LoopTimer: item.isValid
        case let item as LoopObserver: item.isValid
        case let item as LoopPortSource: item.isValid
        case let item as LoopSource: item.isValid
        default: false
        }
    }

    func perform(_ name: String, modes: [String], action: (@Sendable (LoopDriver) -> Void)?) {
        loop.perform(inModes: modes.map(mode)) { [unowned self] in
            trace.record("block \(name)")
            action?(self)
        }
    }

    func setNextFire(_ handle: Handle, millisecondsFromNow: Double) {
        (handle.object as! LoopTimer).nextFireDate = .now + .nanoseconds(Int64(millisecondsFromNow * 1_000_000))
    }

    func nextFireDate(_ handle: Handle) -> Double {
        Double((handle.object as! LoopTimer).nextFireDate.nanoseconds) / 1e9
    }

    var now: Double { Double(MonotonicInstant.now.nanoseconds) / 1e9 }

    var currentMode: String? {
        guard let mode = loop.currentMode else { return nil }
        return mode == .default ? "default" : mode.rawValue
    }

    var isWaiting: Bool { loop.isWaiting }
}
