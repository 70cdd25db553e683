import RingLoop

/// Screen-mapping cost per contact, for `ringloop-bench`'s `screen.map` rows: decoded
/// events of a touchscreen or tablet, from memory, through ``ScreenMapper/process(_:)``
/// in place, each event holding the only reference to its contacts (as an event taken
/// off the queue does). It lives here, with package access, so the measured path is
/// compiled as the chain's own is (see ``DecodeThroughput``).
package enum ScreenMappingThroughput {
    /// Maps `events` (device 1's) `warmRounds` then `measuredRounds` times through a
    /// mapper holding `mapping` for device 1 and a few other devices; returns the
    /// positions (contacts, pens, absolute pointers) mapped in the measured rounds and a
    /// sum of their locations (to keep the work observable). `beforeMeasured` runs between
    /// the two.
    /// With `throughStage`, each event goes through the chain's ``ScreenMappingStage``
    /// instead, borrowed as the pipeline hands it over, and the mapped event it emits is
    /// read and let go (as the handlers let it go).
    package static func run(
        events: [HIDEvent], mapping: ScreenMapping, throughStage: Bool = false, warmRounds: Int, measuredRounds: Int,
        beforeMeasured: () -> Void
    ) -> (positions: Int, checksum: Double) {
        var mapper = ScreenMapper()
        let stage = ScreenMappingStage(screens: DeviceSettingsResolver())
        for device in 1...8 {
            mapper.setMapping(mapping, for: HIDDeviceID(rawValue: UInt32(device)))
            stage.setMapping(mapping, for: HIDDeviceID(rawValue: UInt32(device)))
        }
        // Each event its own buffer, as the decoder's events are once taken off the queue.
        var working: [HIDEvent] = events.map { event in
            guard case .digitizer(let frame) = event.payload else { return event }
            var copy = DigitizerFrame()
            copy.fingerCount = frame.fingerCount
            for index in 0..<frame.count { copy.append(frame[index]) }
            return HIDEvent(device: event.device, timestamp: event.timestamp, payload: .digitizer(copy))
        }
        let perRound = events.reduce(0) { count, event in
            switch event.payload {
            case .digitizer(let frame): count + frame.count
            case .pen, .absolutePointer: count + 1
            default: count
            }
        }
        var checksum = 0.0
        for round in 0..<(warmRounds + measuredRounds) {
            if round == warmRounds {
                beforeMeasured()
                checksum = 0
            }
            for index in working.indices {
                if throughStage {
                    stage.process(working[index]) { mapped in
                        if case .digitizer(let frame) = mapped.payload, frame.count > 0 {
                            checksum += frame[0].screenLocation?.x ?? 0
                        }
                    }
                } else {
                    mapper.process(&working[index])
                }
                if case .pen(let pen) = working[index].payload { checksum += pen.screenLocation?.x ?? 0 }
            }
            if case .digitizer(let frame) = working[working.count - 1].payload, frame.count > 0 {
                checksum += frame[0].screenLocation?.x ?? 0
            }
        }
        return (perRound * measuredRounds, checksum)
    }
}
