import RingLoop
import RingLoopEvdev
import Testing

@testable import RingLoopHID

/// Digitizer frames share their contact buffer when copied, and the decoder reuses the
/// buffers of frames no event holds: nothing a held event says may change.
@Suite("Digitizer frames: shared buffers, copied on write, reused only when free")
struct DigitizerFrameTests {
    @Test("a copy is independent: appending, replacing or removing in one leaves the other as it was")
    func copyOnWrite() {
        var first = DigitizerFrame()
        first.append(Contact(slot: 0, trackingID: 7, x: 10, y: 20))
        var second = first
        second.append(Contact(slot: 1, trackingID: 8, x: 30, y: 40))
        second.replace(at: 0, with: Contact(slot: 0, trackingID: 7, x: 11, y: 21))
        #expect(first.count == 1 && first[0].x == 10 && first[0].y == 20)
        #expect(second.count == 2 && second[0].x == 11 && second[1].trackingID == 8)
        var third = second
        third.remove(trackingID: 7)
        #expect(third.count == 1 && third[0].trackingID == 8)
        #expect(second.count == 2 && second[0].trackingID == 7)
        // Past capacity, contacts are ignored.
        var full = DigitizerFrame()
        for index in 0..<(DigitizerFrame.capacity + 3) { full.append(Contact(slot: Int16(index), trackingID: Int32(index))) }
        #expect(full.count == DigitizerFrame.capacity)
        #expect(full.contacts.map(\.trackingID) == (0..<Int32(DigitizerFrame.capacity)).map { $0 })
    }

    @Test("an event stays small: the chain copies it at every step (decoder, queue, handler)")
    func eventSize() {
        #expect(MemoryLayout<HIDEvent>.size <= 128, "HIDEvent is \(MemoryLayout<HIDEvent>.size) bytes")
        #expect(MemoryLayout<DigitizerFrame>.size <= 48, "DigitizerFrame is \(MemoryLayout<DigitizerFrame>.size) bytes")
        // A motion sample is the largest inline payload: six doubles, the sensor's time, the rate.
        #expect(MemoryLayout<MotionEvent>.size <= 80, "MotionEvent is \(MemoryLayout<MotionEvent>.size) bytes")
    }

    @Test(
        "events held while decoding goes on keep their contacts (more held than the decoder keeps buffers for)",
        arguments: ["touchscreen-multitouch", "touchpad", "touchpad-protocol-a"])
    func heldFramesUnchanged(name: String) throws {
        let recording = try loadRecording(name)
        let info = deviceInfo(of: recording)
        // Twice over, so that more frames are held than the decoder keeps buffers for.
        let events = recording.events + recording.events
        // Each frame described at once, then every event kept and described at the end.
        var decoder = FrameDecoder(info: info)
        var output: [HIDEvent] = []
        var held: [HIDEvent] = []
        var atEmission: [String] = []
        for event in events {
            decoder.feed(event, into: &output)
            for decoded in output {
                atEmission.append(summary(decoded))
                held.append(decoded)
            }
            output.removeAll(keepingCapacity: true)
        }
        let frames = held.filter { $0.kind == .digitizer }.count
        #expect(frames > FrameDecoder.frameBufferLimit, "\(name): only \(frames) frames")
        #expect(held.map(summary) == atEmission)
        // Released as they go, the decoder's buffers are reused: the same descriptions.
        var again = FrameDecoder(info: info)
        var released: [String] = []
        for event in events {
            again.feed(event, into: &output)
            released += output.map(summary)
            output.removeAll(keepingCapacity: true)
        }
        #expect(released == atEmission)
        #expect(again.frameBuffers.count <= 2, "buffers kept while nothing is held: \(again.frameBuffers.count)")
    }
}
