import CLibURing
import CThreads
import RingLoop
import Synchronization

/// Measures cross-thread wake-up mechanisms of the wait core against the raw futex floor.
///
/// One receiver thread sleeps; the calling thread stamps the time, kicks, and waits for
/// the receiver to acknowledge before the next sample. Latency is kick → receiver
/// running again; sender cost is the time the kick call itself takes. Between samples
/// the sender spins for `gap` so the receiver has been asleep that long (this virtual
/// machine's wake-up cost jumps after about 200 µs of sleep, so both regimes matter).
public enum WakeUpBenchmark {
    /// The mechanisms compared.
    public enum Variant: String, Sendable, CaseIterable {
        /// futex wait/wake on a shared word: the floor.
        case futex
        /// The wait core with an eventfd + multishot poll wake-up.
        case eventFD
        /// The wait core with a ringless MSG_RING wake-up (kernel 6.13).
        case messageRingBlind
        /// MSG_RING submitted through a ring the sender thread owns.
        case messageRingFromRing
    }

    /// Latencies and sender costs of one run, in microseconds.
    public struct Result: Sendable {
        public var variant: Variant
        public var latencies: [Double]
        public var senderCosts: [Double]
    }

    public enum Failure: Error, CustomStringConvertible {
        case receiverDidNotAcknowledge(sample: Int)
        case setup(String)

        public var description: String {
            switch self {
            case .receiverDidNotAcknowledge(let sample): "receiver did not wake within 1 s at sample \(sample)"
            case .setup(let what): "setup failed: \(what)"
            }
        }
    }

    private final class Shared: Sendable {
        let sentAt = Atomic<UInt64>(0)
        let acknowledged = Atomic<Int>(0)
        let stop = Atomic<Bool>(false)
        let latencies = ThreadLock<[Double]>([])
        let receiver = ThreadLock<(WakeUpSignal?, Int32, String?)>((nil, -1, nil))
        let ready = Atomic<Bool>(false)
    }

    private static func spin(until instant: MonotonicInstant) {
        while MonotonicInstant.now < instant {}
    }

    /// Runs `samples` wake-ups of `variant`, `gap` apart.
    public static func run(_ variant: Variant, samples: Int, gap: Duration) throws -> Result {
        let shared = Shared()
        let futexWord = UnsafeMutablePointer<UInt32>.allocate(capacity: 1)
        futexWord.initialize(to: 0)
        defer { futexWord.deallocate() }
        let word = UnsafeSendablePointer(pointer: futexWord)

        let receiver = PosixThread.start(name: "bench-receiver") {
            var local: [Double] = []
            local.reserveCapacity(samples)
            func record() {
                let now = MonotonicInstant.now.nanoseconds
                let sent = shared.sentAt.exchange(0, ordering: .sequentiallyConsistent)
                if sent != 0 {
                    local.append(Double(now &- sent) / 1000)
                    shared.acknowledged.add(1, ordering: .sequentiallyConsistent)
                }
            }
            if variant == .futex {
                shared.ready.store(true, ordering: .sequentiallyConsistent)
                while !shared.stop.load(ordering: .sequentiallyConsistent) {
                    while ringloop_atomic_load_u32(word.pointer) == 0 {
                        _ = ringloop_futex_wait(word.pointer, 0)
                    }
                    ringloop_atomic_store_u32(word.pointer, 0)
                    record()
                }
            } else {
                let core: WaitCore
                do {
                    core = try WaitCore(wakeUp: variant == .eventFD ? .eventFD : .messageRing)
                } catch {
                    shared.receiver.withLock { $0.2 = "\(error)" }
                    shared.ready.store(true, ordering: .sequentiallyConsistent)
                    return
                }
                shared.receiver.withLock { $0 = (core.signal, core.signal.fileDescriptor, nil) }
                shared.ready.store(true, ordering: .sequentiallyConsistent)
                while !shared.stop.load(ordering: .sequentiallyConsistent) {
                    do { try core.wait(until: .distantFuture) } catch { break }
                    record()
                }
            }
            shared.latencies.withLock { $0 = local }
        }
        while !shared.ready.load(ordering: .sequentiallyConsistent) {}
        let (signal, targetFD, setupError) = shared.receiver.withLock { $0 }
        if let setupError {
            receiver.join()
            throw Failure.setup(setupError)
        }

        var senderRing: Ring?
        if variant == .messageRingFromRing { senderRing = try Ring(entries: 8) }

        func kick() throws {
            switch variant {
            case .futex:
                ringloop_atomic_store_u32(word.pointer, 1)
                _ = ringloop_futex_wake(word.pointer)
            case .eventFD, .messageRingBlind:
                signal!.wakeUp()
            case .messageRingFromRing:
                let ring = senderRing!
                let sqe = try ring.nextSubmission()
                io_uring_prep_msg_ring(sqe, targetFD, 0, CompletionTag(kind: .wakeUp).rawValue, 0)
                io_uring_sqe_set_data64(sqe, CompletionTag(kind: .messageSent).rawValue)
                try ring.submit()
                ring.harvest { _ in }
            }
        }

        var costs: [Double] = []
        costs.reserveCapacity(samples)
        var failure: Error?
        for sample in 0..<samples {
            spin(until: .now + gap)
            let start = MonotonicInstant.now
            shared.sentAt.store(start.nanoseconds, ordering: .sequentiallyConsistent)
            do { try kick() } catch {
                failure = error
                break
            }
            costs.append(Double(MonotonicInstant.now.nanoseconds - start.nanoseconds) / 1000)
            let limit = MonotonicInstant.now + .seconds(1)
            while shared.acknowledged.load(ordering: .sequentiallyConsistent) <= sample {
                if MonotonicInstant.now > limit {
                    failure = Failure.receiverDidNotAcknowledge(sample: sample)
                    break
                }
            }
            if failure != nil { break }
        }
        shared.stop.store(true, ordering: .sequentiallyConsistent)
        // Wake the receiver so it sees `stop` (no stamp: it records nothing).
        switch variant {
        case .futex:
            ringloop_atomic_store_u32(word.pointer, 1)
            _ = ringloop_futex_wake(word.pointer)
        case .eventFD, .messageRingBlind, .messageRingFromRing:
            signal!.wakeUp()
        }
        receiver.join()
        if let failure { throw failure }
        return Result(variant: variant, latencies: shared.latencies.withLock { $0 }, senderCosts: costs)
    }
}

/// A raw pointer handed to another thread whose accesses are synchronized by hand
/// (here: futex words accessed only through atomic C helpers).
struct UnsafeSendablePointer<Pointee>: @unchecked Sendable {
    let pointer: UnsafeMutablePointer<Pointee>
}
