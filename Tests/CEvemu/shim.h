// evemu's own reader (libevemu, evemu 2.7), for differential tests of the evemu format:
// what evemu_read accepts and the device it builds, against RingLoop's reader.
#ifndef RINGLOOP_CEVEMU_SHIM_H
#define RINGLOOP_CEVEMU_SHIM_H
#include <evemu.h>

/// Reads the next `E:` line as evemu-play does; 1 when an event was read.
static inline int ringloop_evemu_read_event(
    FILE *file, long long *seconds, long long *microseconds, unsigned *type, unsigned *code, int *value)
{
    struct input_event event;
    int result = evemu_read_event(file, &event);
    if (result > 0) {
        *seconds = (long long)event.input_event_sec;
        *microseconds = (long long)event.input_event_usec;
        *type = event.type;
        *code = event.code;
        *value = event.value;
    }
    return result;
}

#endif
