#ifndef RINGLOOP_CHEAPSTATISTICS_H
#define RINGLOOP_CHEAPSTATISTICS_H
/// Bytes the allocator has handed out and not had back (small blocks and mmapped ones),
/// from glibc's mallinfo2 (which Swift's Glibc module does not show); -1 in sanitizer
/// builds, whose allocator is not glibc's.
long ringloop_heap_in_use(void);
#endif
