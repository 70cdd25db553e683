import Glibc
import RingLoop
import RingLoopTestSupport
import Testing

@testable import RingLoopDevices
@testable import RingLoopHID

@Suite("Key repeat, LEDs and async events", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct OutputAndRepeatTests {
    @Test("Key repeat by loop timers replaces the kernel's, and stops when the key goes up")
    func keyRepeat() throws {
        let recording = try loadRecording("keyboard")
        try onFreshThreadWithDeviceFolder { path, folder, loop in
            let system = HIDEventSystem(
                configuration: .init(deviceDirectory: path, keyRepeat: (.milliseconds(30), .milliseconds(10))), loop: loop)
            var keys: [KeyEvent] = []
            var added = false
            system.addHandler { event in
                if case .key(let key) = event.payload { keys.append(key) }
                if event.kind == .deviceAdded { added = true }
                return .pass
            }
            try system.start()
            defer { system.stop() }
            let node = try folder.addDevice(recording.description!)
            #expect(runUntil(loop) { added })
            try node.send([(1, 42, 1), (0, 0, 0), (1, 30, 1), (0, 0, 0), (1, 30, 2), (0, 0, 0)])  // Shift, A, a kernel repeat
            #expect(runUntil(loop) { keys.filter { $0.state == .repeat }.count >= 3 })
            try node.send([(1, 30, 0), (0, 0, 0)])
            #expect(runUntil(loop) { keys.last?.state == .up })
            let repeatsAtRelease = keys.filter { $0.state == .repeat }.count
            loop.run(mode: .default, for: .milliseconds(60))
            #expect(keys.filter { $0.state == .repeat }.count == repeatsAtRelease, "repeats stop at key up")
            #expect(keys.filter { $0.state == .repeat }.allSatisfy { $0.code == 30 && $0.modifiers == .leftShift })
        }
    }

    @Test("Setting an LED writes EV_LED to the device")
    func ledOutput() throws {
        let recording = try loadRecording("keyboard")
        try withChain { folder, system, loop, events in
            let node = try folder.addDevice(recording.description!)
            #expect(runUntil(loop) { events().contains { $0.kind == .deviceAdded } })
            let keyboard = try #require(system.devices.first)
            try system.setLED(1, on: true, device: keyboard.id)  // LED_CAPSL
            #expect(node.ledsOn == [1])
            try system.setLED(1, on: false, device: keyboard.id)
            #expect(node.ledsOn.isEmpty)
            // LED 9 (LED_MAIL) is not the keyboard's: the error names the LED and those it has.
            let error = #expect(throws: HIDError.self) { try system.setLED(9, on: true, device: keyboard.id) }
            #expect(error == .noSuchLED(code: 9, device: keyboard.id, available: keyboard.leds))
            #expect(error?.description.contains("LED_MAIL") == true && error?.description.contains("LED_CAPSL") == true)
            let missing = HIDDeviceID(rawValue: keyboard.id.rawValue + 1000)
            #expect(throws: HIDError.noSuchDevice(missing)) { try system.setLED(1, on: true, device: missing) }
        }
    }

    @Test("Events as an AsyncSequence")
    func asyncEvents() async throws {
        let recording = try loadRecording("power-button")
        let stream: AsyncStream<HIDEvent> = try onFreshThreadWithDeviceFolder { path, folder, loop in
            let system = HIDEventSystem(configuration: .init(deviceDirectory: path), loop: loop)
            let stream = system.events(kinds: [.key, .deviceAdded, .deviceRemoved])
            var removed = false
            var added = false
            system.addHandler(kinds: [.deviceAdded, .deviceRemoved]) { event in
                if event.kind == .deviceAdded { added = true } else { removed = true }
                return .pass
            }
            try system.start()
            let node = try folder.addDevice(recording.description!)
            _ = runUntil(loop) { added }
            try Replay.play(recording, to: node, speed: .asFastAsPossible)
            _ = runUntil(loop) { system.rawEventsRead >= recording.events.count }
            node.remove()
            _ = runUntil(loop) { removed }
            system.stop()
            return stream
        }
        var kinds: [HIDEvent.Kind] = []
        for await event in stream {
            kinds.append(event.kind)
            if event.kind == .deviceRemoved { break }
        }
        #expect(kinds == [.deviceAdded, .key, .key, .deviceRemoved])
    }
}

@Suite("Event-system thread placement", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct EventThreadPlacementTests {
    @Test("eventThreadCPUs outside the online CPUs is refused at start, naming the valid ones")
    func refused() throws {
        let online = CPUAffinity.onlineCPUs()
        let error: HIDError? = try onFreshThread { () -> HIDError? in
            let system = HIDEventSystem(
                configuration: .init(deviceDirectory: "/tmp", shape: .dedicatedThread, eventThreadCPUs: [100_000]),
                loop: RingRunLoop.current)
            do throws(HIDError) {
                try system.start()
                system.stop()
                return nil
            } catch {
                return error
            }
        }
        guard case .configuration(let message) = error else {
            Issue.record("expected a configuration error, got \(String(describing: error))")
            return
        }
        #expect(message.hasPrefix("eventThreadCPUs: "))
        #expect(message.contains("100000 not available"))
        #expect(message.contains("available: \(online.map(String.init).joined(separator: ", "))"))
    }

    @Test("The event-system thread runs on the CPUs it was given")
    func placed() throws {
        let first = try #require(CPUAffinity.onlineCPUs().first)
        let cpus: [Int] = try onFreshThread {
            let path = "/tmp/ringloop-placement-\(getpid())"
            mkdir(path, 0o755)
            defer { rmdir(path) }
            let system = HIDEventSystem(
                configuration: .init(deviceDirectory: path, shape: .dedicatedThread, eventThreadCPUs: [first]),
                loop: RingRunLoop.current)
            try system.start()
            defer { system.stop() }
            return try #require(system.eventThreadAllowedCPUs())
        }
        #expect(cpus == [first])
    }
}

@Suite("Thread rules are checked")
struct ThreadRuleTests {
    /// An event system belongs to its client loop's thread; a handler added from another
    /// thread would race the dispatch, so it stops the process with a message instead.
    @Test("Adding a handler from another thread than the client loop's stops the process")
    func handlerFromAnotherThread() async {
        await #expect(processExitsWith: .failure) {
            let system = HIDEventSystem(configuration: .init(deviceDirectory: "/tmp"), loop: RingRunLoop.current)
            let box = UncheckedBox(system)
            let other = LoopThread(name: "not-the-client")
            other.perform { _ = box.value.addHandler { _ in .pass } }
            // The precondition ends the process; if it did not, this exits 0 after 5 s and
            // the test fails.
            for _ in 0..<500 { usleep(10_000) }
            exit(0)
        }
    }
}
