import Dispatch
import Logging
import RingLoop
import RingLoopEvdev
import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

// Key repeat by timers on the client loop, for devices without kernel repeat.
extension HIDEventSystem {
    // MARK: Key repeat

    func deliver(_ event: HIDEvent) {
        if let motion { motionTap(event, motion) }
        if configuration.keyRepeat != nil, !applyKeyRepeat(event) { return }
        if configuration.coalesceMotion {
            if coalesce(event) { return }
            flushCoalesced(device: event.device)
        }
        dispatch(event)
    }
    func applyKeyRepeat(_ event: HIDEvent) -> Bool {
        switch event.payload {
        case .key(let key):
            if key.state == .repeat { return false }
            if key.state == .down, KeyModifiers.forLinuxKey(key.code) == nil {
                startRepeating(device: event.device, key: key)
            } else if key.state == .up, repeatingKey?.device == event.device, repeatingKey?.key.code == key.code {
                stopRepeating()
            } else if let repeating = repeatingKey, repeating.device == event.device {
                // A modifier changed: later repeats carry the new modifiers.
                var updated = repeating.key
                updated.modifiers = key.modifiers
                repeatingKey = (repeating.device, updated)
            }
        case .deviceRemoved:
            if repeatingKey?.device == event.device { stopRepeating() }
        default:
            break
        }
        return true
    }

    func startRepeating(device: HIDDeviceID, key: KeyEvent) {
        stopRepeating()
        guard let settings = configuration.keyRepeat else { return }
        repeatingKey = (device, key)
        let system = UnownedLoopReference(self, loop: loop)
        let timer = LoopTimer(after: settings.delay, repeating: settings.interval) { _ in
            let system = system.value
            guard let (device, key) = system.repeatingKey else { return }
            var repeated = key
            repeated.state = .repeat
            system.dispatch(HIDEvent(device: device, timestamp: .now, payload: .key(repeated)))
        }
        repeatTimer = timer
        loop.add(timer, to: .common)
    }

    func stopRepeating() {
        repeatTimer?.invalidate()
        repeatTimer = nil
        repeatingKey = nil
    }
}
