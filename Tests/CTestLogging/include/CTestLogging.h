#ifndef RINGLOOP_CTESTLOGGING_H
#define RINGLOOP_CTESTLOGGING_H

/// Nothing to call: this target only holds a constructor (hook.c) that installs the
/// tests' log handler before any test, or the library, makes a `Logger`.
void ringloop_test_logging_linked(void);

#endif
