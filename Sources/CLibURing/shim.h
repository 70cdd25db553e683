// Shim for liburing: Swift imports liburing's static inline functions directly;
// this header only adds what does not import (macros, raw syscalls liburing 2.3 lacks).
#ifndef RINGLOOP_CLIBURING_SHIM_H
#define RINGLOOP_CLIBURING_SHIM_H
// No _GNU_SOURCE: it renames fd_set's member and clashes with Swift's Glibc module.
// The first include fixes glibc's feature macros before liburing.h defines its own.
#include <errno.h>
// The kernel's own header first: it shares liburing's include guard and is a superset of
// liburing 2.3's copy, and swift-system's CSystem module includes it too; one definition
// of `struct io_uring_sqe` keeps the two modules importable side by side.
#include <linux/io_uring.h>
#include <liburing.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/// `IORING_REGISTER_SEND_MSG_RING` (kernel 6.13): send a MSG_RING SQE without owning a ring.
/// liburing 2.3 has neither the constant nor a wrapper.
#define RINGLOOP_IORING_REGISTER_SEND_MSG_RING 31

/// Sends `sqe` (prepared with io_uring_prep_msg_ring) through the "blind" register call:
/// io_uring_register(-1, IORING_REGISTER_SEND_MSG_RING, sqe, 1).
/// Returns 0 on success or -errno (EINVAL on kernels before 6.13).
static inline int ringloop_send_msg_ring_blind(struct io_uring_sqe *sqe) {
    long r = syscall(__NR_io_uring_register, -1, RINGLOOP_IORING_REGISTER_SEND_MSG_RING, sqe, 1);
    return r < 0 ? -errno : (int)r;
}

/// The submission ring's flags as the kernel last set them (IORING_SQ_TASKRUN,
/// IORING_SQ_CQ_OVERFLOW…), read with acquire ordering.
static inline unsigned ringloop_sq_flags(const struct io_uring *ring) {
    return __atomic_load_n(ring->sq.kflags, __ATOMIC_ACQUIRE);
}

/// Points `cqes` at up to `count` completions already in the completion queue, oldest
/// first, and returns how many; the caller releases them with io_uring_cq_advance. Unlike
/// liburing's io_uring_peek_batch_cqe it never enters the kernel: when the queue is empty
/// and completion work is pending (IORING_SQ_TASKRUN), liburing runs that work there and
/// then, so a loop draining the queue would take each socket's bytes as they trickle in
/// (a multishot receive reading 4 KiB at a time) instead of together at its next wait.
static inline unsigned ringloop_peek_ready_completions(struct io_uring *ring, struct io_uring_cqe **cqes,
                                                       unsigned count) {
    unsigned ready = io_uring_cq_ready(ring);
    if (ready > count) ready = count;
    unsigned head = *ring->cq.khead;
    for (unsigned index = 0; index < ready; index++) {
        cqes[index] = &ring->cq.cqes[(head + index) & ring->cq.ring_mask];
    }
    return ready;
}

/// `IORING_ENTER_ABS_TIMER` (kernel 6.12): the wait's timeout is an absolute time on the
/// ring's clock (CLOCK_MONOTONIC unless registered otherwise), not a duration.
#ifndef IORING_ENTER_ABS_TIMER
#define IORING_ENTER_ABS_TIMER (1U << 5)
#endif

/// Publishes the submission entries queued since the last enter to the kernel (what
/// liburing does before every enter; liburing 2.3 does not export it) and returns how
/// many entries the kernel has not consumed yet.
static inline unsigned ringloop_flush_submissions(struct io_uring *ring) {
    struct io_uring_sq *sq = &ring->sq;
    unsigned tail = sq->sqe_tail;
    if (sq->sqe_head != tail) {
        sq->sqe_head = tail;
        __atomic_store_n(sq->ktail, tail, __ATOMIC_RELEASE);
    }
    return tail - __atomic_load_n(sq->khead, __ATOMIC_ACQUIRE);
}

/// One io_uring_enter that submits what is queued and sleeps until a completion is ready
/// or CLOCK_MONOTONIC reaches `deadline` (IORING_ENTER_EXT_ARG | IORING_ENTER_ABS_TIMER).
/// An absolute deadline is not pushed back by the time spent entering the kernel, as a
/// relative timeout is. `registered` says whether io_uring_register_ring_fd succeeded.
/// Returns what io_uring_enter returns, or -errno (-ETIME at the deadline, -EINVAL on
/// kernels without ABS_TIMER).
static inline int ringloop_submit_and_wait_until(struct io_uring *ring, const struct __kernel_timespec *deadline,
                                                 int registered, unsigned wait_nr) {
    unsigned submit = ringloop_flush_submissions(ring);
    struct io_uring_getevents_arg arg;
    arg.sigmask = 0;
    arg.sigmask_sz = 0;
    arg.pad = 0;
    arg.ts = (__u64)(uintptr_t)deadline;
    unsigned flags = IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG | IORING_ENTER_ABS_TIMER;
    int fd = ring->ring_fd;
    if (registered) {
        flags |= IORING_ENTER_REGISTERED_RING;
        fd = ring->enter_ring_fd;
    }
    long r = syscall(__NR_io_uring_enter, fd, submit, wait_nr, flags, &arg, sizeof(arg));
    return r < 0 ? -errno : (int)r;
}

/// errno of the calling thread (Glibc's errno is a macro).
static inline int ringloop_errno(void) { return errno; }

/* IORING_OP_READ_MULTISHOT (Linux 6.7): reads into provided buffers each time the
 * descriptor has data, one completion per read, until it fails or ends. The opcode is
 * newer than this liburing and these kernel headers, so it is spelled out here; a kernel
 * without it completes the request with -EINVAL. */
#define RINGLOOP_OP_READ_MULTISHOT 49
static inline void ringloop_prep_read_multishot(struct io_uring_sqe *sqe, int fd, unsigned short group) {
    io_uring_prep_rw(RINGLOOP_OP_READ_MULTISHOT, sqe, fd, NULL, 0, (__u64)-1);
    sqe->flags |= IOSQE_BUFFER_SELECT;
    sqe->buf_group = group;
}

#endif
