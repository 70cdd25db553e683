import RingLoop
import RingLoopEvdev

#if canImport(Glibc)
import Glibc
#endif

/// Attached devices, shared between the reading loop and the client. A removed
/// device's roles stay known until its removal has been dispatched, so its last events
/// still match class filters.
final class DeviceTable: Sendable {
    private let state = ThreadLock<(attached: [HIDDeviceInfo], roles: [HIDDeviceID: Set<HIDDeviceClass>])>(([], [:]))
    func replace(_ devices: [HIDDeviceInfo]) {
        state.withLock { state in
            state.attached = devices
            for device in devices { state.roles[device.id] = device.roles.union([device.deviceClass]) }
        }
    }
    /// Forgets the roles of a device that is no longer attached.
    func forget(_ id: HIDDeviceID) {
        state.withLock { state in
            if !state.attached.contains(where: { $0.id == id }) { state.roles[id] = nil }
        }
    }
    var all: [HIDDeviceInfo] { state.withLock { $0.attached } }
    /// The device's class and every other role it has.
    func roles(_ id: HIDDeviceID) -> Set<HIDDeviceClass>? { state.withLock { $0.roles[id] } }
}
