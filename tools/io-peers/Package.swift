// swift-tools-version: 6.0
// The peers `ringloop bench` compares RingLoop's I/O with, in a package of their own so
// that RingLoop does not depend on them: a swift-nio (NIOPosix, epoll) TCP echo server.
//
//   swift build -c release --package-path tools/io-peers
//
// `ringloop-bench --only io` runs .build/release/io-peers from here when it is built and
// reports the peer as missing otherwise.
import PackageDescription

let package = Package(
    name: "io-peers",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio", exact: "2.101.3")
    ],
    targets: [
        .executableTarget(
            name: "io-peers",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        )
    ]
)
