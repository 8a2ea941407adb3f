import HushCore
import HushMixer
import HushTesting
import Testing

@Suite("Sample ring and ring-fed voices")
struct SampleRingTests {
    @Test("frames go through in order across the wrap; a full ring takes what fits; underflow is counted")
    func ring() {
        let ring = SampleRing(frames: 8, channels: 2)
        defer { ring.deallocate() }
        var out = [Float](repeating: -1, count: 16)
        for round in 0..<5 {
            var frames: [Float] = []
            for frame in 0..<6 {
                let value = Float(round * 6 + frame)
                frames += [value, -value]
            }
            #expect(frames.withUnsafeBufferPointer { ring.write($0.baseAddress!, frames: 6) } == 6)
            #expect(out.withUnsafeMutableBufferPointer { ring.read(into: $0.baseAddress!, frames: 6) } == 6)
            #expect(Array(out[0..<12]) == frames)
        }
        let many = [Float](repeating: 1, count: 40)
        #expect(many.withUnsafeBufferPointer { ring.write($0.baseAddress!, frames: 20) } == 8)
        #expect(ring.available == 8)
        #expect(out.withUnsafeMutableBufferPointer { ring.read(into: $0.baseAddress!, frames: 8) } == 8)
        #expect(out.withUnsafeMutableBufferPointer { ring.read(into: $0.baseAddress!, frames: 3) } == 0)
        #expect(ring.underflows == 3)
    }

    @Test("a ring-fed voice plays what arrives, at its gain, and silence when nothing has")
    func ringVoice() throws {
        let engine = MixerEngine(format: MixerFormat(sampleRate: 48000, channels: 2, maxFrames: 64))
        let controller = MixerController(engine: engine)
        controller.resumeFade = .zero
        let ring = SampleRing(frames: 4096, channels: 2)
        defer { ring.deallocate() }
        try controller.attach(SessionID(1), bus: .music, ring: ring)
        controller.apply(.setSessionGain(SessionID(1), Gain(linear: 0.5), ramp: .zero))
        controller.apply(.resume(SessionID(1)))
        let input = (0..<128).flatMap { _ in [Float(0.4), Float(-0.4)] }
        _ = input.withUnsafeBufferPointer { ring.write($0.baseAddress!, frames: 128) }
        var out = [Float](repeating: 9, count: 64 * 2 * 3)
        out.withUnsafeMutableBufferPointer { buffer in
            for period in 0..<3 {
                engine.render(
                    frames: 64,
                    into: UnsafeMutableRawPointer(buffer.baseAddress! + period * 128),
                    sampleFormat: .floatLE
                )
            }
        }
        #expect(out[0..<256].allSatisfy { abs(abs($0) - 0.2) < 1e-6 }, "two periods of input at half gain")
        #expect(out[256...].allSatisfy { $0 == 0 }, "the third period had nothing: silence")
        #expect(ring.underflows == 64)
        controller.detach(SessionID(1))
        #expect(!controller.isReleased(ring))
        out.withUnsafeMutableBufferPointer {
            engine.render(frames: 64, into: UnsafeMutableRawPointer($0.baseAddress!), sampleFormat: .floatLE)
        }
        _ = controller.poll()
        #expect(controller.isReleased(ring))
    }
}
