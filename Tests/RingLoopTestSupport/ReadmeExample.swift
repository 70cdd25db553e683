#if canImport(Glibc)
import Glibc
#endif

/// README's code examples (and docs/'s), for tests that run an example verbatim and check
/// that the document still shows what they run.
package enum ReadmeExample {
    /// The lines of the first code block after `heading` in `document` (README.md, or a
    /// file of docs/) of the repository that holds `testFile` (three folders up), without
    /// the fence, normalized.
    package static func lines(
        after heading: String, in document: String = "README.md", testFile: String = #filePath
    ) -> [String]? {
        var root = testFile
        for _ in 0..<3 { root = String(root[..<(root.lastIndex(of: "/") ?? root.startIndex)]) }
        guard let readme = textOfFile(root + "/" + document),
            let section = readme.components(after: heading),
            let block = section.components(after: "```")?.components(before: "```")
        else { return nil }
        return block.split(separator: "\n", omittingEmptySubsequences: false).dropFirst().map(normalized)
    }

    /// The lines of a source file, normalized.
    package static func sourceLines(_ path: String) -> Set<String> {
        Set((textOfFile(path) ?? "").split(separator: "\n").map(normalized))
    }

    /// A line without its comment and with runs of spaces collapsed.
    package static func normalized(_ line: Substring) -> String {
        let code = line.firstRange(of: "//").map { line[..<$0.lowerBound] } ?? line
        return code.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
    }
}

extension String {
    fileprivate func components(after marker: String) -> String? {
        firstRange(of: marker).map { String(self[$0.upperBound...]) }
    }

    fileprivate func components(before marker: String) -> String? {
        firstRange(of: marker).map { String(self[..<$0.lowerBound]) }
    }
}

extension StringProtocol {
    /// Where `marker` first stands (the standard library's own search, without Foundation).
    fileprivate func firstRange(of marker: String) -> Range<Index>? {
        var index = startIndex
        while index < endIndex {
            if self[index...].hasPrefix(marker) { return index..<self.index(index, offsetBy: marker.count) }
            index = self.index(after: index)
        }
        return nil
    }
}
