import Logging
import RingLoop

/// The app's handlers (``HIDEventSystem/addHandler(kinds:deviceClasses:device:usage:_:)``),
/// in registration order: each event is counted, taken into the delivered ledger (what the
/// handlers have seen of each device, for the repair after a loss), checked for lateness,
/// and given to every handler whose filter matches until one consumes it. What no handler
/// consumed goes on (to an event server's clients).
final class HandlerStage: HIDEventStage {
    struct Filter {
        var kinds: Set<HIDEvent.Kind>?
        var classes: Set<HIDDeviceClass>?
        var device: HIDDeviceID?
        var usage: HIDUsage?
    }

    struct Entry {
        var token: HIDHandlerToken
        var filter: Filter
        var body: (HIDEvent) -> HIDHandlerResult
        var active: Bool
    }

    unowned let system: HIDEventSystem
    private(set) var entries: [Entry] = []
    private var nextToken: UInt64 = 1
    private(set) var dispatching = false
    private var lastLateLog = MonotonicInstant(nanoseconds: 0)

    init(system: HIDEventSystem) { self.system = system }

    func add(_ filter: Filter, _ body: @escaping (HIDEvent) -> HIDHandlerResult) -> HIDHandlerToken {
        let token = HIDHandlerToken(rawValue: nextToken)
        nextToken += 1
        entries.append(Entry(token: token, filter: filter, body: body, active: true))
        return token
    }

    /// The handler is not called again, even for the event being dispatched.
    func remove(_ token: HIDHandlerToken) {
        for index in entries.indices where entries[index].token == token { entries[index].active = false }
        if !dispatching { entries.removeAll { !$0.active } }
    }

    /// Lets every handler go (the system stops); during a dispatch, from its end.
    func removeAll() {
        if dispatching {
            for index in entries.indices { entries[index].active = false }
        } else {
            entries.removeAll()
        }
    }

    func process(_ event: HIDEvent, emit: (HIDEvent) -> Void) {
        system.statistics.delivered += 1
        system.ledgers.delivered.apply(event)
        let lag = MonotonicInstant.now - event.timestamp
        if lag > system.configuration.lateThreshold, event.kind != .eventsDropped { countLate(lag) }
        // The roles are looked up (a lock) only if some handler filters by class.
        var deviceRoles: Set<HIDDeviceClass>??
        let table = system.deviceTable
        dispatching = true
        defer {
            dispatching = false
            if entries.contains(where: { !$0.active }) { entries.removeAll { !$0.active } }
            // The removal is the device's last event: its roles and attachment are no longer
            // needed, unless a handler restarted the system and a new device took the id
            // (ids start at 1 again), as the table's own forget checks.
            if event.kind == .deviceRemoved {
                table.forget(event.device)
                if system.device(event.device) == nil { system.attachPolicy.forget(event.device) }
            }
        }
        let count = entries.count
        var index = 0
        while index < count {
            defer { index += 1 }
            // One copy of the entry: each `entries[index].field` copied the whole entry.
            let handler = entries[index]
            guard handler.active,
                Self.matches(
                    handler.filter, event,
                    rolesOf: {
                        if deviceRoles == nil { deviceRoles = table.roles(event.device) }
                        return deviceRoles!
                    })
            else { continue }
            if Self.callHandler(handler.body, event) == .consumed { return }
        }
        emit(event)
    }

    private func countLate(_ lag: Duration) {
        system.statistics.late += 1
        let now = MonotonicInstant.now
        if now - lastLateLog > .seconds(1) {
            lastLateLog = now
            HIDEventSystem.logger.warning(
                "HID event dispatched \(lag) after the kernel stamped it (\(system.statistics.late) late so far)")
        }
    }

    /// Stable name for profiles: time here is the application's.
    @inline(never)
    private static func callHandler(_ body: (HIDEvent) -> HIDHandlerResult, _ event: HIDEvent) -> HIDHandlerResult {
        body(event)
    }

    static func matches(_ filter: Filter, _ event: HIDEvent, rolesOf: () -> Set<HIDDeviceClass>?) -> Bool {
        if let kinds = filter.kinds, !kinds.contains(event.kind) { return false }
        if let device = filter.device, device != event.device { return false }
        if let classes = filter.classes {
            guard let roles = rolesOf(), !roles.isDisjoint(with: classes) else { return false }
        }
        if let usage = filter.usage {
            guard case .key(let key) = event.payload, key.usage == usage else { return false }
        }
        return true
    }
}
