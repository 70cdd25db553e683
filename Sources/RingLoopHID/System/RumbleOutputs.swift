import RingLoop
import RingLoopEvdev

/// The rumbles a feed that reads its own nodes plays (SDL's `SDL_GameControllerRumble`
/// shape: two motors for a time): each device's node is opened for writing while its
/// rumble lasts, the effect uploaded once and replaced by the next rumble, played, and at
/// its end (a loop timer) erased and the node closed — the kernel also erases a file's
/// effects when it is closed, so nothing outlives the feed. Client loop thread only.
final class RumbleOutputs {
    private struct Playing {
        var node: EvdevDevice
        var effect: Int16
        var end: LoopTimer?
    }

    private let loop: RingRunLoop
    private var playing: [HIDDeviceID: Playing] = [:]

    init(loop: RingRunLoop) { self.loop = loop }

    /// Plays `effect` on `device`, replacing a rumble it is playing.
    func play(_ effect: RumbleEffect, on device: HIDDeviceInfo) throws(HIDError) {
        var current: Playing
        if let existing = playing[device.id] {
            current = existing
            current.end?.invalidate()
            current.end = nil
            do throws(EvdevError) {
                current.effect = try current.node.uploadRumble(effect, replacing: current.effect)
            } catch {
                finish(device.id)
                throw .write(path: device.path, errno: error.errno)
            }
        } else {
            let node: EvdevDevice
            do throws(EvdevError) { node = try EvdevDevice.open(path: device.path, writable: true) } catch {
                throw .open(path: device.path, errno: error.errno)
            }
            do throws(EvdevError) {
                current = Playing(node: node, effect: try node.uploadRumble(effect), end: nil)
            } catch {
                node.close()
                throw .write(path: device.path, errno: error.errno)
            }
        }
        playing[device.id] = current
        do throws(EvdevError) { try current.node.playEffect(current.effect) } catch {
            finish(device.id)
            throw .write(path: device.path, errno: error.errno)
        }
        guard effect.milliseconds > 0 else { return }
        let outputs = UnownedLoopReference(self, loop: loop)
        let id = device.id
        let end = LoopTimer(after: .milliseconds(Int(effect.delayMilliseconds) + Int(effect.milliseconds))) { _ in
            outputs.value.finish(id)
        }
        playing[device.id]?.end = end
        loop.add(end, to: .common)
    }

    /// Stops and erases `device`'s rumble and closes its node (nothing when it has none).
    func finish(_ device: HIDDeviceID) {
        guard let current = playing.removeValue(forKey: device) else { return }
        current.end?.invalidate()
        // Erasing stops it first; a node that has gone answers with an error, and closing
        // erases it anyway.
        try? current.node.eraseEffect(current.effect)
        current.node.close()
    }

    /// Ends every rumble (the feed stops).
    func finishAll() {
        for device in Array(playing.keys) { finish(device) }
    }
}
