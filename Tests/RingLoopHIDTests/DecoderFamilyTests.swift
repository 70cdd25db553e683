import RingLoop
import RingLoopEvdev
import Testing

@testable import RingLoopHID

/// One family's case: a device described in code, frames of raw events (each ends with
/// SYN_REPORT), and the events handlers must get, summarized.
struct DecoderCase: CustomTestStringConvertible, Sendable {
    var name: String
    var codes: [UInt16: Set<UInt16>]
    var axes: [UInt16: AbsoluteAxis] = [:]
    var properties: Set<UInt16> = []
    var frames: [[(UInt16, UInt16, Int32)]]
    var expected: [String]
    var testDescription: String { name }
}

/// The frame decoder by device family, from memory: no device node, no FUSE, no root.
@Suite("Frame decoder by family (from memory)")
struct DecoderFamilyTests {
    static let keyboardKeys = Set((Evdev.KEY_ESC...Evdev.KEY_SPACE).map { $0 })
    static let cases: [DecoderCase] = [
        DecoderCase(
            name: "keys: down, kernel repeat, up; a modifier",
            codes: [Evdev.EV_KEY: keyboardKeys, Evdev.EV_REP: []],
            frames: [
                [(Evdev.EV_KEY, Evdev.KEY_LEFTSHIFT, 1)], [(Evdev.EV_KEY, Evdev.KEY_A, 1)], [(Evdev.EV_KEY, Evdev.KEY_A, 2)],
                [(Evdev.EV_KEY, Evdev.KEY_A, 0)], [(Evdev.EV_KEY, Evdev.KEY_LEFTSHIFT, 0)],
            ],
            expected: [
                "key KEY_LEFTSHIFT down usage 0x7:0xe1 shift true",
                "key KEY_A down usage 0x7:0x4 shift true",
                "key KEY_A repeat usage 0x7:0x4 shift true",
                "key KEY_A up usage 0x7:0x4 shift true",
                "key KEY_LEFTSHIFT up usage 0x7:0xe1 shift false",
            ]),
        DecoderCase(
            name: "relative: motion summed per frame, buttons, wheel",
            codes: [
                Evdev.EV_KEY: [Evdev.BTN_LEFT, Evdev.BTN_RIGHT],
                Evdev.EV_REL: [Evdev.REL_X, Evdev.REL_Y, Evdev.REL_WHEEL],
            ],
            frames: [
                [(Evdev.EV_REL, Evdev.REL_X, 3), (Evdev.EV_REL, Evdev.REL_Y, -2), (Evdev.EV_REL, Evdev.REL_X, 1)],
                [(Evdev.EV_KEY, Evdev.BTN_LEFT, 1)], [(Evdev.EV_REL, Evdev.REL_WHEEL, -1)], [(Evdev.EV_KEY, Evdev.BTN_LEFT, 0)],
                [(Evdev.EV_KEY, Evdev.BTN_RIGHT, 1)], [(Evdev.EV_KEY, Evdev.BTN_RIGHT, 0)],
            ],
            expected: [
                "motion 4 -2",
                "button 1 true",
                "scroll -1.0 0.0",
                "button 1 false",
                "button 2 true",
                "button 2 false",
            ]),
        DecoderCase(
            name: "protocol-B slots: two fingers begin, move, lift",
            codes: [
                Evdev.EV_KEY: [Evdev.BTN_TOUCH],
                Evdev.EV_ABS: [
                    Evdev.ABS_X, Evdev.ABS_Y, Evdev.ABS_MT_SLOT, Evdev.ABS_MT_TRACKING_ID, Evdev.ABS_MT_POSITION_X,
                    Evdev.ABS_MT_POSITION_Y,
                ],
            ],
            axes: [
                Evdev.ABS_X: AbsoluteAxis(minimum: 0, maximum: 1000), Evdev.ABS_Y: AbsoluteAxis(minimum: 0, maximum: 1000),
                Evdev.ABS_MT_SLOT: AbsoluteAxis(minimum: 0, maximum: 1),
                Evdev.ABS_MT_TRACKING_ID: AbsoluteAxis(minimum: 0, maximum: 65535),
                Evdev.ABS_MT_POSITION_X: AbsoluteAxis(minimum: 0, maximum: 1000),
                Evdev.ABS_MT_POSITION_Y: AbsoluteAxis(minimum: 0, maximum: 1000),
            ],
            properties: [Evdev.INPUT_PROP_DIRECT],
            frames: [
                [
                    (Evdev.EV_ABS, Evdev.ABS_MT_SLOT, 0), (Evdev.EV_ABS, Evdev.ABS_MT_TRACKING_ID, 7),
                    (Evdev.EV_ABS, Evdev.ABS_MT_POSITION_X, 100), (Evdev.EV_ABS, Evdev.ABS_MT_POSITION_Y, 200),
                    (Evdev.EV_KEY, Evdev.BTN_TOUCH, 1),
                ],
                [
                    (Evdev.EV_ABS, Evdev.ABS_MT_SLOT, 1), (Evdev.EV_ABS, Evdev.ABS_MT_TRACKING_ID, 8),
                    (Evdev.EV_ABS, Evdev.ABS_MT_POSITION_X, 500), (Evdev.EV_ABS, Evdev.ABS_MT_POSITION_Y, 600),
                ],
                [(Evdev.EV_ABS, Evdev.ABS_MT_SLOT, 0), (Evdev.EV_ABS, Evdev.ABS_MT_POSITION_X, 110)],
                [(Evdev.EV_ABS, Evdev.ABS_MT_TRACKING_ID, -1)],
                [(Evdev.EV_ABS, Evdev.ABS_MT_SLOT, 1), (Evdev.EV_ABS, Evdev.ABS_MT_TRACKING_ID, -1), (Evdev.EV_KEY, Evdev.BTN_TOUCH, 0)],
            ],
            expected: [
                "touch 7:began:100,200",
                "touch 7:stationary:100,200 8:began:500,600",
                "touch 7:moved:110,200 8:stationary:500,600",
                "touch 7:ended:110,200 8:stationary:500,600",
                "touch 8:ended:500,600",
            ]),
        DecoderCase(
            name: "protocol A: contacts matched across frames by position",
            codes: [
                Evdev.EV_KEY: [Evdev.BTN_TOUCH],
                Evdev.EV_ABS: [Evdev.ABS_X, Evdev.ABS_Y, Evdev.ABS_MT_POSITION_X, Evdev.ABS_MT_POSITION_Y],
            ],
            axes: [
                Evdev.ABS_X: AbsoluteAxis(minimum: 0, maximum: 1000), Evdev.ABS_Y: AbsoluteAxis(minimum: 0, maximum: 1000),
                Evdev.ABS_MT_POSITION_X: AbsoluteAxis(minimum: 0, maximum: 1000),
                Evdev.ABS_MT_POSITION_Y: AbsoluteAxis(minimum: 0, maximum: 1000),
            ],
            properties: [Evdev.INPUT_PROP_DIRECT],
            frames: [
                [
                    (Evdev.EV_ABS, Evdev.ABS_MT_POSITION_X, 100), (Evdev.EV_ABS, Evdev.ABS_MT_POSITION_Y, 100),
                    (Evdev.EV_SYN, Evdev.SYN_MT_REPORT, 0), (Evdev.EV_KEY, Evdev.BTN_TOUCH, 1),
                ],
                [
                    (Evdev.EV_ABS, Evdev.ABS_MT_POSITION_X, 900), (Evdev.EV_ABS, Evdev.ABS_MT_POSITION_Y, 900),
                    (Evdev.EV_SYN, Evdev.SYN_MT_REPORT, 0),
                    (Evdev.EV_ABS, Evdev.ABS_MT_POSITION_X, 102), (Evdev.EV_ABS, Evdev.ABS_MT_POSITION_Y, 101),
                    (Evdev.EV_SYN, Evdev.SYN_MT_REPORT, 0),
                ],
                [(Evdev.EV_SYN, Evdev.SYN_MT_REPORT, 0), (Evdev.EV_KEY, Evdev.BTN_TOUCH, 0)],
            ],
            expected: [
                "touch 1:began:100,100",
                "touch 2:began:900,900 1:moved:102,101",
                "touch 2:ended:900,900 1:ended:102,101",
            ]),
        DecoderCase(
            name: "pen: proximity, tip, barrel button, out of range",
            codes: [
                Evdev.EV_KEY: [Evdev.BTN_TOOL_PEN, Evdev.BTN_TOUCH, Evdev.BTN_STYLUS],
                Evdev.EV_ABS: [Evdev.ABS_X, Evdev.ABS_Y, Evdev.ABS_PRESSURE],
            ],
            axes: [
                Evdev.ABS_X: AbsoluteAxis(minimum: 0, maximum: 10000), Evdev.ABS_Y: AbsoluteAxis(minimum: 0, maximum: 10000),
                Evdev.ABS_PRESSURE: AbsoluteAxis(minimum: 0, maximum: 1023),
            ],
            frames: [
                [(Evdev.EV_KEY, Evdev.BTN_TOOL_PEN, 1), (Evdev.EV_ABS, Evdev.ABS_X, 5000), (Evdev.EV_ABS, Evdev.ABS_Y, 4000)],
                [(Evdev.EV_KEY, Evdev.BTN_TOUCH, 1), (Evdev.EV_ABS, Evdev.ABS_PRESSURE, 512)],
                [(Evdev.EV_KEY, Evdev.BTN_STYLUS, 1)],
                [(Evdev.EV_KEY, Evdev.BTN_STYLUS, 0), (Evdev.EV_KEY, Evdev.BTN_TOUCH, 0), (Evdev.EV_ABS, Evdev.ABS_PRESSURE, 0)],
                [(Evdev.EV_KEY, Evdev.BTN_TOOL_PEN, 0)],
            ],
            expected: [
                "pen pen true false 5000 4000 0",
                "pen pen true true 5000 4000 0",
                "pen pen true true 5000 4000 1",
                "pen pen true false 5000 4000 0",
                "pen pen false false 5000 4000 0",
            ]),
        DecoderCase(
            name: "gamepad: buttons and stick",
            codes: [
                Evdev.EV_KEY: [Evdev.BTN_SOUTH, Evdev.BTN_EAST, Evdev.BTN_START],
                Evdev.EV_ABS: [Evdev.ABS_X, Evdev.ABS_Y],
            ],
            axes: [
                Evdev.ABS_X: AbsoluteAxis(minimum: -32768, maximum: 32767),
                Evdev.ABS_Y: AbsoluteAxis(minimum: -32768, maximum: 32767),
            ],
            frames: [
                [(Evdev.EV_KEY, Evdev.BTN_SOUTH, 1)], [(Evdev.EV_ABS, Evdev.ABS_X, 16000)], [(Evdev.EV_KEY, Evdev.BTN_SOUTH, 0)],
            ],
            expected: [
                "pad 304 true",
                "axis 0 16000",
                "pad 304 false",
            ]),
        DecoderCase(
            name: "switches: the lid",
            codes: [Evdev.EV_SW: [Evdev.SW_LID]],
            frames: [[(Evdev.EV_SW, Evdev.SW_LID, 1)], [(Evdev.EV_SW, Evdev.SW_LID, 0)]],
            expected: [
                "switch SW_LID true",
                "switch SW_LID false",
            ]),
    ]

    @Test("Each family's frames give the events handlers expect", arguments: cases)
    func family(_ testCase: DecoderCase) {
        let info = HIDDeviceInfo.describing(
            name: testCase.name, codes: testCase.codes, axes: testCase.axes, properties: testCase.properties)
        var decoder = FrameDecoder(info: info)
        var out: [HIDEvent] = []
        for (index, frame) in testCase.frames.enumerated() {
            let time = Int32(index) * 10_000
            for (type, code, value) in frame {
                decoder.feed(InputEvent(seconds: 1, microseconds: time, type: type, code: code, value: value), into: &out)
            }
            decoder.feed(InputEvent(seconds: 1, microseconds: time, type: Evdev.EV_SYN, code: Evdev.SYN_REPORT, value: 0), into: &out)
        }
        let got = out.map(familySummary)
        #expect(got == testCase.expected)
    }
}

/// `summary` with the fields these cases check: usages and modifiers for keys, switches.
func familySummary(_ event: HIDEvent) -> String {
    switch event.payload {
    case .key(let key):
        "key \(Evdev.shownName(ofCode: key.code, type: Evdev.EV_KEY)) \(key.state) usage \(key.usage.map { "\($0)" } ?? "-") shift \(key.modifiers.contains(.leftShift))"
    case .switchChanged(let change): "switch \(Evdev.shownName(ofCode: change.code, type: Evdev.EV_SW)) \(change.isOn)"
    default: summary(event)
    }
}
