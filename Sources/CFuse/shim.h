// Shim for libfuse3's low-level API: FUSE_USE_VERSION must precede the header, and the
// loop entry point is a macro that picks a versioned symbol, so it is wrapped here, as
// are a few kernel facilities Swift's Glibc module does not import.
#ifndef RINGLOOP_CFUSE_SHIM_H
#define RINGLOOP_CFUSE_SHIM_H
// No _GNU_SOURCE: it renames fd_set's member and clashes with Swift's Glibc module.
#include <errno.h>
#define FUSE_USE_VERSION 35
#include <fuse_lowlevel.h>
#include <linux/input.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/// Sets the open-file flags a FUSE server cannot set from Swift (they are bitfields):
/// a stream (no page cache, no seeking), and no FUSE_FLUSH on close (FOPEN_NOFLUSH), so
/// closing a node never waits for the server, even when the server is this process and
/// is dying.
static inline void ringloop_fuse_file_info_set_stream(struct fuse_file_info *fi) {
    fi->direct_io = 1;
    fi->nonseekable = 1;
    fi->keep_cache = 0;
    fi->noflush = 1;
}

/// Reads `len` bytes at `address` in process `pid` (process_vm_readv). Returns bytes read
/// or -errno. Used for the one evdev ioctl whose input travels in its output buffer
/// (EVIOCGMTSLOTS), which FUSE does not forward.
static inline long ringloop_read_process_memory(pid_t pid, const void *address, void *buffer, size_t len) {
    struct iovec local = { .iov_base = buffer, .iov_len = len };
    struct iovec remote = { .iov_base = (void *)address, .iov_len = len };
    long r = syscall(SYS_process_vm_readv, pid, &local, 1UL, &remote, 1UL, 0UL);
    return r < 0 ? -errno : r;
}

/// Writes `len` bytes into another process's memory (process_vm_writev): an ioctl's reply
/// into a caller's struct that FUSE does not copy back (EVIOCSFF's effect id). Returns the
/// bytes written or -errno.
static inline long ringloop_write_process_memory(pid_t pid, void *address, const void *buffer, size_t len) {
    struct iovec local = { .iov_base = (void *)buffer, .iov_len = len };
    struct iovec remote = { .iov_base = address, .iov_len = len };
    long r = syscall(SYS_process_vm_writev, pid, &local, 1UL, &remote, 1UL, 0UL);
    return r < 0 ? -errno : r;
}

/// Lazily detaches a mount (umount2 MNT_DETACH), for stale mounts of a crashed run.
static inline int ringloop_lazy_unmount(const char *path) {
    return umount2(path, MNT_DETACH) < 0 ? -errno : 0;
}

/// Aborts a FUSE mount's connection (umount2 MNT_FORCE calls FUSE's umount_begin, which
/// aborts it before any busy check): every pending and later request fails, and the
/// server's read of /dev/fuse returns. Returns 0 or -errno (EBUSY still aborted).
static inline int ringloop_force_unmount(const char *path) {
    return umount2(path, MNT_FORCE) < 0 ? -errno : 0;
}


#endif
