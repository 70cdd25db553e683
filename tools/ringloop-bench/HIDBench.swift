import CMallocCounter
import Foundation
import RingLoop
import RingLoopBenchmarks
import RingLoopDevices
import RingLoopEvdev
import RingLoopHID
import RingLoopToolSupport
import Synchronization
import SystemPackage

/// Input benchmarks: decode + dispatch throughput from memory, and device → handler
/// latency through a FUSE node in both chain shapes.
enum HIDBench {
    static func decode(quick: Bool, rounds: Int) throws -> [BenchResult] {
        guard let folder = bundledRecordingsFolder(nil) else { return [] }
        var perSecond: [Double] = []
        var allocations: [Double] = []
        let names = [
            "touchscreen-multitouch.evemu", "keyboard.evemu", "mouse-hires-wheel.evemu", "touchpad.evemu",
            "touchpad-protocol-a.evemu",
        ]
        var inputs: [(HIDDeviceInfo, [InputEvent])] = []
        for name in names {
            let recording = try Recording.load(contentsOf: folder + "/" + name)
            let description = recording.description!
            let info = HIDDeviceInfo(description: description)
            inputs.append((info, recording.events))
        }
        let target = BenchSize.of(quick ? 200_000 : 2_000_000)
        for _ in 0..<rounds {
            var events = 0
            var elapsed = 0.0
            var allocated: UInt = 0
            for (info, raw) in inputs {
                let repeats = max(2, target / inputs.count / raw.count)
                var start = MonotonicInstant.now
                var before: UInt = 0
                var sink = 0
                _ = HIDDecodeBenchmark.run(
                    info: info, events: raw, rounds: repeats,
                    beforeMeasuredRound: {
                        start = .now
                        before = ringloop_malloc_count()
                    }
                ) { event in sink &+= Int(event.timestamp.nanoseconds & 1) }
                let measured = raw.count * (repeats - 1)
                elapsed += (MonotonicInstant.now - start).secondsValue
                allocated += ringloop_malloc_count() - before
                events += measured
                if sink == -1 { print(sink) }
            }
            // Every round but each device's first (the warm-up) is measured.
            perSecond.append(Double(events) / elapsed)
            allocations.append(Double(allocated) / Double(events))
        }
        var results = [BenchResult("hid.decode.events_per_s", "1/s", ours: median(perSecond))]
        if ringloop_malloc_counting() != 0 {
            results.append(BenchResult("hid.decode.allocs_per_event", "allocs", ours: median(allocations)))
        }
        return results
    }

    /// Keymap cost per key event (keysym, text, modifiers, LEDs, compose), from memory: a
    /// German text with Shift, AltGr (`@`, `€`) and a dead key (`^` then `e`) typed as key
    /// strokes once, then fed as key events to one seat's keyboard state round after round;
    /// allocations counted.
    static func keyText(quick: Bool, rounds: Int) throws -> [BenchResult] {
        let keymap = try Keymap(configuration: KeyboardConfiguration(layout: "de"))
        let compose = try ComposeTable(locale: "en_US.UTF-8")
        let text = "Grüße aus Köln, 10 € für Anna@example.org — {Straße} êa! "
        let strokes = try keymap.keyStrokes(typing: text, composeTable: compose)
        let events = strokes.map { KeyEvent(usage: nil, code: $0.code, state: $0.isDown ? .down : .up) }
        let state = KeyboardState(keymap: keymap, composeTable: compose)
        let measuredRounds = max(2, BenchSize.of(quick ? 200_000 : 2_000_000) / events.count)
        var perKey: [Double] = []
        var allocations: [Double] = []
        for _ in 0..<rounds {
            var sink = 0
            for var event in events { sink &+= state.apply(to: &event).text.count }
            let before = ringloop_malloc_count()
            let start = MonotonicInstant.now
            for _ in 0..<measuredRounds {
                for var event in events { sink &+= state.apply(to: &event).text.count }
            }
            let elapsed = (MonotonicInstant.now - start).secondsValue
            let allocated = ringloop_malloc_count() - before
            if sink == -1 { print(sink) }
            let fed = measuredRounds * events.count
            perKey.append(elapsed * 1e9 / Double(fed))
            allocations.append(Double(allocated) / Double(fed))
        }
        var results = [BenchResult("keys.text.ns_per_key", "ns", ours: median(perKey))]
        if ringloop_malloc_counting() != 0 {
            results.append(BenchResult("keys.text.allocs_per_key", "allocs", ours: median(allocations)))
        }
        return results
    }

    /// Recognizer cost per touch frame with ten recognizers (taps, long press, pans,
    /// swipes, pinch, rotation, edge pan), from memory: the touchscreen's gesture
    /// recordings decoded once, then fed round after round; allocations counted.
    static func gestures(quick: Bool, rounds: Int) throws -> [BenchResult] {
        guard let folder = bundledRecordingsFolder(nil) else { return [] }
        var frames: [(MonotonicInstant, DigitizerFrame)] = []
        var surface: GestureSurface?
        for name in ["pinch-rotate", "slow-drag", "double-tap", "swipe-left", "pan-2-fingers", "edge-swipe", "long-press"] {
            let recording = try Recording.load(contentsOf: folder + "/gestures/touchscreen-\(name).evemu")
            let description = recording.description!
            let info = HIDDeviceInfo(description: description)
            surface = GestureSurface(device: info)
            // One gesture after another: each recording's frames start after the last one's end.
            let offset = (frames.last?.0).map { $0 + .seconds(2) } ?? MonotonicInstant(nanoseconds: 1_000_000_000)
            let decoded = GestureBenchmark.frames(info: info, events: recording.events)
            guard let start = decoded.first?.0 else { continue }
            for (time, frame) in decoded { frames.append((offset + (time - start), frame)) }
        }
        guard let surface, !frames.isEmpty else { return [] }
        let measuredRounds = max(2, BenchSize.of(quick ? 100_000 : 1_000_000) / frames.count)
        var perFrame: [Double] = []
        var allocations: [Double] = []
        for _ in 0..<rounds {
            var start = MonotonicInstant.now
            var before: UInt = 0
            var sink = 0
            let (fed, _) = GestureBenchmark.run(
                frames: frames, surface: surface, warmRounds: 2, measuredRounds: measuredRounds,
                beforeMeasured: {
                    before = ringloop_malloc_count()
                    start = .now
                }
            ) { event in sink &+= event.values.fingers }
            let elapsed = (MonotonicInstant.now - start).secondsValue
            let allocated = ringloop_malloc_count() - before
            if sink == -1 { print(sink) }
            perFrame.append(elapsed * 1e9 / Double(fed))
            allocations.append(Double(allocated) / Double(fed))
        }
        var results = [BenchResult("gestures.ns_per_frame", "ns", ours: median(perFrame))]
        if ringloop_malloc_counting() != 0 {
            results.append(BenchResult("gestures.allocs_per_frame", "allocs", ours: median(allocations)))
        }
        return results
    }

    /// Where the threads of a FUSE measurement run.
    enum Placement {
        /// Wherever the scheduler puts them.
        case free
        /// Every thread (the FUSE server, the loops, the sender) on one CPU: hand-offs
        /// become context switches on that CPU instead of wake-ups of the other, halted
        /// vCPU. It separates the chain's own latency from the machine's cross-CPU
        /// wake-up cost (which a kernel evdev device pays once, a FUSE node's reader five
        /// times per frame).
        case oneCPU
        /// The FUSE server on the reading loop's CPU (``FUSEDeviceFolder/init(path:serverCPUs:)``),
        /// the sender on the other: the reader's poll and read requests switch to the
        /// server on its own CPU instead of waking the other.
        case serverWithLoop
    }

    /// Device → handler latency: frames sent to a FUSE node one at a time; the handler
    /// measures now − the kernel-style timestamp the node stamped at sending. Also what
    /// the node's server answered per frame.
    static func endToEnd(
        quick: Bool, shape: HIDEventSystem.Shape, placement: Placement = .free
    ) throws -> (latencies: [Double], served: FUSEEvdevNode.ServedRequests, frames: Int) {
        let savedCPUs = CPUAffinity.allowedCPUs()
        let first = savedCPUs.first ?? 0
        let others = savedCPUs.count > 1 ? Array(savedCPUs.dropFirst()) : savedCPUs
        // The lowest CPU this thread may use; threads created from here inherit it.
        if placement != .free { try? CPUAffinity.restrictCurrentThread(to: [first]) }
        defer { if placement != .free, !savedCPUs.isEmpty { try? CPUAffinity.restrictCurrentThread(to: savedCPUs) } }
        let samples = BenchSize.of(quick ? 300 : 2000)
        let path = "/tmp/ringloop-bench-\(getpid())-\(shape.rawValue)"
        let folder = try FUSEDeviceFolder(path: path, serverCPUs: placement == .free ? nil : [first])
        defer { folder.close() }
        let mouse = InputDeviceDescription(
            name: "Bench Mouse", codes: [Evdev.EV_KEY: [Evdev.BTN_LEFT, Evdev.BTN_RIGHT], Evdev.EV_REL: [Evdev.REL_X, Evdev.REL_Y]])
        let node = try folder.addDevice(mouse, bufferSize: 1024)
        return onFreshThread {
            let loop = RingRunLoop.current
            let system = HIDEventSystem(configuration: .init(deviceDirectory: path, shape: shape), loop: loop)
            var latencies: [Double] = []
            latencies.reserveCapacity(samples)
            var attached = false
            system.addHandler { event in
                switch event.kind {
                case .deviceAdded: attached = true
                case .pointerMotion:
                    latencies.append(Double((MonotonicInstant.now - event.timestamp).nanosecondsValue) / 1000)
                default: break
                }
                return .pass
            }
            try? system.start()
            while !attached { loop.run(mode: .default, for: .milliseconds(10)) }
            let servedBefore = node.servedRequests
            // A sender thread paces frames 1 ms apart; the loop handles them as they come.
            let sent = Atomic<Int>(0)
            let sender = Thread {
                if placement == .serverWithLoop { try? CPUAffinity.restrictCurrentThread(to: others) }
                for index in 0..<samples {
                    try? node.send([(Evdev.EV_REL, Evdev.REL_X, Int32(index % 2 == 0 ? 1 : -1)), (Evdev.EV_SYN, Evdev.SYN_REPORT, 0)])
                    sent.add(1, ordering: .relaxed)
                    usleep(1000)
                }
            }
            sender.start()
            let limit = MonotonicInstant.now + .seconds(30)
            while latencies.count < samples && MonotonicInstant.now < limit {
                loop.run(mode: .default, for: .milliseconds(50))
            }
            system.stop()
            return (latencies, node.servedRequests - servedBefore, sent.load(ordering: .relaxed))
        }
    }

    /// Device → handler latency without FUSE: a pipe carries `input_event` records exactly
    /// as an evdev node delivers them, stamped with CLOCK_MONOTONIC at the write, as the
    /// kernel stamps an event; frames 1 ms apart (the loop sleeps between). Also counts
    /// the system calls the client loop made per frame besides its one wait (`read(2)`
    /// calls, and `io_uring_enter` calls beyond one per frame), client-loop shape.
    ///
    /// With `oneCPU`, every thread (the sender, the loops) runs on the lowest allowed CPU:
    /// hand-offs become context switches there instead of wake-ups of the other, halted
    /// vCPU, which separates the chain's cost from the machine's cross-CPU wake-up.
    static func endToEndPipe(
        quick: Bool, shape: HIDEventSystem.Shape, oneCPU: Bool = false
    ) -> (latencies: [Double], syscallsPerFrame: Double?) {
        let samples = BenchSize.of(quick ? 300 : 2000)
        let cpu = CPUAffinity.allowedCPUs().first ?? 0
        let mouse = HIDDeviceInfo.describing(
            name: "Bench Mouse", codes: [Evdev.EV_KEY: [Evdev.BTN_LEFT, Evdev.BTN_RIGHT], Evdev.EV_REL: [Evdev.REL_X, Evdev.REL_Y]],
            axes: [:], properties: [])
        return onFreshThread {
            // Threads created from here (the event thread, the sender) inherit the CPU.
            if oneCPU { try? CPUAffinity.restrictCurrentThread(to: [cpu]) }
            let loop = RingRunLoop.current
            let system = HIDEventSystem(configuration: .init(deviceDirectory: "/tmp", shape: shape, nodeNames: []), loop: loop)
            var latencies: [Double] = []
            latencies.reserveCapacity(samples)
            system.addHandler(kinds: [.pointerMotion]) { event in
                latencies.append(Double((MonotonicInstant.now - event.timestamp).nanosecondsValue) / 1000)
                return .pass
            }
            var ends: [Int32] = [0, 0]
            guard (try? system.start()) != nil, pipe(&ends) == 0,
                (try? system.attachStream(fileDescriptor: FileDescriptor(rawValue: ends[0]), description: mouse)) != nil
            else { return ([], nil) }
            let writeEnd = ends[1]
            let entersBefore = loop.enterCount
            let readsBefore = system.readSystemCalls
            let sender = Thread {
                let frame = UnsafeMutableRawPointer.allocate(byteCount: 2 * InputEvent.size, alignment: 8)
                defer { frame.deallocate() }
                for index in 0..<samples {
                    ScaleBench.writeMotion(to: writeEnd, value: index % 2 == 0 ? 1 : -1, through: frame)
                    usleep(1000)
                }
            }
            sender.start()
            let limit = MonotonicInstant.now + .seconds(30)
            while latencies.count < samples && MonotonicInstant.now < limit {
                loop.run(mode: .default, for: .milliseconds(50))
            }
            let frames = Double(max(1, latencies.count))
            let enters = Double(loop.enterCount - entersBefore)
            let reads = Double(system.readSystemCalls - readsBefore)
            close(writeEnd)
            system.stop()
            let perFrame = shape == .clientLoop ? (reads + max(0, enters - frames)) / frames : nil
            return (latencies, perFrame)
        }
    }

    static func pipeResults(quick: Bool, rounds: Int) -> [BenchResult] {
        var results: [BenchResult] = []
        let runs: [(HIDEventSystem.Shape, oneCPU: Bool)] = [(.clientLoop, false), (.dedicatedThread, false), (.dedicatedThread, true)]
        for (shape, oneCPU) in runs {
            var p50: [Double] = []
            var p99: [Double] = []
            var calls: [Double] = []
            for _ in 0..<(quick ? 1 : rounds) {
                let (latencies, perFrame) = endToEndPipe(quick: quick, shape: shape, oneCPU: oneCPU)
                guard !latencies.isEmpty else { continue }
                p50.append(percentile(latencies, 0.5))
                p99.append(percentile(latencies, 0.99))
                if let perFrame { calls.append(perFrame) }
            }
            guard !p50.isEmpty else { continue }
            let prefix = (shape == .clientLoop ? "hid.e2e.pipe" : "hid.e2e.pipe.thread") + (oneCPU ? ".one_cpu" : "")
            results.append(BenchResult("\(prefix).p50_us", "µs", ours: median(p50)))
            results.append(BenchResult("\(prefix).p99_us", "µs", ours: median(p99)))
            if !calls.isEmpty { results.append(BenchResult("hid.syscalls_per_frame", "calls", ours: median(calls))) }
        }
        return results
    }

    static func endToEndResults(quick: Bool, rounds: Int) throws -> [BenchResult] {
        var results: [BenchResult] = []
        let runs: [(HIDEventSystem.Shape, Placement)] = [
            (.clientLoop, .free), (.dedicatedThread, .free), (.clientLoop, .oneCPU), (.dedicatedThread, .oneCPU),
            (.clientLoop, .serverWithLoop),
        ]
        for (shape, placement) in runs {
            var p50: [Double] = []
            var p99: [Double] = []
            var requests: [Double] = []
            for _ in 0..<(quick ? 1 : rounds) {
                let (latencies, served, frames) = try endToEnd(quick: quick, shape: shape, placement: placement)
                p50.append(percentile(latencies, 0.5))
                p99.append(percentile(latencies, 0.99))
                requests.append(Double(served.polls + served.reads) / Double(max(1, frames)))
            }
            // Through a FUSE node: the test rig's own round trips are in these figures.
            let suffix =
                switch placement {
                case .free: ""
                case .oneCPU: ".one_cpu"
                case .serverWithLoop: ".server_with_loop"
                }
            let prefix = (shape == .clientLoop ? "hid.e2e.fuse" : "hid.e2e.fuse.thread") + suffix
            results.append(BenchResult("\(prefix).p50_us", "µs", ours: median(p50)))
            results.append(BenchResult("\(prefix).p99_us", "µs", ours: median(p99)))
            if shape == .clientLoop, placement == .free {
                results.append(BenchResult("\(prefix).requests_per_frame", "requests", ours: median(requests)))
            }
        }
        return results
    }
}
