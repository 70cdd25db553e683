// Heap statistics for `ringloop soak`: glibc's mallinfo2, which Swift cannot import.
#include <malloc.h>
#include "CHeapStatistics.h"

#if defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define RINGLOOP_SANITIZED 1
#endif
#endif

long ringloop_heap_in_use(void) {
#ifdef RINGLOOP_SANITIZED
    return -1;
#else
    struct mallinfo2 info = mallinfo2();
    return (long)(info.uordblks + info.hblkhd);
#endif
}
