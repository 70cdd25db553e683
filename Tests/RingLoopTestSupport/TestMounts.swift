import Glibc
import RingLoopDevices
import Testing

/// Whether FUSE folders can be mounted here (root and /dev/fuse): suites that mount are
/// enabled only then, and say what is missing otherwise.
public enum FUSEHere {
    public static let usable: Bool = geteuid() == 0 && access("/dev/fuse", R_OK | W_OK) == 0
    public static let missing: Comment = "needs /dev/fuse and root to mount FUSE folders (install fuse3, run as root)"
}

/// A FUSE folder of virtual devices under /tmp for `body`, closed after it even when it
/// throws; the process checks at exit that it left no mount behind (``MountLeakCheck``).
public func withDeviceFolder<T>(_ body: (FUSEDeviceFolder) throws -> T) throws -> T {
    _ = MountLeakCheck.armed
    let folder = try FUSEDeviceFolder(path: "/tmp/ringloop-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
    defer { folder.close() }
    return try body(folder)
}
