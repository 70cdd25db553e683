import Glibc
import RingLoop
import RingLoopTestSupport
import Testing

@testable import RingLoopDevices

/// The names `readdir` lists in `path`, in order, with `.` and `..`; `between` runs after
/// `after` names were read (the rest are read in later `getdents` calls).
func listFolder(_ path: String, after: Int = .max, between: () -> Void = {}) -> [String] {
    guard let folder = opendir(path) else { return [] }
    defer { closedir(folder) }
    var names: [String] = []
    while let entry = readdir(folder) {
        let name = direntName(entry)
        names.append(name)
        if names.count == after { between() }
    }
    return names
}

/// A folder of thousands of nodes lists every node once: the kernel asks for a listing a
/// page at a time (about a hundred entries), each request resuming at the offset the
/// previous one ended on. The offset was read as a byte count while entries were
/// numbered, so a listing ended with an error after 1,017 nodes and a monitor of a
/// recording of more devices waited for the rest for ever.
@Suite("FUSE folders: listings", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct FUSEFolderListingTests {
    @Test("3,000 nodes are listed once each, through many readdir requests")
    func thousandsListed() throws {
        try withDeviceFolder { folder in
            for _ in 0..<3000 { _ = try folder.addDevice(testMouse) }
            let names = listFolder(folder.path)
            #expect(names.count == 3002, "\(names.count) entries")
            #expect(Array(names.prefix(2)) == [".", ".."])
            #expect(Set(names.dropFirst(2)) == Set((0..<3000).map { "event\($0)" }))
        }
    }

    @Test("Nodes removed and added while a listing is read: no node is listed twice or skipped")
    func changesDuringListing() throws {
        try withDeviceFolder { folder in
            let nodes = try (0..<1000).map { _ in try folder.addDevice(testMouse) }
            var added: [FUSEEvdevNode] = []
            // After 300 names (several requests in), remove nodes on both sides of where
            // the listing stands and add new ones.
            let names = listFolder(folder.path, after: 300) {
                for index in stride(from: 0, to: 1000, by: 10) { nodes[index].remove() }
                added = (0..<5).compactMap { _ in try? folder.addDevice(testMouse) }
            }
            #expect(added.count == 5)
            #expect(names.count == Set(names).count, "a name is listed twice")
            let listed = Set(names)
            // Every node that stayed is listed; so are the new ones (past the listing's place).
            for (index, node) in nodes.enumerated() where index % 10 != 0 {
                #expect(listed.contains(node.name), "\(node.name) skipped")
            }
            for node in added { #expect(listed.contains(node.name), "new \(node.name) skipped") }
        }
    }
}
