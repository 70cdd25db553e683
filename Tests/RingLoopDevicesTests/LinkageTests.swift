import Testing

@testable import RingLoopDevices

@Suite("RingLoopDevices linkage")
struct LinkageTests {
    @Test("libfuse3 resolves and reports a 3.x version")
    func fuseLinks() {
        let version = RingLoopDevicesLinkage.fuseVersion
        #expect(version >= 300 && version < 400, "fuse_version() = \(version) (major × 100 + minor)")
    }
}
