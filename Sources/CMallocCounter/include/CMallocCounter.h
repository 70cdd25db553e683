#ifndef RINGLOOP_CMALLOCCOUNTER_H
#define RINGLOOP_CMALLOCCOUNTER_H
/// Heap allocations (malloc, calloc, realloc) made by the process so far. The counter
/// works by defining those functions in the executable, which the dynamic linker then
/// uses for every library too; each forwards to glibc's own and counts.
unsigned long ringloop_malloc_count(void);
/// 1 when allocations are counted, 0 in sanitizer builds (the sanitizer owns malloc).
int ringloop_malloc_counting(void);
#endif
