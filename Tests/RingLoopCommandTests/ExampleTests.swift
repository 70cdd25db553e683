import Foundation
import RingLoopTestSupport
import Testing

/// The examples under Examples/, built with the package, run as a user would.
@Suite("Examples")
struct ExampleTests {
    static func example(_ name: String) -> String {
        URL(fileURLWithPath: ringloop).deletingLastPathComponent().appendingPathComponent(name).path
    }

    @Test("tcp-echo: the server echoes what the client sends and stops cleanly on SIGTERM; a refused connection is a typed error")
    func tcpEcho() throws {
        let server = try Spawned(Self.example("tcp-echo"), ["serve", "--port", "0"])
        #expect(server.waitFor("listening on 127.0.0.1:"), "\(server.output)\(server.error)")
        let port = try #require(
            server.output.split(separator: "\n").first?.split(separator: ":").last.map { String($0) })
        let client = try Spawned(Self.example("tcp-echo"), ["send", "--port", port, "hello", "second message"])
        #expect(client.finish(timeout: .seconds(30)) == 0, "\(client.error)")
        #expect(client.output == "hello\nsecond message\n")
        server.signal(SIGTERM)
        #expect(server.finish(timeout: .seconds(30)) == 0, "\(server.error)")
        #expect(server.output.hasSuffix("served 1 connections, 19 bytes\n"), "\(server.output)")
        // A port nobody listens on any more: a typed failure, exit status 1, no usage text.
        let refused = try Spawned(Self.example("tcp-echo"), ["send", "--port", port, "x"])
        #expect(refused.finish(timeout: .seconds(30)) == 1)
        #expect(refused.error == "Error: 127.0.0.1:\(port): connection refused\n")
    }

    @Test("custom-source: the guide's command-buffer source gets every command in order, then ends")
    func customSource() throws {
        let run = try Spawned(Self.example("custom-source"), ["4"])
        #expect(run.finish(timeout: .seconds(30)) == 0, "\(run.error)")
        #expect(
            run.output == """
                main: worker source registered
                worker: command 1 data-1
                worker: command 2 data-2
                worker: command 3 data-3
                worker: command 4 data-4
                worker: command 0 quit
                worker: source removed from kCFRunLoopDefaultMode
                main: worker finished

                """)
        let wrong = try Spawned(Self.example("custom-source"), ["0"])
        #expect(wrong.finish(timeout: .seconds(30)) == 64)
        #expect(wrong.output.contains("COUNT: 1 to 1000"))
    }

    @Test("observer-trace: the six activities in order, a nested run inside a timer's callout, ended by a stop")
    func observerTrace() throws {
        let run = try Spawned(Self.example("observer-trace"), [])
        #expect(run.finish(timeout: .seconds(30)) == 0, "\(run.error)")
        let lines = run.output.split(separator: "\n").map(String.init)
        #expect(Array(lines.prefix(5)) == ["entry", "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting"])
        let timer = try #require(lines.firstIndex(of: "timer: run the loop again, in mode nested"))
        #expect(
            Array(lines[timer...].prefix(8)) == [
                "timer: run the loop again, in mode nested", "  entry", "  beforeTimers", "  beforeSources",
                "  source: stop the nested run", "  exit", "timer: the nested run returned stopped", "beforeTimers",
            ])
        #expect(Array(lines.suffix(2)) == ["exit", "outer run returned timedOut"])
    }

    @Test(
        "kiosk: touches, keys and gestures of the hosted recordings reach it while its 60 Hz timer runs, in the tracking mode too; SIGTERM ends it cleanly",
        .enabled(if: FUSEHere.usable, FUSEHere.missing))
    func kiosk() throws {
        let run = try Spawned(Self.example("kiosk"), [], directory: repository)
        #expect(run.finish(timeout: .seconds(60)) == 0, "\(run.error)")
        let lines = run.output.split(separator: "\n").map(String.init)
        #expect(lines.contains("touch 100 began at (1600, 900)") && lines.contains("key KEY_H down"), "\(run.output)")
        // The recording's gestures: a tap, a two-finger drag up the screen, a pinch out.
        #expect(
            lines.contains("tap at (123.08, 69.23) mm") && lines.contains("scrolled by (0.0, -69.23) mm")
                && lines.contains("zoomed to 6.5x"), "\(run.output)")
        let summary = try #require(lines.last)
        #expect(summary.hasSuffix("22 keys, 68 touch frames, gestures: scroll 1, tap 1, zoom 1"), "\(summary)")
        let words = summary.split(separator: " ")
        let frames = Int(words[1]) ?? 0
        #expect(frames > 30, "the display timer ran (\(frames) frames)")
        let whileScrolling = Int(words[6].dropFirst()) ?? 0
        #expect(whileScrolling > 0, "the display timer ran in the tracking mode, during the scroll: \(summary)")

        let waiting = try Spawned(Self.example("kiosk"), ["--until-signal"], directory: repository)
        #expect(waiting.waitFor("replay done", timeout: .seconds(60)), "\(waiting.output)")
        waiting.signal(SIGTERM)
        #expect(waiting.finish(timeout: .seconds(30)) == 0, "\(waiting.error)")
        #expect(waiting.output.contains("kiosk: signal 15, shutting down\n"))
        #expect(waiting.output.hasSuffix("22 keys, 68 touch frames, gestures: scroll 1, tap 1, zoom 1\n"), "\(waiting.output)")
        #expect(access("/tmp/kiosk-\(waiting.pid)", F_OK) != 0, "its virtual devices' folder is gone")
    }

    @Test("worker-thread: jobs performed in order, one waited for, delayed ones cancelled by target, one delayed run")
    func workerThread() throws {
        let run = try Spawned(Self.example("worker-thread"), [])
        #expect(run.finish(timeout: .seconds(30)) == 0, "\(run.error)")
        #expect(
            run.output == """
                worker: job 1
                worker: job 2
                worker: job 3
                worker: job 4, after 3 others
                main: job 4 is done
                main: cancelled 2 delayed jobs
                worker: delayed job
                main: the delayed job told me
                main: worker ended

                """)
    }
}

extension ExampleTests {
    @Test(
        "kiosk-server: two app processes share one touchscreen and keyboard; keys and taps reach the app in front, F1 brings the other; outside the package's folder it needs --recordings"
    )
    func kioskServer() throws {
        let lost = try Spawned(Self.example("kiosk-server"), [], directory: "/tmp")
        #expect(lost.finish(timeout: .seconds(30)) == 66)
        #expect(
            lost.error
                == "kiosk-server: devices/touchscreen-multitouch.evemu: No such file or directory (run from the package's folder, or give --recordings DIR)\n",
            "\(lost.error)")
        let run = try Spawned(Self.example("kiosk-server"), ["--recordings", repository + "/devices"], directory: "/tmp")
        #expect(run.finish(timeout: .seconds(90)) == 0, "\(run.output)\n\(run.error)")
        let lines = run.output.split(separator: "\n").map(String.init)
        func said(_ title: String) -> [String] {
            lines.filter { $0.hasPrefix(title + ": ") }.map { String($0.dropFirst(title.count + 2)) }
        }
        let left = said("Left").filter { $0.hasPrefix("typed ") || $0.hasPrefix("tap") || $0.hasPrefix("in ") }
        let right = said("Right").filter { $0.hasPrefix("typed ") || $0.hasPrefix("tap") || $0.hasPrefix("in ") }
        #expect(left.filter { $0.hasPrefix("typed ") } == ["typed h", "typed i", "typed o", "typed k", "typed \"hiok\""], "\(run.output)")
        #expect(right.filter { $0.hasPrefix("typed ") } == ["typed y", "typed o", "typed \"yo\""], "\(run.output)")
        #expect(left.filter { $0.hasPrefix("tap") }.count == 1 && right.filter { $0.hasPrefix("tap") }.count == 1, "\(run.output)")
        #expect(Array(left.filter { $0.hasPrefix("in ") }.prefix(3)) == ["in front", "in the back", "in front"], "\(run.output)")
        #expect(Array(right.filter { $0.hasPrefix("in ") }.prefix(2)) == ["in front", "in the back"], "\(run.output)")
        #expect(!run.output.contains("typed f"), "the server consumed F1")
        let focus = lines.filter { $0.hasPrefix("server: focus to") }
        #expect(Array(focus.prefix(3)) == ["server: focus to Left", "server: focus to Right", "server: focus to Left"], "\(run.output)")
        #expect(lines.contains("server: Left detached") && lines.contains("server: Right detached"), "\(run.output)")
    }

    @Test(
        "kiosk outside the package's folder ends with one line and status 66, not a backtrace; --recordings finds them",
        .enabled(if: FUSEHere.usable, FUSEHere.missing))
    func kioskElsewhere() throws {
        let lost = try Spawned(Self.example("kiosk"), [], directory: "/tmp")
        #expect(lost.finish(timeout: .seconds(30)) == 66)
        #expect(
            lost.error
                == "kiosk: devices/touchscreen-multitouch.evemu: No such file or directory (run from the package's folder, or give --recordings DIR)\n",
            "\(lost.error)")
        let found = try Spawned(Self.example("kiosk"), ["--recordings", repository + "/devices"], directory: "/tmp")
        #expect(found.finish(timeout: .seconds(60)) == 0, "\(found.error)")
        #expect(found.output.contains("kiosk: ") && found.output.contains("frames at 60 Hz"), "\(found.output)")
    }
}
