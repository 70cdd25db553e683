// libFuzzer target: the texts a user or a neighbour hands the chain's stages of meaning
// (RingLoopHID): a per-device settings file, a gamecontrollerdb.txt of SDL mapping lines,
// and the screen, rotation and calibration values of the command line. The first byte
// picks the reader: 0 the settings file, 1 the mapping lines, 2 a screen `WxH[@rot]`, 3 a
// calibration matrix, 4 a rotation; the rest is the text. Nothing may trap; what the
// settings file refuses it names by line; a parsed mapping line parses again the same.
// Build and run with tools/fuzz.
import RingLoopHID

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSettingsText(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let text = String(decoding: UnsafeBufferPointer(start: data + 1, count: size - 1), as: UTF8.self)
    switch data[0] % 5 {
    case 0:
        let file = DeviceSettingsFile(text: text, path: "fuzz.conf")
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).count
        for problem in file.problems { precondition(problem.line <= lines, "a problem at line \(problem.line) of \(lines)") }
    case 1:
        var database = SDLMappingDatabase(hints: [:])
        _ = database.addMappings(fromText: text, source: "fuzz.txt", requirePlatform: false)
        for line in text.split(separator: "\n") {
            guard let mapping = try? SDLGameControllerMapping(parsing: line) else { continue }
            let again = try? SDLGameControllerMapping(parsing: mapping.line)
            precondition(again != nil, "a mapping's own line does not parse: \(mapping.line)")
        }
    case 2:
        _ = try? ScreenDescription(parsing: text)
    case 3:
        _ = try? CalibrationMatrix(parsing: text)
    default:
        _ = try? ScreenRotation(parsing: text)
    }
    return 0
}
