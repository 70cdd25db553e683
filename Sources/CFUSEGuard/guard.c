// See CFUSEGuard.h.
#define _GNU_SOURCE
#include "CFUSEGuard.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/// The hexadecimal mask after `key` ("SigPnd:") in /proc status text, or 0.
static unsigned long long ringloop_status_mask(const char *text, const char *key) {
    size_t key_length = strlen(key);
    for (const char *line = text; *line; ) {
        if (strncmp(line, key, key_length) == 0) {
            unsigned long long mask = 0;
            for (const char *c = line + key_length; *c && *c != '\n'; c++) {
                if (*c >= '0' && *c <= '9') mask = mask * 16 + (unsigned)(*c - '0');
                else if (*c >= 'a' && *c <= 'f') mask = mask * 16 + (unsigned)(*c - 'a' + 10);
            }
            return mask;
        }
        while (*line && *line != '\n') line++;
        if (*line) line++;
    }
    return 0;
}

/// See CFUSEGuard.h. Only open, read and close: it runs in a forked child.
int ringloop_process_is_dying(const char *status_path) {
    char buffer[4096];
    int fd = open(status_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 1;
    ssize_t count = read(fd, buffer, sizeof(buffer) - 1);
    close(fd);
    if (count <= 0) return 1;
    buffer[count] = 0;
    const char *state = strstr(buffer, "\nState:\t");
    if (state != NULL && (state[8] == 'Z' || state[8] == 'X' || state[8] == 'x')) return 1;
    // A core dump (SIGQUIT, SIGSEGV… with no handler) kills the other threads and waits
    // for them: one waiting on this process's own server never comes.
    const char *dumping = strstr(buffer, "\nCoreDumping:\t");
    if (dumping != NULL && dumping[14] == '1') return 1;
    unsigned long long kill_bit = 1ULL << (SIGKILL - 1);
    return (ringloop_status_mask(buffer, "SigPnd:\t") & kill_bit) != 0
        || (ringloop_status_mask(buffer, "ShdPnd:\t") & kill_bit) != 0;
}

/// See CFUSEGuard.h. The mount's device is "0:N" in /proc/self/mountinfo (field 3, the
/// mount point field 5); FUSE names the connection N under /sys/fs/fuse/connections.
long ringloop_fuse_connection_of(const char *mountpoint) {
    FILE *file = fopen("/proc/self/mountinfo", "re");
    if (file == NULL) return -1;
    char line[8192];
    long found = -1;
    while (found < 0 && fgets(line, sizeof(line), file) != NULL) {
        unsigned major = 0, minor = 0;
        char point[4096];
        if (sscanf(line, "%*u %*u %u:%u %*s %4095s", &major, &minor, point) != 3) continue;
        const char *type = strstr(line, " - fuse");
        if (major == 0 && type != NULL && strcmp(point, mountpoint) == 0) found = (long)minor;
    }
    fclose(file);
    return found;
}

/// Starts the guardian of a FUSE mount that this process serves: a forked child that
/// watches this process and, once it is dying (main thread gone while a thread lingers,
/// or gone altogether, whatever killed it: SIGKILL, a crash, a signal with no handler),
/// aborts the mount's connection (umount2 MNT_FORCE calls FUSE's umount_begin) and
/// detaches it. A thread of the dying process that waits, uninterruptibly, for an answer
/// from the server it hosted (a read, an ioctl, a poll already sent) is then released,
/// so the process can end, and nothing else on the machine waits on the dead folder.
///
/// The child runs in its own session (no terminal signals), with no descriptor of its
/// parent but /dev/null on 0-2, and calls only async-signal-safe functions (it is forked
/// from a multithreaded process). It polls every 50 ms. Returns its pid, or -errno.
/// Stop it with SIGKILL and reap it with waitpid when the folder closes cleanly.
/// With `remove_folder` (the process created the folder for this mount), the child also
/// removes the folder once the mount is detached: rmdir takes only an empty folder that
/// nothing is mounted on, so a folder someone reused meanwhile stays.
pid_t ringloop_start_fuse_guardian(const char *mountpoint, int remove_folder) {
    char status_path[64];
    char mount_copy[4096];
    char abort_path[96] = "";
    int abort_fd = -1;
    pid_t parent = getpid();
    snprintf(status_path, sizeof(status_path), "/proc/%d/status", (int)parent);
    size_t length = strlen(mountpoint);
    if (length >= sizeof(mount_copy)) return -ENAMETOOLONG;
    memcpy(mount_copy, mountpoint, length + 1);
    // The connection's abort file, found now (before the fork, where stdio is allowed):
    // aborting through it still works once the mount has been detached or its path
    // reused, when umount2 on the path no longer reaches the connection.
    long connection = ringloop_fuse_connection_of(mountpoint);
    if (connection >= 0) {
        snprintf(abort_path, sizeof(abort_path), "/sys/fs/fuse/connections/%ld/abort", connection);
        // The control filesystem may not be mounted yet (systemd mounts it at boot, not
        // every system does); root can mount it, as FUSE's documentation describes.
        if (access(abort_path, W_OK) != 0 && errno == ENOENT) {
            mount("fusectl", "/sys/fs/fuse/connections", "fusectl", 0, NULL);
        }
        // Opened now and kept: the open file holds this connection, so the abort reaches
        // it even after its number has been freed and given to another mount.
        abort_fd = open(abort_path, O_WRONLY | O_CLOEXEC);
    }
    pid_t child = fork();
    if (child != 0) {
        int error = errno;
        if (abort_fd >= 0) close(abort_fd);
        return child < 0 ? -error : child;
    }
    // The child: async-signal-safe calls only.
    setsid();
    int null_fd = open("/dev/null", O_RDWR);
    if (null_fd >= 0) {
        dup2(null_fd, 0);
        dup2(null_fd, 1);
        dup2(null_fd, 2);
    }
    if (abort_fd >= 0) {
        abort_fd = dup2(abort_fd, 3) == 3 ? 3 : -1;
    }
    syscall(SYS_close_range, abort_fd == 3 ? 4U : 3U, ~0U, 0U);
    prctl(PR_SET_NAME, (unsigned long)"ringloop-guard", 0, 0, 0);
    struct timespec interval = { .tv_sec = 0, .tv_nsec = 50 * 1000 * 1000 };
    while (getppid() == parent && !ringloop_process_is_dying(status_path)) {
        nanosleep(&interval, NULL);
    }
    if (abort_fd >= 0) (void)!write(abort_fd, "1", 1);
    umount2(mount_copy, MNT_FORCE);
    umount2(mount_copy, MNT_DETACH);
    if (remove_folder) rmdir(mount_copy);
    _exit(0);
}

/// Stops a guardian started by ringloop_start_fuse_guardian and reaps it.
void ringloop_stop_fuse_guardian(pid_t guardian) {
    if (guardian <= 0) return;
    kill(guardian, SIGKILL);
    while (waitpid(guardian, NULL, 0) < 0 && errno == EINTR) {}
}

/// Mounts this process serves, for the crash handler below (up to 64 at once).
#define RINGLOOP_GUARDED_MOUNTS 64
static char ringloop_guarded_paths[RINGLOOP_GUARDED_MOUNTS][4096];
static volatile sig_atomic_t ringloop_guarded_used[RINGLOOP_GUARDED_MOUNTS];
static struct sigaction ringloop_previous_crash_actions[NSIG];
static volatile sig_atomic_t ringloop_crash_handler_installed;

/// On a crash signal: aborts and detaches every mount this process serves, so nothing
/// waits on them while the process is stopped (the Swift backtracer suspends every
/// thread, the server's too) or dying; then hands the signal to the handler that was
/// there before (the backtracer), or to the default action.
static void ringloop_crash_handler(int signal_number, siginfo_t *info, void *context) {
    for (int i = 0; i < RINGLOOP_GUARDED_MOUNTS; i++) {
        if (ringloop_guarded_used[i]) {
            umount2(ringloop_guarded_paths[i], MNT_FORCE);
            umount2(ringloop_guarded_paths[i], MNT_DETACH);
        }
    }
    struct sigaction *previous = &ringloop_previous_crash_actions[signal_number];
    if ((previous->sa_flags & SA_SIGINFO) && previous->sa_sigaction != NULL) {
        previous->sa_sigaction(signal_number, info, context);
    } else if (previous->sa_handler == SIG_IGN) {
        return;
    } else if (previous->sa_handler == SIG_DFL || previous->sa_handler == NULL) {
        struct sigaction fallback;
        memset(&fallback, 0, sizeof(fallback));
        fallback.sa_handler = SIG_DFL;
        sigaction(signal_number, &fallback, NULL);
        raise(signal_number);
    } else {
        previous->sa_handler(signal_number);
    }
}

/// Registers a mount for the crash handler (installing it, chained before the handlers
/// already there, on first use). Returns the slot, or -1 when all are taken. Not
/// thread-safe: call under the caller's lock.
int ringloop_guard_mount(const char *path) {
    if (!ringloop_crash_handler_installed) {
        const int signals[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS, SIGQUIT };
        for (unsigned i = 0; i < sizeof(signals) / sizeof(signals[0]); i++) {
            struct sigaction action;
            memset(&action, 0, sizeof(action));
            action.sa_sigaction = ringloop_crash_handler;
            action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
            sigemptyset(&action.sa_mask);
            sigaction(signals[i], &action, &ringloop_previous_crash_actions[signals[i]]);
        }
        ringloop_crash_handler_installed = 1;
    }
    size_t length = strlen(path);
    if (length >= sizeof(ringloop_guarded_paths[0])) return -1;
    for (int i = 0; i < RINGLOOP_GUARDED_MOUNTS; i++) {
        if (!ringloop_guarded_used[i]) {
            memcpy(ringloop_guarded_paths[i], path, length + 1);
            ringloop_guarded_used[i] = 1;
            return i;
        }
    }
    return -1;
}

/// Forgets a mount registered with ringloop_guard_mount.
void ringloop_unguard_mount(int slot) {
    if (slot >= 0 && slot < RINGLOOP_GUARDED_MOUNTS) ringloop_guarded_used[slot] = 0;
}

