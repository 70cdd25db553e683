import Testing

@testable import RingLoopDevices

@Suite("RingLoopDevices linkage")
struct LinkageTests {
    @Test("libfuse3 resolves and reports a 3.x version")
    func fuseLinks() {
        let version = RingLoopDevicesLinkage.fuseVersion
        #expect(version >= 30 && version < 40, "fuse_version() = \(version)")
    }
}
