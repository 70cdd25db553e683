// libFuzzer target: the frame decoder on random event streams against real device
// descriptions (the bundled and real recordings' devices). The first byte picks a
// device; then each 7 bytes are one event: a type selector, a code (16 bits) and a value
// (32 bits, little-endian). A byte 0xff as a type selector resyncs from a state made of
// the next bytes. Nothing may trap, in the decoder or in the gesture and motion
// recognizers its digitizer frames and motion samples are fed to. Build and run with tools/fuzz.
import Glibc
import RingLoop
import RingLoopDevices
import RingLoopEvdev
import RingLoopHID

nonisolated(unsafe) var devices: [HIDDeviceInfo] = []

@_cdecl("LLVMFuzzerInitialize")
public func fuzzFrameDecoderInitialize(
    _ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>
) -> CInt {
    let folder = getenv("RINGLOOP_DEVICES").map { String(cString: $0) } ?? "devices"
    var paths: [String] = []
    if let dir = opendir(folder) {
        while let entry = readdir(dir) {
            let name = direntName(entry)
            if name.hasSuffix(".evemu") { paths.append(folder + "/" + name) }
        }
        closedir(dir)
    }
    for extra in [
        "real/evemu-devices/mice/Apple Touch Mouse.evemu", "real/evemu/ntrig-dell-xt2.prop",
        "real/evemu-devices/tablets/Wacom Serial Penabled 2FG Touchscreen.desc",
        "real/evemu-devices/misc/Microsoft Surface Type Cover.events", "real/evemu/3m.prop", "motion/dualsense-bump.evemu",
    ] {
        paths.append(folder + "/" + extra)
    }
    for path in paths.sorted() {
        guard let description = try? Recording.loadAll(contentsOf: path).first?.description else { continue }
        devices.append(HIDDeviceInfo(description: description))
    }
    if devices.isEmpty {
        print("no device descriptions found in \(folder) (set RINGLOOP_DEVICES)\n", terminator: "")
        exit(1)
    }
    return 0
}

let types: [UInt16] = [Evdev.EV_SYN, Evdev.EV_KEY, Evdev.EV_REL, Evdev.EV_ABS, Evdev.EV_MSC, Evdev.EV_SW, Evdev.EV_LED, Evdev.EV_REP]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFrameDecoder(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: start, count: count)
    guard count >= 1 else { return 0 }
    let device = devices[Int(bytes[0]) % devices.count]
    var decoder = FrameDecoder(info: device)
    var gestureFrames: [(MonotonicInstant, DigitizerFrame)] = []
    var motionSamples: [(MonotonicInstant, MotionEvent)] = []
    var out: [HIDEvent] = []
    var index = 1
    var time = 0
    while index + 7 <= count {
        let selector = bytes[index]
        let code = UInt16(bytes[index + 1]) | UInt16(bytes[index + 2]) << 8
        let value = Int32(
            bitPattern: UInt32(bytes[index + 3]) | UInt32(bytes[index + 4]) << 8 | UInt32(bytes[index + 5]) << 16 | UInt32(bytes[index + 6])
                << 24)
        index += 7
        time += 1
        if selector == 0xff {
            var snapshot = DeviceState()
            snapshot.keys = KeyCodeSet([code % Evdev.KEY_CNT, UInt16(truncatingIfNeeded: value) % Evdev.KEY_CNT])
            snapshot.switches = SmallCodeSet([code % Evdev.SW_CNT])
            snapshot.axes[code % Evdev.ABS_CNT] = value
            snapshot.slots = (0..<Int(code % 12)).map { DeviceState.Slot(trackingID: value &+ Int32($0), x: value, y: value) }
            decoder.resync(from: snapshot, at: MonotonicInstant(nanoseconds: UInt64(time)), into: &out)
            continue
        }
        let type = types[Int(selector) % types.count]
        decoder.feed(
            InputEvent(
                seconds: Int64(time / 1_000_000), microseconds: Int32(time % 1_000_000), type: type, code: code, value: value), into: &out)
        if out.count > 4096 {
            for event in out {
                if case .digitizer(let frame) = event.payload, gestureFrames.count < 512 {
                    gestureFrames.append((event.timestamp, frame))
                }
                if case .motion(let sample) = event.payload, motionSamples.count < 512 { motionSamples.append((event.timestamp, sample)) }
            }
            out.removeAll(keepingCapacity: true)
        }
    }
    decoder.detach(at: MonotonicInstant(nanoseconds: UInt64(time + 1)), into: &out)
    // The digitizer frames, through ten gesture recognizers: nothing may trap there either.
    for event in out {
        if case .digitizer(let frame) = event.payload, gestureFrames.count < 512 { gestureFrames.append((event.timestamp, frame)) }
        if case .motion(let sample) = event.payload, motionSamples.count < 512 { motionSamples.append((event.timestamp, sample)) }
    }
    if !gestureFrames.isEmpty {
        _ = GestureThroughput.run(
            frames: gestureFrames, surface: GestureSurface(device: device), warmRounds: 0, measuredRounds: 1,
            beforeMeasured: {}, action: { _ in })
    }
    // Motion samples, through a shake and an orientation recognizer.
    if !motionSamples.isEmpty {
        _ = MotionThroughput.run(samples: motionSamples, warmRounds: 0, measuredRounds: 1, beforeMeasured: {}, action: { _ in })
    }
    return 0
}
