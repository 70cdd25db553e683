// libFuzzer target: the libinput record reader on arbitrary text. Every input is read or
// refused with a RecordingError; nothing may trap. Build and run with tools/fuzz.
import RingLoopDevices

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzLibinputReader(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let text = String(decoding: UnsafeRawBufferPointer(start: start, count: count), as: UTF8.self)
    do {
        _ = try LibinputRecording.parse(text, file: "fuzz")
    } catch {
        // Refused, with a line: expected for most inputs.
    }
    return 0
}
