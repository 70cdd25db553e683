import RingLoop
import RingLoopEvdev

/// The feed of ``HIDEventSystem/Input/player(_:shape:finished:)``: the folder's feed for
/// the player's nodes, which starts the player once the system has attached all of them
/// (counted by device, not by file: one libinput recording may hold several) and hands its
/// end to the client's loop.
final class PlayerDeviceFeed: DeviceFeed {
    private let inner: any DeviceFeed
    private let player: any EvdevNodePlayer
    private let table: DeviceTable
    private let attachPolicy: DeviceAttachPolicy
    private let loop: RingRunLoop
    private let finished: (@Sendable () -> Void)?
    private var started = false

    init(
        inner: any DeviceFeed, player: any EvdevNodePlayer, table: DeviceTable, attachPolicy: DeviceAttachPolicy,
        loop: RingRunLoop, finished: (@Sendable () -> Void)?
    ) {
        self.attachPolicy = attachPolicy
        self.inner = inner
        self.player = player
        self.table = table
        self.loop = loop
        self.finished = finished
    }

    func start() throws(HIDError) {
        try inner.start()
        startWhenAttached()
    }

    func stop() { inner.stop() }
    func finish() { inner.finish() }
    var eventsRead: Int { inner.eventsRead }
    func attachStream(fd: Int32, description: HIDDeviceInfo) throws(HIDError) -> HIDDeviceID {
        try inner.attachStream(fd: fd, description: description)
    }
    func readPaths() -> [HIDDeviceID: DeviceReadPath] { inner.readPaths() }
    func takeForwarded(_ enqueue: (HIDEvent) -> Void) -> Forwarder.Taken? { inner.takeForwarded(enqueue) }
    func control(_ request: FeedRequest) throws(HIDError) -> FeedAnswer { try inner.control(request) }
    func reconsiderDevices() { inner.reconsiderDevices() }

    func drained() {
        inner.drained()
        startWhenAttached()
    }

    /// Starts the player once every one of its nodes is attached or left alone by its
    /// settings (`ignore`).
    private func startWhenAttached() {
        guard !started else { return }
        let names = player.playedNodeNames
        let ignored = attachPolicy.ignoredNodes.keys.filter { names.contains(Self.nodeName(of: $0)) }.count
        let attached = ignored + table.all.filter { names.contains(Self.nodeName(of: $0.path)) }.count
        guard attached >= names.count else { return }
        started = true
        let loop = loop
        let finished = finished
        player.startPlaying {
            guard let finished else { return }
            loop.perform(inModes: [.common]) { finished() }
            loop.wakeUp()
        }
    }

    private static func nodeName(of path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? path
    }
}
