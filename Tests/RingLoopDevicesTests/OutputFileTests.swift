import Glibc
import RingLoop
import RingLoopTestSupport
import Testing

@testable import RingLoopDevices

/// Output paths as a Unix tool treats them. `describe -o` once replaced a FIFO, a link or
/// `/dev/full` with a regular file, and `Recording.write` ignored the error from closing
/// the file, so a full disk gave an empty or cut recording and success.
@Suite("Output files")
struct OutputFileTests {
    static func folder() -> String {
        let path = "/tmp/ringloop-output-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        mkdir(path, 0o755)
        return path
    }

    static func entries(_ path: String) -> [String] {
        guard let folder = opendir(path) else { return [] }
        defer { closedir(folder) }
        var names: [String] = []
        while let entry = readdir(folder) {
            let name = direntName(entry)
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    static func removeAll(_ path: String) {
        for name in entries(path) { unlink(path + "/" + name) }
        rmdir(path)
    }

    @Test("A regular file is replaced whole, keeping its permissions; a new one is created")
    func regularFile() throws {
        let folder = Self.folder()
        defer { Self.removeAll(folder) }
        let path = folder + "/out.evemu"
        try Recording.write("first\n", to: path)
        #expect(textOfFile(path) == "first\n")
        chmod(path, 0o640)
        let output = try Recording.write("second\n", to: path)
        #expect(output.kind == .regularFile && !output.followedLink)
        #expect(textOfFile(path) == "second\n")
        var info = stat()
        stat(path, &info)
        #expect(info.st_mode & 0o777 == 0o640)
        #expect(Self.entries(folder) == ["out.evemu"], "no temporary file left")
    }

    @Test("/dev/full: the write fails with ENOSPC and /dev/full stays a character device")
    func devFull() throws {
        #expect(throws: OutputFileError.write(path: "/dev/full", errno: .noSpace)) {
            try Recording.write(String(repeating: "E: 0.000000 0000 0000 0000\n", count: 10), to: "/dev/full")
        }
        var info = stat()
        #expect(stat("/dev/full", &info) == 0 && info.st_mode & S_IFMT == S_IFCHR)
    }

    @Test("A FIFO is written into, not replaced")
    func fifo() throws {
        let folder = Self.folder()
        defer { Self.removeAll(folder) }
        let path = folder + "/pipe"
        try #require(mkfifo(path, 0o600) == 0)
        let read = ThreadLock<String?>(nil)
        let reader = LoopThread(name: "fifo-reader")
        reader.perform { read.withLock { $0 = textOfFile(path) } }
        let output = try Recording.write("through the pipe\n", to: path)
        #expect(output.kind == .fifo)
        reader.stopAndJoin()
        #expect(read.withLock { $0 } == "through the pipe\n")
        var info = stat()
        #expect(stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFIFO)
    }

    @Test("A folder is refused with a plain message; a dangling link too")
    func refused() throws {
        let folder = Self.folder()
        defer { Self.removeAll(folder) }
        #expect(throws: OutputFileError.isFolder(path: folder)) { try Recording.write("x", to: folder) }
        #expect("\(OutputFileError.isFolder(path: folder))" == "\(folder): is a folder; give a file name in it")
        let link = folder + "/dangling"
        symlink(folder + "/nothing", link)
        #expect(throws: OutputFileError.danglingLink(path: link)) { try Recording.write("x", to: link) }
    }

    @Test("A link is followed: the file it points at is replaced and the link stays a link, and the caller is told")
    func link() throws {
        let folder = Self.folder()
        defer { Self.removeAll(folder) }
        let target = folder + "/target.evemu"
        let link = folder + "/link.evemu"
        try Recording.write("old\n", to: target)
        symlink(target, link)
        let output = try Recording.write("new\n", to: link)
        #expect(output.followedLink && output.target == target)
        #expect(textOfFile(target) == "new\n")
        var info = stat()
        #expect(lstat(link, &info) == 0 && info.st_mode & S_IFMT == S_IFLNK)
    }

    @Test("A full disk: the write fails, the old file is left whole and no partial file remains", .enabled(if: geteuid() == 0))
    func fullDisk() throws {
        let folder = Self.folder()
        defer { rmdir(folder) }
        try #require(mount("none", folder, "tmpfs", 0, "size=64k") == 0, "mount: errno \(errno)")
        defer {
            Self.removeAll(folder)
            umount2(folder, Int32(MNT_DETACH))
        }
        let path = folder + "/out.evemu"
        try Recording.write("old recording\n", to: path)
        let large = String(repeating: "E: 0.000000 0001 001e 0001\n", count: 10_000)
        #expect(throws: OutputFileError.write(path: path, errno: .noSpace)) { try Recording.write(large, to: path) }
        #expect(textOfFile(path) == "old recording\n")
        #expect(Self.entries(folder) == ["out.evemu"], "the partial file was left: \(Self.entries(folder))")
        // Full to the last byte: even a small write fails (it once exited 0 with an empty file).
        let filler = open(folder + "/filler", O_CREAT | O_WRONLY, 0o600)
        var block = [UInt8](repeating: 0, count: 4096)
        while write(filler, &block, block.count) > 0 {}
        close(filler)
        #expect(throws: OutputFileError.self) { try Recording.write("small\n", to: folder + "/small.evemu") }
        #expect(!Self.entries(folder).contains("small.evemu"))
    }
}
