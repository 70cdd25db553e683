import RingLoop
import RingLoopEvdev

/// The feed of ``HIDEventSystem/Input/player(_:shape:finished:)``: the folder's feed for
/// the player's nodes, which starts the player once the system has attached all of them
/// (counted by device, not by file: one libinput recording may hold several) and hands its
/// end to the client's loop once the handlers have had what it played.
///
/// The player ends when it has written its last frame (and waited its own settle time);
/// the readers may not have taken that frame yet, nor the event-system thread handed it
/// over. So `finished` waits for ``HIDEventSystem/afterInputDelivered(_:)``: a test that
/// stops its loop in `finished` has seen every event.
final class PlayerDeviceFeed: DeviceFeed {
    private let inner: any DeviceFeed
    private let player: any EvdevNodePlayer
    private let table: DeviceTable
    private let attachPolicy: DeviceAttachPolicy
    private let loop: RingRunLoop
    private let ending: LoopBound<PlayerEnding>
    private var started = false

    init(
        inner: any DeviceFeed, player: any EvdevNodePlayer, table: DeviceTable, attachPolicy: DeviceAttachPolicy,
        loop: RingRunLoop, finished: (@Sendable () -> Void)?,
        afterInputDelivered: @escaping (@escaping () -> Void) -> Void
    ) {
        self.attachPolicy = attachPolicy
        self.inner = inner
        self.player = player
        self.table = table
        self.loop = loop
        ending = LoopBound(
            onLoopThread: PlayerEnding(finished: finished, afterInputDelivered: afterInputDelivered), loop: loop)
    }

    func start() throws(HIDError) {
        try inner.start()
        startWhenAttached()
    }

    func stop() {
        // Nothing is read any more: a player that has ended, or ends later, gets its
        // `finished` then, as the system no longer waits for its input.
        let ending = ending
        ending.value.systemStopped = true
        if ending.value.playerEnded { loop.perform(inModes: [.common]) { ending.value.report() } }
        inner.stop()
    }
    func finish() { inner.finish() }
    var eventsRead: Int { inner.eventsRead }
    func attachStream(fd: Int32, description: HIDDeviceInfo) throws(HIDError) -> HIDDeviceID {
        try inner.attachStream(fd: fd, description: description)
    }
    func readPaths() -> [HIDDeviceID: DeviceReadPath] { inner.readPaths() }
    func expectDeliveryCheck() { inner.expectDeliveryCheck() }
    func hasInputOnTheWay() -> Bool { inner.hasInputOnTheWay() }
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
        let ending = ending
        player.startPlaying {
            loop.perform(inModes: [.common]) { ending.value.playerHasEnded() }
            loop.wakeUp()
        }
    }

    private static func nodeName(of path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? path
    }
}

/// Where a player's end stands (client loop thread only).
final class PlayerEnding {
    let finished: (@Sendable () -> Void)?
    /// ``HIDEventSystem/afterInputDelivered(_:)`` of the system.
    private let afterInputDelivered: (@escaping () -> Void) -> Void
    /// The player has played everything (or was cancelled).
    private(set) var playerEnded = false
    /// The system has stopped: `finished` runs as soon as the player ends.
    var systemStopped = false
    private(set) var reported = false

    init(finished: (@Sendable () -> Void)?, afterInputDelivered: @escaping (@escaping () -> Void) -> Void) {
        self.finished = finished
        self.afterInputDelivered = afterInputDelivered
    }

    /// The player has ended: `finished` runs once what it sent has reached the handlers,
    /// or now if the system has stopped (it reads nothing more).
    func playerHasEnded() {
        playerEnded = true
        guard finished != nil else { return }
        if systemStopped { report() } else { afterInputDelivered { [self] in report() } }
    }

    /// Calls `finished`, once.
    func report() {
        guard !reported else { return }
        reported = true
        finished?()
    }
}
