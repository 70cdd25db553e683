// Shim for the thread primitives the run loop and its tools use: futexes, atomics on
// plain words, thread names, CPU affinity and the spin-wait hint — raw system calls and
// builtins that glibc declares only under _GNU_SOURCE or Swift cannot import.
#ifndef RINGLOOP_CTHREADS_SHIM_H
#define RINGLOOP_CTHREADS_SHIM_H
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/ucontext.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/futex.h>
#include <stdint.h>

/// futex(FUTEX_WAIT_PRIVATE) on `word` while it holds `expected`: the raw wake-up floor
/// the benchmarks compare against. Returns 0 or -errno.
static inline int ringloop_futex_wait(uint32_t *word, uint32_t expected) {
    long r = syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
    return r < 0 ? -errno : 0;
}

/// futex(FUTEX_WAKE_PRIVATE) waking one waiter on `word`.
static inline int ringloop_futex_wake(uint32_t *word) {
    long r = syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    return r < 0 ? -errno : (int)r;
}

/// Sequentially consistent load and store on a plain `uint32_t`, for futex words.
static inline uint32_t ringloop_atomic_load_u32(uint32_t *word) {
    return __atomic_load_n(word, __ATOMIC_SEQ_CST);
}
static inline void ringloop_atomic_store_u32(uint32_t *word, uint32_t value) {
    __atomic_store_n(word, value, __ATOMIC_SEQ_CST);
}

/// Names the calling thread (at most 15 bytes are kept), as `top -H` and gdb show it.
static inline void ringloop_set_thread_name(const char *name) {
    prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0);
}

/// A spin-wait hint to the CPU (x86 `pause`, Arm `yield`): eases the sibling hyperthread
/// and the memory system while a thread polls a flag.
static inline void ringloop_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/// The calling thread's CPU affinity as a bit mask of `words` 64-bit words (bit n = CPU
/// n): `get` stores it there, otherwise the thread (and threads it creates afterwards) is
/// restricted to it. Raw sched_{get,set}affinity, which glibc declares only under
/// _GNU_SOURCE. Returns 0 or -errno.
static inline int ringloop_thread_affinity(uint64_t *mask, size_t words, int get) {
    long r = syscall(get ? SYS_sched_getaffinity : SYS_sched_setaffinity, 0, words * sizeof(uint64_t), mask);
    return r < 0 ? -errno : 0;
}

/// Sets the calling thread's effective user and group ids only (raw setresgid and
/// setresuid with the real and saved ids unchanged): glibc's wrappers change every thread
/// of the process, as POSIX asks, but the kernel keeps credentials per thread. A thread of
/// a root process can act as another user this way (what a socket records as its peer's
/// credentials at connect) and come back, since the saved id stays 0. Returns 0 or -errno.
static inline int ringloop_thread_set_effective_ids(uint32_t uid, uint32_t gid) {
    if (syscall(SYS_setresgid, -1, gid, -1) != 0) return -errno;
    if (syscall(SYS_setresuid, -1, uid, -1) != 0) return -errno;
    return 0;
}

/// The stop signals a thread the package starts blocks from its birth (SIGINT, SIGTERM,
/// SIGHUP, SIGQUIT), so that they reach the signalfd of `signals(_:)` or the thread that
/// waits for them, and never a library thread that would take their default action.
static inline void ringloop_stop_signals(sigset_t *set) {
    sigemptyset(set);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGHUP);
    sigaddset(set, SIGQUIT);
}

/// The handler of a signal the loop reads from a signalfd, for a thread that does not
/// block it (one started before `signals(_:)` by code that is not the package's): it
/// leaves the signal blocked in that thread once the handler returns (the saved context's
/// mask) and sends it to the process again, where it waits for the signalfd, or for
/// another such thread, which does the same. Only async-signal-safe calls.
static inline void ringloop_signal_forwarder(int signo, siginfo_t *info, void *context) {
    (void)info;
    int saved = errno;
    ucontext_t *user = (ucontext_t *)context;
    sigaddset(&user->uc_sigmask, signo);
    kill(getpid(), signo);
    errno = saved;
}

/// Installs `ringloop_signal_forwarder` for `signo` (in place of its default action).
/// Returns 0 or -errno.
static inline int ringloop_forward_signal(int signo) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = ringloop_signal_forwarder;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&action.sa_mask);
    return sigaction(signo, &action, NULL) == 0 ? 0 : -errno;
}

#endif
