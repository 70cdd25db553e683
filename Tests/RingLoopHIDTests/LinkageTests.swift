import Testing

@testable import RingLoopHID

@Suite("RingLoopHID linkage")
struct LinkageTests {
    @Test("libevdev resolves and creates a device handle")
    func libevdevLinks() {
        #expect(RingLoopHIDLinkage.libevdevLinked)
    }
}
