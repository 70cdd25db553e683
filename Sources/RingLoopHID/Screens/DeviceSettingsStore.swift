/// A settings file read at start and again on demand (on `SIGHUP`), as devices attach.
///
/// A reading that cannot open the file keeps the previous reading whole; a reading with
/// refused lines keeps, for each refused key, the value the previous reading had in the
/// section with the same header (``DeviceSettingsFile/keepingValues(from:)``), so a device
/// keeps its old setting rather than falling back to the default over a typing error.
public struct DeviceSettingsStore: Sendable {
    /// The file's path.
    public let path: String
    /// The reading in force (`nil` before the first that succeeded).
    public private(set) var current: DeviceSettingsFile?

    /// A store of the file at `path`, not yet read.
    public init(path: String) { self.path = path }

    /// Reads the file again and returns what could not be used (empty: all of it).
    public mutating func reload() -> [DeviceSettingsFile.Problem] {
        let reading: DeviceSettingsFile
        do { reading = try DeviceSettingsFile(contentsOf: path) } catch {
            var problem = error
            if current != nil { problem.message += "; the previous reading stays in force" }
            return [problem]
        }
        current = current.map { reading.keepingValues(from: $0) } ?? reading
        return reading.problems
    }
}
