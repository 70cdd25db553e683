/// Where each field of a HID report descriptor's reports lies (HID 1.11, 6.2.2): enough
/// of the item grammar to build input reports and answer feature requests for a device
/// played through uhid. Main items `Input`, `Output`, `Feature`, `Collection`, `End
/// Collection`; global `Usage Page`, `Logical Minimum/Maximum`, `Report Size/ID/Count`,
/// `Push`/`Pop`; local `Usage`, `Usage Minimum/Maximum`. Long items are skipped.
struct HIDReportFormat {
    enum Kind: UInt8 { case input = 8, output = 9, feature = 0xB }

    struct Field {
        var kind: Kind
        var reportID: UInt8
        /// Bit offset in the report, after its id byte when the device uses ids.
        var bitOffset: Int
        var bitSize: Int
        /// Usage page in the high 16 bits, usage in the low.
        var usage: UInt32
        var logicalMinimum: Int64
        var logicalMaximum: Int64
        var isConstant: Bool
    }

    private(set) var fields: [Field] = []
    /// Whether the reports start with a report id byte.
    private(set) var usesReportIDs = false
    private var sizes: [String: Int] = [:]

    init(_ descriptor: [UInt8]) throws {
        struct Globals {
            var usagePage: UInt32 = 0
            var logicalMinimum: Int64 = 0
            var logicalMaximum: Int64 = 0
            /// The maximum's bytes read unsigned: what it means while the minimum is not
            /// negative (HID 1.11, 6.2.2.7).
            var logicalMaximumUnsigned: Int64 = 0
            var reportSize = 0
            var reportCount = 0
            var reportID: UInt8 = 0
        }
        var globals = Globals()
        var stack: [Globals] = []
        var usages: [UInt32] = []
        var usageMinimum: UInt32?
        var usageMaximum: UInt32?
        var index = 0
        while index < descriptor.count {
            let prefix = descriptor[index]
            if prefix == 0xFE {  // long item: size, tag, data
                guard index + 1 < descriptor.count else { break }
                index += 3 + Int(descriptor[index + 1])
                continue
            }
            let size = [0, 1, 2, 4][Int(prefix & 3)]
            guard index + size < descriptor.count else { throw UHIDError("descriptor ends inside an item at \(index)") }
            var unsigned: UInt32 = 0
            for byte in 0..<size { unsigned |= UInt32(descriptor[index + 1 + byte]) << (8 * UInt32(byte)) }
            let signed: Int64 =
                size == 1
                ? Int64(Int8(bitPattern: UInt8(unsigned)))
                : size == 2 ? Int64(Int16(bitPattern: UInt16(unsigned))) : Int64(Int32(bitPattern: unsigned))
            let tag = prefix >> 4
            switch (prefix >> 2) & 3 {
            case 0:  // main
                if let kind = Kind(rawValue: tag) {
                    var list = usages
                    if list.isEmpty, let low = usageMinimum, let high = usageMaximum, high >= low {
                        list = Array(low...min(high, low + 4096))
                    }
                    let key = "\(kind.rawValue).\(globals.reportID)"
                    var offset = sizes[key, default: 0]
                    for count in 0..<globals.reportCount {
                        let usage = list.isEmpty ? 0 : list[min(count, list.count - 1)]
                        fields.append(
                            Field(
                                kind: kind, reportID: globals.reportID, bitOffset: offset, bitSize: globals.reportSize,
                                usage: usage, logicalMinimum: globals.logicalMinimum,
                                logicalMaximum: globals.logicalMinimum >= 0 ? globals.logicalMaximumUnsigned : globals.logicalMaximum,
                                isConstant: unsigned & 1 != 0))
                        offset += globals.reportSize
                    }
                    sizes[key] = offset
                }
                usages = []
                usageMinimum = nil
                usageMaximum = nil
            case 1:  // global
                switch tag {
                case 0: globals.usagePage = unsigned
                case 1: globals.logicalMinimum = signed
                case 2:
                    globals.logicalMaximum = signed
                    globals.logicalMaximumUnsigned = Int64(unsigned)
                case 7: globals.reportSize = Int(unsigned)
                case 8:
                    globals.reportID = UInt8(truncatingIfNeeded: unsigned)
                    usesReportIDs = true
                case 9: globals.reportCount = Int(unsigned)
                case 10: stack.append(globals)
                case 11: if let top = stack.popLast() { globals = top }
                default: break
                }
            case 2:  // local
                let full = size == 4 ? unsigned : globals.usagePage << 16 | unsigned
                switch tag {
                case 0: usages.append(full)
                case 1: usageMinimum = full
                case 2: usageMaximum = full
                default: break
                }
            default:
                break
            }
            index += 1 + size
        }
    }

    /// The ids of the reports of one kind.
    func reportIDs(_ kind: Kind) -> [UInt8] { Array(Set(fields.filter { $0.kind == kind }.map(\.reportID))).sorted() }

    /// A report of `kind` and `id`, every field 0 (its id first when the device uses ids).
    func emptyReport(_ kind: Kind, id: UInt8) -> [UInt8] {
        let bits = sizes["\(kind.rawValue).\(id)", default: 0]
        var report = [UInt8](repeating: 0, count: (bits + 7) / 8)
        if usesReportIDs { report.insert(id, at: 0) }
        return report
    }

    /// Sets the `occurrence`-th field (from 0) with `usage` in a report of `kind` and
    /// `id`; returns whether there is such a field.
    @discardableResult
    func set(
        _ usage: UInt32, _ value: Int64, occurrence: Int = 0, kind: Kind = .input, id: UInt8, in report: inout [UInt8]
    )
        -> Bool
    {
        let matching = fields.filter { $0.kind == kind && $0.reportID == id && $0.usage == usage && !$0.isConstant }
        guard occurrence < matching.count else { return false }
        let field = matching[occurrence]
        let base = usesReportIDs ? 8 : 0
        let bits = UInt64(bitPattern: value) & (field.bitSize >= 64 ? ~0 : (1 << UInt64(field.bitSize)) - 1)
        for bit in 0..<field.bitSize {
            let position = base + field.bitOffset + bit
            if bits & (1 << UInt64(bit)) != 0 {
                report[position / 8] |= 1 << UInt8(position % 8)
            } else {
                report[position / 8] &= ~(1 << UInt8(position % 8))
            }
        }
        return true
    }

    /// The answers to `GET_REPORT` for every feature report: each field at 0, except the
    /// maximum contact count (Digitizer 0x55), which is its logical maximum.
    func featureAnswers() -> [UInt8: [UInt8]] {
        var answers: [UInt8: [UInt8]] = [:]
        for id in reportIDs(.feature) {
            var report = emptyReport(.feature, id: id)
            for field in fields where field.kind == .feature && field.reportID == id && field.usage == Usages.contactCountMaximum {
                set(field.usage, field.logicalMaximum, kind: .feature, id: id, in: &report)
            }
            answers[id] = report
        }
        return answers
    }

    /// Usages by page and id.
    enum Usages {
        static let x: UInt32 = 0x0001_0030
        static let y: UInt32 = 0x0001_0031
        static let tipSwitch: UInt32 = 0x000D_0042
        static let confidence: UInt32 = 0x000D_0047
        static let contactIdentifier: UInt32 = 0x000D_0051
        static let contactCount: UInt32 = 0x000D_0054
        static let contactCountMaximum: UInt32 = 0x000D_0055
        static let scanTime: UInt32 = 0x000D_0056
        static let button1: UInt32 = 0x0009_0001
    }
}
