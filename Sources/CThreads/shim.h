// Shim for the thread primitives the run loop and its tools use: futexes, atomics on
// plain words, thread names, CPU affinity and the spin-wait hint — raw system calls and
// builtins that glibc declares only under _GNU_SOURCE or Swift cannot import.
#ifndef RINGLOOP_CTHREADS_SHIM_H
#define RINGLOOP_CTHREADS_SHIM_H
#include <errno.h>
#include <stddef.h>
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

#endif
