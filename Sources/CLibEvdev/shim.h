// Shim for libevdev and the kernel's evdev ioctls: wraps the request macros Swift cannot import.
#ifndef RINGLOOP_CLIBEVDEV_SHIM_H
#define RINGLOOP_CLIBEVDEV_SHIM_H
// No _GNU_SOURCE: it renames fd_set's member and clashes with Swift's Glibc module.
// The first include fixes glibc's feature macros before liburing.h defines its own.
#include <libevdev/libevdev.h>
#include <libevdev/libevdev-uinput.h>
#include <linux/input.h>
#include <linux/uinput.h>
#include <sys/ioctl.h>
#include <string.h>

static inline unsigned long ringloop_eviocgrab(void) { return EVIOCGRAB; }
static inline unsigned long ringloop_eviocsclockid(void) { return EVIOCSCLOCKID; }
static inline unsigned long ringloop_eviocgrep(void) { return EVIOCGREP; }
static inline unsigned long ringloop_eviocsrep(void) { return EVIOCSREP; }
static inline unsigned long ringloop_eviocgversion(void) { return EVIOCGVERSION; }
static inline unsigned long ringloop_eviocgid(void) { return EVIOCGID; }
static inline unsigned long ringloop_eviocgname(unsigned len) { return EVIOCGNAME(len); }
static inline unsigned long ringloop_eviocgphys(unsigned len) { return EVIOCGPHYS(len); }
static inline unsigned long ringloop_eviocguniq(unsigned len) { return EVIOCGUNIQ(len); }
static inline unsigned long ringloop_eviocgprop(unsigned len) { return EVIOCGPROP(len); }
static inline unsigned long ringloop_eviocgbit(unsigned type, unsigned len) { return EVIOCGBIT(type, len); }
static inline unsigned long ringloop_eviocgabs(unsigned axis) { return EVIOCGABS(axis); }
static inline unsigned long ringloop_eviocgkey(unsigned len) { return EVIOCGKEY(len); }
static inline unsigned long ringloop_eviocgsw(unsigned len) { return EVIOCGSW(len); }
static inline unsigned long ringloop_eviocgled(unsigned len) { return EVIOCGLED(len); }
static inline unsigned long ringloop_eviocgmtslots(unsigned len) { return EVIOCGMTSLOTS(len); }
static inline unsigned long ringloop_eviocsff(void) { return EVIOCSFF; }
static inline unsigned long ringloop_eviocrmff(void) { return EVIOCRMFF; }
static inline unsigned long ringloop_eviocgeffects(void) { return EVIOCGEFFECTS; }
/// Fills `effect` as a rumble (`FF_RUMBLE`): `id` -1 for a new one, the magnitudes, the
/// length and delay in milliseconds.
static inline void ringloop_ff_rumble(struct ff_effect *effect, short id, unsigned short strong, unsigned short weak,
                                      unsigned short length, unsigned short delay) {
    memset(effect, 0, sizeof *effect);
    effect->type = FF_RUMBLE;
    effect->id = id;
    effect->replay.length = length;
    effect->replay.delay = delay;
    effect->u.rumble.strong_magnitude = strong;
    effect->u.rumble.weak_magnitude = weak;
}
static inline short ringloop_ff_effect_id(const struct ff_effect *effect) { return effect->id; }
// The driver side of a uinput device's force feedback (`linux/uinput.h`): the kernel sends
// the uinput descriptor an `EV_UINPUT` event (`UI_FF_UPLOAD` or `UI_FF_ERASE`, the value
// its request id) when a reader uploads or erases an effect, and waits until the device
// fetches the request (`UI_BEGIN_FF_…`) and answers it (`UI_END_FF_…`, with `retval`).
static inline unsigned long ringloop_ui_begin_ff_upload(void) { return UI_BEGIN_FF_UPLOAD; }
static inline unsigned long ringloop_ui_end_ff_upload(void) { return UI_END_FF_UPLOAD; }
static inline unsigned long ringloop_ui_begin_ff_erase(void) { return UI_BEGIN_FF_ERASE; }
static inline unsigned long ringloop_ui_end_ff_erase(void) { return UI_END_FF_ERASE; }
static inline unsigned short ringloop_ev_uinput(void) { return EV_UINPUT; }
static inline unsigned short ringloop_ui_ff_upload(void) { return UI_FF_UPLOAD; }
static inline unsigned short ringloop_ui_ff_erase(void) { return UI_FF_ERASE; }
/// `EVIOCRMFF` takes the effect's id as the argument itself, not a pointer to it.
static inline int ringloop_ioctl_value(int fd, unsigned long request, long value) { return ioctl(fd, request, value); }
static inline long ringloop_input_event_sec(const struct input_event *e) { return e->input_event_sec; }
static inline long ringloop_input_event_usec(const struct input_event *e) { return e->input_event_usec; }
// input_event_sec/usec are macros: `time.tv_sec` on 64-bit targets, `__sec` on 32-bit ones
// built with 64-bit time_t. Through these the layout is the C compiler's, not assumed.
static inline void ringloop_input_event_set_time(struct input_event *e, long long sec, long usec) {
    e->input_event_sec = sec;
    e->input_event_usec = usec;
}

#endif
