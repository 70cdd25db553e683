import Foundation
import RingLoopTestSupport
import Testing

@testable import RingLoopDevices

extension CommandTests {
    /// The standard gamepad's events of the Xbox 360 pad's recording, by SDL's names, as
    /// the mapping its SDL GUID selects says: A, the left stick, the right trigger, the
    /// d-pad's hat, Start.
    @Test(
        "monitor --gamepads prints the standard gamepad's events (SDL's names) beside the raw ones, and deviceAdded carries the SDL GUID",
        .enabled(if: FUSEHere.usable, FUSEHere.missing))
    func monitorGamepads() throws {
        let result = try runCommand(["monitor", "devices/gamepad.evemu", "--gamepads", "--json"], timeout: 60)
        #expect(result.status == 0, "\(result.error)")
        let lines = result.output.split(separator: "\n")
        let added = try #require(lines.first { $0.contains("\"kind\":\"deviceAdded\"") })
        // libsdl2 computes this GUID for the same node (GamepadAgainstSDLTests).
        #expect(added.contains("\"sdlGUID\":\"030003f05e0400008e02000014010000\""))
        let gamepad = lines.filter { $0.contains("\"kind\":\"gamepad\"") }
        var controls: [String] = []
        for line in gamepad {
            guard let range = line.range(of: "\"control\":\"") else { continue }
            let name = line[range.upperBound...].prefix { $0 != "\"" }
            if controls.last != String(name) { controls.append(String(name)) }
        }
        #expect(Set(controls).isSuperset(of: ["a", "leftx", "lefty", "righttrigger", "dpright", "start"]), "\(controls)")
        #expect(gamepad.contains { $0.contains("\"control\":\"a\"") && $0.contains("\"raw\":1") && $0.contains("\"value\":1") })
        // The raw events are still there.
        #expect(lines.contains { $0.contains("\"kind\":\"gamepadButton\"") && $0.contains("BTN_SOUTH") })
    }

    @Test(
        "monitor --gamepad-mappings takes the user's line over the bundled one and reports a malformed line with its file and line",
        .enabled(if: FUSEHere.usable, FUSEHere.missing))
    func monitorGamepadMappingsFile() throws {
        let path = "/tmp/ringloop-gamepad-mappings-\(getpid()).txt"
        try """
        # swapped A and B
        030000005e0400008e02000014010000,My Pad,a:b1,b:b0,leftx:a0,lefty:a1,platform:Linux,
        030000005e0400008e02000015010000,Broken,a:c1,platform:Linux,
        """.write(toFile: path, atomically: true, encoding: .utf8)
        defer { unlink(path) }
        let result = try runCommand(["monitor", "devices/gamepad.evemu", "--gamepad-mappings", path], timeout: 60)
        #expect(result.status == 0, "\(result.error)")
        #expect(result.error.contains("\(path):3: 'a' takes bN"), "\(result.error)")
        #expect(result.output.contains(": gamepad b 1.000 (raw 1)"), "BTN_SOUTH is b0, which the user's line calls b")
        #expect(!result.output.contains(": gamepad a "))
        let missing = try runCommand(["monitor", "devices/gamepad.evemu", "--gamepad-mappings", path + ".missing"], timeout: 60)
        #expect(missing.status == 1)
        #expect(missing.error.contains("--gamepad-mappings: \(path).missing: cannot open"), "\(missing.error)")
    }
}

extension CommandTests {
    @Test(
        "devices shows each device's SDL GUID (the one libsdl2 computes) and a gamepad's mapping with how it was found",
        .enabled(if: FUSEHere.usable, FUSEHere.missing))
    func devicesShowSDLIdentity() throws {
        let pad = try #require(
            try Recording.load(contentsOf: repository + "/devices/kernel/dualshock4-usb-gamepad.evemu").description)
        try withDeviceFolder { folder in
            _ = try folder.addDevice(pad)
            let json = try runCommand(["devices", "--directory", folder.path, "--json"], timeout: 30)
            #expect(json.status == 0, "\(json.error)")
            // What SDL_JoystickGetDeviceGUID gives for this node (GamepadAgainstSDLTests).
            #expect(json.output.contains("\"sdlGUID\" : \"0300d0424c050000cc09000000810000\""), "\(json.output)")
            let text = try runCommand(["devices", "--directory", folder.path], timeout: 30)
            #expect(text.output.contains("  sdl guid    0300d0424c050000cc09000000810000\n"))
            #expect(text.output.contains("  sdl mapping PS4 Controller (versionless)"), "\(text.output)")
        }
    }
}

extension ServeCommandTests {
    @Test("serve --gamepads: the server's gamepad layout stage adds the standard events and its client gets them beside the raw ones")
    func serveGamepads() throws {
        let name = Self.uniqueName("gamepads")
        let server = try Spawned(
            ringloop, ["serve", name, "devices/gamepad.evemu", "--gamepads", "--json", "--wait-clients", "1"], directory: repository)
        #expect(server.waitFor("\"serving\""), "\(server.error)")
        let client = try Spawned(ringloop, ["monitor", "--server", name, "--json"], directory: repository)
        #expect(
            waitUntil(timeout: .seconds(30)) { jsonLines(client.output, kind: "gamepad").contains { $0["control"] as? String == "start" } },
            "\(client.output)\n\(client.error)\n\(server.error)")
        let gamepad = jsonLines(client.output, kind: "gamepad")
        #expect(gamepad.contains { $0["control"] as? String == "a" && $0["value"] as? Double == 1 && $0["raw"] as? Int == 1 })
        #expect(gamepad.contains { $0["control"] as? String == "leftx" })
        #expect(jsonLines(client.output, kind: "gamepadButton").count >= 2)
        client.signal(SIGTERM)
        #expect(client.finish(timeout: .seconds(20)) == 0, "\(client.error)")
        server.signal(SIGTERM)
        #expect(server.finish(timeout: .seconds(20)) == 0, "\(server.error)")
    }
}
