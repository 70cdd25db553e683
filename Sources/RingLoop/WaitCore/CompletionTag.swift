/// The 64-bit `user_data` the wait core attaches to every submission, so that each
/// completion finds the port that asked for it without casting pointers.
///
/// Bit layout (most significant first):
///
/// | bits  | field      | meaning                                                     |
/// |-------|------------|-------------------------------------------------------------|
/// | 63–56 | kind       | ``Kind``: what the completion is for                        |
/// | 55–32 | generation | the port slot's generation when the operation was submitted |
/// | 31–0  | slot       | index in the wait core's port table                         |
///
/// A slot's generation changes each time the slot is reused, so a late completion of a
/// removed port (one the kernel had already queued) never reaches the port's successor.
package struct CompletionTag: Hashable, Sendable, CustomStringConvertible {
    package enum Kind: UInt8 {
        /// A wake-up kick (MSG_RING into this ring, or the eventfd's poll).
        case wakeUp = 1
        /// A readiness port's (multishot) poll.
        case readiness = 2
        /// The result of a cancellation request; carries nothing to deliver.
        case cancellation = 3
        /// A MSG_RING this ring sent to another ring: the sender's own completion.
        case messageSent = 4
        /// An I/O operation (read, write, accept, connect, receive, send…).
        case operation = 5
        /// A descriptor's close handed to the ring (`IORING_OP_CLOSE`); carries nothing to
        /// deliver.
        case close = 6
        /// A no-op linked behind an operation that ends the wait only when it fails
        /// (`IOSQE_CQE_SKIP_SUCCESS`: its only completion is `-ECANCELED`, when the
        /// operation failed); carries nothing to deliver.
        case failureNotice = 7
    }

    static let generationMask: UInt32 = 0x00FF_FFFF

    package let rawValue: UInt64

    init(rawValue: UInt64) { self.rawValue = rawValue }

    package init(kind: Kind, slot: UInt32 = 0, generation: UInt32 = 0) {
        rawValue =
            UInt64(kind.rawValue) << 56
            | UInt64(generation & Self.generationMask) << 32
            | UInt64(slot)
    }

    /// The kind, or `nil` for a value the wait core never submitted.
    var kind: Kind? { Kind(rawValue: UInt8(truncatingIfNeeded: rawValue >> 56)) }
    var generation: UInt32 { UInt32(truncatingIfNeeded: rawValue >> 32) & Self.generationMask }
    var slot: UInt32 { UInt32(truncatingIfNeeded: rawValue) }

    package var description: String {
        "\(kind.map { "\($0)" } ?? "unknown")#\(slot).\(generation)"
    }
}
