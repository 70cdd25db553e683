import ArgumentParser
import CHeapStatistics
import Foundation
import RingLoop
import RingLoopDevices
import RingLoopHID
import RingLoopToolSupport
import SystemPackage

/// Runs the chain and the loop long enough to show that nothing accumulates: devices
/// hosted, replayed into and removed `cycles` times under a running event system, then a
/// loop firing `timers` timers and adding and removing `ports` port sources over and over.
/// Prints one JSON object: descriptors, resident memory and mounts before and after, and
/// what was seen. The test suite runs a short one; `--cycles 20000` is the long one.
struct Soak: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "soak",
        abstract: "Add, replay into and remove virtual devices, and churn timers and ports, then report leaks (for tests).",
        shouldDisplay: false)

    @Option(help: "Devices added, replayed into and removed.")
    var cycles: Int = 1000

    @Option(help: "Timers scheduled and fired.")
    var timers: Int = 100_000

    @Option(help: "Port sources added and removed.")
    var ports: Int = 10_000

    func validate() throws {
        guard (1...1_000_000).contains(cycles), (1...10_000_000).contains(timers), (1...10_000_000).contains(ports) else {
            throw ValidationError("--cycles must be 1…1000000, --timers and --ports 1…10000000")
        }
    }

    func run() throws {
        let recordings = try ["keyboard", "touchscreen-multitouch", "mouse-hires-wheel", "lid-switch"].map {
            try Recording.load(contentsOf: (bundledRecordingsFolder(nil) ?? "devices") + "/" + $0 + ".evemu")
        }
        let loop = RingRunLoop.current
        // A signal ends the soak early, cleanly, with the report of what ran.
        let interrupted = LoopBound<Int32>(0, loop: loop)
        let signals = try LoopSignalSource([SIGINT, SIGTERM, SIGHUP, SIGQUIT], on: loop) { interrupted.value = $0 }
        defer { signals.invalidate() }
        let mount = "/tmp/ringloop-soak-\(getpid())"
        let folder = try FUSEDeviceFolder(path: mount)
        let system = HIDEventSystem(configuration: .init(deviceDirectory: mount, shape: .dedicatedThread), loop: loop)
        var added = 0
        var removed = 0
        var held = Set<UInt16>()
        var heldPeak = 0
        system.addHandler { event in
            switch event.payload {
            case .deviceAdded: added += 1
            case .deviceRemoved: removed += 1
            case .key(let key) where key.state != .repeat:
                if key.state == .down { held.insert(key.code) } else { held.remove(key.code) }
                heldPeak = max(heldPeak, held.count)
            default: break
            }
            return .pass
        }
        try system.start()
        func settle(_ condition: () -> Bool) {
            let limit = MonotonicInstant.now + .seconds(30)
            while !condition() && interrupted.value == 0 && MonotonicInstant.now < limit { loop.run(mode: .default, for: .milliseconds(5)) }
        }
        func cycle(_ index: Int) throws {
            let recording = recordings[index % recordings.count]
            let node = try folder.addDevice(recording.description!, appliesFuzz: false)
            settle { added > index }
            // Half the frames, so keys are held and touches live when the device goes.
            let frames = Replay.frames(of: recording)
            for frame in frames.prefix(frames.count / 2) { try node.send(frame.events.map { ($0.type, $0.code, $0.value) }) }
            loop.run(mode: .default, for: .milliseconds(1))
            node.remove()
            settle { removed > index }
        }
        // Each phase warms up (first opens, caches, heap growth), then is measured from
        // that point to its end with everything it uses still in place.
        var phases: [String: Any] = [:]
        func record(_ name: String, _ before: Measure, _ after: Measure) {
            phases[name] = [
                "descriptorsBefore": before.descriptors, "descriptorsAfter": after.descriptors,
                "residentBefore": before.resident, "residentAfter": after.resident,
                "heapBefore": before.heap, "heapAfter": after.heap,
            ]
        }
        // The hid-events thread sends a device's removal before the callout that saw it
        // returns and closes the device's descriptor: a block it performs (readPaths) runs
        // after that callout, so the descriptors counted then are the settled ones.
        func measureDevices() -> Measure {
            _ = system.readPaths
            return Self.measure()
        }
        let warmUp = min(200, cycles / 5)
        for index in 0..<warmUp where interrupted.value == 0 { try cycle(index) }
        var before = measureDevices()
        for index in warmUp..<cycles where interrupted.value == 0 { try cycle(index) }
        record("devices", before, measureDevices())
        let dropped = system.statistics.dropped
        let problems = system.problems.count
        system.stop()
        folder.close()

        // Timers on one loop, in batches; the first batch warms up.
        let fired = LoopBound(0, loop: loop)
        var scheduled = 0
        func fireBatch() {
            let count = min(10_000, timers - scheduled)
            for offset in 0..<count {
                loop.add(LoopTimer(after: .microseconds(offset % 1000)) { _ in fired.value += 1 }, to: .default)
            }
            scheduled += count
            let target = scheduled
            let limit = MonotonicInstant.now + .seconds(30)
            while fired.value < target && interrupted.value == 0 && MonotonicInstant.now < limit {
                loop.run(mode: .default, for: .milliseconds(10))
            }
        }
        fireBatch()
        before = Self.measure()
        while scheduled < timers && interrupted.value == 0 { fireBatch() }
        record("timers", before, Self.measure())

        // Port sources added, performed once and removed, over and over.
        let performed = LoopBound(0, loop: loop)
        var pipeEnds: [Int32] = [0, 0]
        guard pipe(&pipeEnds) == 0 else { throw ValidationError("pipe: \(String(cString: strerror(errno)))") }
        var byte: UInt8 = 1
        _ = write(pipeEnds[1], &byte, 1)
        func churn(_ count: Int) {
            for _ in 0..<count where interrupted.value == 0 {
                let source = LoopPortSource(fileDescriptor: FileDescriptor(rawValue: pipeEnds[0])) { _ in performed.value += 1 }
                loop.add(source, to: .default)
                loop.run(mode: .default, for: .zero)
                source.invalidate()
            }
        }
        churn(min(100, ports))
        before = Self.measure()
        churn(ports - min(100, ports))
        loop.run(mode: .default, for: .milliseconds(10))
        record("ports", before, Self.measure())
        close(pipeEnds[0])
        close(pipeEnds[1])

        let report: [String: Any] = [
            "cycles": cycles, "added": added, "removed": removed, "heldPeak": heldPeak, "heldAfterRemoval": held.count,
            "timersFired": fired.value, "portsPerformed": performed.value, "dropped": dropped, "problems": problems,
            "mountsLeft": Self.measure().mounts, "phases": phases, "interruptedBy": interrupted.value,
        ]
        let data = try JSONSerialization.data(withJSONObject: report, options: [.sortedKeys])
        FileHandle.standardOutput.write(data + Data("\n".utf8))
    }

    typealias Measure = (descriptors: Int, resident: Int, heap: Int, mounts: Int)

    /// Open descriptors, resident bytes, heap bytes in use (-1 under a sanitizer) and this
    /// process's soak mounts.
    static func measure() -> Measure {
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
        var resident = -1
        if let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) {
            let fields = statm.split(separator: " ")
            if fields.count > 1, let pages = Int(fields[1]) { resident = pages * Int(sysconf(Int32(_SC_PAGESIZE))) }
        }
        let table = (try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)) ?? ""
        let mounts = table.split(separator: "\n").filter { $0.contains("/tmp/ringloop-soak-\(getpid())") }.count
        return (descriptors, resident, ringloop_heap_in_use(), mounts)
    }
}
