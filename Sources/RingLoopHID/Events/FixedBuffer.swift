/// Room for a fixed number of elements, shared by the copies of a value type until one
/// of them writes (copy on write): the storage of ``DigitizerFrame`` and
/// ``GestureTouches``. Reads are loads through its pointer — a struct of inline storage
/// would be copied whole (over a kilobyte) for each element read wherever it cannot be
/// addressed, and for each copy of the value that holds it.
///
/// Written only through a value holding the only reference (checked with
/// `isKnownUniquelyReferenced` before each write); read-only once shared.
final class FixedBuffer<Element>: @unchecked Sendable {
    // @unchecked: see above; a value handed to another thread is a copy whose buffer no
    // one writes.
    let items: UnsafeMutablePointer<Element>
    let capacity: Int

    /// `capacity` elements, each `initial`.
    init(capacity: Int, repeating initial: Element) {
        self.capacity = capacity
        items = .allocate(capacity: capacity)
        items.initialize(repeating: initial, count: capacity)
    }

    deinit {
        items.deinitialize(count: capacity)
        items.deallocate()
    }

    /// A new, unshared buffer with this one's elements (one pass; its holder reads only
    /// the elements it counts).
    func copy() -> FixedBuffer { FixedBuffer(copying: self) }

    private init(copying other: FixedBuffer) {
        capacity = other.capacity
        items = .allocate(capacity: capacity)
        items.initialize(from: other.items, count: capacity)
    }
}
