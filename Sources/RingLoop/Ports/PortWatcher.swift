import Glibc

/// Watches connections to ports in other processes for their end, for
/// ``RemoteMessagePort/setInvalidationCallback(_:)``: one loop thread per process, made
/// on first use, with a poll for `POLLRDHUP` per watched connection.
enum PortWatcher {
    /// `POLLRDHUP` (glibc declares it under `_GNU_SOURCE` only): the peer closed its end.
    static let peerClosed: Int16 = 0x2000

    private struct WeakSource {
        weak var source: LoopPortSource?
    }

    private static let thread = LoopThread(name: "ringloop-ports")

    /// Calls `body` once, on the watcher's thread, when the peer closes `socket` (its
    /// process ended, or its port was invalidated). Invalidate the returned source to stop
    /// watching, before closing the socket.
    static func watch(_ socket: Int32, _ body: @escaping @Sendable () -> Void) -> LoopPortSource {
        // Weak: the source must not keep itself alive through its own callback.
        let itself = ThreadLock(WeakSource())
        let source = LoopPortSource(fileDescriptor: socket, events: peerClosed) { _ in
            itself.withLock { $0.source }?.invalidate()
            body()
        }
        itself.withLock { $0.source = source }
        thread.loop.add(source, to: .default)
        thread.loop.wakeUp()
        return source
    }
}
