/// The loop's I/O operations in flight, by their wait-core id: found on every completion's
/// path by indexing an array with the id's slot, with no hashing.
///
/// The wait core reuses a slot as soon as an operation's last completion is harvested, but
/// the loop routes that completion a little later, so an operation started meanwhile (a
/// callout's send) can take a slot whose previous operation is still to be routed. The
/// newcomer then waits in a small dictionary until the slot is free (it is found there);
/// the array holds the generation with the record, so neither answers for the other.
struct IOOperationTable {
    private var bySlot: [(id: PortID, record: IORecord)?] = []
    /// Operations whose slot was still held by an earlier one when they started.
    private var displaced: [PortID: IORecord] = [:]
    /// How many operations the table holds.
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    /// Every operation in the table.
    var records: [IORecord] { bySlot.compactMap { $0?.record } + displaced.values }

    /// The operation running under `id`, if any.
    subscript(id: PortID) -> IORecord? {
        let slot = Int(id.slot)
        if slot < bySlot.count, let entry = bySlot[slot], entry.id == id { return entry.record }
        return displaced.isEmpty ? nil : displaced[id]
    }

    /// Records `record` as the operation running under its id (`record.port`).
    mutating func insert(_ record: IORecord) {
        let id = record.port
        let slot = Int(id.slot)
        if slot >= bySlot.count { bySlot.append(contentsOf: repeatElement(nil, count: slot + 1 - bySlot.count)) }
        guard let entry = bySlot[slot] else {
            bySlot[slot] = (id, record)
            count += 1
            return
        }
        if entry.id == id {
            bySlot[slot] = (id, record)
        } else if displaced.updateValue(record, forKey: id) == nil {
            count += 1
        }
    }

    /// Forgets the operation under `id` (its last completion was routed).
    mutating func remove(_ id: PortID) {
        let slot = Int(id.slot)
        if slot < bySlot.count, let entry = bySlot[slot], entry.id == id {
            bySlot[slot] = nil
            count -= 1
            // A newcomer that waited for this slot takes it.
            if !displaced.isEmpty, let waiting = displaced.first(where: { $0.key.slot == id.slot }) {
                displaced[waiting.key] = nil
                bySlot[slot] = (waiting.key, waiting.value)
            }
        } else if !displaced.isEmpty, displaced.removeValue(forKey: id) != nil {
            count -= 1
        }
    }

    /// Forgets every operation.
    mutating func removeAll() {
        bySlot = []
        displaced = [:]
        count = 0
    }
}
