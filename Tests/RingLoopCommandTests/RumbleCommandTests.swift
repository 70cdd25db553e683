import Foundation
import RingLoopEvdev
import RingLoopTestSupport
import Testing

@testable import RingLoopDevices

extension CommandTests {
    @Test(
        "rumble uploads, plays, stops and erases one FF_RUMBLE effect on a hosted virtual pad, and refuses a device without FF_RUMBLE",
        .enabled(if: FUSEHere.usable, FUSEHere.missing))
    func rumbleOnAVirtualPad() throws {
        let pad = try #require(
            try Recording.load(contentsOf: repository + "/devices/kernel/dualshock4-usb-gamepad.evemu").description)
        let keyboard = try #require(try Recording.load(contentsOf: repository + "/devices/keyboard.evemu").description)
        try withDeviceFolder { folder in
            let node = try folder.addDevice(pad)
            let result = try runCommand(["rumble", node.path, "--strong", "1", "--weak", "0.5", "--duration", "40"], timeout: 30)
            #expect(result.status == 0, "\(result.error)")
            #expect(result.output == "rumble: effect 0 of 16, strong 65535 weak 32768 for 40 ms\n")
            let effect = RumbleEffect(strong: 65535, weak: 32768, milliseconds: 40)
            #expect(node.forceFeedbackRequests == [.upload(id: 0, effect), .play(id: 0, count: 1), .stop(id: 0), .erase(id: 0)])
            #expect(node.rumblesPlaying.isEmpty)

            let plain = try folder.addDevice(keyboard)
            let refused = try runCommand(["rumble", plain.path, "--strong", "1"], timeout: 30)
            #expect(refused.status == 69)
            #expect(refused.error.contains("no FF_RUMBLE (force feedback: none)"), "\(refused.error)")
            #expect(plain.forceFeedbackRequests.isEmpty)
        }
    }
}
