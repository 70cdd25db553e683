/// Contact buffers of digitizer frames that one producer (a decoder, a stage) emitted,
/// reused once no event holds them any more: a warm producer allocates nothing, however
/// long its events wait downstream, up to ``limit`` frames held at once. Not thread-safe:
/// the producer's own thread.
struct DigitizerFramePool {
    /// The most buffers kept.
    let limit: Int
    private(set) var buffers: [ContactStorage] = []

    init(limit: Int) { self.limit = limit }

    /// An empty frame on a buffer no event holds any more, or on a new one.
    mutating func frame() -> DigitizerFrame {
        var index = buffers.count - 1
        while index >= 0 {
            if isKnownUniquelyReferenced(&buffers[index]) {
                buffers.swapAt(index, buffers.count - 1)
                return DigitizerFrame(reusing: buffers.removeLast())
            }
            index -= 1
        }
        return DigitizerFrame()
    }

    /// Keeps `buffer` (of a frame emitted, or given back unused) to reuse.
    mutating func keep(_ buffer: ContactStorage) {
        guard buffers.count < limit, buffer !== ContactStorage.empty else { return }
        if buffers.capacity < limit { buffers.reserveCapacity(limit) }
        buffers.append(buffer)
    }
}
