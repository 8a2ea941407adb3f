import CAllocationCounter
import HushCore
import HushMixer
import HushTesting
import HushVoice
import Testing

@testable import HushStreams

#if canImport(Glibc)
import Glibc
#endif

/// The voice path through the real capture router (R22): what a `voiceChat` consumer receives when the microphone
/// hears the mix come back from the room, beside a `default` consumer that gets the microphone as it is. The voice
/// thread's work is run on the test's thread after each period (``VoicePath/processAvailable()``), so every run is
/// the same; hushd runs it on a thread of its own.
@Suite("The voice path: echo cancelled on the way to voiceChat streams")
struct VoicePathTests {
    static let rate = 48000
    static let period = 64

    /// A consumer that keeps every frame it is handed (mono).
    final class Recorder: CaptureConsumer, @unchecked Sendable {
        var frames: [Float] = []
        let scratch = UnsafeMutablePointer<Float>.allocate(capacity: VoicePathTests.period)
        init(voice: Bool, allowed: Bool = true) {
            super.init(channels: 1)
            frames.reserveCapacity(VoicePathTests.rate * 8)
            running.store(true, ordering: .relaxed)
            self.allowed.store(allowed, ordering: .relaxed)
            self.voice.store(voice, ordering: .relaxed)
        }
        deinit { scratch.deallocate() }
        override func deliver(_ source: UnsafePointer<Float>?, channels: Int, frames count: Int) {
            _ = take(source, channels: channels, frames: count, into: scratch)
            frames.append(contentsOf: UnsafeBufferPointer(start: scratch, count: count))
        }
    }

    /// The room: the mix (mono here) comes back `delay` frames later through a short response, at about −10 dB,
    /// with a near-end talker from `nearFrom` on.
    final class Rig {
        let microphone = SampleRing(frames: 8192, channels: 1)
        let mix = UnsafeMutablePointer<Float>.allocate(capacity: VoicePathTests.period)
        let path: VoicePath
        let router: CaptureRouter
        let processed = Recorder(voice: true)
        let raw = Recorder(voice: false)
        var farEnd: [Float] = []
        var nearEnd: [Float] = []
        let delay: Int
        var time = 0
        var rng = SeededGenerator(seed: 26)

        /// `noiseTalker`: the near end is syllables of noise, not a voiced tone (no period to mistake a lag for),
        /// and there is no far end.
        init(
            delay: Int,
            seconds: Double,
            nearFrom: Double = .infinity,
            noiseTalker: Bool = false,
            configuration: VoiceConfiguration = VoiceConfiguration()
        ) throws {
            self.delay = delay
            path = try VoicePath(
                sampleRate: VoicePathTests.rate,
                maxFrames: VoicePathTests.period,
                configuration: configuration
            )
            router = CaptureRouter(
                microphone: microphone,
                maxFrames: VoicePathTests.period,
                voicePath: path,
                mix: UnsafePointer(mix),
                mixChannels: 1
            )
            router.add(processed)
            router.add(raw)
            let count = Int(seconds * Double(VoicePathTests.rate))
            // Far end: noise shaped into syllables (4 per second) with pauses, as speech comes.
            farEnd = (0..<count).map { index in
                let envelope = max(0, sin(Double(index) / Double(VoicePathTests.rate) * 2 * .pi * 2))
                return Float(Double.random(in: -1...1, using: &rng) * 0.2 * envelope)
            }
            if noiseTalker {
                nearEnd = farEnd.map { $0 * 0.5 }
                farEnd = [Float](repeating: 0, count: count)
                path.setActive(true)
                return
            }
            // Near end: a voiced 180 Hz talker with harmonics, from `nearFrom` on.
            nearEnd = (0..<count).map { index in
                let t = Double(index) / Double(VoicePathTests.rate)
                guard t >= nearFrom else { return 0 }
                var voiced = 0.0
                for harmonic in 1...6 {
                    let h = Double(harmonic)
                    voiced += sin(2 * Double.pi * 180 * h * t) / h
                }
                return Float(voiced * 0.05)
            }
            path.setActive(true)
        }

        deinit {
            microphone.deallocate()
            mix.deallocate()
        }

        /// The microphone at `index`: the echo of the far end, and the near end.
        func heard(_ index: Int) -> Float {
            var echo: Float = 0
            for (tap, gain) in [(0, Float(0.3)), (37, 0.12), (150, -0.06)] {
                let source = index - delay - tap
                if source >= 0 { echo += gain * farEnd[source] }
            }
            return echo + nearEnd[index]
        }

        /// One period: the mix that leaves now, the microphone that hears the room, the router, then the voice
        /// thread's work.
        func period() {
            var samples = [Float](repeating: 0, count: VoicePathTests.period)
            for frame in 0..<VoicePathTests.period {
                mix[frame] = farEnd[time + frame]
                samples[frame] = heard(time + frame)
            }
            _ = samples.withUnsafeBufferPointer { microphone.write($0.baseAddress!, frames: VoicePathTests.period) }
            router.period(frames: VoicePathTests.period)
            path.processAvailable()
            time += VoicePathTests.period
        }

        func run(until seconds: Double) {
            while Double(time + VoicePathTests.period) < seconds * Double(VoicePathTests.rate) { period() }
        }
    }

    static func power(_ samples: ArraySlice<Float>) -> Double {
        samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(max(samples.count, 1))
    }

    static func decibels(_ ratio: Double) -> Double { 10 * log10(max(ratio, 1e-30)) }

    @Test("the echo of what hushd plays is cancelled for voiceChat; the default stream hears it as it is")
    func cancels() throws {
        // 30 ms from the mix to its echo in the microphone, as hushd passes it.
        let rig = try Rig(delay: 1440, seconds: 6)
        rig.path.delayMilliseconds.store(30, ordering: .relaxed)
        rig.run(until: 6)
        // The last three seconds, the canceller converged: the far end's syllables only.
        let from = 3 * Self.rate
        let raw = Self.power(rig.raw.frames[from...])
        let processed = Self.power(rig.processed.frames[from...])
        let erle = Self.decibels(raw / processed)
        let statistics = rig.path.statistics
        print(
            "voice path: ERLE \(String(format: "%.1f", erle)) dB measured on the stream (library's own: "
                + "\(statistics.echoReturnLossEnhancement.map { String(format: "%.1f", $0) } ?? "none") dB), "
                + "\(rig.path.blocks.load(ordering: .relaxed)) blocks, "
                + "\(rig.path.underflows.load(ordering: .relaxed)) underflows, webrtc \(VoiceProcessor.libraryGeneration)"
        )
        #expect(raw > 1e-4, "the default stream hears the echo: \(Self.decibels(raw)) dBFS")
        // The issue's target is 30 dB on speech over far-end-only windows; the offline echo path in HushVoiceTests
        // measures 54.8 dB (0.3) on a synthetic voice. Noise bursts through the router: well above 25 dB.
        #expect(erle >= 25, "ERLE \(erle) dB")
        let underflows = rig.path.underflows.load(ordering: .relaxed)
        #expect(underflows == 0)
    }

    /// The lag, in frames, that best lines `processed` up with `raw`, over 0…50 ms (from the second second on).
    static func lag(_ rig: Rig) -> Int {
        let raw = Array(rig.raw.frames[Self.rate...])
        let processed = Array(rig.processed.frames[Self.rate...])
        var best = (lag: 0, score: -Double.infinity)
        for lag in 0..<2400 {
            var score = 0.0
            for index in stride(from: 0, to: 24_000, by: 4) {
                score += Double(raw[index]) * Double(processed[index + lag])
            }
            if score > best.score { best = (lag, score) }
        }
        return best.lag
    }

    @Test("the path itself adds one block and its cushion; the library adds its own on top, measured")
    func latency() throws {
        // No far end: the near-end talker alone, so the processed stream is the raw one, late. First with the
        // library doing nothing (the path's own lateness), then as voiceChat runs it.
        let off = VoiceConfiguration(
            echoCancellation: false,
            noiseSuppression: false,
            highPassFilter: false,
            automaticGain: false
        )
        let bare = try Rig(delay: 1440, seconds: 3, noiseTalker: true, configuration: off)
        bare.run(until: 3)
        let own = Self.lag(bare)
        let full = try Rig(delay: 1440, seconds: 3, noiseTalker: true)
        full.run(until: 3)
        let total = Self.lag(full)
        func ms(_ frames: Int) -> String { String(format: "%.1f ms", Double(frames) * 1000 / Double(Self.rate)) }
        print(
            "voice path: the processed microphone is \(ms(own)) behind the raw one through the path alone, \(ms(total)) "
                + "with webrtc-audio-processing \(VoiceProcessor.libraryGeneration)'s processing (its own: "
                + "\(ms(total - own)))"
        )
        // A block (480 frames) to fill, then the cushion: two periods and the one that finds the block.
        #expect(own >= 480 && own <= 480 + 3 * Self.period, "the path's own: \(own) frames")
        // The library's filter banks and overlaps (0.3 at 48 kHz: about 14 ms) come on top; a bound against drift.
        #expect(total >= own && total <= own + 30 * Self.rate / 1000, "with processing: \(total) frames")
    }

    @Test("while the privacy switch is on, a voiceChat stream gets exact zeros, and live frames after")
    func muted() throws {
        let rig = try Rig(delay: 1440, seconds: 4, nearFrom: 0)
        rig.run(until: 1)
        rig.router.muted.store(true, ordering: .relaxed)
        let start = rig.processed.frames.count
        rig.run(until: 2)
        let whileMuted = rig.processed.frames[start...]
        #expect(whileMuted.allSatisfy { $0 == 0 }, "\(whileMuted.filter { $0 != 0 }.count) non-zero samples")
        #expect(rig.raw.frames[start...].allSatisfy { $0 == 0 })
        rig.router.muted.store(false, ordering: .relaxed)
        let after = rig.processed.frames.count
        rig.run(until: 4)
        #expect(Self.power(rig.processed.frames[(after + Self.rate)...]) > 1e-5, "the talker is heard again")
    }

    @Test("the audio thread's part allocates nothing, period after period, with the voice path running")
    func noAllocation() throws {
        let rig = try Rig(delay: 1440, seconds: 4)
        rig.run(until: 1)
        let hook = rig.router.hook
        var allocations: Int64 = 0
        var frees: Int64 = 0
        let samples = [Float](repeating: 0.01, count: Self.period)
        for _ in 0..<1000 {
            samples.withUnsafeBufferPointer { _ = rig.microphone.write($0.baseAddress!, frames: Self.period) }
            let before = (hush_allocations_on_this_thread(), hush_frees_on_this_thread())
            hook.call(hook.context, Self.period)
            allocations += hush_allocations_on_this_thread() - before.0
            frees += hush_frees_on_this_thread() - before.1
            rig.path.processAvailable()
            rig.raw.frames.removeAll(keepingCapacity: true)
            rig.processed.frames.removeAll(keepingCapacity: true)
        }
        print("voice path: 1000 periods on the audio thread's side, \(allocations) allocations, \(frees) frees")
        #expect(allocations == 0 && frees == 0)
    }
}
