import HushCore
import HushMixer
import HushTesting
import Testing

/// Renders `seconds` of the engine as float samples, `period` frames at a time, running `control` before each
/// period with the time in frames.
func renderFloat(
    _ engine: MixerEngine,
    seconds: Double,
    period: Int = 64,
    control: (Int) -> Void = { _ in }
) -> [Float] {
    let frames = Int(seconds * Double(engine.format.sampleRate))
    var out = [Float](repeating: 0, count: frames * engine.format.channels)
    var frame = 0
    while frame < frames {
        control(frame)
        let count = min(period, frames - frame)
        out.withUnsafeMutableBufferPointer { buffer in
            engine.render(
                frames: count,
                into: UnsafeMutableRawPointer(buffer.baseAddress! + frame * engine.format.channels),
                sampleFormat: .floatLE
            )
        }
        frame += count
    }
    return out
}

func tone(_ hz: Double, amplitude: Float = 0.5, seconds: Double = 1, rate: Int = 48000) -> AudioBuffer {
    let frames = Int(seconds * Double(rate))
    let samples = (0..<frames).map { amplitude * Float(sin(2 * Double.pi * hz * Double($0) / Double(rate))) }
    return AudioBuffer(interleaved: samples, channels: 1, sampleRate: rate)
}

#if canImport(Glibc)
import Glibc
#endif

@Suite("Mixer: gain ramps")
struct RampTests {
    struct Change: Sendable, CustomStringConvertible {
        var name: String
        var command: Command
        var rampMilliseconds: Int
        var description: String { name }
    }

    static let changes: [Change] = [
        Change(
            name: "mute (R1)",
            command: .setSessionGain(SessionID(1), .silent, ramp: .milliseconds(20)),
            rampMilliseconds: 20
        ),
        Change(
            name: "volume step (R2)",
            command: .setBusGain(.music, Gain(decibels: -3.5), ramp: .milliseconds(30)),
            rampMilliseconds: 30
        ),
        Change(
            name: "duck (R7)",
            command: .setSessionGain(SessionID(1), Gain(decibels: -14), ramp: .milliseconds(100)),
            rampMilliseconds: 100
        ),
    ]

    @Test(
        "a 1 kHz tone at -6 dBFS through a gain change: no jump beyond the ramp's slope, no splatter",
        arguments: changes
    )
    func ramp(change: Change) throws {
        let engine = MixerEngine(format: MixerFormat(sampleRate: 48000, channels: 1, maxFrames: 64))
        let controller = MixerController(engine: engine)
        try controller.attach(SessionID(1), bus: .music, buffer: tone(1000, seconds: 1), loop: true)
        controller.apply(.resume(SessionID(1)))
        // At a crest of the tone, where a step would be largest (periods of 4 frames to land there exactly).
        let changeAt = 24012
        let out = renderFloat(engine, seconds: 1, period: 4) { frame in
            if frame == changeAt { controller.apply(change.command) }
            _ = controller.poll()
        }
        // The steepest a -6 dBFS 1 kHz sine moves between samples, plus what the ramp itself adds.
        let toneSlope = Float(2 * Double.pi * 1000 / 48000) * 0.5
        let rampSlope = 0.5 / Float(change.rampMilliseconds * 48)
        let largest = ToneAnalysis.largestStep(in: out[...])
        #expect(largest <= toneSlope + rampSlope + 1e-4, "largest step \(largest)")
        // Around the change: everything above 4 kHz at least 60 dB under the tone before it.
        let window = out[(changeAt - 2400)..<(changeAt + change.rampMilliseconds * 48 + 2400)]
        let toneLevel = ToneAnalysis.level(of: 1000, in: out[(changeAt - 4800)..<changeAt], sampleRate: 48000)
        let splatter = ToneAnalysis.loudestLevel(from: 4000, to: 20000, step: 250, in: window, sampleRate: 48000)
        #expect(abs(toneLevel + 6.02) < 0.1, "tone level \(toneLevel) dBFS")
        #expect(splatter <= toneLevel - 60, "energy above 4 kHz \(splatter) dBFS vs tone \(toneLevel) dBFS")
    }

    /// The daemon activates a session (the policy sets its gain: silent under the switch, R1; ducked, R7) and only
    /// then attaches its sound; attaching again (a new file for the same session) must keep the gain too.
    @Test(
        "a gain set before the sound is attached applies from its first sample",
        arguments: [Gain.silent, Gain(decibels: -14)]
    )
    func gainBeforeAttach(gain: Gain) throws {
        let engine = MixerEngine(format: MixerFormat(sampleRate: 48000, channels: 1, maxFrames: 64))
        let controller = MixerController(engine: engine)
        controller.apply(.setSessionGain(SessionID(1), gain, ramp: .zero))
        try controller.attach(SessionID(1), bus: .ringer, buffer: tone(1000), loop: true)
        controller.apply(.resume(SessionID(1)))
        var out = renderFloat(engine, seconds: 0.5) { _ in _ = controller.poll() }
        try controller.attach(SessionID(1), bus: .ringer, buffer: tone(1000), loop: true)
        controller.apply(.resume(SessionID(1)))
        out += renderFloat(engine, seconds: 0.5) { _ in _ = controller.poll() }
        let expected = 20 * log10(0.5) + Double(gain.decibels)
        for (name, range) in [("first sound", 0..<24000), ("sound attached again", 24000..<48000)] {
            let level = ToneAnalysis.level(of: 1000, in: out[range], sampleRate: 48000)
            if gain == .silent {
                #expect(out[range].allSatisfy { $0 == 0 }, "\(name): a silenced session leaks \(level) dBFS")
            } else {
                #expect(abs(level - expected) < 0.1, "\(name): \(level) dBFS, expected \(expected)")
            }
        }
    }

    @Test("a ducked voice settles 14 dB lower")
    func duckDepth() throws {
        let engine = MixerEngine(format: MixerFormat(sampleRate: 48000, channels: 1, maxFrames: 64))
        let controller = MixerController(engine: engine)
        try controller.attach(SessionID(1), bus: .music, buffer: tone(1000), loop: true)
        controller.apply(.resume(SessionID(1)))
        let out = renderFloat(engine, seconds: 1) { frame in
            if frame == 9600 {
                controller.apply(.setSessionGain(SessionID(1), Gain(decibels: -14), ramp: .milliseconds(100)))
            }
        }
        let before = ToneAnalysis.level(of: 1000, in: out[0..<9600], sampleRate: 48000)
        let after = ToneAnalysis.level(of: 1000, in: out[24000..<48000], sampleRate: 48000)
        #expect(abs((before - after) - 14) < 0.05, "ducked by \(before - after) dB")
    }
}

@Suite("Mixer: limiter and formats")
struct LimiterAndFormatTests {
    @Test("three full-scale voices never clip or wrap")
    func threeFullScale() throws {
        let engine = MixerEngine(format: MixerFormat(sampleRate: 48000, channels: 2, maxFrames: 64))
        let controller = MixerController(engine: engine)
        for (index, bus) in Bus.allCases.enumerated() {
            try controller.attach(SessionID(UInt64(index)), bus: bus, buffer: tone(440, amplitude: 1), loop: true)
            controller.apply(.resume(SessionID(UInt64(index))))
        }
        let out = renderFloat(engine, seconds: 0.5)
        #expect(out.allSatisfy { abs($0) < 1 })
        #expect((out.max() ?? 0) > 0.95, "the limiter lets loud sums approach full scale")
        var pcm = [Int16](repeating: 0, count: 4800 * 2)
        let again = MixerEngine(format: MixerFormat(sampleRate: 48000, channels: 2, maxFrames: 4800))
        let control = MixerController(engine: again)
        for (index, bus) in Bus.allCases.enumerated() {
            try control.attach(SessionID(UInt64(index)), bus: bus, buffer: tone(440, amplitude: 1), loop: true)
            control.apply(.resume(SessionID(UInt64(index))))
        }
        pcm.withUnsafeMutableBytes { again.render(frames: 4800, into: $0.baseAddress!, sampleFormat: .s16LE) }
        let reference = tone(440, amplitude: 1, seconds: 0.1).interleaved
        for frame in 240..<4800 where abs(reference[frame]) > 0.1 {
            #expect((pcm[2 * frame] > 0) == (reference[frame] > 0), "sample \(frame) wrapped")
        }
    }

    @Test("the limiter is the identity below its knee and stays inside full scale above it")
    func limiterCurve() {
        for x: Float in [0, 0.1, -0.5, 0.79, -0.8] { #expect(SampleConversion.limit(x) == x) }
        for x: Float in [0.81, 1, 2, 3, 100] {
            let y = SampleConversion.limit(x)
            #expect(y < 1 && y > 0.8 && SampleConversion.limit(-x) == -y)
        }
        #expect(SampleConversion.limit(1) < SampleConversion.limit(2))
    }

    /// The little-endian 32-bit word at `index`.
    func word(_ bytes: [UInt8], at index: Int) -> UInt32 {
        var value: UInt32 = 0
        for offset in 0..<4 { value |= UInt32(bytes[index + offset]) << (8 * UInt32(offset)) }
        return value
    }

    static let vector: [Float] = [0, 1, -1, 0.5, -0.5, 0.25, 1e-6, -1e-6]

    func convert(_ format: SampleFormat) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: Self.vector.count * format.bytesPerSample)
        Self.vector.withUnsafeBufferPointer { samples in
            bytes.withUnsafeMutableBytes {
                SampleConversion.write(samples.baseAddress!, count: samples.count, to: $0.baseAddress!, format: format)
            }
        }
        return bytes
    }

    @Test("S16_LE bit-exact")
    func s16() {
        let values = stride(from: 0, to: 16, by: 2).map { i in
            Int16(bitPattern: UInt16(convert(.s16LE)[i]) | UInt16(convert(.s16LE)[i + 1]) << 8)
        }
        #expect(values == [0, 32767, -32767, 16384, -16384, 8192, 0, 0])
    }

    @Test("S24_3LE bit-exact")
    func s24() {
        #expect(
            convert(.s24_3LE) == [
                0, 0, 0, 0xFF, 0xFF, 0x7F, 0x01, 0x00, 0x80, 0x00, 0x00, 0x40, 0x00, 0x00, 0xC0, 0x00, 0x00, 0x20,
                0x08, 0x00, 0x00, 0xF8, 0xFF, 0xFF,
            ]
        )
    }

    @Test("S32_LE bit-exact")
    func s32() {
        let bytes = convert(.s32LE)
        let values = stride(from: 0, to: bytes.count, by: 4).map { Int32(bitPattern: word(bytes, at: $0)) }
        #expect(values == [0, 2_147_483_647, -2_147_483_647, 1_073_741_824, -1_073_741_824, 536_870_912, 2147, -2147])
    }

    @Test("FLOAT_LE is the samples themselves")
    func float() {
        let bytes = convert(.floatLE)
        let values = stride(from: 0, to: bytes.count, by: 4).map { Float(bitPattern: word(bytes, at: $0)) }
        #expect(values == Self.vector)
    }
}

@Suite("Mixer: voices")
struct VoiceTests {
    @Test("mono sources play on both channels of a stereo device; stereo sources fold to mono")
    func channels() throws {
        let stereoDevice = MixerEngine(format: MixerFormat(sampleRate: 48000, channels: 2, maxFrames: 64))
        let control = MixerController(engine: stereoDevice)
        try control.attach(SessionID(1), bus: .effect, buffer: tone(1000), loop: true)
        control.apply(.resume(SessionID(1)))
        let out = renderFloat(stereoDevice, seconds: 0.2)
        let left = ToneAnalysis.channel(0, of: out, channels: 2)
        let right = ToneAnalysis.channel(1, of: out, channels: 2)
        #expect(left[480...] == right[480...])
        let monoDevice = MixerEngine(format: MixerFormat(sampleRate: 48000, channels: 1, maxFrames: 64))
        let monoControl = MixerController(engine: monoDevice)
        let stereo = AudioBuffer(
            interleaved: (0..<9600).flatMap { _ in [Float(0.4), Float(0.2)] },
            channels: 2,
            sampleRate: 48000
        )
        try monoControl.attach(SessionID(1), bus: .effect, buffer: stereo, loop: true)
        monoControl.apply(.resume(SessionID(1)))
        let mono = renderFloat(monoDevice, seconds: 0.1)
        #expect(abs(mono[4000] - 0.3) < 1e-6)
    }

    @Test("pause keeps the position; resume continues from it")
    func pauseResume() throws {
        let engine = MixerEngine(format: MixerFormat(sampleRate: 48000, channels: 1, maxFrames: 64))
        let controller = MixerController(engine: engine)
        controller.pauseFade = .zero
        controller.resumeFade = .zero
        let ramp = AudioBuffer(interleaved: (0..<48000).map { Float($0) / 48000 }, channels: 1, sampleRate: 48000)
        try controller.attach(SessionID(1), bus: .music, buffer: ramp, loop: false)
        controller.apply(.resume(SessionID(1)))
        let out = renderFloat(engine, seconds: 0.2) { frame in
            if frame == 640 { controller.apply(.pause(SessionID(1))) }
            if frame == 6400 { controller.apply(.resume(SessionID(1))) }
        }
        #expect(out[639] == ramp.samples[639])
        #expect(out[640..<6400].allSatisfy { $0 == 0 })
        #expect(out[6400] == ramp.samples[640], "resumes where it paused")
    }

    @Test("a sound that ends is reported finished; a looping one wraps")
    func finishAndLoop() throws {
        let engine = MixerEngine(format: MixerFormat(sampleRate: 48000, channels: 1, maxFrames: 64))
        let controller = MixerController(engine: engine)
        try controller.attach(SessionID(1), bus: .effect, buffer: tone(1000, seconds: 0.01), loop: false)
        try controller.attach(SessionID(2), bus: .effect, buffer: tone(500, seconds: 0.01), loop: true)
        controller.apply(.resume(SessionID(1)))
        controller.apply(.resume(SessionID(2)))
        var finished: [SessionID] = []
        let out = renderFloat(engine, seconds: 0.1) { _ in finished += controller.poll() }
        finished += controller.poll()
        #expect(finished == [SessionID(1)])
        #expect(ToneAnalysis.level(of: 500, in: out[2400...], sampleRate: 48000) > -7)
        #expect(ToneAnalysis.level(of: 1000, in: out[2400...], sampleRate: 48000) < -80)
    }

    @Test("a detached sound's buffer is let go only after the engine says so")
    func release() throws {
        let engine = MixerEngine(format: MixerFormat(sampleRate: 48000, channels: 1, maxFrames: 64))
        let controller = MixerController(engine: engine)
        weak var weakBuffer: AudioBuffer?
        do {
            let buffer = tone(1000, seconds: 0.1)
            weakBuffer = buffer
            try controller.attach(SessionID(1), bus: .music, buffer: buffer, loop: true)
        }
        controller.detach(SessionID(1))
        #expect(weakBuffer != nil, "still owned until the engine confirms")
        _ = renderFloat(engine, seconds: 0.01)
        _ = controller.poll()
        #expect(weakBuffer == nil)
    }

    @Test("sounds at another rate or with more than two channels are refused")
    func refused() {
        let controller = MixerController(engine: MixerEngine(format: MixerFormat()))
        #expect(throws: MixerController.AttachError.self) {
            try controller.attach(SessionID(1), bus: .music, buffer: tone(440, rate: 44100), loop: false)
        }
        #expect(throws: MixerController.AttachError.self) {
            try controller.attach(
                SessionID(1),
                bus: .music,
                buffer: AudioBuffer(frameCount: 10, channels: 6, sampleRate: 48000),
                loop: false
            )
        }
    }
}

@Suite("SPSC ring")
struct RingTests {
    @Test("first in, first out; a full ring refuses")
    func order() {
        let ring = SPSCRing<Int>(capacity: 4)
        defer { ring.deallocate() }
        for i in 0..<4 { #expect(ring.push(i)) }
        #expect(!ring.push(99))
        #expect((0..<4).map { _ in ring.pop() } == [0, 1, 2, 3])
        #expect(ring.pop() == nil)
    }

    @Test("a producer and a consumer thread pass a million values in order")
    func threads() async {
        let ring = SPSCRing<Int>(capacity: 256)
        defer { ring.deallocate() }
        let count = 1_000_000
        let producer = Task.detached {
            var i = 0
            while i < count { if ring.push(i) { i += 1 } else { await Task.yield() } }
        }
        var expected = 0
        var inOrder = true
        while expected < count {
            if let value = ring.pop() {
                inOrder = inOrder && value == expected
                expected += 1
            } else {
                await Task.yield()
            }
        }
        await producer.value
        #expect(inOrder)
    }
}
