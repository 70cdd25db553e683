import RingLoop
import RingLoopEvdev

// The messages of the event server's protocol, each one named-port message (its msgid
// says which), and device descriptions.
extension ServerWire {
    /// What a message is (its named-port msgid).
    package enum MessageID: Int32, Sendable {
        // Client → server (the server's port).
        /// A client attaches: its port, name and subscriptions (``Hello``).
        case hello = 1
        /// The last batch the client's handlers took (``Ack``).
        case ack = 2
        /// The client asks for the focus (a token).
        case requestFocus = 3
        /// The client detaches (a token).
        case goodbye = 4
        /// The client asks for a device's rumble, or its end (``Rumble``).
        case rumble = 5
        // Server → client (the client's port).
        /// The server took the client in (``Welcome``).
        case welcome = 10
        /// A device the next batches refer to (a description).
        case device = 11
        /// The events of one frame (``Batch``).
        case batch = 12
        /// The client gained or lost the focus (1 byte).
        case focus = 13
    }

    /// The longest client name taken.
    package static let maximumClientNameLength = 64
    /// The largest message a client sends (a hello: 187 bytes with the longest port and
    /// client names), rounded up: the server's port takes nothing larger.
    package static let maximumClientMessageSize = 256
    /// The longest device name and path taken (the kernel's names are shorter).
    package static let maximumDeviceStringLength = 4096
    /// The most events in one batch: a frame's events, which fit a port packet.
    package static let maximumBatchEvents = 512
    /// The most devices a client keeps described at once (a machine has tens; the kernel's
    /// evdev minors are 32, more through dynamic ones): a server that describes more is
    /// breaking the protocol, and cannot grow the client's memory without bound.
    package static let maximumDevices = 1024

    /// A client's first message.
    package struct Hello: Sendable, Equatable {
        /// Chosen by the client; every later message carries it, and the server checks that
        /// it comes from the process that said hello.
        package var token: UInt64
        /// The client's port, where the server sends events.
        package var port: String
        /// A name for logs and focus by name.
        package var name: String
        /// Kinds the client wants whether or not it has the focus, where the server allows.
        package var kinds: Set<HIDEvent.Kind>
        /// Device classes whose every event the client wants whether or not it has the focus.
        package var deviceClasses: Set<HIDDeviceClass>
        /// Whether the client asks for the focus as it attaches.
        package var wantsFocus: Bool

        package init(
            token: UInt64, port: String, name: String, kinds: Set<HIDEvent.Kind>, deviceClasses: Set<HIDDeviceClass>,
            wantsFocus: Bool
        ) {
            self.token = token
            self.port = port
            self.name = name
            self.kinds = kinds
            self.deviceClasses = deviceClasses
            self.wantsFocus = wantsFocus
        }

        package var encoded: [UInt8] {
            var out = WireWriter()
            out.u16(ServerWire.version)
            out.u64(token)
            out.string(port)
            out.string(name)
            out.u32(kinds.reduce(0) { $0 | 1 << UInt32(kinds_.firstIndex(of: $1)!) })
            out.u32(deviceClasses.reduce(0) { $0 | 1 << UInt32(classes.firstIndex(of: $1)!) })
            out.bool(wantsFocus)
            return out.bytes
        }

        package init(decoding bytes: [UInt8]) throws(Violation) {
            var input = WireReader(bytes)
            let version = try input.u16("hello version")
            guard version == ServerWire.version else { throw .version(of: "hello", received: version, own: ServerWire.version) }
            token = try input.u64("hello token")
            port = try input.printableString("hello port", maximum: LocalMessagePort.maximumNameLength)
            guard !port.isEmpty else { throw .outOfRange(field: "hello port", value: 0) }
            name = try input.printableString("hello name", maximum: maximumClientNameLength)
            let kindBits = try input.u32("hello kinds")
            guard kindBits >> UInt32(kinds_.count) == 0 else { throw .unknown(field: "hello kinds", value: UInt64(kindBits)) }
            kinds = Set(kinds_.indices.filter { kindBits & 1 << UInt32($0) != 0 }.map { kinds_[$0] })
            let classBits = try input.u32("hello device classes")
            guard classBits >> UInt32(classes.count) == 0 else {
                throw .unknown(field: "hello device classes", value: UInt64(classBits))
            }
            deviceClasses = Set(classes.indices.filter { classBits & 1 << UInt32($0) != 0 }.map { classes[$0] })
            wantsFocus = try input.bool("hello focus flag")
            try input.expectEnd("hello")
        }
    }

    private static let kinds_ = HIDEvent.Kind.allCases
    private static let classes = HIDDeviceClass.allCases

    /// A message that is a token alone (focus request, goodbye).
    package static func token(_ token: UInt64) -> [UInt8] {
        var out = WireWriter()
        out.u64(token)
        return out.bytes
    }

    package static func decodeToken(_ bytes: [UInt8]) throws(Violation) -> UInt64 {
        var input = WireReader(bytes)
        let token = try input.u64("token")
        try input.expectEnd("token")
        return token
    }

    /// The last batch a client's handlers took.
    package struct Ack: Sendable, Equatable {
        package var token: UInt64
        package var sequence: UInt64

        package init(token: UInt64, sequence: UInt64) {
            self.token = token
            self.sequence = sequence
        }

        package var encoded: [UInt8] {
            var out = WireWriter()
            out.u64(token)
            out.u64(sequence)
            return out.bytes
        }

        package init(decoding bytes: [UInt8]) throws(Violation) {
            var input = WireReader(bytes)
            token = try input.u64("ack token")
            sequence = try input.u64("ack sequence")
            try input.expectEnd("ack")
        }
    }

    /// A client's request to rumble a device (SDL's two motors for a time), or to stop it.
    package struct Rumble: Sendable, Equatable {
        package var token: UInt64
        package var device: HIDDeviceID
        /// `nil`: stop the device's rumble.
        package var effect: RumbleEffect?

        package init(token: UInt64, device: HIDDeviceID, effect: RumbleEffect?) {
            self.token = token
            self.device = device
            self.effect = effect
        }

        package var encoded: [UInt8] {
            var out = WireWriter()
            out.u64(token)
            out.u32(device.rawValue)
            out.bool(effect != nil)
            out.u16(effect?.strong ?? 0)
            out.u16(effect?.weak ?? 0)
            out.u16(effect?.milliseconds ?? 0)
            return out.bytes
        }

        package init(decoding bytes: [UInt8]) throws(Violation) {
            var input = WireReader(bytes)
            token = try input.u64("rumble token")
            device = HIDDeviceID(rawValue: try input.u32("rumble device"))
            let plays = try input.bool("rumble flag")
            let strong = try input.u16("rumble strong")
            let weak = try input.u16("rumble weak")
            let milliseconds = try input.u16("rumble duration")
            try input.expectEnd("rumble")
            effect = plays ? RumbleEffect(strong: strong, weak: weak, milliseconds: milliseconds) : nil
        }
    }

    /// The server's answer to a hello: taken in (and whether with the focus), or refused
    /// and why.
    package struct Welcome: Sendable, Equatable {
        package var focused: Bool
        /// Batches the server sends before it waits for an acknowledgement (its
        /// ``HIDEventServer/Configuration/maximumOutstandingBatches``): the client
        /// acknowledges well before that many are outstanding.
        package var window: UInt32
        /// Why the server refused the client; `nil` when it took it in.
        package var refusal: String?
        /// The names of the layouts of the keymap the server holds for its clients
        /// (`English (US)`, `German`), in group order; empty when it holds none.
        package var layoutNames: [String]

        /// The most layout names a welcome carries (xkbcommon's keymaps have at most 4 groups).
        static let maximumLayoutNames = 32

        package init(focused: Bool, window: UInt32, refusal: String? = nil, layoutNames: [String] = []) {
            self.focused = focused
            self.window = window
            self.refusal = refusal
            self.layoutNames = layoutNames
        }

        package var encoded: [UInt8] {
            var out = WireWriter()
            out.u16(ServerWire.version)
            out.bool(focused)
            out.u32(window)
            out.bool(refusal != nil)
            out.string(refusal ?? "")
            let names = layoutNames.prefix(Self.maximumLayoutNames)
            out.u8(UInt8(names.count))
            for name in names { out.string(name.utf8.count <= 256 ? name : "") }
            return out.bytes
        }

        package init(decoding bytes: [UInt8]) throws(Violation) {
            var input = WireReader(bytes)
            let version = try input.u16("welcome version")
            guard version == ServerWire.version else { throw .version(of: "welcome", received: version, own: ServerWire.version) }
            focused = try input.bool("welcome focus flag")
            window = try input.u32("welcome window")
            guard window > 0 else { throw .outOfRange(field: "welcome window", value: 0) }
            let refused = try input.bool("welcome refusal flag")
            let reason = try input.printableString("welcome refusal", maximum: 1024)
            guard refused || reason.isEmpty else { throw .notCanonical(field: "welcome refusal") }
            refusal = refused ? reason : nil
            let count = Int(try input.u8("welcome layout count"))
            guard count <= Self.maximumLayoutNames else { throw .outOfRange(field: "welcome layout count", value: Int64(count)) }
            var names: [String] = []
            for _ in 0..<count { names.append(try input.printableString("welcome layout name", maximum: 256)) }
            layoutNames = names
            try input.expectEnd("welcome")
        }
    }

    /// The events of one frame (or of one resync), numbered for acknowledgement.
    package struct Batch: Sendable {
        package var sequence: UInt64
        package var events: [HIDEvent]

        package init(sequence: UInt64, events: [HIDEvent]) {
            self.sequence = sequence
            self.events = events
        }

        package var encoded: [UInt8] {
            var out = WireWriter(capacity: 10 + events.reduce(0) { $0 + ServerWire.encodedSize($1) })
            out.u64(sequence)
            out.u16(UInt16(events.count))
            for event in events { ServerWire.encode(event, into: &out) }
            return out.bytes
        }

        package init(decoding bytes: [UInt8]) throws(Violation) {
            var input = WireReader(bytes)
            sequence = try input.u64("batch sequence")
            let count = Int(try input.u16("batch event count"))
            guard count <= maximumBatchEvents else { throw .outOfRange(field: "batch event count", value: Int64(count)) }
            events = []
            events.reserveCapacity(count)
            for _ in 0..<count { events.append(try decodeEvent(from: &input)) }
            try input.expectEnd("batch")
        }
    }

    /// One focus change.
    package static func focus(_ focused: Bool) -> [UInt8] { [focused ? 1 : 0] }

    package static func decodeFocus(_ bytes: [UInt8]) throws(Violation) -> Bool {
        var input = WireReader(bytes)
        let focused = try input.bool("focus flag")
        try input.expectEnd("focus")
        return focused
    }

    // MARK: Devices

    /// A device's description: what the one initializer of ``HIDDeviceInfo`` takes.
    package static func encode(_ device: HIDDeviceInfo) -> [UInt8] {
        var out = WireWriter(capacity: 256)
        out.u32(device.id.rawValue)
        out.string(device.path)
        out.string(device.name)
        for value in [device.busType, device.vendor, device.product, device.version] { out.u16(value) }
        let types = device.codes.keys.filter { Evdev.maskTypes.contains($0) }.sorted()
        out.u16(UInt16(types.count))
        for type in types {
            let codes = device.codes[type]!.filter { $0 <= Evdev.maximumCode(ofType: type)! }.sorted()
            out.u16(type)
            out.u16(UInt16(codes.count))
            for code in codes { out.u16(code) }
        }
        let axes = device.axes.keys.filter { $0 <= Evdev.ABS_MAX }.sorted()
        out.u16(UInt16(axes.count))
        for code in axes {
            let axis = device.axes[code]!
            out.u16(code)
            for value in [axis.value, axis.minimum, axis.maximum, axis.fuzz, axis.flat, axis.resolution] { out.i32(value) }
        }
        let properties = device.properties.filter { $0 <= Evdev.INPUT_PROP_MAX }.sorted()
        out.u16(UInt16(properties.count))
        for property in properties { out.u16(property) }
        return out.bytes
    }

    /// Reads a device's description and derives the rest as for a device described in code.
    package static func decodeDevice(_ bytes: [UInt8]) throws(Violation) -> HIDDeviceInfo {
        var input = WireReader(bytes)
        let id = HIDDeviceID(rawValue: try input.u32("device id"))
        let path = try input.string("device path", maximum: maximumDeviceStringLength)
        let name = try input.string("device name", maximum: maximumDeviceStringLength)
        let busType = try input.u16("device bus")
        let vendor = try input.u16("device vendor")
        let product = try input.u16("device product")
        let version = try input.u16("device version")
        let typeCount = try input.u16("device type count")
        guard typeCount <= Evdev.maskTypes.count else { throw .outOfRange(field: "device type count", value: Int64(typeCount)) }
        var codes: [UInt16: Set<UInt16>] = [:]
        var lastType: UInt16?
        for _ in 0..<typeCount {
            let type = try input.u16("device event type")
            guard Evdev.maskTypes.contains(type) else {
                throw .unknown(field: "device event type", value: UInt64(type))
            }
            guard lastType.map({ $0 < type }) ?? true else { throw .notCanonical(field: "device event types") }
            lastType = type
            let maximum = Evdev.maximumCode(ofType: type)!
            let count = try input.u16("device code count")
            guard count <= maximum + 1 else { throw .outOfRange(field: "device code count", value: Int64(count)) }
            var set = Set<UInt16>(minimumCapacity: Int(count))
            var last: UInt16?
            for _ in 0..<count {
                let code = try input.code("device code", maximum: maximum)
                guard last.map({ $0 < code }) ?? true else { throw .notCanonical(field: "device codes") }
                last = code
                set.insert(code)
            }
            codes[type] = set
        }
        let axisCount = try input.u16("device axis count")
        guard axisCount <= Evdev.ABS_MAX + 1 else { throw .outOfRange(field: "device axis count", value: Int64(axisCount)) }
        var axes: [UInt16: AbsoluteAxis] = [:]
        var lastAxis: UInt16?
        for _ in 0..<axisCount {
            let code = try input.code("device axis code", maximum: Evdev.ABS_MAX)
            guard lastAxis.map({ $0 < code }) ?? true else { throw .notCanonical(field: "device axes") }
            guard codes[Evdev.EV_ABS]?.contains(code) == true else {
                throw .outOfRange(field: "device axis code (not among its EV_ABS codes)", value: Int64(code))
            }
            lastAxis = code
            axes[code] = AbsoluteAxis(
                value: try input.i32("axis value"), minimum: try input.i32("axis minimum"),
                maximum: try input.i32("axis maximum"), fuzz: try input.i32("axis fuzz"), flat: try input.i32("axis flat"),
                resolution: try input.i32("axis resolution"))
        }
        let propertyCount = try input.u16("device property count")
        guard propertyCount <= Evdev.INPUT_PROP_MAX + 1 else {
            throw .outOfRange(field: "device property count", value: Int64(propertyCount))
        }
        var properties = Set<UInt16>()
        var lastProperty: UInt16?
        for _ in 0..<propertyCount {
            let property = try input.code("device property", maximum: Evdev.INPUT_PROP_MAX)
            guard lastProperty.map({ $0 < property }) ?? true else { throw .notCanonical(field: "device properties") }
            lastProperty = property
            properties.insert(property)
        }
        try input.expectEnd("device")
        let description = InputDeviceDescription(
            name: name, busType: busType, vendor: vendor, product: product, version: version, properties: properties,
            codes: codes, absoluteAxes: axes)
        return HIDDeviceInfo(description: description, id: id, path: path)
    }
}
