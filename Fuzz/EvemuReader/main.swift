// libFuzzer target: the evemu reader on arbitrary bytes. Every input is either read or
// refused with a RecordingError naming its line; nothing may trap. Build and run with
// tools/fuzz.
import RingLoopDevices

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzEvemuReader(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let text = String(decoding: UnsafeRawBufferPointer(start: start, count: count), as: UTF8.self)
    do {
        let recordings = try EvemuFormat.parseAll(text, file: "fuzz")
        // What was read writes back and reads again.
        for recording in recordings where recording.description != nil {
            _ = try EvemuFormat.parse(EvemuFormat.write(recording), file: "fuzz-again")
        }
    } catch {
        guard case .malformed(let file, let line, _) = error, file.hasPrefix("fuzz"), line >= 1 else {
            if case .unexpectedContent = error { return 0 }
            fatalError("an error without its line: \(error)")
        }
    }
    return 0
}
