import SystemPackage

// Async forms of the channel's operations: each starts the operation on the loop's thread
// and resumes with its final completion; cancelling the task cancels the operation.
extension LoopIOChannel {
    /// Reads at most `count` bytes; an empty array at the end of the file or stream.
    public func readBytes(upTo count: Int, at offset: UInt64? = nil) async throws(IOFailure) -> [UInt8] {
        let outcome = try await finalOutcome { channel, handler throws(IOFailure) in
            try channel.read(upTo: count, at: offset, completion: handler)
        }
        if case .bytes(let bytes) = outcome { return bytes }
        return []
    }

    /// Writes `bytes`; returns how many the kernel took (all of them on a stream, written
    /// behind earlier writes). On a stream it first waits while the channel is not
    /// ``isWritable``.
    public func writeBytes(_ bytes: [UInt8], at offset: UInt64? = nil) async throws(IOFailure) -> Int {
        let outcome = try await finalOutcome(waitingForWritability: offset == nil) { channel, handler throws(IOFailure) in
            try channel.write(bytes, at: offset, completion: handler)
        }
        if case .transferred(let count) = outcome { return count }
        return 0
    }

    /// Sends all of `bytes` on a connected socket. On a stream it first waits while the
    /// channel is not ``isWritable`` (above its high water mark until it falls below the
    /// low one), so a sender that awaits each send never queues without bound.
    public func sendBytes(_ bytes: [UInt8]) async throws(IOFailure) {
        _ = try await finalOutcome(waitingForWritability: true) { channel, handler throws(IOFailure) in
            try channel.send(bytes, completion: handler)
        }
    }

    /// Connects the socket to `address`.
    public func connection(to address: SocketAddress) async throws(IOFailure) {
        _ = try await finalOutcome { channel, handler throws(IOFailure) in
            try channel.connect(to: address, completion: handler)
        }
    }

    /// Bytes as they are received, until the peer ends the stream (the sequence ends) or
    /// a failure (it throws). Ending the iteration cancels the receive.
    public func receivedBytes(bufferCount: Int = 16, bufferSize: Int = 16_384) -> AsyncThrowingStream<[UInt8], any Error> {
        stream { channel, handler throws(IOFailure) in
            try channel.receive(bufferCount: bufferCount, bufferSize: bufferSize, completion: handler)
        } element: { outcome in
            if case .bytes(let bytes) = outcome { return bytes }
            return nil
        }
    }

    /// Connections accepted on a listening socket (descriptors the receiver owns), until
    /// a failure (it throws). Ending the iteration cancels the accept.
    public func acceptedConnections() -> AsyncThrowingStream<FileDescriptor, any Error> {
        stream { channel, handler throws(IOFailure) in
            try channel.accept(completion: handler)
        } element: { outcome in
            if case .accepted(let descriptor) = outcome { return descriptor }
            return nil
        }
    }

    private typealias Starter = @Sendable (LoopIOChannel, @escaping Handler) throws(IOFailure) -> IOOperation

    /// Starts an operation on the loop's thread (once the channel is writable, with
    /// `waitingForWritability`) and waits for its final completion.
    private func finalOutcome(
        waitingForWritability: Bool = false, _ start: @escaping Starter
    ) async throws(IOFailure) -> IOCompletion.Outcome {
        let started = ThreadLock<IOOperation?>(nil)
        let cancelled = ThreadLock(false)
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<IOCompletion.Outcome, IOFailure>, Never>) in
                onLoop { channel in
                    guard waitingForWritability, channel.resolvedWriteMode != .messages else { return begin(channel) }
                    channel.whenWritable { failure in
                        if let failure { return continuation.resume(returning: .failure(failure)) }
                        if cancelled.withLock({ $0 }) { return continuation.resume(returning: .failure(.cancelled)) }
                        begin(channel)
                    }
                }
                @Sendable func begin(_ channel: LoopIOChannel) {
                    do throws(IOFailure) {
                        let operation = try start(channel) { _, completion in
                            guard completion.isFinal else { return }
                            if case .failed(let failure) = completion.outcome {
                                continuation.resume(returning: .failure(failure))
                            } else {
                                continuation.resume(returning: .success(completion.outcome))
                            }
                        }
                        started.withLock { $0 = operation }
                    } catch {
                        continuation.resume(returning: .failure(error))
                    }
                }
            }
        } onCancel: {
            cancelled.withLock { $0 = true }
            onLoop { channel in if let operation = started.withLock({ $0 }) { channel.cancel(operation) } }
        }
        return try result.get()
    }

    private func stream<Element: Sendable>(
        _ start: @escaping Starter, element: @escaping @Sendable (IOCompletion.Outcome) -> Element?
    ) -> AsyncThrowingStream<Element, any Error> {
        AsyncThrowingStream { continuation in
            let started = ThreadLock<IOOperation?>(nil)
            onLoop { channel in
                do throws(IOFailure) {
                    let operation = try start(channel) { _, completion in
                        if let value = element(completion.outcome) { continuation.yield(value) }
                        guard completion.isFinal else { return }
                        switch completion.outcome {
                        case .failed(.cancelled), .endOfFile, .bytes, .accepted: continuation.finish()
                        case .failed(let failure): continuation.finish(throwing: failure)
                        default: continuation.finish()
                        }
                    }
                    started.withLock { $0 = operation }
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { [weak self] _ in
                self?.onLoop { channel in if let operation = started.withLock({ $0 }) { channel.cancel(operation) } }
            }
        }
    }

    /// Runs `body` on the loop's thread: now when called there.
    private func onLoop(_ body: @escaping @Sendable (LoopIOChannel) -> Void) {
        if loop.isOnLoopThread {
            body(self)
        } else {
            loop.onLoopThread { _ in body(self) }
        }
    }
}
