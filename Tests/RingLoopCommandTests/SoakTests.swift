import Foundation
import RingLoopTestSupport
import Testing

@Suite("Soak: nothing accumulates", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct SoakTests {
    @Test(
        "1,000 devices added, replayed into (keys held, touches live) and removed; 100,000 timers; 10,000 ports: descriptors, heap, resident memory and mounts flat"
    )
    func soak() throws {
        try HeavyTests.oneAtATime {
            let cycles = 1000
            let result = try runCommand(
                ["soak", "--cycles", "\(cycles)", "--timers", "100000", "--ports", "10000"], timeout: runningUnderSanitizer ? 600 : 180)
            #expect(result.status == 0, "\(result.error)")
            let report = try #require(
                try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any], "\(result.output)")
            #expect(report["added"] as? Int == cycles)
            #expect(report["removed"] as? Int == cycles)
            // Removing a device while keys are down releases them for the handlers.
            #expect((report["heldPeak"] as? Int ?? 0) > 0, "the replays hold keys when their device goes")
            #expect(report["heldAfterRemoval"] as? Int == 0)
            #expect(report["dropped"] as? Int == 0)
            #expect(report["timersFired"] as? Int == 100_000)
            #expect(report["portsPerformed"] as? Int == 10_000)
            #expect(report["mountsLeft"] as? Int == 0)
            let phases = try #require(report["phases"] as? [String: [String: Int]])
            for name in ["devices", "timers", "ports"] {
                let phase = try #require(phases[name], "phase \(name)")
                #expect(phase["descriptorsAfter"] == phase["descriptorsBefore"], "\(name): \(phase)")
                // Under a sanitizer (which owns malloc and keeps freed memory in quarantine)
                // heap and resident figures say nothing; LeakSanitizer checks the child at exit.
                if runningUnderSanitizer { continue }
                // Measured after a warm-up. Each removed device once kept ~100 bytes (its roles):
                // 80,000 over the measured cycles; a bounded table's growth stays far below.
                let heap = try #require(phase["heapAfter"].flatMap { after in phase["heapBefore"].map { after - $0 } })
                #expect(heap < 24 * 1024, "\(name): heap grew by \(heap) bytes")
                let resident = try #require(phase["residentAfter"].flatMap { after in phase["residentBefore"].map { after - $0 } })
                #expect(resident < 4 << 20, "\(name): resident memory grew by \(resident) bytes")
            }
        }
    }

    @Test("SIGINT ends a soak early and cleanly, with its report")
    func interrupted() throws {
        let child = try startRingloop(["soak", "--cycles", "1000000"])
        // Wait for the soak to be under way (its folder mounted), then interrupt.
        let mount = "/tmp/ringloop-soak-\(child.pid)"
        #expect(waitUntil(timeout: .seconds(20)) { isMounted(mount) })
        kill(child.pid, SIGINT)
        #expect(child.wait(timeout: .seconds(30)) != nil, "soak ended after SIGINT")
        let status = child.finish(timeout: .zero)
        #expect(status == 0, "\(child.error)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(child.output.utf8)) as? [String: Any])
        #expect(report["interruptedBy"] as? Int == Int(SIGINT))
        #expect(report["mountsLeft"] as? Int == 0)
        #expect(!isMounted(mount))
    }
}
