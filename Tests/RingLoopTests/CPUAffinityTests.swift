import RingLoopTestSupport
import Synchronization
import Testing

@testable import RingLoop

@Suite("CPU affinity")
struct CPUAffinityTests {
    @Test("A LoopThread given CPUs runs only there; threads it starts inherit them")
    func loopThreadPinned() throws {
        let first = try #require(CPUAffinity.onlineCPUs().first)
        let worker = try LoopThread(name: "pinned", cpus: [first])
        defer { worker.stopAndJoin() }
        let seen = ThreadLock<(own: [Int], child: [Int])?>(nil)
        let done = ThreadLock(false)
        worker.perform {
            let child = ThreadLock<[Int]>([])
            PosixThread.start { child.withLock { $0 = CPUAffinity.allowedCPUs() } }.join()
            seen.withLock { $0 = (CPUAffinity.allowedCPUs(), child.withLock { $0 }) }
            done.withLock { $0 = true }
        }
        #expect(waitUntil { done.withLock { $0 } })
        let result = seen.withLock { $0 }
        #expect(result?.own == [first])
        #expect(result?.child == [first])
    }

    @Test("A thread restricted to one CPU can be given all of them back")
    func widenAgain() {
        let before = CPUAffinity.allowedCPUs()
        let outcome = ThreadLock<[[Int]]>([])
        PosixThread.start {
            do {
                try CPUAffinity.restrictCurrentThread(to: [before[0]])
                let narrowed = CPUAffinity.allowedCPUs()
                try CPUAffinity.restrictCurrentThread(to: before)
                outcome.withLock { $0 = [narrowed, CPUAffinity.allowedCPUs()] }
            } catch {
                Issue.record("\(error)")
            }
        }.join()
        #expect(outcome.withLock { $0 } == [[before[0]], before])
    }

    @Test("CPUs that are not online, or none, are refused with the valid ones named", arguments: [[100_000], [-1], []])
    func refused(cpus: [Int]) {
        let online = CPUAffinity.onlineCPUs()
        do {
            _ = try LoopThread(name: "refused", cpus: cpus)
            Issue.record("LoopThread started on \(cpus)")
        } catch {
            #expect(error.requested == cpus)
            #expect(error.available == online)
            let text = error.description
            #expect(text.contains("available: \(online.map(String.init).joined(separator: ", "))"))
            #expect(cpus.isEmpty ? text.contains("no CPU given") : text.contains("\(cpus[0]) not available"))
        }
    }
}
