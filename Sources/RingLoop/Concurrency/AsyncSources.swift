import CLibURing
import Glibc
import SystemPackage

/// Async sequences over the loop's sources: each is a source of the loop in its common
/// modes, yielding from the loop's thread. Ending the iteration — the consuming task
/// cancelled, the sequence dropped, or the loop's `for await` left — removes the source
/// from the loop at once.
extension RingRunLoop {
    /// The fire times of a repeating timer on the loop, every `interval`.
    ///
    /// Buffering: a consumer slower than the timer gets the newest fire time only (ticks
    /// missed meanwhile are dropped, as a repeating ``LoopTimer`` skips missed fires).
    public func ticks(
        every interval: Duration, tolerance: Duration = .zero, precise: Bool = false
    ) -> AsyncStream<MonotonicInstant> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: MonotonicInstant.self, bufferingPolicy: .bufferingNewest(1))
        let timer = LoopTimer(after: interval, repeating: interval, tolerance: tolerance, precise: precise) { _ in
            continuation.yield(.now)
        }
        continuation.onTermination = { _ in timer.invalidate() }
        addFromAnyThread(timer)
        return stream
    }

    /// The `poll` events a file descriptor reports for `events` (by default
    /// ``PollEvents/readable``), watched by a multishot poll on the loop's ring; drain the
    /// descriptor after each report, since reports come once per change, like `EPOLLET`.
    ///
    /// Buffering: a consumer slower than the reports gets the newest one; since each
    /// element means "drain the descriptor", nothing is lost by skipping older ones.
    /// Events with ``PollEvents/invalid`` (the descriptor closed or unwatchable) are the
    /// last element. The loop does not own the descriptor: end the iteration before closing it.
    public func readiness(of fileDescriptor: FileDescriptor, events: PollEvents = .readable) -> AsyncStream<PollEvents> {
        let (stream, continuation) = AsyncStream.makeStream(of: PollEvents.self, bufferingPolicy: .bufferingNewest(1))
        let source = LoopPortSource(fileDescriptor: fileDescriptor, events: events) { reported in
            continuation.yield(reported)
            if reported.contains(.invalid) { continuation.finish() }
        }
        continuation.onTermination = { _ in source.invalidate() }
        addFromAnyThread(source)
        return stream
    }

    /// The messages sent to `port`, in order.
    ///
    /// Buffering: unbounded — no message is dropped; a consumer that falls behind holds
    /// them in memory, as the port's own queue would.
    public func messages(of port: LoopDoorbell) -> AsyncStream<LoopDoorbell.Message> {
        let (stream, continuation) = AsyncStream.makeStream(of: LoopDoorbell.Message.self, bufferingPolicy: .unbounded)
        let source = LoopPortSource(doorbell: port) { message in continuation.yield(message) }
        continuation.onTermination = { _ in source.invalidate() }
        addFromAnyThread(source)
        return stream
    }

    func addFromAnyThread(_ item: LoopItem) {
        addItem(item, to: .common)
        if !isOnLoopThread { wakeUp() }
    }
}
