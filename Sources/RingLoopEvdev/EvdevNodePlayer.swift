/// Virtual devices that a player hosts in a folder of evdev nodes and plays once they are
/// read: a `ReplaySession` of RingLoopDevices, which replays recordings. RingLoopHID's event
/// system, made with `HIDEventSystem.Configuration(replaying:)`, attaches exactly the
/// player's nodes and starts it when it has every one of them. (Here, beside the evdev
/// interface both modules use, so that neither imports the other.)
public protocol EvdevNodePlayer: AnyObject, Sendable {
    /// The folder the player's nodes are in (`/dev/input` for uinput devices).
    var deviceFolderPath: String { get }
    /// The names of the player's nodes in that folder (`event3`…), one per device.
    var playedNodeNames: Set<String> { get }
    /// Starts playing, on threads of the player's own; `finished` is called once, on any
    /// thread, when it has played everything (or was cancelled).
    func startPlaying(finished: @escaping @Sendable () -> Void)
}
