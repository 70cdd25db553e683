import Foundation
import RingLoop
import RingLoopEvdev
import RingLoopHID
import Synchronization
import SystemPackage

/// Input at scale: N stream devices (pipes carrying `input_event` records, as evdev nodes
/// deliver them) on one client loop, each sending mouse-like frames at a fixed rate from
/// one writer thread; the loop's CPU time per event, device → handler latency, and what
/// was lost.
enum ScaleBench {
    struct Run {
        var nanosecondsPerEvent: Double
        var p50: Double
        var p99: Double
        var drops: Int
    }

    static func run(devices count: Int, rate: Int, seconds: Double) -> Run? {
        let mouse = HIDDeviceInfo.describing(
            name: "Scale Mouse", codes: [Evdev.EV_KEY: [Evdev.BTN_LEFT], Evdev.EV_REL: [Evdev.REL_X, Evdev.REL_Y]], axes: [:],
            properties: [])
        let ticks = max(10, Int(Double(rate) * seconds))
        return onFreshThread { () -> Run? in
            let loop = RingRunLoop.current
            let system = HIDEventSystem(
                configuration: .init(deviceDirectory: "/tmp", queueCapacity: 4096, nodeNames: []), loop: loop)
            var latencies: [Double] = []
            latencies.reserveCapacity(count * ticks)
            system.addHandler(kinds: [.pointerMotion]) { event in
                latencies.append(Double((MonotonicInstant.now - event.timestamp).nanosecondsValue) / 1000)
                return .pass
            }
            guard (try? system.start()) != nil else { return nil }
            var writeEnds: [Int32] = []
            for _ in 0..<count {
                var ends: [Int32] = [0, 0]
                guard pipe(&ends) == 0,
                    (try? system.attachStream(fileDescriptor: FileDescriptor(rawValue: ends[0]), description: mouse)) != nil
                else {
                    return nil
                }
                writeEnds.append(ends[1])
            }
            let finished = Atomic<Bool>(false)
            let descriptors = writeEnds
            let period = 1_000_000_000 / UInt64(rate)
            let cpuBefore = LoopBench.threadCPUNanoseconds()
            let writer = Thread {
                var start = timespec()
                clock_gettime(CLOCK_MONOTONIC, &start)
                var next = UInt64(start.tv_sec) * 1_000_000_000 + UInt64(start.tv_nsec)
                let frame = UnsafeMutableRawPointer.allocate(byteCount: 2 * InputEvent.size, alignment: 8)
                defer { frame.deallocate() }
                for tick in 0..<ticks {
                    next += period
                    var until = timespec(tv_sec: Int(next / 1_000_000_000), tv_nsec: Int(next % 1_000_000_000))
                    while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, nil) == EINTR {}
                    for fd in descriptors { writeMotion(to: fd, value: tick % 2 == 0 ? 1 : -1, through: frame) }
                }
                finished.store(true, ordering: .releasing)
                loop.wakeUp()
            }
            writer.start()
            let expected = count * ticks
            let limit = MonotonicInstant.now + .seconds(Int64(seconds * 4) + 10)
            while !(finished.load(ordering: .acquiring) && latencies.count + system.statistics.dropped >= expected)
                && MonotonicInstant.now < limit
            {
                loop.run(mode: .default, for: .milliseconds(20))
            }
            let cpu = LoopBench.threadCPUNanoseconds() - cpuBefore
            let received = latencies.count
            for fd in writeEnds { close(fd) }
            _ = loop.run(mode: .default, for: .milliseconds(50))
            system.stop()
            return Run(
                nanosecondsPerEvent: Double(cpu) / Double(max(1, received)), p50: percentile(latencies, 0.5),
                p99: percentile(latencies, 0.99), drops: expected - received)
        }
    }

    static func results(quick: Bool, rounds: Int) -> [BenchResult] {
        var results: [BenchResult] = []
        let seconds = quick ? 0.3 : 2.0
        for count in [1, 16, 64, 256] {
            var perEvent: [Double] = []
            var p99: [Double] = []
            for _ in 0..<(quick ? 1 : max(1, rounds - 1)) {
                guard let run = run(devices: count, rate: 1000, seconds: seconds * BenchSize.scale) else { continue }
                perEvent.append(run.nanosecondsPerEvent)
                p99.append(run.p99)
            }
            guard !perEvent.isEmpty else { continue }
            results.append(BenchResult("hid.scale.\(count).ns_per_event", "ns", ours: median(perEvent)))
            results.append(BenchResult("hid.scale.\(count).e2e.p99_us", "µs", ours: median(p99)))
        }
        var drops: [Double] = []
        for _ in 0..<(quick ? 1 : max(1, rounds - 1)) {
            if let run = run(devices: 16, rate: 8000, seconds: seconds * BenchSize.scale) { drops.append(Double(run.drops)) }
        }
        if !drops.isEmpty { results.append(BenchResult("hid.scale.16x8khz.drops", "events", ours: drops.max() ?? 0)) }
        return results
    }

    /// Writes one mouse frame (REL_X `value`, SYN_REPORT) to `fd` as an evdev node hands it
    /// out, stamped with CLOCK_MONOTONIC now as the kernel stamps events; `buffer` holds
    /// two records.
    static func writeMotion(to fd: Int32, value: Int32, through buffer: UnsafeMutableRawPointer) {
        let now = MonotonicInstant.now.nanoseconds
        let seconds = Int64(now / 1_000_000_000)
        let microseconds = Int32(now % 1_000_000_000 / 1000)
        InputEvent(seconds: seconds, microseconds: microseconds, type: Evdev.EV_REL, code: Evdev.REL_X, value: value)
            .store(to: buffer)
        InputEvent(seconds: seconds, microseconds: microseconds, type: Evdev.EV_SYN, code: Evdev.SYN_REPORT, value: 0)
            .store(to: buffer + InputEvent.size)
        _ = write(fd, buffer, 2 * InputEvent.size)
    }
}
