// Guards for a process that serves FUSE virtual devices and also reads them: whatever
// ends the process, neither it nor anything else may hang on its folders. The code is C
// because part of it runs in a forked child of a multithreaded process and in a signal
// handler, where only async-signal-safe calls are allowed.
#ifndef RINGLOOP_CFUSEGUARD_H
#define RINGLOOP_CFUSEGUARD_H
#include <sys/types.h>

/// Whether the process whose /proc status file is `status_path` is dying: gone, its main
/// thread exited (state Z or X) while another lingers, dumping core, or SIGKILL pending on
/// its main thread or on the whole process (the kernel's group exit sends it to every
/// thread). Async-signal-safe.
int ringloop_process_is_dying(const char *status_path);

/// Starts the guardian of a FUSE mount this process serves: a forked child, in its own
/// session, that watches this process and, once it is dying (SIGKILL, a crash, a signal
/// with no handler), aborts the mount's connection (umount2 MNT_FORCE calls FUSE's
/// umount_begin) and detaches it. A thread of the dying process that waits,
/// uninterruptibly, for an answer from the server that died with it is then released, so
/// the process can end, and nothing else on the machine waits on the dead folder. With
/// `remove_folder` (the process created the folder) it then removes the folder, if empty.
/// Polls every 50 ms. Returns the guardian's pid, or -errno.
pid_t ringloop_start_fuse_guardian(const char *mountpoint, int remove_folder);
/// The FUSE connection number of the mount at `mountpoint` (its directory under
/// /sys/fs/fuse/connections), or -1 when no FUSE mount is there.
long ringloop_fuse_connection_of(const char *mountpoint);

/// Stops a guardian (SIGKILL) and reaps it.
void ringloop_stop_fuse_guardian(pid_t guardian);

/// Registers a mount for the crash handler, installing the handler on first use for
/// SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS and SIGQUIT, chained before
/// the handlers already there (the Swift backtracer's, which suspends every thread —
/// the server's too — while a thread waiting on the server cannot be suspended): on such
/// a signal it aborts and detaches every registered mount, then hands the signal on.
/// Returns the slot, or -1. Callers serialize registration.
int ringloop_guard_mount(const char *path);

/// Forgets a mount registered with ringloop_guard_mount.
void ringloop_unguard_mount(int slot);

#endif
