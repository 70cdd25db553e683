import Glibc
import RingLoopTestSupport
import Testing

@testable import RingLoopDevices

/// A folder of virtual devices mounts only where nothing is mounted, and removes only the
/// folder it created: a replay given the folder of a tmpfs, or of another live replay,
/// once detached that mount and removed the folder, and a folder the user had made was
/// removed at exit.
@Suite("FUSE folders: mount points", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct FUSEMountPointTests {
    @Test("A tmpfs mounted at the folder is refused, named, and left mounted")
    func tmpfsRefused() throws {
        _ = MountLeakCheck.armed
        let path = "/tmp/ringloop-tmpfs-\(getpid())"
        mkdir(path, 0o755)
        defer { rmdir(path) }
        try #require(mount("none", path, "tmpfs", 0, "size=1m") == 0, "mount: errno \(errno)")
        defer { umount2(path, 0) }
        #expect(throws: VirtualDeviceError.mountPoint(path: path, mounted: "tmpfs (none)")) {
            try FUSEDeviceFolder(path: path)
        }
        #expect(FUSEDeviceFolder.mountEntry(path)?.fileSystem == "tmpfs", "the tmpfs is still mounted")
        var info = stat()
        #expect(stat(path, &info) == 0)
    }

    @Test("A live folder of another server is refused and keeps serving")
    func liveFolderRefused() throws {
        try withDeviceFolder { folder in
            let node = try folder.addDevice(testMouse)
            #expect(throws: VirtualDeviceError.self) { try FUSEDeviceFolder(path: folder.path) }
            do {
                _ = try FUSEDeviceFolder(path: folder.path)
            } catch {
                #expect("\(error)".contains("is a mount point (a folder of virtual devices of another process)"), "\(error)")
            }
            #expect(access(node.path, F_OK) == 0, "the first folder still serves its node")
        }
    }

    @Test("A dead FUSE mount of another file system is refused, not detached")
    func foreignDeadMountRefused() throws {
        _ = MountLeakCheck.armed
        let path = "/tmp/ringloop-foreign-\(getpid())"
        mkdir(path, 0o755)
        defer { rmdir(path) }
        let fuse = open("/dev/fuse", O_RDWR)
        try #require(fuse >= 0)
        let mounted = mount("sshfs", path, "fuse.sshfs", 0, "fd=\(fuse),rootmode=40000,user_id=0,group_id=0")
        close(fuse)
        try #require(mounted == 0, "mount: errno \(errno)")
        defer { umount2(path, Int32(MNT_DETACH)) }
        #expect(throws: VirtualDeviceError.self) { try FUSEDeviceFolder(path: path) }
        #expect(FUSEDeviceFolder.mountEntry(path)?.fileSystem == "fuse.sshfs", "still mounted")
    }

    @Test("A folder that existed stays after close; one created is removed")
    func folderKeptOrRemoved() throws {
        _ = MountLeakCheck.armed
        let existing = "/tmp/ringloop-existing-\(getpid())"
        mkdir(existing, 0o700)
        defer { rmdir(existing) }
        let folder = try FUSEDeviceFolder(path: existing)
        _ = try folder.addDevice(testMouse)
        folder.close()
        var info = stat()
        #expect(stat(existing, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR, "the user's folder was removed")
        #expect(info.st_mode & 0o777 == 0o700)
        #expect(FUSEDeviceFolder.mountEntry(existing) == nil)

        let created = "/tmp/ringloop-created-\(getpid())"
        let second = try FUSEDeviceFolder(path: created)
        second.close()
        #expect(stat(created, &info) != 0 && errno == ENOENT, "the folder made for the mount is left")
    }

    @Test("A path that is a file is refused with the reason")
    func fileRefused() throws {
        let path = "/tmp/ringloop-file-\(getpid())"
        let fd = open(path, O_CREAT | O_WRONLY, 0o600)
        close(fd)
        defer { unlink(path) }
        #expect(throws: VirtualDeviceError.folder(path: path, errno: .notDirectory)) { try FUSEDeviceFolder(path: path) }
    }
}
