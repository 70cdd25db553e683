import CLibURing
import Glibc

/// The memory of one provided-buffer ring (`io_uring_register_buf_ring`) and its
/// registration under a buffer group id: the buffers, the ring of entries the kernel picks
/// them from, and which buffers are out of the kernel's hands.
///
/// Outlives the operations that use it: a ``ProvidedBuffers`` lease lends it to one
/// multishot operation, and the ``BufferRingPool`` takes it back when the lease goes — once
/// the kernel is done and every buffer is back in the ring — to lend it again, still
/// registered, without mapping and registering a new one.
///
/// Thread rules: confined to its wait core's thread. The memory is freed in `deinit`,
/// after the group is unregistered, so the kernel cannot pick a buffer of freed memory.
final class BufferRing {
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
    /// Bytes of the ring of entries, and of the buffers (both whole pages).
    let ringBytes: Int
    let bufferBytes: Int
    /// Buffers handed to a receiver and not yet given back.
    private(set) var outstanding = 0
    /// Holds on each buffer out of the kernel's hands (0 for those in the ring).
    private var holds: [UInt16]
    /// The kernel has written into a buffer since the ring was last pooled.
    private(set) var touched = false

    /// Allocates `count` (rounded up to a power of two, at most 32768) buffers of `size`
    /// bytes and registers them with `ring` as a group of its own.
    init(ring: Ring, count requested: Int, size: Int, groups: BufferGroupIDs) throws(RingError) {
        let count = Self.roundedCount(requested)
        // Both regions are mapped, not allocated from the heap: unmapped when the group
        // goes, their memory is the system's again at once (a heap keeps freed blocks, and a
        // port that served many connections would stay large after they went).
        let ringBytes = Self.pageRounded(count * MemoryLayout<io_uring_buf>.stride)
        let bufferBytes = Self.pageRounded(count * size)
        let group = try groups.take()
        guard let memory = Self.map(ringBytes) else {
            groups.release(group)
            throw RingError(operation: "mmap", errno: errno)
        }
        let ringMemory = memory.bindMemory(to: io_uring_buf_ring.self, capacity: 1)
        guard let buffers = Self.map(bufferBytes) else {
            let failure = errno
            munmap(memory, ringBytes)
            groups.release(group)
            throw RingError(operation: "mmap", errno: failure)
        }
        do {
            try ring.registerBufferRing(ringMemory, entries: UInt32(count), group: group)
        } catch {
            munmap(memory, ringBytes)
            munmap(buffers, bufferBytes)
            groups.release(group)
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

    /// The number of buffers a ring asked for `requested` has: a power of two, 1…32768.
    static func roundedCount(_ requested: Int) -> Int {
        var count = 1
        while count < max(1, min(requested, 32_768)) { count <<= 1 }
        return count
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

    /// The first `length` bytes of buffer `id`, valid until it is recycled.
    func bytes(_ id: UInt16, length: Int) -> UnsafeRawBufferPointer {
        precondition(id < count && length <= size, "buffer \(id) of \(count), \(length) of \(size) bytes")
        return UnsafeRawBufferPointer(start: buffers + Int(id) * size, count: length)
    }

    /// Notes that the kernel handed out buffer `id`: held once, by its delivery.
    func taken(_ id: UInt16) {
        outstanding += 1
        holds[Int(id)] = 1
        touched = true
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

    /// Returns the pages of buffers the kernel wrote to the system (`MADV_DONTNEED`: they
    /// read as zeros, and cost nothing until written again), so a pooled ring keeps only its
    /// ring of entries resident.
    func releasePages() {
        guard touched else { return }
        touched = false
        madvise(buffers, bufferBytes, MADV_DONTNEED)
    }
}
