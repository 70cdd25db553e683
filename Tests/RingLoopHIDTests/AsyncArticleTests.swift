// The example of the DocC article "Async code on a run loop"
// (Sources/RingLoop/RingLoop.docc/AsyncCodeOnARunLoop.md), verbatim, compiled and run
// against a virtual keyboard; a test below holds the article to this file.
import Foundation
import Glibc
import RingLoop
import RingLoopDevices
import RingLoopEvdev
import RingLoopTestSupport
import Synchronization
import SystemPackage
import Testing

/// Counts key presses of an evdev device and heartbeats of a timer, on one loop.
actor KeyCounter {
    nonisolated let unownedExecutor: UnownedSerialExecutor
    let loop: RingRunLoop
    private let device: Int32
    private(set) var presses = 0
    private(set) var heartbeats = 0

    struct CannotOpen: Error { let path: String; let errno: Int32 }

    init(devicePath: String, on worker: LoopThread) throws {
        device = open(devicePath, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard device >= 0 else { throw CannotOpen(path: devicePath, errno: errno) }
        loop = worker.loop
        unownedExecutor = worker.loop.asUnownedSerialExecutor()
    }

    deinit { close(device) }

    /// Reads the device until `count` keys were pressed, with a heartbeat every 50 ms.
    func run(until count: Int) async {
        let loop = self.loop
        let heartbeat = Task(executorPreference: loop) {
            for await _ in loop.ticks(every: .milliseconds(50)) { await self.beat() }
        }
        defer { heartbeat.cancel() }
        var buffer = [UInt8](repeating: 0, count: InputEvent.size * 64)
        for await _ in loop.readiness(of: FileDescriptor(rawValue: device)) {
            while true {
                let bytes = buffer.withUnsafeMutableBytes { read(device, $0.baseAddress, $0.count) }
                guard bytes > 0 else { break }
                buffer.withUnsafeBytes { raw in
                    for offset in stride(from: 0, to: bytes - InputEvent.size + 1, by: InputEvent.size) {
                        let event = InputEvent(bytes: raw.baseAddress! + offset)
                        if event.type == Evdev.EV_KEY && event.value == 1 { presses += 1 }
                    }
                }
            }
            if presses >= count { return }
        }
    }

    private func beat() { heartbeats += 1 }
}

@Suite("The async article's example", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct AsyncArticleTests {
    @Test("KeyCounter counts a recorded keyboard's presses on a LoopThread, with heartbeats on the same loop")
    func keyCounter() async throws {
        try await onDriverLoop { driver in
            _ = MountLeakCheck.armed
            let recording = try loadRecording("keyboard")
            let expected = recording.events.filter { $0.type == Evdev.EV_KEY && $0.value == 1 }.count
            let path = "/tmp/ringloop-article-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            let folder = try FUSEDeviceFolder(path: path)
            defer { folder.close() }
            let node = try folder.addDevice(recording.description!, bufferSize: 16384, appliesFuzz: false)
            let worker = LoopThread(name: "keys")
            defer { worker.stopAndJoin() }
            let counter = try KeyCounter(devicePath: node.path, on: worker)
            let reading = Task(executorPreference: worker.loop) { await counter.run(until: expected) }
            // The reader is in its loop once the heartbeat has ticked: then play the device.
            let limit = MonotonicInstant.now + .seconds(30)
            while await counter.heartbeats == 0, MonotonicInstant.now < limit { try await driver.clock.sleep(for: .milliseconds(5)) }
            try Replay.play(recording, to: node, speed: .scaled(4))
            await reading.value
            #expect(await counter.presses == expected)
            #expect(await counter.heartbeats >= 1)
        }
    }

    @Test("The article's example is the one this file runs")
    func articleMatches() throws {
        let testFile = URL(fileURLWithPath: #filePath)
        let root = testFile.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let article = try String(
            contentsOf: root.appendingPathComponent("Sources/RingLoop/RingLoop.docc/AsyncCodeOnARunLoop.md"), encoding: .utf8)
        let source = try String(contentsOf: testFile, encoding: .utf8)
        let start = try #require(article.range(of: "```swift\nimport Glibc"))
        let end = try #require(article.range(of: "```", range: start.upperBound..<article.endIndex))
        let lines = article[start.upperBound..<end.lowerBound].split(separator: "\n").map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        let tested = Set(source.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) })
        #expect(lines.count >= 30)
        for line in lines where !line.isEmpty {
            let found = tested.contains(line)
            #expect(found, "article line not in the tested example: \(line)")
        }
    }
}
