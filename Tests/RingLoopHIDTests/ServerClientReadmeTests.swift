import Glibc
import RingLoop
import RingLoopEvdev
import RingLoopTestSupport
import Testing

@testable import RingLoopDevices
@testable import RingLoopHID

/// What the example prints, kept for the checks below instead of written among the test
/// results (this `print` shadows the standard library's in this file).
private let printed = PrintedLines()
private func print(_ items: Any..., separator: String = " ", terminator: String = "\n") {
    printed.append(items, separator: separator)
}

/// README's event-server client, verbatim inside a function (the server's name unique to
/// the test, its endless run bounded), attached to an event server on a thread of this
/// process with a keyboard.
@Suite("README's event-server client")
struct ServerClientReadmeTests {
    @Test("The client example attaches, takes the focus and prints the server's keys, as README says")
    func clientExample() throws {
        let name = ServerFocusTests.uniqueName("readme")
        let server = try ServerOnThread(name: name, devices: [try ServerTestDevices.keyboard()])
        defer { server.stop() }
        try onFreshThread {
            let system = HIDEventSystem(configuration: .init(server: name, requestsFocus: true))
            system.addHandler(kinds: [.key, .digitizer]) { event in
                print(event.kind, event.timestamp)  // while this client has the focus
                return .pass
            }
            do { try system.start() } catch { print("\(error)") }  // attaches again when the server comes back
            // What the test adds: the server's keys once attached, a bounded run.
            let loop = RingRunLoop.current
            #expect(runUntil(loop) { system.isAttachedToServer && system.isFocused })
            server.write([TestFrames.key(Evdev.KEY_A, down: true), TestFrames.key(Evdev.KEY_A, down: false)], device: 0)
            #expect(runUntil(loop) { printed.lines.count >= 2 })
            system.stop()
        }
        #expect(printed.lines.count == 2 && printed.lines.allSatisfy { $0.hasPrefix("key ") }, "\(printed.lines)")
    }

    @Test("README's event-server client is the one this file runs")
    func readmeMatches() throws {
        let lines = try #require(ReadmeExample.lines(after: "### An event-server client"))
        let ran = ReadmeExample.sourceLines(#filePath)
        // Its own lines, except the server's name (unique here) and the endless run.
        let checked = lines.filter {
            !$0.isEmpty && !$0.hasPrefix("import ") && !$0.hasPrefix("let system = HIDEventSystem")
                && !$0.hasPrefix("RingRunLoop.current.run()")
        }
        #expect(checked.count >= 5)
        for line in checked {
            let tested = ran.contains(line)
            #expect(tested, "README line not in the tested example: \(line)")
        }
        #expect(lines.contains("let system = HIDEventSystem(configuration: .init(server: \"panel\", requestsFocus: true))"))
    }
}
