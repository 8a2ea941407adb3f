import Foundation
import HushCore
import HushVoice
import Testing

/// The scenes, made once each: synthesising and convolving 12 s at 48 kHz takes a debug build about a second.
enum Scenes {
    /// A far-end talker throughout; its echo 30 ms late through an 80 ms room at -10 dB; a near-end talker 3 dB
    /// below the echo in three windows of 1.5 s (double-talk); a noise floor at -70 dBFS.
    static let plain = EchoScene()
    /// The same at 16 kHz.
    static let wideband = EchoScene(rate: 16_000)
    /// A route change at 5 s moves the echo from 30 ms to 70 ms; no near end.
    static let routeChange = EchoScene(changeAt: 5, delayAfter: 0.070, nearWindows: [])
    /// The microphone's clock 100 ppm fast against the speaker's: the echo drifts 1.2 ms later over the 12 s.
    static let drift = EchoScene(drift: 100)
    static var silence: [Float] { [Float](repeating: 0, count: plain.reference.count) }
}

/// What the issue (26) asks of the echo path, measured offline on the processed output (not on the library's own
/// figure): ERLE >= 30 dB as the median over far-end-only 100 ms windows from 1 s after the start, >= 25 dB within
/// 0.5 s after a route change, the near-end talker within 3 dB in double-talk. The thresholds below are what this
/// library generation reaches robustly with a margin (measured with bookworm's 0.3: docs/performance.md, "Voice
/// processing"); where it falls short of the issue's target, the test says so.
@Suite("Voice processing: echo cancellation, offline")
struct EchoCancellationTests {
    /// The target: 30 dB. 0.3 reaches 55 dB here and 1.3 56 dB (their non-linear processors and noise
    /// suppressors take the residual below the noise floor).
    static let erleThreshold = 40.0

    @Test func cancelsTheEchoWithTheKnownDelay() throws {
        let scene = Scenes.plain
        let nearAlone = try runVoice(scene, microphone: scene.nearAlone, reference: Scenes.silence)
        let run = try runVoice(scene)
        let processed = figures(scene, run, nearAloneOutput: nearAlone.output)
        print("webrtc-audio-processing \(VoiceProcessor.libraryGeneration), voiceChat: \(processed)")
        #expect(scene.farOnlyWindows(from: 1).count >= 30)
        #expect(scene.doubleTalkWindows().count >= 10)
        #expect(processed.erle >= Self.erleThreshold)
        // The target is within 3 dB; neither generation meets it here. 0.3's canceller takes the near end
        // down by 7.8 dB in double-talk (its non-linear processor, whatever its suppression level: -7.3 dB at low,
        // -7.8 dB at high), 1.3's AEC3 by 4.5 dB (trixie chroot). These bounds hold each to what it does, with a
        // margin.
        #expect(abs(processed.nearEnd) <= (VoiceProcessor.libraryGeneration == "0.3" ? 11 : 7))
    }

    /// The control: `measurement` (the microphone as it is) gives 0 dB, and so does the library with everything
    /// off; so the figures above are the canceller's, not the measurement's.
    @Test func controlWithoutProcessingCancelsNothing() throws {
        let scene = Scenes.plain
        let raw = figures(scene, Run(output: scene.microphone, cpuSeconds: 0), nearAloneOutput: scene.nearAlone)
        #expect(VoiceConfiguration.forMode(.measurement) == nil)
        #expect(abs(raw.erle) < 0.01)
        // The echo adds to the near end in double-talk: louder than the near end alone.
        #expect(raw.nearEnd > 1)
        let off = VoiceConfiguration(
            sampleRate: scene.rate,
            echoCancellation: false,
            noiseSuppression: false,
            highPassFilter: false,
            automaticGain: false
        )
        let passed = figures(scene, try runVoice(scene, configuration: off), nearAloneOutput: scene.nearAlone)
        print("control: measurement \(raw); the library with everything off \(passed)")
        #expect(abs(passed.erle) < 1)
    }

    @Test func cancelsAtSixteenKilohertz() throws {
        let scene = Scenes.wideband
        let silence = [Float](repeating: 0, count: scene.reference.count)
        let nearAlone = try runVoice(scene, microphone: scene.nearAlone, reference: silence)
        let processed = figures(scene, try runVoice(scene), nearAloneOutput: nearAlone.output)
        print("16 kHz: \(processed)")
        #expect(processed.erle >= Self.erleThreshold)
    }

    /// A stereo reference (what hushd plays to a stereo route): both channels carry the far end, the room hears
    /// their sum.
    @Test func cancelsWithAStereoReference() throws {
        let scene = Scenes.plain
        var stereo = [Float](repeating: 0, count: scene.reference.count * 2)
        for (n, sample) in scene.reference.enumerated() {
            stereo[2 * n] = sample
            stereo[2 * n + 1] = sample
        }
        let nearAlone = try runVoice(
            scene,
            microphone: scene.nearAlone,
            reference: Scenes.silence + Scenes.silence,
            referenceChannels: 2
        )
        let run = try runVoice(scene, reference: stereo, referenceChannels: 2)
        let processed = figures(scene, run, nearAloneOutput: nearAlone.output)
        print("stereo reference: \(processed)")
        #expect(processed.erle >= Self.erleThreshold)
    }

    /// A route change moves the echo 40 ms later; hushd calls setDelay with the new delay at once. The issue's
    /// target: ERLE >= 25 dB within 0.5 s. Measured on the far-end-only windows from 0.5 s to 2.5 s after it. The figure barely depends on
    /// setDelay: 0.3's non-linear processor and noise suppressor keep the output near the floor either way (49.1
    /// dB told, 49.3 dB not), and 1.3's AEC3 gives the same output to the sample whether told or not (it takes the
    /// delay passed when it starts, then follows its own estimator): this holds the level, not the delay's use.
    @Test func recoversWithinHalfASecondOfARouteChange() throws {
        let scene = Scenes.routeChange
        let told = try runVoice(scene) { t in t >= 5 ? 70 : 30 }
        let before = Measure.erle(
            microphone: scene.microphone,
            output: told.output,
            windows: scene.farOnlyWindows(from: 1, to: 5),
            rate: scene.rate
        )
        let first = Measure.erle(
            microphone: scene.microphone,
            output: told.output,
            windows: scene.farOnlyWindows(from: 5, to: 5.5),
            rate: scene.rate
        )
        let after = Measure.erle(
            microphone: scene.microphone,
            output: told.output,
            windows: scene.farOnlyWindows(from: 5.5, to: 7.5),
            rate: scene.rate
        )
        let untold = try runVoice(scene) { _ in 30 }
        let stale = Measure.erle(
            microphone: scene.microphone,
            output: untold.output,
            windows: scene.farOnlyWindows(from: 5.5, to: 7.5),
            rate: scene.rate
        )
        print(
            String(
                format:
                    "route change +40 ms: ERLE %.1f dB before, %.1f dB in the first 0.5 s, %.1f dB from 0.5 s to 2.5 s"
                    + " after setDelay (%.1f dB if the delay is not updated)",
                before,
                first,
                after,
                stale
            )
        )
        #expect(scene.farOnlyWindows(from: 5.5, to: 7.5).count >= 5)
        #expect(after >= 25)
    }

    /// The microphone's clock 100 ppm off the speaker's (a USB microphone beside an I2S amplifier), nothing
    /// resampled: the echo slides 0.1 ms a second.
    @Test func cancelsWithAHundredPPMOfDrift() throws {
        let scene = Scenes.drift
        let nearAlone = try runVoice(scene, microphone: scene.nearAlone, reference: Scenes.silence)
        let processed = figures(scene, try runVoice(scene), nearAloneOutput: nearAlone.output)
        print("100 ppm drift: \(processed)")
        #expect(processed.erle >= Self.erleThreshold)
    }

    /// The library's own figures. 0.3: its ERLE once it has heard the echo (35 dB here), no delay estimate. 1.x:
    /// AEC3's delay figure is its render buffer's delay, which follows the delay passed less its own headroom
    /// (12 ms for 30 ms passed, 84 for 100, 0 for 0, measured in the trixie chroot), not the echo's whole delay,
    /// so the "within ±4 ms of the delay passed" does not hold as written; and 1.3 reported ERLE 0.18 dB
    /// and ERL -30 dB throughout (its figures are passed on as they are).
    @Test func publishesTheLibrarysOwnStatistics() throws {
        let run = try runVoice(Scenes.plain)
        let statistics = try #require(run.statistics)
        print("the library's own: \(statistics)")
        let erle = try #require(statistics.echoReturnLossEnhancement)
        if VoiceProcessor.libraryGeneration == "1.x" {
            let delay = try #require(statistics.estimatedDelayMilliseconds)
            #expect((0...34).contains(delay))
        } else {
            #expect(erle > 10)
            #expect(statistics.estimatedDelayMilliseconds == nil)
        }
    }
}

@Suite("Voice processing: configuration and errors")
struct VoiceConfigurationTests {
    @Test func modesAskForProcessingOnlyInVoiceChat() throws {
        let voice = try #require(VoiceConfiguration.forMode(.voiceChat))
        #expect(voice.echoCancellation && voice.noiseSuppression && voice.highPassFilter && voice.automaticGain)
        #expect(VoiceConfiguration.forMode(.voiceChat, automaticGain: false)?.automaticGain == false)
        #expect(VoiceConfiguration.forMode(.default) == nil)
        #expect(VoiceConfiguration.forMode(.measurement) == nil)
        #expect(voice.framesPerBlock == 480)
        #expect(VoiceConfiguration(sampleRate: 16_000).framesPerBlock == 160)
    }

    @Test func refusesWhatTheLibraryCannotRun() {
        #expect(throws: VoiceProcessorError.unsupportedSampleRate(44_100)) {
            try VoiceProcessor(VoiceConfiguration(sampleRate: 44_100))
        }
        #expect(
            VoiceProcessorError.unsupportedSampleRate(44_100).description
                == "voice processing runs at 16000 or 48000 Hz, not 44100 Hz"
        )
        #expect(throws: VoiceProcessorError.unsupportedReferenceChannels(3)) {
            try VoiceProcessor(VoiceConfiguration(referenceChannels: 3))
        }
    }

    @Test func refusesBlocksOfTheWrongLength() throws {
        let processor = try VoiceProcessor(VoiceConfiguration(sampleRate: 16_000))
        let short = [Float](repeating: 0, count: 100)
        var output = [Float](repeating: 0, count: 160)
        #expect(throws: VoiceProcessorError.blockLength(what: "the microphone", expected: 160, got: 100)) {
            try short.withUnsafeBufferPointer { capture in
                try output.withUnsafeMutableBufferPointer { try processor.process(capture, into: $0) }
            }
        }
        #expect(throws: VoiceProcessorError.blockLength(what: "the echo reference", expected: 160, got: 100)) {
            try short.withUnsafeBufferPointer { try processor.analyzeReverse($0) }
        }
        #expect(
            VoiceProcessorError.blockLength(what: "the microphone", expected: 160, got: 100).description
                == "the microphone takes blocks of 160 frames (10 ms), not 100"
        )
    }

    @Test func clampsTheDelay() throws {
        let processor = try VoiceProcessor(VoiceConfiguration(), delayMilliseconds: 40)
        #expect(processor.delayMilliseconds == 40)
        processor.setDelay(milliseconds: 900)
        #expect(processor.delayMilliseconds == 500)
        processor.setDelay(milliseconds: -3)
        #expect(processor.delayMilliseconds == 0)
    }

    /// The library refuses what hush's own checks let through: its refusal names the step and its error.
    @Test func namesTheLibrarysRefusal() {
        let error = VoiceProcessorError.refused(step: "echo cancellation", code: -6, name: "kBadParameterError")
        #expect(
            error.description
                == "webrtc-audio-processing \(VoiceProcessor.libraryGeneration) refused echo cancellation: kBadParameterError (-6)"
        )
    }
}
