import Foundation
import Glibc
import RingLoopTestSupport
import Testing

/// `ringloop monitor --server` prints the pointer events as its server made them: the
/// server's pointer stage accelerates the motion once, and the client does not again;
/// given pointer options, the client accelerates it once by its own, from the
/// unaccelerated deltas the server sends.
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

    /// Each pointer motion's raw, accelerated and unaccelerated deltas, in order.
    static func motions(_ output: String) -> [String] {
        jsonLines(output, kind: "pointerMotion").map {
            "\($0["dx"] ?? "-") \($0["dy"] ?? "-") \($0["acceleratedDX"] ?? "-") \($0["acceleratedDY"] ?? "-")"
                + " \($0["unacceleratedDX"] ?? "-") \($0["unacceleratedDY"] ?? "-")"
        }
    }

    /// The motions of `serve` with `serverOptions` as a `monitor --server` client with
    /// `clientOptions` prints them, against those of `monitor` in one process with
    /// `localOptions`: the first difference, `nil` where there is none.
    static func servedAgainstLocal(serverOptions: [String], clientOptions: [String], localOptions: [String]) throws -> String? {
        let local = try runCommand(
            ["monitor", "--json", "--filter", "pointerMotion", "--speed", "4"] + recording + localOptions, timeout: 120)
        #expect(local.status == 0, "\(local.error)")
        let expected = motions(local.output)
        #expect(expected.count > 100, "\(expected.count) motions in one process")
        let name = ServeCommandTests.uniqueName("pointer")
        let server = try Spawned(
            ringloop, ["serve", name, "--wait-clients", "1", "--speed", "4", "--json"] + recording + serverOptions,
            directory: repository)
        #expect(server.waitFor("\"serving\""), "\(server.error)")
        let client = try Spawned(
            ringloop, ["monitor", "--server", name, "--json", "--filter", "pointerMotion"] + clientOptions, directory: repository)
        #expect(
            waitUntil(timeout: .seconds(60)) { motions(client.output).count >= expected.count },
            "\(motions(client.output).count) of \(expected.count) motions\n\(client.error)\n\(server.output)")
        let served = motions(client.output)
        client.signal(SIGTERM)
        #expect(client.finish(timeout: .seconds(20)) == 0, "\(client.error)")
        server.signal(SIGTERM)
        #expect(server.finish(timeout: .seconds(20)) == 0, "\(server.error)")
        let difference = zip(served, expected).enumerated().first { $0.element.0 != $0.element.1 }
        if let difference {
            return "motion \(difference.offset): served \(difference.element.0), in one process \(difference.element.1)"
        }
        return served.count == expected.count ? nil : "\(served.count) motions served, \(expected.count) in one process"
    }

    @Test(
        "a real touchpad's motion served with --touchpad --accel-profile flat reaches a monitor --server --screen client as the same chain makes it in one process: accelerated once"
    )
    func acceleratedOnce() throws {
        // --screen needs the cursor: it gave the client a pointer stage of its own, which
        // accelerated the server's accelerated deltas again (0.50 for the first motion's
        // 6.05, by libinput's default adaptive profile). Without pointer options the
        // client leaves the pointer to the server.
        let difference = try Self.servedAgainstLocal(
            serverOptions: Self.pointer, clientOptions: ["--screen", "1920x1080"], localOptions: Self.pointer)
        #expect(difference == nil, "first difference: \(difference ?? "")")
    }

    @Test(
        "a real touchpad's motion served with --touchpad --accel-profile flat --accel-speed -0.75 reaches a monitor --server client with --accel-profile flat --accel-speed 0.5 as monitor --touchpad makes it with the client's options: accelerated once, by the client"
    )
    func clientsOwnPointer() throws {
        let difference = try Self.servedAgainstLocal(
            serverOptions: ["--touchpad", "--accel-profile", "flat", "--accel-speed=-0.75"],
            clientOptions: ["--accel-profile", "flat", "--accel-speed", "0.5"], localOptions: Self.pointer)
        #expect(difference == nil, "first difference: \(difference ?? "")")
    }

    @Test("monitor --server refuses touchpad options, which are the server's", arguments: [["--touchpad"], ["--tap"]])
    func refusesTheServersOptions(arguments: [String]) throws {
        let result = try runCommand(["monitor", "--server", "x"] + arguments, timeout: 20)
        #expect(result.status == 64, "\(result.error)")
        #expect(result.error.contains("give them to ringloop serve"), "\(result.error)")
        #expect(result.output.isEmpty)
    }
}
