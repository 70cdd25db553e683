import Glibc
import RingLoop
import RingLoopTestSupport
import Synchronization
import Testing

@testable import RingLoopDevices
@testable import RingLoopHID

/// What the example prints, kept for the checks below instead of written among the test
/// results (this `print` shadows the standard library's in this file).
private let printed = PrintedLines()
private func print(_ items: Any..., separator: String = " ", terminator: String = "\n") {
    printed.append(items, separator: separator)
}

/// README's "Input in a few lines", verbatim inside a function (its device folder a FUSE
/// one, its endless run bounded), over the bundled keyboard recording.
@Suite("README's input example", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct InputReadmeTests {
    @Test("The input example prints each key with its state and usage and consumes it, as README says")
    func inputExample() throws {
        let later = try onFreshThread { () throws -> Int in
            let path = "/tmp/ringloop-readme-input-\(getpid())"
            let folder = try FUSEDeviceFolder(path: path)
            defer { folder.close() }
            let system = HIDEventSystem(configuration: .init(deviceDirectory: path, shape: .dedicatedThread))
            system.addHandler(kinds: [.key], deviceClasses: [.keyboard]) { event in
                if case .key(let key) = event.payload { print(key.code, key.state, key.usage as Any) }
                return .consumed  // later handlers do not see it
            }
            do { try system.start() } catch {  // enumerates, then follows hotplug (inotify through the ring)
                print("\(error)")  // no /dev/input here: one line, not a backtrace
            }
            // What the test adds: a later handler, the recording, a bounded run.
            var later = 0
            var removed = false
            system.addHandler(kinds: [.key, .deviceRemoved]) { event in
                if event.kind == .key { later += 1 } else { removed = true }
                return .pass
            }
            let loop = RingRunLoop.current
            let recording = try loadRecording("keyboard")
            let node = try folder.addDevice(recording.description!, bufferSize: 65536, appliesFuzz: false)
            #expect(runUntil(loop) { system.devices.count == 1 })
            let finished = Atomic<Bool>(false)
            let player = LoopThread(name: "replay")
            let toPlay = UncheckedBox((recording, node))
            player.perform {
                _ = try? Replay.play(toPlay.value.0, to: toPlay.value.1, speed: .scaled(4))
                finished.store(true, ordering: .releasing)
                loop.wakeUp()
            }
            #expect(runUntil(loop) { finished.load(ordering: .acquiring) })
            player.stopAndJoin()
            #expect(runUntil(loop) { printed.lines.count >= 30 })
            node.remove()
            #expect(runUntil(loop) { removed })
            system.stop()
            return later
        }
        let lines = printed.lines
        #expect(lines.count == 30, "\(lines)")
        #expect(lines.first == "42 down Optional(0x7:0xe1)")  // KEY_LEFTSHIFT, HID usage page 7, usage 0xE1
        #expect(lines.filter { $0.contains(" down ") }.count == 11)
        #expect(lines.filter { $0.contains(" repeat ") }.count == 8)
        #expect(later == 0)
    }

    @Test("README's input example is the one this file runs")
    func readmeMatches() throws {
        let lines = try #require(ReadmeExample.lines(after: "### Input in a few lines"))
        let ran = ReadmeExample.sourceLines(#filePath)
        // Its own lines, except the device folder (FUSE here) and the endless run.
        let checked = lines.filter {
            !$0.isEmpty && !$0.hasPrefix("import ") && !$0.hasPrefix("let system = HIDEventSystem")
                && !$0.hasPrefix("RingRunLoop.current.run()")
        }
        #expect(checked.count >= 6)
        for line in checked {
            let tested = ran.contains(line)
            #expect(tested, "README line not in the tested example: \(line)")
        }
    }
}
