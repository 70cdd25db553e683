// libFuzzer target: the event server's messages as a server and as a client read them
// (RingLoopHID's ServerWire). The first byte picks the message: 0 an event batch, 1 a
// device description, 2 a hello, 3 an acknowledgement, 4 a welcome, 5 a focus change,
// 6 a token, 7 a rumble request; the rest is the message's bytes. Nothing may trap; whatever decodes must
// encode to bytes that decode to the same value, and a batch's events must hold only
// what their fields allow (contact counts, codes, finite numbers, deltas and scroll
// amounts within ServerWire.largestAmount).
// Build and run with tools/fuzz.
import RingLoopHID

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzServerWire(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    do throws(ServerWire.Violation) {
        switch data[0] % 8 {
        case 0:
            let batch = try ServerWire.Batch(decoding: bytes)
            precondition(batch.events.count <= ServerWire.maximumBatchEvents, "a batch of \(batch.events.count) events")
            for event in batch.events {
                switch event.payload {
                case .digitizer(let frame): precondition(frame.count <= DigitizerFrame.capacity)
                case .pointerMotion(let motion):
                    let amounts = [motion.acceleratedDX, motion.acceleratedDY, motion.unacceleratedDX, motion.unacceleratedDY]
                    precondition(amounts.allSatisfy { abs($0) <= ServerWire.largestAmount }, "a motion beyond the bound")
                case .scroll(let scroll):
                    let amounts = [scroll.vertical, scroll.horizontal, scroll.unscaledVertical, scroll.unscaledHorizontal]
                    precondition(amounts.allSatisfy { abs($0) <= ServerWire.largestAmount }, "a scroll beyond the bound")
                default: break
                }
            }
            let again = try ServerWire.Batch(decoding: batch.encoded)
            precondition(again.sequence == batch.sequence && again.events == batch.events, "a batch did not read back the same")
        case 1:
            let device = try ServerWire.decodeDevice(bytes)
            let again = try ServerWire.decodeDevice(ServerWire.encode(device))
            precondition(again == device, "a device did not read back the same")
        case 2:
            let hello = try ServerWire.Hello(decoding: bytes)
            let again = try ServerWire.Hello(decoding: hello.encoded)
            precondition(again == hello, "a hello did not read back the same")
        case 3:
            let ack = try ServerWire.Ack(decoding: bytes)
            let again = try ServerWire.Ack(decoding: ack.encoded)
            precondition(again == ack)
        case 4:
            let welcome = try ServerWire.Welcome(decoding: bytes)
            let again = try ServerWire.Welcome(decoding: welcome.encoded)
            precondition(again == welcome)
        case 5:
            let focused = try ServerWire.decodeFocus(bytes)
            let again = try ServerWire.decodeFocus(ServerWire.focus(focused))
            precondition(again == focused)
        case 6:
            let token = try ServerWire.decodeToken(bytes)
            let again = try ServerWire.decodeToken(ServerWire.token(token))
            precondition(again == token)
        default:
            let rumble = try ServerWire.Rumble(decoding: bytes)
            let again = try ServerWire.Rumble(decoding: rumble.encoded)
            precondition(again == rumble, "a rumble did not read back the same")
        }
    } catch {
        _ = error.description
    }
    return 0
}
