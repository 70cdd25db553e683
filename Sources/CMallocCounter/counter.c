// Counting allocator for `ringloop-bench`: the executable's malloc, calloc and realloc
// take precedence over libc's for the whole process; each forwards to glibc's internal
// entry point and counts. Linked only into the ringloop-bench command. Under a sanitizer,
// which interposes malloc itself, counting is off (ringloop_malloc_counting() is 0).
#include <stdatomic.h>
#include <malloc.h>
#include <stddef.h>
#include "CMallocCounter.h"

#if defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define RINGLOOP_SANITIZED 1
#endif
#endif

static atomic_ulong allocations;

#ifndef RINGLOOP_SANITIZED
extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);

void *malloc(size_t size) {
    atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
    return __libc_malloc(size);
}

void *calloc(size_t count, size_t size) {
    atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
    return __libc_calloc(count, size);
}

void *realloc(void *pointer, size_t size) {
    atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
    return __libc_realloc(pointer, size);
}

int ringloop_malloc_counting(void) { return 1; }
#else
int ringloop_malloc_counting(void) { return 0; }
#endif

unsigned long ringloop_malloc_count(void) {
    return atomic_load_explicit(&allocations, memory_order_relaxed);
}
