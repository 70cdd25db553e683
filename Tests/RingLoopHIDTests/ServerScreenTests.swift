import RingLoop
import RingLoopEvdev
import RingLoopTestSupport
import Testing

@testable import RingLoopHID

@Suite("The event server: screen locations")
struct ServerScreenTests {
    @Test("a server with a screen sends its clients contacts with their locations in the screen's pixels")
    func clientsGetLocations() throws {
        let name = ServerFocusTests.uniqueName("screens")
        let screen = try ScreenDescription(parsing: "1080x1920@90")
        let server = try ServerOnThread(
            name: name, devices: [try ServerTestDevices.touchscreen()],
            configure: { $0.screens = DeviceSettingsResolver(screens: [screen]) })
        defer { server.stop() }
        try onFreshThread {
            let loop = RingRunLoop.current
            let client = try RecordingClient(server: name, name: "kiosk")
            #expect(runUntil(loop) { client.count(.deviceAdded) == 1 })
            // The ELAN panel's axes are 0…3200 and 0…1800: (800, 1350) is (0.25, 0.75);
            // libinput's 90° matrix takes it to (1 − 0.75, 0.25) = (0.25, 0.25), so (270, 480) px.
            server.write([TestFrames.touch(slot: 0, id: 5, x: 800, y: 1350, first: true)], device: 0)
            #expect(runUntil(loop) { !client.phases(5).isEmpty })
            let contact = client.events.compactMap { event -> Contact? in
                guard case .digitizer(let frame) = event.payload else { return nil }
                return frame.contacts.first { $0.trackingID == 5 }
            }.first
            let location = try #require(contact?.screenLocation)
            #expect(abs(location.x - 270) < 1e-9 && abs(location.y - 480) < 1e-9, "\(location)")
            client.system.stop()
        }
    }
}
