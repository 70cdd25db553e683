import Glibc
import RingLoop
import RingLoopEvdev
import RingLoopTestSupport
import SystemPackage
import Testing

@testable import RingLoopHID

@Suite("The screen-mapping stage")
struct ScreenStageTests {
    /// What the handlers saw of tracking id `id`'s contacts.
    final class Seen {
        var contacts: [Contact] = []
        func locations(_ id: Int32) -> [ScreenPoint?] { contacts.filter { $0.trackingID == id }.map(\.screenLocation) }
    }

    @Test("first in the order; handlers see locations; new settings remap an attached device at once; nil takes the stage out")
    func stageInTheChain() throws {
        try onFreshThread {
            let loop = RingRunLoop.current
            let system = StageTests.system(loop: loop)
            let seen = Seen()
            system.addHandler { event in
                if case .digitizer(let frame) = event.payload { seen.contacts += frame.contacts }
                return .pass
            }
            system.addGestureRecognizer(TapGestureRecognizer())
            system.setScreens(DeviceSettingsResolver(screens: [try ScreenDescription(parsing: "1080x1920@90")]))
            #expect(system.stageOrder == ["screen mapping", "gestures", "handlers"])
            try system.start()
            var ends: [Int32] = [0, 0]
            #expect(pipe(&ends) == 0)
            defer { close(ends[1]) }
            let device = try system.attachStream(
                fileDescriptor: FileDescriptor(rawValue: ends[0]), description: try ServerTestDevices.touchscreen())
            // The ELAN panel is 0…3200 × 0…1800: (800, 1350) is (0.25, 0.75); libinput's 90° matrix
            // takes it to (1 − 0.75, 0.25), so (270, 480) px of 1080x1920.
            writeFrames(stamped(TestFrames.touch(slot: 0, id: 5, x: 800, y: 1350, first: true)), to: ends[1])
            #expect(runUntil(loop) { !seen.locations(5).isEmpty })
            #expect(seen.locations(5) == [ScreenPoint(x: 270, y: 480)])
            #expect(system.screenMapping(for: device)?.screen.sizeText == "1080x1920@90")
            // Upright 1920x1080 from now on: (1600, 1350) is (0.5, 0.75) → (960, 810).
            let reports = system.setScreens(DeviceSettingsResolver(screens: [try ScreenDescription(parsing: "1920x1080")]))
            #expect(reports.map(\.line) == ["ELAN Touchscreen → 1920x1080 (screen): screen: the only screen"])
            writeFrames(stamped(TestFrames.touch(slot: 0, id: 5, x: 1600, y: 1350)), to: ends[1])
            #expect(runUntil(loop) { seen.locations(5).count == 2 })
            #expect(seen.locations(5).last == ScreenPoint(x: 960, y: 810))
            system.setScreens(nil)
            #expect(system.stageOrder == ["gestures", "handlers"])
            writeFrames(stamped(TestFrames.lift(slot: 0, last: true)), to: ends[1])
            #expect(runUntil(loop) { seen.locations(5).count == 3 })
            #expect(seen.locations(5).last == .some(nil))
            system.stop()
        }
    }

    @Test("frames kept by a handler keep their own locations while the stage reuses the buffers of frames let go")
    func reusedBuffersDoNotAlias() throws {
        try onFreshThread {
            let loop = RingRunLoop.current
            let system = StageTests.system(loop: loop)
            final class Kept { var frames: [DigitizerFrame] = []; var seen = 0 }
            let kept = Kept()
            system.addHandler { event in
                if case .digitizer(let frame) = event.payload {
                    kept.seen += 1
                    if kept.seen % 3 == 0 { kept.frames.append(frame) }  // the others are let go
                }
                return .pass
            }
            system.setScreens(DeviceSettingsResolver(screens: [try ScreenDescription(parsing: "3200x1800")]))
            try system.start()
            var ends: [Int32] = [0, 0]
            #expect(pipe(&ends) == 0)
            defer { close(ends[1]) }
            _ = try system.attachStream(fileDescriptor: FileDescriptor(rawValue: ends[0]), description: try ServerTestDevices.touchscreen())
            // Upright 3200x1800 on a 0…3200 × 0…1800 panel: a location is the position itself.
            writeFrames(stamped(TestFrames.touch(slot: 0, id: 1, x: 10, y: 20, first: true)), to: ends[1])
            for step in 1...300 {
                writeFrames(stamped(TestFrames.touch(slot: 0, id: 1, x: Int32(10 + step), y: 20)), to: ends[1])
                if step % 50 == 0 { #expect(runUntil(loop) { kept.seen == step + 1 }) }
            }
            #expect(kept.frames.count == 100)
            // The third, sixth… frames (x = 10 + seen − 1): a buffer reused while held would show a later x.
            let keptX: [Int32] = kept.frames.map { $0[0].x }
            let expectedX: [Int32] = (1...100).map { (third: Int) -> Int32 in Int32(9 + 3 * third) }
            #expect(keptX == expectedX)
            for frame in kept.frames {
                let contact = frame[0]
                let location = try #require(contact.screenLocation)
                #expect(abs(location.x - Double(contact.x)) < 1e-9 && abs(location.y - Double(contact.y)) < 1e-9, "\(contact)")
            }
            system.stop()
        }
    }
}
