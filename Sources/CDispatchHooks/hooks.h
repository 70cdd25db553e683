// libdispatch's hooks for a run loop that services the main queue, exported on Linux
// (CoreFoundation's CFRunLoop uses the same two). The handle is an eventfd that becomes
// readable when work is enqueued on the main queue; the callback drains that work.
#ifndef RINGLOOP_CDISPATCHHOOKS_H
#define RINGLOOP_CDISPATCHHOOKS_H
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

extern int _dispatch_get_main_queue_handle_4CF(void);
extern void _dispatch_main_queue_callback_4CF(void *msg);

/// Whether the calling thread is the process's main thread (its thread id is the pid).
static inline int ringloop_is_main_thread(void) {
    return getpid() == (pid_t)syscall(SYS_gettid);
}
#endif
