// Installs the tests' log handler (RingLoopTestSupport's TestLog) when the test process
// starts, before swift-testing runs a test and before the library makes its loggers
// (each a `static let`, which keeps the handler of the moment it is made): log lines that
// tests provoke on purpose go to that handler, not to the output a reader watches.
// swift-testing has no hook that runs first, so a constructor does it.
#include "CTestLogging.h"

// In RingLoopTestSupport (`@_cdecl`); weak, so a process that links this file without
// that target starts normally.
extern void ringloop_test_logging_bootstrap(void) __attribute__((weak));

__attribute__((constructor)) static void ringloop_test_logging_install(void) {
    if (ringloop_test_logging_bootstrap) ringloop_test_logging_bootstrap();
}

void ringloop_test_logging_linked(void) {}
