import CLibEvdev
import Foundation
import RingLoopEvdev
import RingLoopTestSupport
import Testing

/// The package's folder (this file is Tests/RingLoopEvdevTests/EvdevTests.swift).
let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().path

/// The `swift` found on `PATH`, as a shell would.
func swiftExecutable() -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin"
    return path.split(separator: ":").map { "\($0)/swift" }.first { access($0, X_OK) == 0 }
}

@Suite("The kernel's evdev interface by name")
struct EvdevTests {
    /// The generated constants and name tables are what the installed headers give: the
    /// generator writes them again into a temporary folder and the files must be the same.
    @Test("The generated constants are what the installed kernel headers say")
    func generatedMatchesHeaders() throws {
        let swift = try #require(swiftExecutable(), "no swift on PATH")
        let folder = NSTemporaryDirectory() + "ringloop-evdev-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let child = try Spawned(swift, ["tools/generate-evdev-codes.swift", "--output", folder], directory: repository)
        #expect(child.finish(timeout: .seconds(300)) == 0, "the generator failed: \(child.error)")
        let generated = repository + "/Sources/RingLoopEvdev/Generated"
        let names = try FileManager.default.contentsOfDirectory(atPath: generated).sorted()
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).sorted() == names)
        for name in names {
            let checkedIn = try String(contentsOfFile: generated + "/" + name, encoding: .utf8)
            let fresh = try String(contentsOfFile: folder + "/" + name, encoding: .utf8)
            #expect(checkedIn == fresh, "\(name) differs from the headers: run swift tools/generate-evdev-codes.swift")
        }
    }

    @Test("Constants have the kernel's values")
    func values() {
        #expect(Evdev.EV_KEY == UInt16(EV_KEY) && Evdev.EV_ABS == UInt16(EV_ABS) && Evdev.EV_FF_STATUS == UInt16(EV_FF_STATUS))
        #expect(Evdev.BTN_TOUCH == UInt16(BTN_TOUCH) && Evdev.BTN_SOUTH == UInt16(BTN_SOUTH) && Evdev.BTN_A == Evdev.BTN_SOUTH)
        #expect(Evdev.ABS_MT_SLOT == UInt16(ABS_MT_SLOT) && Evdev.ABS_MT_TOOL_Y == UInt16(ABS_MT_TOOL_Y))
        #expect(Evdev.KEY_MAX == UInt16(KEY_MAX) && Evdev.REL_WHEEL_HI_RES == UInt16(REL_WHEEL_HI_RES))
        #expect(Evdev.SW_LID == UInt16(SW_LID) && Evdev.LED_CAPSL == UInt16(LED_CAPSL))
        #expect(Evdev.INPUT_PROP_BUTTONPAD == UInt16(INPUT_PROP_BUTTONPAD) && Evdev.FF_RUMBLE == UInt16(FF_RUMBLE))
        #expect(Evdev.SYN_DROPPED == UInt16(SYN_DROPPED) && Evdev.REP_PERIOD == UInt16(REP_PERIOD))
    }

    /// Every code of every type with a mask, and every type and property, has the name
    /// libevdev shows for it, and each name leads back to its code as libevdev's lookup does.
    @Test("Names are the ones libevdev shows, and lead back to their codes")
    func namesAsLibevdev() {
        var compared = 0
        for type in Evdev.maskTypes where type != Evdev.EV_SYN {
            for code in 0...Evdev.maximumCode(ofType: type)! {
                let theirs = libevdev_event_code_get_name(UInt32(type), UInt32(code)).map { String(cString: $0) }
                let ours = Evdev.name(ofCode: code, type: type)
                // A code one side's headers do not have yet; but a name our headers define
                // must be shown.
                guard let theirs else { continue }
                guard let ours else {
                    #expect(Evdev.code(named: theirs) == nil, "\(theirs) is defined but has no name in the table")
                    continue
                }
                compared += 1
                #expect(ours == theirs, "type \(type) code \(code)")
                #expect(Evdev.code(named: ours)?.type == type && Evdev.code(named: ours)?.code == code, "\(ours)")
            }
        }
        #expect(compared > 600, "only \(compared) codes had names on both sides")
        for type in UInt16(0)...Evdev.EV_MAX {
            let theirs = libevdev_event_type_get_name(UInt32(type)).map { String(cString: $0) }
            if let ours = Evdev.name(ofType: type), let theirs {
                #expect(ours == theirs)
                #expect(Evdev.type(named: ours) == type)
            }
        }
        for property in UInt16(0)...Evdev.INPUT_PROP_MAX {
            let theirs = libevdev_property_get_name(UInt32(property)).map { String(cString: $0) }
            if let ours = Evdev.name(ofProperty: property), let theirs {
                #expect(ours == theirs)
                #expect(Evdev.property(named: ours) == property)
            }
        }
        #expect(Evdev.code(named: "BTN_A")?.code == Evdev.BTN_SOUTH)
        #expect(Evdev.code(named: "KEY_SCREENLOCK")?.code == Evdev.KEY_COFFEE)
        #expect(Evdev.code(named: "BTN_MISC")?.code == Evdev.BTN_0)
        #expect(Evdev.name(ofCode: Evdev.BTN_0, type: Evdev.EV_KEY) == "BTN_0")
        #expect(Evdev.code(named: "KEY_NOT_A_KEY") == nil)
        #expect(Evdev.shownName(ofCode: 0x2fe, type: Evdev.EV_KEY) == (Evdev.name(ofCode: 0x2fe, type: Evdev.EV_KEY) ?? "0x2fe"))
    }

    /// The event crosses the file boundary in the C struct's layout, whatever the target.
    @Test("An input event has the C struct's size and layout, and round-trips through its bytes")
    func inputEventLayout() throws {
        #expect(InputEvent.size == MemoryLayout<input_event>.size)
        #if arch(x86_64) || arch(arm64)
        #expect(InputEvent.size == 24)
        #endif
        let event = InputEvent(seconds: 1_700_000_000, microseconds: 999_999, type: Evdev.EV_ABS, code: Evdev.ABS_MT_POSITION_X, value: -7)
        var bytes = [UInt8](repeating: 0xaa, count: InputEvent.size + 1)
        // An odd offset: the bytes need not be aligned.
        bytes.withUnsafeMutableBytes { event.store(to: $0.baseAddress! + 1) }
        let back = bytes.withUnsafeBytes { InputEvent(bytes: $0.baseAddress! + 1) }
        #expect(back == event)
        // The fields sit where the C compiler puts them.
        let raw = bytes.withUnsafeBytes { $0.baseAddress! + 1 }
        let typeOffset = try #require(MemoryLayout<input_event>.offset(of: \.type))
        let valueOffset = try #require(MemoryLayout<input_event>.offset(of: \.value))
        #expect(raw.loadUnaligned(fromByteOffset: typeOffset, as: UInt16.self) == Evdev.EV_ABS)
        #expect(raw.loadUnaligned(fromByteOffset: valueOffset, as: Int32.self) == -7)
        #expect(InputEvent(event.kernelEvent) == event)
        #expect(event.description == "EV_ABS / ABS_MT_POSITION_X -7")
        #expect(InputEvent(type: Evdev.EV_SYN, code: Evdev.SYN_REPORT, value: 0).isSynReport)
    }

    @Test("Bit masks are whole longs of the target, as EVIOCGBIT fills them")
    func maskSizes() {
        let longBytes = MemoryLayout<CLong>.size
        let bits = longBytes * 8
        #expect(Evdev.maskBytes(ofType: Evdev.EV_KEY) == (Int(KEY_MAX) + 1 + bits - 1) / bits * longBytes)
        #expect(Evdev.maskBytes(ofType: Evdev.EV_ABS) == (Int(ABS_CNT) + bits - 1) / bits * longBytes)
        #expect(Evdev.maskBytes(ofType: Evdev.EV_SW) == (Int(SW_CNT) + bits - 1) / bits * longBytes)
        #expect(Evdev.maskBytes(ofType: Evdev.EV_REP) == nil)
        #expect(Evdev.propertyMaskBytes == (Int(INPUT_PROP_CNT) + bits - 1) / bits * longBytes)
        #expect(Evdev.isMultitouchAxis(Evdev.ABS_MT_TRACKING_ID) && !Evdev.isMultitouchAxis(Evdev.ABS_RESERVED))
    }

    @Test("An absolute axis converts to and from the kernel's input_absinfo and scales values")
    func absoluteAxis() {
        let axis = AbsoluteAxis(value: 5, minimum: 0, maximum: 1000, fuzz: 4, flat: 8, resolution: 10)
        #expect(AbsoluteAxis(axis.kernelInfo) == axis)
        #expect(axis.normalized(250) == 0.25)
        #expect(axis.millimetres(250) == 25)
        #expect(AbsoluteAxis(minimum: 3, maximum: 3).normalized(3) == 0)
        #expect(AbsoluteAxis(minimum: 0, maximum: 10).millimetres(5) == nil)
    }

    /// The request numbers are the C macros' (`EVIOCGBIT(EV_ABS, 8)` and the rest).
    @Test("Requests taken apart give the EVIOC macros' direction, number and size")
    func requests() {
        let bit = EvdevRequest(command: UInt32(ringloop_eviocgbit(UInt32(Evdev.EV_ABS), 8)))
        #expect(bit.isEvdev && bit.direction == .read && bit.size == 8)
        #expect(bit.number == EvdevRequest.EVIOCGBIT + UInt8(Evdev.EV_ABS))
        let abs = EvdevRequest(command: UInt32(ringloop_eviocgabs(UInt32(Evdev.ABS_MT_SLOT))))
        #expect(abs.number == EvdevRequest.EVIOCGABS + UInt8(Evdev.ABS_MT_SLOT) && abs.size == AbsoluteAxis.kernelSize)
        let name = EvdevRequest(command: UInt32(ringloop_eviocgname(256)))
        #expect(name.number == EvdevRequest.EVIOCGNAME && name.size == 256 && name.repliesWithLength)
        let slots = EvdevRequest(command: UInt32(ringloop_eviocgmtslots(64)))
        #expect(slots.number == EvdevRequest.EVIOCGMTSLOTS && !slots.repliesWithLength)
        let key = EvdevRequest(command: UInt32(ringloop_eviocgkey(96)))
        #expect(key.number == EvdevRequest.EVIOCGKEY)
        #expect(EvdevRequest(command: UInt32(ringloop_eviocgsw(8))).number == EvdevRequest.EVIOCGSW)
        #expect(EvdevRequest(command: UInt32(ringloop_eviocgled(8))).number == EvdevRequest.EVIOCGLED)
        let grab = EvdevRequest(command: UInt32(ringloop_eviocgrab()))
        #expect(grab.direction == .write && grab.number == EvdevRequest.EVIOCGRAB)
        let clock = EvdevRequest(command: UInt32(ringloop_eviocsclockid()))
        #expect(clock.direction == .write && clock.number == EvdevRequest.EVIOCSCLOCKID)
        #expect(Evdev.EV_VERSION == EV_VERSION)
        #expect(!EvdevRequest(command: 0x8004_5401).isEvdev)  // TCGETS-like: another driver's type
    }
}
