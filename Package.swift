// swift-tools-version: 6.0
// RingLoop: a CFRunLoop-faithful run loop on io_uring, and an evdev → HID input chain, for Linux.
import PackageDescription

let package = Package(
    name: "RingLoop",
    products: [
        .library(name: "RingLoop", targets: ["RingLoop"]),
        .library(name: "RingLoopEvdev", targets: ["RingLoopEvdev"]),
        .library(name: "RingLoopHID", targets: ["RingLoopHID"]),
        .library(name: "RingLoopDevices", targets: ["RingLoopDevices"]),
        .executable(name: "ringloop", targets: ["ringloop"]),
        .executable(name: "ringloop-bench", targets: ["ringloop-bench"]),
        .executable(name: "tcp-echo", targets: ["tcp-echo"]),
        .executable(name: "custom-source", targets: ["custom-source"]),
        .executable(name: "observer-trace", targets: ["observer-trace"]),
        .executable(name: "kiosk", targets: ["kiosk"]),
        .executable(name: "kiosk-server", targets: ["kiosk-server"]),
        .executable(name: "worker-thread", targets: ["worker-thread"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
        // `swift package generate-documentation` (DocC); a plugin, linked into nothing.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // System libraries. Each module map names one shim header that includes the
        // library and wraps, as `static inline` functions, the few macros Swift cannot import.
        .systemLibrary(
            name: "CLibURing",
            path: "Sources/CLibURing",
            pkgConfig: "liburing",
            providers: [.apt(["liburing-dev"])]
        ),
        .systemLibrary(
            name: "CLibEvdev",
            path: "Sources/CLibEvdev",
            pkgConfig: "libevdev",
            providers: [.apt(["libevdev-dev"])]
        ),
        .systemLibrary(
            name: "CXKBCommon",
            path: "Sources/CXKBCommon",
            pkgConfig: "xkbcommon",
            providers: [.apt(["libxkbcommon-dev", "xkb-data"])]
        ),
        .systemLibrary(
            name: "CFuse",
            path: "Sources/CFuse",
            pkgConfig: "fuse3",
            providers: [.apt(["libfuse3-dev", "fuse3"])]
        ),

        // Thread primitives: futexes, atomics on plain words, thread names, CPU affinity.
        .systemLibrary(name: "CThreads", path: "Sources/CThreads"),

        // libdispatch's main-queue hooks for run loops (declared; libdispatch exports them).
        .systemLibrary(name: "CDispatchHooks", path: "Sources/CDispatchHooks"),

        // Guards of processes that serve FUSE virtual devices: a guardian process and a
        // crash-signal handler (C: they run where only async-signal-safe calls are allowed).
        .target(name: "CFUSEGuard", path: "Sources/CFUSEGuard"),

        // A counting malloc for the benchmarks (linked into ringloop-bench only: it replaces
        // malloc for the whole process).
        .target(name: "CMallocCounter", path: "Sources/CMallocCounter"),
        // glibc's heap statistics (mallinfo2), for the soak fixture.
        .target(name: "CHeapStatistics", path: "Sources/CHeapStatistics"),

        // The run loop: wait core, loop, modes, sources, ports, timers, observers, blocks.
        .target(
            name: "RingLoop",
            dependencies: [
                "CLibURing",
                "CThreads",
                "CDispatchHooks",
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "HeapModule", package: "swift-collections"),
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The kernel's evdev interface by name: event types, codes and properties (generated
        // from the kernel's headers), `struct input_event`, absolute axes, bit-mask limits.
        .target(
            name: "RingLoopEvdev",
            dependencies: ["CLibEvdev", .product(name: "SystemPackage", package: "swift-system")]
        ),
        // evdev devices → HID events → event queue → handlers.
        .target(
            name: "RingLoopHID",
            dependencies: [
                "RingLoop", "RingLoopEvdev", "CXKBCommon", .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Recordings (evemu), virtual devices (uinput and FUSE), replay.
        .target(
            name: "RingLoopDevices",
            dependencies: [
                "RingLoop", "RingLoopEvdev", "CLibEvdev", "CFuse", "CFUSEGuard",
                .product(name: "Logging", package: "swift-log"), .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),

        // Benchmarks of the wait core and the HID decoder; they reach the libraries'
        // internals through `package` access. Not a product.
        .target(
            name: "RingLoopBenchmarks",
            dependencies: ["RingLoop", "RingLoopEvdev", "RingLoopHID", "CLibURing", "CThreads"]
        ),
        // What the two commands share about the machine and the package (not a product).
        .target(name: "RingLoopToolSupport", path: "tools/support"),

        // The `ringloop` command.
        .executableTarget(
            name: "ringloop",
            dependencies: [
                "RingLoop", "RingLoopEvdev", "RingLoopHID", "RingLoopDevices", "RingLoopToolSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "SystemPackage", package: "swift-system"), .product(name: "Logging", package: "swift-log"),
            ],
            path: "tools/ringloop"
        ),
        // `ringloop-bench`: this package side by side with Foundation's RunLoop. The only
        // executable with the counting malloc.
        .executableTarget(
            name: "ringloop-bench",
            dependencies: [
                "RingLoop", "RingLoopEvdev", "RingLoopHID", "RingLoopDevices", "RingLoopBenchmarks", "RingLoopToolSupport",
                "CMallocCounter", "CLibURing",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            path: "tools/ringloop-bench"
        ),

        // Examples/: runnable programs, built with the package and run by its tests.
        .executableTarget(
            name: "tcp-echo",
            dependencies: ["RingLoop", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            path: "Examples/TCPEcho"
        ),
        .executableTarget(name: "custom-source", dependencies: ["RingLoop"], path: "Examples/CustomInputSource"),
        .executableTarget(name: "observer-trace", dependencies: ["RingLoop"], path: "Examples/ObserverTrace"),
        .executableTarget(name: "worker-thread", dependencies: ["RingLoop"], path: "Examples/WorkerThread"),
        .executableTarget(
            name: "kiosk", dependencies: ["RingLoop", "RingLoopEvdev", "RingLoopHID", "RingLoopDevices"],
            path: "Examples/Kiosk"),
        .executableTarget(
            name: "kiosk-server",
            dependencies: [
                "RingLoop", "RingLoopEvdev", "RingLoopHID", "RingLoopDevices",
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            path: "Examples/KioskServer"),

        // libFuzzer targets (tools/fuzz builds them with --sanitize=fuzzer,address and runs
        // them; a plain build links them as programs that do nothing).
        .executableTarget(name: "FuzzEvemuReader", dependencies: ["RingLoopDevices"], path: "Fuzz/EvemuReader"),
        .executableTarget(name: "FuzzLibinputReader", dependencies: ["RingLoopDevices"], path: "Fuzz/LibinputReader"),
        .executableTarget(
            name: "FuzzFrameDecoder", dependencies: ["RingLoopHID", "RingLoopDevices", "RingLoopEvdev", "RingLoop"],
            path: "Fuzz/FrameDecoder"),
        .executableTarget(name: "FuzzPortWire", dependencies: ["RingLoop"], path: "Fuzz/PortWire"),
        .executableTarget(name: "FuzzServerWire", dependencies: ["RingLoopHID"], path: "Fuzz/ServerWire"),
        .executableTarget(name: "FuzzSettingsText", dependencies: ["RingLoopHID"], path: "Fuzz/SettingsText"),
        .executableTarget(
            name: "FuzzDeviceNode", dependencies: ["RingLoopDevices", "RingLoopEvdev"], path: "Fuzz/DeviceNode"),

        // Test helpers shared by the test targets: child processes without Foundation's
        // Process (which leaks inside itself), bounded waits, FUSE folders, seeded randomness,
        // an event server that speaks the protocol by hand.
        .target(
            name: "RingLoopTestSupport",
            dependencies: [
                "RingLoop", "RingLoopHID", "RingLoopDevices", "CTestLogging", .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/RingLoopTestSupport"),
        // Installs the tests' log handler when the test process starts (a constructor).
        .target(name: "CTestLogging", path: "Tests/CTestLogging"),
        // `ringloop-fixtures`: programs the command tests run as children (a host that reads
        // its own FUSE node and is killed in every way; the soak). Not a product.
        .executableTarget(
            name: "ringloop-fixtures",
            dependencies: [
                "RingLoop", "RingLoopHID", "RingLoopDevices", "RingLoopToolSupport", "CHeapStatistics",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            path: "Tests/RingLoopFixtures"
        ),
        .testTarget(name: "RingLoopEvdevTests", dependencies: ["RingLoopEvdev", "CLibEvdev", "RingLoopTestSupport"]),
        .testTarget(
            name: "RingLoopTests",
            dependencies: ["RingLoop", "CLibURing", "RingLoopTestSupport", .product(name: "SystemPackage", package: "swift-system")]),
        // The same scenarios on Foundation's RunLoop (CFRunLoop itself on Linux) and on
        // RingRunLoop, with the callout traces compared.
        .testTarget(
            name: "RingLoopDifferentialTests",
            dependencies: ["RingLoop", .product(name: "SystemPackage", package: "swift-system")]),
        // The `ringloop` command, run as a subprocess.
        .testTarget(
            name: "RingLoopCommandTests", dependencies: ["RingLoopHID", "RingLoopDevices", "RingLoopEvdev", "RingLoopTestSupport"]),
        .testTarget(
            name: "RingLoopHIDTests",
            dependencies: [
                "RingLoopHID", "RingLoopDevices", "RingLoopEvdev", "RingLoop", "RingLoopTestSupport",
                .product(name: "SystemPackage", package: "swift-system"),
            ]),
        // evemu's own reader (libevemu), for differential tests of the evemu format.
        .systemLibrary(
            name: "CEvemu",
            path: "Tests/CEvemu",
            pkgConfig: "evemu",
            providers: [.apt(["libevemu-dev"])]
        ),
        .testTarget(
            name: "RingLoopDevicesTests",
            dependencies: [
                "RingLoopDevices", "RingLoopEvdev", "RingLoop", "CLibEvdev", "CEvemu", "RingLoopTestSupport",
                .product(name: "SystemPackage", package: "swift-system"),
            ]),
    ]
)
