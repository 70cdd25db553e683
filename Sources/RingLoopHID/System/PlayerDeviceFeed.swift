import RingLoop
import RingLoopEvdev

/// The feed of ``HIDEventSystem/Input/player(_:shape:finished:)``: the folder's feed for
/// the player's nodes, which starts the player once the system has attached all of them
/// (counted by device, not by file: one libinput recording may hold several) and hands its
/// end to the client's loop once the handlers have had what it played.
///
/// The player ends when it has written its last frame (and waited its own settle time);
/// the readers may not have taken that frame yet, nor the event-system thread handed it
/// over. So `finished` waits, at the loop's BeforeWaiting after the stages' turn, until the
/// player's nodes hold nothing the system has not read, nothing waits in the hand-off and
/// the queue is empty: a test that stops its loop in `finished` has seen every event.
final class PlayerDeviceFeed: DeviceFeed {
    private let inner: any DeviceFeed
    private let player: any EvdevNodePlayer
    private let table: DeviceTable
    private let attachPolicy: DeviceAttachPolicy
    private let loop: RingRunLoop
    private let ending: LoopBound<PlayerEnding>
    /// Whether the client's queue is empty (the system's own).
    private let queueIsEmpty: () -> Bool
    private var started = false
    /// Calls `finished` once the player has ended and its input has all been delivered.
    private var observer: LoopObserver?

    init(
        inner: any DeviceFeed, player: any EvdevNodePlayer, table: DeviceTable, attachPolicy: DeviceAttachPolicy,
        loop: RingRunLoop, finished: (@Sendable () -> Void)?, queueIsEmpty: @escaping () -> Bool
    ) {
        self.attachPolicy = attachPolicy
        self.inner = inner
        self.player = player
        self.table = table
        self.loop = loop
        self.queueIsEmpty = queueIsEmpty
        ending = LoopBound(onLoopThread: PlayerEnding(finished: finished), loop: loop)
    }

    func start() throws(HIDError) {
        try inner.start()
        startWhenAttached()
    }

    func stop() {
        observer?.invalidate()
        observer = nil
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
        if ending.value.finished != nil {
            let feed = UnownedLoopReference(self, loop: loop)
            let observer = LoopObserver(
                activities: [.beforeWaiting], order: HIDEventPipeline.observerOrder + 1, label: "HIDEventSystem player finished"
            ) { _, _ in feed.value.finishIfDelivered() }
            self.observer = observer
            loop.add(observer, to: .common)
        }
        player.startPlaying {
            loop.perform(inModes: [.common]) {
                let state = ending.value
                state.playerEnded = true
                // Stopped, the system reads nothing more: as before, `finished` runs now.
                if state.systemStopped { state.report() }
            }
            loop.wakeUp()
        }
    }

    /// BeforeWaiting, after the stages' turn: calls `finished` once the player has ended,
    /// its nodes hold nothing unread, nothing waits in the hand-off and the queue is empty.
    /// Whatever is still on its way wakes the loop again, and this looks again then.
    private func finishIfDelivered() {
        let state = ending.value
        guard state.playerEnded, !state.reported, queueIsEmpty(), !inner.hasInputOnTheWay() else { return }
        observer?.invalidate()
        observer = nil
        state.report()
    }

    private static func nodeName(of path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? path
    }
}

/// Where a player's end stands (client loop thread only).
final class PlayerEnding {
    let finished: (@Sendable () -> Void)?
    /// The player has played everything (or was cancelled).
    var playerEnded = false
    /// The system has stopped: `finished` runs as soon as the player ends.
    var systemStopped = false
    private(set) var reported = false

    init(finished: (@Sendable () -> Void)?) { self.finished = finished }

    /// Calls `finished`, once.
    func report() {
        guard !reported else { return }
        reported = true
        finished?()
    }
}
