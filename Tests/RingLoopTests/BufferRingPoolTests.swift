import Glibc
import RingLoopTestSupport
import SystemPackage
import Testing

@testable import RingLoop

@Suite("Provided-buffer rings pooled, descriptors closed by the ring")
struct BufferRingPoolTests {
    @Test("A ring no operation uses goes back to the pool, and the next of its shape is lent it with its group")
    func reuse() throws {
        let core = try WaitCore()
        var first: ProvidedBuffers? = try core.makeProvidedBuffers(count: 3, size: 512)
        let group = try #require(first?.group)
        #expect(first?.ring.count == 4)
        first = nil
        #expect(core.bufferRings.pooledCount == 1)
        let other = try core.makeProvidedBuffers(count: 4, size: 1024)
        #expect(other.group != group, "another shape gets a ring of its own")
        let again = try core.makeProvidedBuffers(count: 4, size: 512)
        #expect(again.group == group)
        #expect(core.bufferRings.pooledCount == 0)
    }

    @Test("A ring whose buffer is still out is freed, not pooled")
    func outstandingNotPooled() throws {
        let core = try WaitCore()
        var buffers: ProvidedBuffers? = try core.makeProvidedBuffers(count: 2, size: 256)
        buffers?.taken(1)
        buffers = nil
        #expect(core.bufferRings.pooledCount == 0)
    }

    @Test("A ring's buffers read as zeros after a pooled round, and every buffer is back in it")
    func pooledRingIsWhole() throws {
        let core = try WaitCore()
        var buffers: ProvidedBuffers? = try core.makeProvidedBuffers(count: 2, size: 4096)
        buffers?.taken(0)
        UnsafeMutableRawPointer(mutating: try #require(buffers?.bytes(0, length: 4096).baseAddress))
            .storeBytes(of: 0x5A, as: UInt8.self)
        #expect(buffers?.release(0) == true)
        buffers?.giveBack(0)
        buffers = nil
        let again = try core.makeProvidedBuffers(count: 2, size: 4096)
        #expect(again.outstanding == 0)
        #expect(again.bytes(0, length: 1)[0] == 0)
    }

    @Test("The pool keeps no more than its limit")
    func bounded() throws {
        let core = try WaitCore()
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let pool = BufferRingPool(ring: core.ring, limit: page)
        var leases: [ProvidedBuffers] = [try pool.lend(count: 8, size: 64), try pool.lend(count: 8, size: 64)]
        #expect(leases[0].group != leases[1].group)
        leases = []
        #expect(pool.pooledCount == 1)
        #expect(pool.pooledBytes == page)
    }

    @Test("A channel closed in a callout has its descriptor closed by the ring: the peer sees the end")
    func channelClosedByRing() throws {
        var pair: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0)
        let (ours, peer) = (pair[0], pair[1])
        let identity = DescriptorIdentity(ours)
        defer { close(peer) }
        try onFreshLoopThreadThrowing {
            let loop = RingRunLoop.current
            let channel = LoopIOChannel(fileDescriptor: FileDescriptor(rawValue: ours), loop: loop) { _, _ in }
            loop.add(channel.source, to: .default)
            try channel.receive { channel, _ in channel.close() }
            var byte: UInt8 = 1
            #expect(write(peer, &byte, 1) == 1)
            #expect(run(loop) { channel.operationsInFlight == 0 })
            // Done by one of the kernel's workers: the peer sees the end of the stream.
            var timeout = timeval(tv_sec: 5, tv_usec: 0)
            setsockopt(peer, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            #expect(recv(peer, &byte, 1, 0) == 0)
            #expect(identity.isClosed)
        }
    }
}
