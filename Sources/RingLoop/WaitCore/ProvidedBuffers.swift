import CLibURing
import Glibc

/// A provided-buffer ring (`io_uring_register_buf_ring`): buffers the kernel picks from
/// when a receive completes, so a multishot receive needs no buffer per submission.
///
/// The only owner of the group's memory. A completion that used a buffer names it in its
/// flags (`IORING_CQE_F_BUFFER`, the id above `IORING_CQE_BUFFER_SHIFT`); the buffer is
/// the receiver's until every hold on it is released (``release(_:)``): the callout's,
/// and a send's that writes from it (``retain(_:)``). Then ``giveBack(_:)`` hands it back
/// to the kernel. When every buffer is out, a multishot receive ends with `ENOBUFS` and
/// data waits in the socket.
///
/// Thread rules: confined to its wait core's thread. The memory is freed in `deinit`,
/// which the wait core runs after the ring itself has closed, so no operation still in
/// flight can write into freed memory.
final class ProvidedBuffers {
    /// The buffer group id operations name (`IOSQE_BUFFER_SELECT` with `buf_group`).
    let group: UInt16
    /// How many buffers, a power of two.
    let count: UInt16
    /// Bytes in each buffer.
    let size: Int
    private let ringMemory: UnsafeMutablePointer<io_uring_buf_ring>
    private let buffers: UnsafeMutableRawPointer
    private let mask: Int32
    /// Held strongly: the group is registered on this ring until `deinit` unregisters it.
    /// (No weak reference: one to a ring that lives until the process exits makes a side
    /// table LeakSanitizer reports as leaked.)
    private let ring: Ring
    private let groups: BufferGroupIDs
    private let ringBytes: Int
    private let bufferBytes: Int
    /// Buffers handed to the receiver and not yet given back.
    private(set) var outstanding = 0
    /// Holds on each buffer out of the kernel's hands (0 for those in the ring).
    private var holds: [UInt16]
    /// Receives of this group stopped for want of a buffer, to arm again when one comes back.
    var waitingReceives = 0

    /// Allocates `count` (rounded up to a power of two, at most 32768) buffers of `size`
    /// bytes and registers them with `ring` as `group`.
    init(
        ring: Ring, group: UInt16, count requested: Int, size: Int, groups: BufferGroupIDs
    ) throws(RingError) {
        var count = 1
        while count < max(1, min(requested, 32_768)) { count <<= 1 }
        // Both regions are mapped, not allocated from the heap: unmapped when the group
        // goes, their memory is the system's again at once (a heap keeps freed blocks, and a
        // port that served many connections would stay large after they went).
        let ringBytes = Self.pageRounded(count * MemoryLayout<io_uring_buf>.stride)
        let bufferBytes = Self.pageRounded(count * size)
        guard let memory = Self.map(ringBytes) else { throw RingError(operation: "mmap", errno: errno) }
        let ringMemory = memory.bindMemory(to: io_uring_buf_ring.self, capacity: 1)
        guard let buffers = Self.map(bufferBytes) else {
            let failure = errno
            munmap(memory, ringBytes)
            throw RingError(operation: "mmap", errno: failure)
        }
        do {
            try ring.registerBufferRing(ringMemory, entries: UInt32(count), group: group)
        } catch {
            munmap(memory, ringBytes)
            munmap(buffers, bufferBytes)
            throw error
        }
        self.group = group
        self.count = UInt16(truncatingIfNeeded: count)
        self.size = size
        self.ringMemory = ringMemory
        self.buffers = buffers
        self.mask = Int32(count - 1)
        self.ring = ring
        self.groups = groups
        self.ringBytes = ringBytes
        self.bufferBytes = bufferBytes
        self.holds = Array(repeating: 0, count: count)
        io_uring_buf_ring_init(ringMemory)
        for id in 0..<count {
            io_uring_buf_ring_add(ringMemory, buffers + id * size, UInt32(size), UInt16(id), mask, Int32(id))
        }
        io_uring_buf_ring_advance(ringMemory, Int32(count))
    }

    deinit {
        // Unregistered first: the kernel picks no buffer of the group after this, so the
        // memory can go even if a receive is still armed on a ring that stays open.
        ring.unregisterBufferRing(group: group)
        groups.release(group)
        munmap(UnsafeMutableRawPointer(ringMemory), ringBytes)
        munmap(buffers, bufferBytes)
    }

    private static func pageRounded(_ bytes: Int) -> Int {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        return max(page, (bytes + page - 1) / page * page)
    }

    /// Private anonymous memory, zeroed; `nil` with `errno` set when the kernel refuses.
    private static func map(_ bytes: Int) -> UnsafeMutableRawPointer? {
        let memory = mmap(nil, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        return memory == MAP_FAILED ? nil : memory
    }

    /// The buffer id a completion's flags name, if it used one.
    static func bufferID(of flags: UInt32) -> UInt16? {
        guard flags & UInt32(IORING_CQE_F_BUFFER) != 0 else { return nil }
        return UInt16(truncatingIfNeeded: flags >> UInt32(IORING_CQE_BUFFER_SHIFT))
    }

    /// The first `length` bytes of buffer `id`, valid until it is recycled.
    func bytes(_ id: UInt16, length: Int) -> UnsafeRawBufferPointer {
        precondition(id < count && length <= size, "buffer \(id) of \(count), \(length) of \(size) bytes")
        return UnsafeRawBufferPointer(start: buffers + Int(id) * size, count: length)
    }

    /// Notes that the kernel handed out buffer `id`: held once, by its delivery.
    func taken(_ id: UInt16) {
        outstanding += 1
        holds[Int(id)] = 1
    }

    /// One more hold on buffer `id` (a send writing from it).
    func retain(_ id: UInt16) { holds[Int(id)] += 1 }

    /// Releases one hold on buffer `id`; returns whether it was the last (the buffer is
    /// then free to give back).
    func release(_ id: UInt16) -> Bool {
        precondition(holds[Int(id)] > 0, "buffer \(id) of group \(group) released more often than held")
        holds[Int(id)] -= 1
        return holds[Int(id)] == 0
    }

    /// Gives buffer `id` back to the kernel (no hold left on it).
    func giveBack(_ id: UInt16) {
        io_uring_buf_ring_add(ringMemory, buffers + Int(id) * size, UInt32(size), id, mask, 0)
        io_uring_buf_ring_advance(ringMemory, 1)
        outstanding -= 1
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
