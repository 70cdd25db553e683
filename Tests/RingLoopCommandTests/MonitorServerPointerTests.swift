import Foundation
import Glibc
import RingLoopTestSupport
import Testing

/// `ringloop monitor --server` prints the pointer events as its server made them: the
/// server's pointer stage accelerates the motion once, and the client does not again.
@Suite("ringloop monitor --server and the server's pointer", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct MonitorServerPointerTests {
    static let touchpads = "devices/real/evemu-devices/touchpads/"
    /// A real Synaptics pad's finger moving for 4.6 s, on its own description.
    static let recording = [
        touchpads + "SynPS2 Synaptics TouchPad.leftmove.events", "--description", touchpads + "SynPS2 Synaptics TouchPad.desc",
    ]
    /// The touchpad as a pointer, accelerated by the flat profile (a factor that does not
    /// depend on the replay's timing, so two replays give the same deltas).
    static let pointer = ["--touchpad", "--accel-profile", "flat", "--accel-speed", "0.5"]

    /// Each pointer motion's raw and accelerated deltas, in order.
    static func motions(_ output: String) -> [String] {
        jsonLines(output, kind: "pointerMotion").map {
            "\($0["dx"] ?? "-") \($0["dy"] ?? "-") \($0["acceleratedDX"] ?? "-") \($0["acceleratedDY"] ?? "-")"
        }
    }

    @Test(
        "a real touchpad's motion served with --touchpad --accel-profile flat reaches a monitor --server --screen client as the same chain makes it in one process: accelerated once"
    )
    func acceleratedOnce() throws {
        let local = try runCommand(
            ["monitor", "--json", "--filter", "pointerMotion", "--speed", "4"] + Self.recording + Self.pointer, timeout: 120)
        #expect(local.status == 0, "\(local.error)")
        let expected = Self.motions(local.output)
        #expect(expected.count > 100, "\(expected.count) motions in one process")
        let name = ServeCommandTests.uniqueName("pointer")
        let server = try Spawned(
            ringloop, ["serve", name, "--wait-clients", "1", "--speed", "4", "--json"] + Self.recording + Self.pointer,
            directory: repository)
        #expect(server.waitFor("\"serving\""), "\(server.error)")
        // --screen needs the cursor: it gave the client a pointer stage of its own, which
        // accelerated the server's accelerated deltas again (0.50 for the first motion's
        // 6.05, by libinput's default adaptive profile).
        let client = try Spawned(
            ringloop, ["monitor", "--server", name, "--screen", "1920x1080", "--json", "--filter", "pointerMotion"],
            directory: repository)
        #expect(
            waitUntil(timeout: .seconds(60)) { Self.motions(client.output).count >= expected.count },
            "\(Self.motions(client.output).count) of \(expected.count) motions\n\(client.error)\n\(server.output)")
        let served = Self.motions(client.output)
        let difference = zip(served, expected).enumerated().first { $0.element.0 != $0.element.1 }
        let differs = difference.map { "motion \($0.offset): served \($0.element.0), in one process \($0.element.1)" } ?? "none"
        #expect(
            served.count == expected.count && difference == nil,
            "\(served.count) motions served, \(expected.count) in one process; first difference: \(differs)")
        client.signal(SIGTERM)
        #expect(client.finish(timeout: .seconds(20)) == 0, "\(client.error)")
        server.signal(SIGTERM)
        #expect(server.finish(timeout: .seconds(20)) == 0, "\(server.error)")
    }

    @Test(
        "monitor --server refuses pointer and touchpad options, which are the server's",
        arguments: [
            ["--accel-profile", "flat"], ["--natural-scroll"], ["--no-debounce"], ["--touchpad"], ["--tap"],
        ])
    func refusesTheServersOptions(arguments: [String]) throws {
        let result = try runCommand(["monitor", "--server", "x"] + arguments, timeout: 20)
        #expect(result.status == 64, "\(result.error)")
        #expect(result.error.contains("give them to ringloop serve"), "\(result.error)")
        #expect(result.output.isEmpty)
    }
}
