import RingLoop

/// Why a ``ReplaySession`` could not host or replay.
public enum ReplaySessionError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A recording has events only (file and device counted from 0).
    case noDescription(file: Int, device: Int)
    /// More devices than ``ReplaySession/maximumDevices``.
    case tooManyDevices(count: Int, limit: Int)
    /// The devices could not be hosted (no backend, the folder, a device).
    case host(VirtualDeviceError)
    /// A frame could not be sent.
    case send(VirtualDeviceError)
    /// The readers asked for did not all come in time.
    case readersTimedOut(ready: Int, nodes: Int, readers: Int)
    /// The backend cannot count a node's readers.
    case readersUnknown(backend: VirtualDeviceBackend)

    public var description: String {
        switch self {
        case .noDescription(let file, let device):
            "recording \(file + 1), device \(device + 1): events only; a device needs a description to be hosted"
        case .tooManyDevices(let count, let limit): "\(count) devices; a replay hosts at most \(limit)"
        case .host(let error): "\(error)"
        case .send(let error): "replay stopped: \(error)"
        case .readersTimedOut(let ready, let nodes, let readers):
            "\(ready) of \(nodes) nodes had \(readers) reader(s) when the wait for readers ended"
        case .readersUnknown(let backend):
            "\(backend) devices cannot count their readers; wait a fixed time instead, or use the FUSE backend"
        }
    }
}
