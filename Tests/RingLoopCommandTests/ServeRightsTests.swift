import Foundation
import Glibc
import RingLoopTestSupport
import Testing

/// `ringloop serve` with a second user on the machine (`nobody`, uid 65534): each right is
/// its own grant, and one user cannot take every client slot.
@Suite("ringloop serve: rights and shares of other users", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct ServeRightsTests {
    static func uniqueName(_ base: String) -> String { "test.rights.\(base).\(getpid()).\(UInt32.random(in: 0...UInt32.max))" }

    /// `ringloop` with `arguments`, run as uid and gid 65534 (nobody) with no groups.
    static func asNobody(_ arguments: [String]) throws -> Spawned {
        try Spawned(
            "/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "--", ringloop] + arguments,
            directory: repository)
    }

    @Test(
        "--allow-uid alone: nobody attaches, asks for the focus and to observe keyboards, and gets no keystroke and no focus; --observe-uid does not open keyboards"
    )
    func attachIsNotObserve() throws {
        let name = Self.uniqueName("grants")
        // KEY_A = 30, KEY_B = 48: typed while root's monitor has the focus.
        let recording = try keyboardRecording([(0.3, 30, 1), (0.35, 30, 0), (0.6, 48, 1), (0.65, 48, 0)])
        defer { unlink(recording) }
        let server = try Spawned(
            ringloop, ["serve", name, recording, "--json", "--wait-clients", "2", "--allow-uid", "65534", "--observe-uid", "65534"],
            directory: repository)
        #expect(server.waitFor("\"serving\""), "\(server.error)")
        let owner = try Spawned(ringloop, ["monitor", "--server", name, "--json"], directory: repository)
        #expect(waitUntil(timeout: .seconds(20)) { jsonLines(server.output, kind: "attached").count == 1 }, "\(server.output)")
        // The default focus on attach (newest) and its own request would both give it the
        // focus; its subscription would give it every keystroke.
        let neighbour = try Self.asNobody(["monitor", "--server", name, "--json", "--request-focus", "--observe", "keyboard,pointer"])
        #expect(
            waitUntil(timeout: .seconds(20)) { jsonLines(server.output, kind: "attached").count == 2 },
            "\(server.output)\n\(neighbour.error)")
        #expect(waitUntil(timeout: .seconds(30)) { keyLines(owner.output) == ["KEY_A down", "KEY_A up", "KEY_B down", "KEY_B up"] })
        // The devices' removal at the end of the replay reaches every client after the
        // keys: once the neighbour has it, it has had every event it was going to get.
        server.signal(SIGTERM)
        #expect(server.finish(timeout: .seconds(20)) == 0, "\(server.error)")
        #expect(waitUntil(timeout: .seconds(20)) { jsonLines(neighbour.output, kind: "deviceRemoved").count == 1 }, "\(neighbour.output)")
        #expect(keyLines(neighbour.output).isEmpty, "nobody saw keys: \(neighbour.output)")
        #expect(jsonLines(neighbour.output, kind: "deviceAdded").count == 1)
        let attached = jsonLines(server.output, kind: "attached").compactMap { $0["client"] as? [String: Any] }
        let nobodyID = attached.first { $0["uid"] as? Int == 65534 }?["id"] as? Int
        #expect(nobodyID != nil, "\(server.output)")
        #expect(!jsonLines(server.output, kind: "focus").contains { $0["to"] as? Int == nobodyID }, "\(server.output)")
        for client in [owner, neighbour] {
            client.signal(SIGTERM)
            #expect(client.finish(timeout: .seconds(20)) == 0, "\(client.error)")
        }
    }

    @Test("--observe-keyboards-uid lets nobody observe keystrokes without the focus; --focus-uid lets it take the focus by asking")
    func grantsGiven() throws {
        let name = Self.uniqueName("given")
        let recording = try keyboardRecording([(0.3, 30, 1), (0.35, 30, 0)])
        defer { unlink(recording) }
        let server = try Spawned(
            ringloop,
            [
                "serve", name, recording, "--json", "--wait-clients", "2", "--allow-uid", "65534", "--focus-uid", "65534",
                "--observe-keyboards-uid", "65534", "--focus", "first",
            ],
            directory: repository)
        #expect(server.waitFor("\"serving\""), "\(server.error)")
        let owner = try Spawned(ringloop, ["monitor", "--server", name, "--json"], directory: repository)
        #expect(waitUntil(timeout: .seconds(20)) { jsonLines(server.output, kind: "attached").count == 1 }, "\(server.output)")
        let neighbour = try Self.asNobody(["monitor", "--server", name, "--json", "--observe", "keyboard"])
        #expect(waitUntil(timeout: .seconds(30)) { keyLines(neighbour.output) == ["KEY_A down", "KEY_A up"] }, "\(neighbour.output)")
        #expect(waitUntil(timeout: .seconds(30)) { keyLines(owner.output) == ["KEY_A down", "KEY_A up"] }, "\(owner.output)")
        let asking = try Self.asNobody(["monitor", "--server", name, "--json", "--request-focus"])
        #expect(waitUntil(timeout: .seconds(20)) { jsonLines(server.output, kind: "attached").count == 3 }, "\(asking.error)")
        let askingID = jsonLines(server.output, kind: "attached").last.flatMap { ($0["client"] as? [String: Any])?["id"] as? Int }
        #expect(
            waitUntil(timeout: .seconds(20)) { jsonLines(server.output, kind: "focus").contains { $0["to"] as? Int == askingID } },
            "\(server.output)")
        for client in [owner, neighbour, asking] {
            client.signal(SIGTERM)
            #expect(client.finish(timeout: .seconds(20)) == 0, "\(client.error)")
        }
        server.signal(SIGTERM)
        #expect(server.finish(timeout: .seconds(20)) == 0, "\(server.error)")
    }

    @Test("shares: nobody gets its share of the slots and is refused past it, saying why; root attaches while nobody holds its share")
    func sharesPerUser() throws {
        let name = Self.uniqueName("shares")
        let recording = try keyboardRecording([(0.3, 30, 1), (0.35, 30, 0)])
        defer { unlink(recording) }
        let server = try Spawned(
            ringloop, ["serve", name, recording, "--json", "--allow-uid", "65534", "--max-clients", "4", "--max-clients-per-user", "2"],
            directory: repository)
        #expect(server.waitFor("\"serving\""), "\(server.error)")
        // Four of nobody's: two attach; the other two are refused, and monitor says why.
        var neighbours: [Spawned] = []
        for _ in 0..<4 { neighbours.append(try Self.asNobody(["monitor", "--server", name, "--json"])) }
        #expect(
            waitUntil(timeout: .seconds(30)) { neighbours.filter(\.exited).count == 2 }, "\(neighbours.map(\.error))\n\(server.output)")
        let refused = neighbours.filter(\.exited)
        for client in refused {
            #expect(client.finish(timeout: .seconds(20)) == 69)
            #expect(client.error.contains("uid 65534 has 2 clients, its share (at most 2 a user)"), "\(client.error)")
        }
        #expect(jsonLines(server.output, kind: "attached").count == 2)
        // The server's own user still has room (four slots, two of them nobody's).
        let owner = try Spawned(ringloop, ["monitor", "--server", name, "--json"], directory: repository)
        #expect(waitUntil(timeout: .seconds(20)) { jsonLines(server.output, kind: "attached").count == 3 }, "\(owner.error)")
        for client in neighbours.filter({ !$0.exited }) + [owner] {
            client.signal(SIGTERM)
            #expect(client.finish(timeout: .seconds(20)) == 0, "\(client.error)")
        }
        server.signal(SIGTERM)
        #expect(server.finish(timeout: .seconds(20)) == 0, "\(server.error)")
    }
}
