// Shim for libxkbcommon (keymaps, keyboard state, compose): its headers, and a log handler
// that keeps a context's messages for the error that reports them (Swift cannot write a
// function taking a va_list).
#ifndef RINGLOOP_CXKBCOMMON_SHIM_H
#define RINGLOOP_CXKBCOMMON_SHIM_H
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <xkbcommon/xkbcommon.h>
#include <xkbcommon/xkbcommon-compose.h>
#include <xkbcommon/xkbcommon-keysyms.h>

/// Where a context's messages go: a fixed buffer its owner allocates and clears.
struct ringloop_xkb_log {
    size_t length;
    char text[4096];
};

static void ringloop_xkb_log_handler(struct xkb_context *context, enum xkb_log_level level,
                                     const char *format, va_list arguments) {
    (void)level;
    struct ringloop_xkb_log *log = (struct ringloop_xkb_log *)xkb_context_get_user_data(context);
    if (log == NULL || log->length + 1 >= sizeof(log->text)) return;
    int written = vsnprintf(log->text + log->length, sizeof(log->text) - log->length, format, arguments);
    if (written < 0) return;
    log->length += (size_t)written;
    if (log->length >= sizeof(log->text)) log->length = sizeof(log->text) - 1;
}

/// Sends `context`'s messages at `level` and above into `log` (the caller keeps it alive
/// as long as the context logs).
static inline void ringloop_xkb_capture_log(struct xkb_context *context, struct ringloop_xkb_log *log,
                                            enum xkb_log_level level) {
    log->length = 0;
    log->text[0] = 0;
    xkb_context_set_user_data(context, log);
    xkb_context_set_log_level(context, level);
    xkb_context_set_log_fn(context, ringloop_xkb_log_handler);
}

#endif
