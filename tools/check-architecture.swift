// Checks that ARCHITECTURE.md's module table says what Package.swift says: every library,
// executable and C target is listed, with exactly the dependencies it declares.
//
//   swift tools/check-architecture.swift      (from the package's folder; CI runs it)
import Foundation

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("check-architecture: \(message)\n".utf8))
    exit(1)
}

// What Package.swift declares, from SwiftPM itself.
let process = Process()
process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
process.arguments = ["swift", "package", "dump-package"]
let pipe = Pipe()
process.standardOutput = pipe
do { try process.run() } catch { fail("cannot run swift package dump-package: \(error)") }
let data = pipe.fileHandleForReading.readDataToEndOfFile()
process.waitUntilExit()
guard process.terminationStatus == 0,
    let package = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
    let targets = package["targets"] as? [[String: Any]]
else { fail("swift package dump-package failed") }

var declared: [String: Set<String>] = [:]
for target in targets {
    guard let name = target["name"] as? String, let type = target["type"] as? String else { continue }
    guard type == "regular" || type == "executable" else { continue }
    var dependencies = Set<String>()
    for dependency in target["dependencies"] as? [[String: Any]] ?? [] {
        // {"byName": ["X", null]}, {"target": ["X", null]}, {"product": ["X", "package", …]}
        for value in dependency.values {
            if let list = value as? [Any], let first = list.first as? String { dependencies.insert(first) }
        }
    }
    declared[name] = dependencies
}

// What ARCHITECTURE.md says: rows "| `name` | owns | `a`, `b` |" of the Modules table.
guard let text = try? String(contentsOfFile: "ARCHITECTURE.md", encoding: .utf8) else {
    fail("no ARCHITECTURE.md here (run from the package's folder)")
}
guard let start = text.range(of: "\n## Modules\n") else { fail("ARCHITECTURE.md has no '## Modules' section") }
let section = text[start.upperBound...].prefix { _ in true }
let modules = section.range(of: "\n## ").map { section[..<$0.lowerBound] } ?? section
var documented: [String: Set<String>] = [:]
for line in modules.split(separator: "\n") where line.hasPrefix("| `") {
    let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
    guard cells.count >= 5 else { continue }
    let name = cells[1].trimmingCharacters(in: CharacterSet(charactersIn: "`"))
    let names = cells[3].split(separator: "`", omittingEmptySubsequences: false).enumerated().filter { $0.offset % 2 == 1 }.map {
        String($0.element)
    }
    documented[name] = Set(names)
}

var problems: [String] = []
for (name, dependencies) in declared.sorted(by: { $0.key < $1.key }) {
    guard let listed = documented[name] else {
        problems.append("\(name) is in Package.swift but not in ARCHITECTURE.md's module table")
        continue
    }
    if listed != dependencies {
        let missing = dependencies.subtracting(listed).sorted()
        let extra = listed.subtracting(dependencies).sorted()
        problems.append(
            "\(name): ARCHITECTURE.md "
                + [
                    missing.isEmpty ? nil : "lacks \(missing.joined(separator: ", "))",
                    extra.isEmpty ? nil : "lists \(extra.joined(separator: ", ")) that Package.swift does not",
                ]
                .compactMap { $0 }.joined(separator: " and "))
    }
}
for name in documented.keys.sorted() where declared[name] == nil {
    problems.append("\(name) is in ARCHITECTURE.md's module table but not a library or executable target of Package.swift")
}
if !problems.isEmpty { fail("\n  " + problems.joined(separator: "\n  ")) }
print("check-architecture: ARCHITECTURE.md matches Package.swift (\(declared.count) modules)")
