import Glibc
import RingLoop
import RingLoopEvdev
import RingLoopTestSupport
import Testing

@testable import RingLoopDevices
@testable import RingLoopHID

/// Recognizers measuring a touchscreen in its screen's points: the real swipe recordings
/// of devices/gestures on a screen rotated 90° clockwise. libinput's 90° matrix takes a
/// normalized (x, y) to (1 − y, x), so the panel's up is the screen's right, its right the
/// screen's down, its down the screen's left and its left the screen's up.
@Suite("Gestures in screen points", .enabled(if: FUSEHere.usable, FUSEHere.missing), .disabled(if: runningUnderAddressSanitizer))
struct GestureScreenPointsTests {
    /// The swipes `recording` gives with the UIKit set, on `screen`, in screen points or not.
    static func swipes(_ name: String, screen: String?, inPoints: Bool) throws -> [GestureEvent] {
        let recording = try loadGestureRecording(name)
        return try onFreshThread {
            let loop = RingRunLoop.current
            let system = HIDEventSystem(configuration: .init(deviceDirectory: "/tmp", nodeNames: []), loop: loop)
            var gestures: [GestureEvent] = []
            for recognizer in GestureSet.uikit.make() {
                recognizer.addAction { gestures.append($0) }
                system.addGestureRecognizer(recognizer)
            }
            if let screen { system.setScreens(DeviceSettingsResolver(screens: [try ScreenDescription(parsing: screen)])) }
            system.gesturesInScreenPoints = inPoints
            try system.start()
            defer { system.stop() }
            try playGestureStream(recording, to: system, loop: loop)
            return gestures.filter { $0.direction != nil && $0.state == .recognized }
        }
    }

    @Test(
        "a swipe on a panel under a screen rotated 90°: the screen's direction in points, the panel's without the option",
        arguments: [
            ("touchscreen-swipe-up", SwipeGestureRecognizer.Direction.up, SwipeGestureRecognizer.Direction.right),
            ("touchscreen-swipe-right", .right, .down), ("touchscreen-swipe-down", .down, .left), ("touchscreen-swipe-left", .left, .up),
        ])
    func rotatedSwipes(name: String, onPanel: SwipeGestureRecognizer.Direction, onScreen: SwipeGestureRecognizer.Direction) throws {
        let panel = try Self.swipes(name, screen: "1080x1920@90", inPoints: false)
        #expect(panel.map(\.direction) == [onPanel], "\(panel)")
        #expect(panel.allSatisfy { $0.surface.unit == .millimetres })
        let screen = try Self.swipes(name, screen: "1080x1920@90", inPoints: true)
        #expect(screen.map(\.direction) == [onScreen], "\(screen)")
        for swipe in screen {
            #expect(swipe.surface.unit == .screenPoints && swipe.surface.width == 1080 && swipe.surface.height == 1920)
            let location = swipe.values.location
            #expect(location.x >= 0 && location.x <= 1080 && location.y >= 0 && location.y <= 1920, "\(location)")
            // The translation is along the screen's direction, in pixels: more than the 12 mm
            // minimum at the panel's own scale.
            let along = onScreen == .right || onScreen == .left ? abs(swipe.values.translation.x) : abs(swipe.values.translation.y)
            #expect(along >= 12 * swipe.surface.pointsPerMillimetre, "\(swipe.values.translation)")
        }
        // Asked for points with no screen: the panel's own millimetres.
        let unmapped = try Self.swipes(name, screen: nil, inPoints: true)
        #expect(unmapped.map(\.direction) == [onPanel] && unmapped.allSatisfy { $0.surface.unit == .millimetres })
    }
}
