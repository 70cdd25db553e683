import Glibc
import SystemPackage
import Testing

@testable import RingLoop

/// Adding and removing items must not grow with the number of items in the mode: closing
/// n connections cost O(n²) while removal scanned every source. These compare the cost of
/// removing n items with the cost of adding them, in the same test: a complexity check
/// (a scan makes removal hundreds of times dearer at this size), not a speed limit.
@Suite("Removing items is as cheap as adding them")
struct RemovalCostTests {
    static let count = 20_000

    /// Nanoseconds of this thread's CPU time `body` takes: not the wall clock, which counts
    /// the time the thread waits descheduled on a loaded machine into whichever of the two
    /// measures it falls in.
    static func time(_ body: () -> Void) -> UInt64 {
        let start = threadCPUNanoseconds()
        body()
        return threadCPUNanoseconds() - start
    }

    static func threadCPUNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    @Test("20,000 channels' port sources: removing them all costs less than 10 × adding them")
    func portSources() {
        onFreshLoopThread {
            let loop = RingRunLoop.current
            let channels = (0..<Self.count).map { _ in
                LoopIOChannel(fileDescriptor: FileDescriptor(rawValue: 0), loop: loop, ownsDescriptor: false)
            }
            let adding = Self.time { for channel in channels { loop.add(channel.source, to: .default) } }
            #expect(loop.itemCount(in: .default) == Self.count)
            // Removed in the order they were added: the order a scan finds last.
            let removing = Self.time { for channel in channels { loop.remove(channel.source, from: .default) } }
            #expect(loop.itemCount(in: .default) == 0)
            #expect(removing < 10 * adding, "adding \(adding) ns, removing \(removing) ns")
        }
    }

    @Test("20,000 version-0 sources: removing them all costs less than 10 × adding them, and the rest still perform")
    func sources() {
        onFreshLoopThread {
            let loop = RingRunLoop.current
            let performed = ThreadLock<[Int]>([])
            let sources = (0..<Self.count).map { index in LoopSource { performed.withLock { $0.append(index) } } }
            let adding = Self.time { for source in sources { loop.add(source, to: .default) } }
            let removing = Self.time { for source in sources.dropLast(3) { loop.remove(source, from: .default) } }
            #expect(removing < 10 * adding, "adding \(adding) ns, removing \(removing) ns")
            #expect(loop.itemCount(in: .default) == 3)
            for source in sources { source.signal() }
            _ = loop.run(mode: .default, for: .zero)
            #expect(performed.withLock { $0.sorted() } == Array((Self.count - 3)..<Self.count))
        }
    }
}
