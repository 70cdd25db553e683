import CFUSEGuard
import CFuse
import RingLoop
import RingLoopEvdev

#if canImport(Glibc)
import Glibc
#endif

// MARK: - libfuse callbacks

enum FUSEOperations {
    static func folder(_ req: fuse_req_t?) -> FUSEDeviceFolder? {
        guard let req, let data = fuse_req_userdata(req) else { return nil }
        return Unmanaged<ServerContext>.fromOpaque(data).takeUnretainedValue().folder
    }

    static func attributes(inode: UInt64) -> stat {
        var info = stat()
        info.st_ino = UInt(inode)
        if inode == 1 {
            info.st_mode = S_IFDIR | 0o755
            info.st_nlink = 2
        } else {
            info.st_mode = S_IFREG | 0o660
            info.st_nlink = 1
            // A node is a stream with no size, but the kernel's asynchronous direct-I/O
            // read (the one io_uring makes of a FUSE file) is cut short at the file's
            // size — at 0 bytes it reads nothing, as if at its end. Past any offset a
            // stream reaches, the size never cuts a read.
            info.st_size = 1 << 62
        }
        info.st_uid = getuid()
        info.st_gid = getgid()
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        info.st_atim = now
        info.st_mtim = now
        info.st_ctim = now
        return info
    }

    /// Answers a `readdir` of the folder from `offset`, as many entries as fit in `size`
    /// bytes. An entry's offset is where the listing resumes after it: `.` is 1, `..` is 2,
    /// a node with inode `i` is `i + 1` (inodes start at 2 and only grow), so a listing
    /// read in several requests — thousands of nodes need many — neither repeats nor skips
    /// a node when others come or go between requests.
    static func replyDirectory(_ req: fuse_req_t?, folder: FUSEDeviceFolder, size: Int, offset: off_t) {
        var entries: [(name: String, inode: UInt64, next: off_t)] = []
        if offset < 1 { entries.append((".", 1, 1)) }
        if offset < 2 { entries.append(("..", 1, 2)) }
        let first = UInt64(max(offset, 2))
        entries += folder.liveNodes().filter { $0.inode >= first }.map { ($0.name, $0.inode, off_t($0.inode + 1)) }
        var buffer = [UInt8](repeating: 0, count: size)
        var used = 0
        buffer.withUnsafeMutableBytes { raw in
            for entry in entries {
                var info = attributes(inode: entry.inode)
                let place = raw.baseAddress!.advanced(by: used).assumingMemoryBound(to: CChar.self)
                let needed = fuse_add_direntry(req, place, size - used, entry.name, &info, entry.next)
                // An entry that does not fit is not written: the next request starts there.
                if needed > size - used { break }
                used += needed
            }
            _ = fuse_reply_buf(req, raw.baseAddress?.assumingMemoryBound(to: CChar.self), used)
        }
    }

    static func install(_ ops: inout fuse_lowlevel_ops) {
        ops.lookup = { req, parent, name in
            guard let folder = FUSEOperations.folder(req), parent == 1, let name,
                let node = folder.node(named: String(cString: name))
            else {
                fuse_reply_err(req, ENOENT)
                return
            }
            var entry = fuse_entry_param()
            entry.ino = node.inode
            entry.generation = 1
            entry.attr = FUSEOperations.attributes(inode: node.inode)
            entry.attr_timeout = 0
            entry.entry_timeout = 0
            fuse_reply_entry(req, &entry)
        }
        ops.mknod = { req, parent, name, _, _ in
            // Only nodes being added through the API come into the folder this way.
            guard let folder = FUSEOperations.folder(req), parent == 1, let name else {
                fuse_reply_err(req, EPERM)
                return
            }
            let wanted = String(cString: name)
            let node = folder.state.withLock { state in state.nodes.values.first { $0.name == wanted } }
            guard let node, !node.published else {
                fuse_reply_err(req, node == nil ? EPERM : EEXIST)
                return
            }
            node.published = true
            var entry = fuse_entry_param()
            entry.ino = node.inode
            entry.generation = 1
            entry.attr = FUSEOperations.attributes(inode: node.inode)
            fuse_reply_entry(req, &entry)
        }
        ops.unlink = { req, parent, name in
            // Only nodes already removed through the API leave this way.
            guard let folder = FUSEOperations.folder(req), parent == 1, let name else {
                fuse_reply_err(req, ENOENT)
                return
            }
            let wanted = String(cString: name)
            let node = folder.state.withLock { state in state.nodes.values.first { $0.name == wanted } }
            guard let node else {
                fuse_reply_err(req, ENOENT)
                return
            }
            guard node.isRemoved else {
                fuse_reply_err(req, EPERM)
                return
            }
            node.unlinked = true
            if node.clientCount == 0 { folder.forget(node) }
            fuse_reply_err(req, 0)
        }
        ops.getattr = { req, inode, _ in
            guard let folder = FUSEOperations.folder(req) else {
                fuse_reply_err(req, ENOENT)
                return
            }
            if inode != 1 {
                guard let node = folder.node(inode), node.published, !node.unlinked else {
                    fuse_reply_err(req, ENOENT)
                    return
                }
            }
            var info = FUSEOperations.attributes(inode: inode)
            fuse_reply_attr(req, &info, 0)
        }
        ops.readdir = { req, inode, size, offset, _ in
            guard let folder = FUSEOperations.folder(req), inode == 1 else {
                fuse_reply_err(req, ENOTDIR)
                return
            }
            FUSEOperations.replyDirectory(req, folder: folder, size: size, offset: offset)
        }
        ops.open = { req, inode, info in
            guard let folder = FUSEOperations.folder(req), let info, let node = folder.node(inode), !node.isRemoved else {
                fuse_reply_err(req, inode == 1 ? EISDIR : ENODEV)
                return
            }
            info.pointee.fh = node.openClient()
            ringloop_fuse_file_info_set_stream(info)
            fuse_reply_open(req, info)
        }
        ops.release = { req, inode, info in
            if let folder = FUSEOperations.folder(req), let info, let node = folder.node(inode) {
                node.closeClient(info.pointee.fh)
                if node.unlinked, node.clientCount == 0 { folder.forget(node) }
            }
            fuse_reply_err(req, 0)
        }
        ops.read = { req, inode, size, _, info in
            guard let folder = FUSEOperations.folder(req), let info, let node = folder.node(inode) else {
                fuse_reply_err(req, ENODEV)
                return
            }
            // Non-blocking as the reading file is now (the kernel passes its flags with
            // each read), as evdev decides at each read.
            let nonblocking = info.pointee.flags & O_NONBLOCK != 0
            node.read(req: req, client: info.pointee.fh, size: size, nonblocking: nonblocking)
        }
        ops.write = { req, inode, buffer, size, _, info in
            guard let folder = FUSEOperations.folder(req), let info, let node = folder.node(inode), let buffer else {
                fuse_reply_err(req, ENODEV)
                return
            }
            node.write(req: req, client: info.pointee.fh, bytes: UnsafeRawPointer(buffer), size: size)
        }
        ops.ioctl = { req, inode, command, argument, info, _, input, inputSize, outputSize in
            guard let folder = FUSEOperations.folder(req), let info, let node = folder.node(inode) else {
                fuse_reply_err(req, ENODEV)
                return
            }
            node.ioctl(
                req: req, client: info.pointee.fh, command: command, argument: argument, input: input,
                inputSize: inputSize, outputSize: outputSize)
        }
        ops.poll = { req, inode, info, handle in
            guard let folder = FUSEOperations.folder(req), let info, let node = folder.node(inode) else {
                if let handle { fuse_pollhandle_destroy(handle) }
                fuse_reply_poll(req, UInt32(POLLERR | POLLHUP))
                return
            }
            fuse_reply_poll(req, node.poll(client: info.pointee.fh, handle: handle))
        }
    }
}
