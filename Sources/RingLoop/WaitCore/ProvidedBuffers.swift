import CLibURing
import Glibc

/// A provided-buffer ring lent to one multishot operation (a receive, a stream read):
/// buffers the kernel picks from when a receive completes, so a multishot receive needs no
/// buffer per submission.
///
/// A completion that used a buffer names it in its flags (`IORING_CQE_F_BUFFER`, the id
/// above `IORING_CQE_BUFFER_SHIFT`); the buffer is the receiver's until every hold on it is
/// released (``release(_:)``): the callout's, and a send's that writes from it
/// (``retain(_:)``). Then ``giveBack(_:)`` hands it back to the kernel. When every buffer is
/// out, a multishot receive ends with `ENOBUFS` and data waits in the socket.
///
/// The lease is held by its operation's record (until the kernel's final completion of
/// the operation, cancelled or not), by received bytes lent to a callout and by sends that
/// write from them. When the last of them goes, nothing can reach the ring any more: the
/// lease's `deinit` gives it to the wait core's ``BufferRingPool``, which lends it to the
/// next receive if every buffer is back in it, and frees it otherwise.
///
/// Thread rules: confined to its wait core's thread.
final class ProvidedBuffers {
    /// The ring lent.
    let ring: BufferRing
    private let pool: BufferRingPool
    /// Receives of this group stopped for want of a buffer, to arm again when one comes back.
    var waitingReceives = 0

    init(ring: BufferRing, pool: BufferRingPool) {
        self.ring = ring
        self.pool = pool
    }

    deinit { pool.recycle(ring) }

    /// The buffer group id operations name (`IOSQE_BUFFER_SELECT` with `buf_group`).
    var group: UInt16 { ring.group }
    /// Buffers handed to the receiver and not yet given back.
    var outstanding: Int { ring.outstanding }

    /// The buffer id a completion's flags name, if it used one.
    static func bufferID(of flags: UInt32) -> UInt16? {
        guard flags & UInt32(IORING_CQE_F_BUFFER) != 0 else { return nil }
        return UInt16(truncatingIfNeeded: flags >> UInt32(IORING_CQE_BUFFER_SHIFT))
    }

    /// The first `length` bytes of buffer `id`, valid until it is recycled.
    func bytes(_ id: UInt16, length: Int) -> UnsafeRawBufferPointer { ring.bytes(id, length: length) }

    /// Notes that the kernel handed out buffer `id`: held once, by its delivery.
    func taken(_ id: UInt16) { ring.taken(id) }

    /// One more hold on buffer `id` (a send writing from it).
    func retain(_ id: UInt16) { ring.retain(id) }

    /// Releases one hold on buffer `id`; returns whether it was the last (the buffer is
    /// then free to give back).
    func release(_ id: UInt16) -> Bool { ring.release(id) }

    /// Gives buffer `id` back to the kernel (no hold left on it).
    func giveBack(_ id: UInt16) { ring.giveBack(id) }
}

/// The provided-buffer rings of one wait core that no operation uses, kept registered to
/// be lent again: opening and closing a connection then maps, registers, unregisters and
/// unmaps nothing (those calls were a third of the loop's time to close connections).
///
/// Bounded: it keeps at most ``limit`` bytes of rings of entries — the memory a pooled
/// ring keeps resident, its buffers' pages being returned to the system when it is pooled
/// (``BufferRing/releasePages()``) — and frees the rings beyond. Lending and taking back
/// are O(1).
///
/// Thread rules: confined to its wait core's thread.
final class BufferRingPool {
    private struct Shape: Hashable {
        var count: Int
        var size: Int
    }

    /// The most bytes of rings of entries kept (a page for a ring of up to 256 buffers).
    let limit: Int
    private var free: [Shape: [BufferRing]] = [:]
    /// Bytes of rings of entries kept.
    private(set) var pooledBytes = 0
    private let ring: Ring
    private let groups = BufferGroupIDs()

    /// The default ``limit``: 32 MiB, 8,192 rings of up to 256 buffers (closing 10,000
    /// connections took half the time with 4,096 rings pooled, a quarter with 10,000).
    static let defaultLimit = 32 << 20

    init(ring: Ring, limit: Int = BufferRingPool.defaultLimit) {
        self.ring = ring
        self.limit = limit
    }

    /// Rings kept.
    var pooledCount: Int { free.values.reduce(0) { $0 + $1.count } }

    /// Lends a ring of `count` (rounded up to a power of two, at most 32768) buffers of
    /// `size` bytes: a pooled one, or a new one registered under a group id of its own.
    func lend(count: Int, size: Int) throws(RingError) -> ProvidedBuffers {
        let shape = Shape(count: BufferRing.roundedCount(count), size: size)
        if let pooled = free[shape]?.popLast() {
            pooledBytes -= pooled.ringBytes
            return ProvidedBuffers(ring: pooled, pool: self)
        }
        do {
            return ProvidedBuffers(ring: try BufferRing(ring: ring, count: count, size: size, groups: groups), pool: self)
        } catch {
            // Pooled rings of other shapes hold memory (pinned pages, group ids) a new ring
            // may need: free them and try once more.
            guard pooledBytes > 0 else { throw error }
            removeAll()
            return ProvidedBuffers(ring: try BufferRing(ring: ring, count: count, size: size, groups: groups), pool: self)
        }
    }

    /// Takes back a ring no operation can reach any more: kept if every buffer is back in it
    /// and the pool has room, freed otherwise.
    func recycle(_ buffers: BufferRing) {
        guard !ring.isClosed, buffers.outstanding == 0, pooledBytes + buffers.ringBytes <= limit else { return }
        buffers.releasePages()
        pooledBytes += buffers.ringBytes
        free[Shape(count: Int(buffers.count), size: buffers.size), default: []].append(buffers)
    }

    /// Frees every pooled ring.
    func removeAll() {
        free = [:]
        pooledBytes = 0
    }
}

/// The buffer group ids of one ring: handed out, and taken back when a provided-buffer
/// ring goes. Confined to the ring's thread.
final class BufferGroupIDs {
    private var free: [UInt16] = []
    private var next: UInt16 = 0

    /// A group id not in use.
    func take() throws(RingError) -> UInt16 {
        if let reused = free.popLast() { return reused }
        guard next < UInt16.max else { throw RingError(operation: "buffer group", errno: ENOSPC) }
        defer { next += 1 }
        return next
    }

    func release(_ group: UInt16) { free.append(group) }
}
