import Glibc
import RingLoop
import Testing

@testable import RingLoopHID

@Suite("Gesture recognizers' lifetime")
struct GestureLifetimeTests {
    @Test("stop() lets the recognizers go: an action that captures the system does not keep it alive")
    func stopReleases() throws {
        weak var weakSystem: HIDEventSystem?
        weak var weakRecognizer: GestureRecognizer?
        try onFreshThread {
            let folder = "/tmp/ringloop-gesture-life-\(getpid())"
            mkdir(folder, 0o755)
            defer { rmdir(folder) }
            let system = HIDEventSystem(configuration: .init(deviceDirectory: folder, tracksInteractions: true))
            let pan = PanGestureRecognizer()
            pan.addAction { _ in _ = system.statistics }  // a cycle while attached
            system.addGestureRecognizer(pan)
            try system.start()
            #expect(system.gestureRecognizers.count == 1)
            system.stop()
            #expect(system.gestureRecognizers.isEmpty)
            weakSystem = system
            weakRecognizer = pan
        }
        #expect(weakSystem == nil)
        #expect(weakRecognizer == nil)
    }
}
