import Foundation
import HushALSA
import HushAudioFile
import HushCore
import HushMixer
import HushPolicy
import HushTesting
import Logging
import Testing

@testable import HushOutput

/// The controller the daemon runs (policy + mixer + sounds) and the audio thread's outputs, on the host.
@Suite("Audio controller and outputs")
struct AudioControllerTests {
    static let directory: String = {
        let path = NSTemporaryDirectory() + "hush-controller-\(getpid())"
        try? FileManager.default.createDirectory(atPath: path + "/sounds", withIntermediateDirectories: true)
        return path
    }()

    static func controller() -> AudioController {
        AudioController(
            configuration: PolicyConfiguration(),
            persisted: nil,
            format: MixerFormat(sampleRate: 48000, channels: 2, maxFrames: 64),
            soundDirectories: [directory + "/sounds"]
        )
    }

    @Test("a sound outside the sound directories is refused, naming the file and the directories")
    func outsideDirectories() throws {
        let controller = Self.controller()
        controller.start(at: .zero)
        controller.handle(
            .activate(SessionID(1), client: ClientID(1), .init(bus: .music, category: .playback)),
            at: .zero
        )
        let outside = Self.directory + "/outside.wav"
        let tone = ToneGenerator.sine(frequency: 440, amplitude: 0.5, seconds: 0.1, sampleRate: 48000, loopable: false)
        try SoundFile.write(tone, to: outside)
        // A symbolic link inside the directory that points outside is outside too.
        let link = Self.directory + "/sounds/link.wav"
        try? FileManager.default.removeItem(atPath: link)
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: outside)
        for path in [outside, link, Self.directory + "/sounds/../outside.wav"] {
            #expect {
                try controller.attach(.file(path), to: SessionID(1), loop: false)
            } throws: { error in
                let text = (error as? AudioController.SoundError)?.description ?? ""
                return text.contains("'\(path)'") && text.contains("outside the sound directories")
                    && text.contains("/sounds")
            }
        }
        #expect(controller.sessionsWithSound.isEmpty)
    }

    /// hushctl and the console activate a session first and attach its sound after: the sound must start at the
    /// gain the policy gave the session then (silenced by the switch, R1), and keep it when it is replaced.
    @Test("a ringtone activated under the silence switch is silent from its first sample, also when replaced")
    func silencedBeforeAttach() throws {
        let controller = Self.controller()
        controller.start(at: .zero)
        controller.handle(.input(.silenceSwitch(.silent)), at: .zero)
        let ring = SessionID(1)
        controller.handle(.activate(ring, client: ClientID(1), .init(bus: .ringer, category: .soloAmbient)), at: .zero)
        func render(_ frames: Int) -> [Int16] {
            var pcm = [Int16](repeating: 0, count: frames * 2)
            for period in 0..<(frames / 64) {
                pcm.withUnsafeMutableBytes {
                    controller.engine.render(
                        frames: 64,
                        into: $0.baseAddress! + period * 64 * 4,
                        sampleFormat: .s16LE
                    )
                }
            }
            return pcm
        }
        try controller.attach(.tone(1500), to: ring, loop: true)
        controller.handle(.play(ring), at: .milliseconds(10))
        #expect(render(4800).allSatisfy { $0 == 0 }, "the muted ring leaked")
        controller.handle(.pause(ring), at: .milliseconds(15))
        try controller.attach(.tone(1000), to: ring, loop: true)
        controller.handle(.play(ring), at: .milliseconds(20))
        #expect(render(4800).allSatisfy { $0 == 0 }, "the replaced sound leaked")
        controller.handle(.input(.silenceSwitch(.ring)), at: .milliseconds(30))
        // About 1100 at peak: a half-scale tone at ringer step 10.
        #expect(render(4800).contains { abs($0) > 500 }, "silence off: the ring is heard")
        // A session that is gone leaves nothing behind in the mixer, not even a gain.
        let idle = SessionID(2)
        controller.handle(.input(.silenceSwitch(.silent)), at: .milliseconds(40))
        controller.handle(.activate(idle, client: ClientID(2), .init(bus: .effect, category: .ambient)), at: .zero)
        controller.handle(.clientGone(ClientID(2)), at: .milliseconds(50))
        controller.handle(.deactivate(ring, notifyOthers: false), at: .milliseconds(60))
        #expect(controller.mixer.knownSessions.isEmpty, "\(controller.mixer.knownSessions)")
    }

    /// hushctl play into a session that is playing replaces its sound: the policy answers the second `play` with
    /// "already playing" and no command, so the new sound must start by itself, and at the session's gain.
    @Test("a sound that replaces a playing one is heard at once, a paused session's stays paused")
    func replacedWhilePlaying() throws {
        let controller = Self.controller()
        controller.start(at: .zero)
        let music = SessionID(1)
        controller.handle(.activate(music, client: ClientID(1), .init(bus: .music, category: .playback)), at: .zero)
        func level(_ frames: Int) -> Double {
            var pcm = [Int16](repeating: 0, count: frames * 2)
            for period in 0..<(frames / 64) {
                pcm.withUnsafeMutableBytes {
                    controller.engine.render(frames: 64, into: $0.baseAddress! + period * 64 * 4, sampleFormat: .s16LE)
                }
            }
            let left = pcm.enumerated().filter { $0.offset % 2 == 0 }.map { Float($0.element) / 32768 }
            return ToneAnalysis.level(of: 1000, in: left[(frames / 2)...], sampleRate: 48000)
        }
        try controller.attach(.tone(440), to: music, loop: true)
        controller.handle(.play(music), at: .milliseconds(10))
        _ = level(4800)
        try controller.attach(.tone(1000), to: music, loop: true)
        controller.handle(.play(music), at: .milliseconds(20))
        let playing = level(9600)
        #expect(playing > -40, "the new 1 kHz sound is at \(playing) dBFS")
        controller.handle(.pause(music), at: .milliseconds(30))
        _ = level(4800)
        try controller.attach(.tone(1000), to: music, loop: true)
        let paused = level(9600)
        #expect(paused < -90, "a paused session's new sound plays at \(paused) dBFS")
        controller.handle(.play(music), at: .milliseconds(40))
        let resumed = level(9600)
        #expect(abs(resumed - playing) < 0.5, "resumed at \(resumed) dBFS, played at \(playing)")
    }

    @Test("a sound inside is played; a missing one is named")
    func inside() throws {
        let controller = Self.controller()
        controller.start(at: .zero)
        controller.handle(
            .activate(SessionID(1), client: ClientID(1), .init(bus: .music, category: .playback)),
            at: .zero
        )
        let path = Self.directory + "/sounds/chime.wav"
        let tone = ToneGenerator.sine(frequency: 440, amplitude: 0.5, seconds: 0.1, sampleRate: 48000, loopable: false)
        try SoundFile.write(tone, to: path)
        try controller.attach(.file(path), to: SessionID(1), loop: false)
        #expect(controller.sessionsWithSound == [SessionID(1)])
        #expect {
            try controller.attach(.file(Self.directory + "/sounds/none.wav"), to: SessionID(1), loop: false)
        } throws: { error in
            (error as? AudioController.SoundError)?.description.contains("none.wav") == true
        }
        #expect {
            try controller.attach(.tone(440), to: SessionID(9), loop: false)
        } throws: { error in
            (error as? AudioController.SoundError)?.description == "there is no session 9"
        }
    }

    @Test("the audio thread writes a WAV file in real time and switches to a handed-over device mid-stream")
    func wavOutputAndHandover() throws {
        let first = Self.directory + "/first.wav"
        let second = Self.directory + "/second.wav"
        let configuration = PlaybackConfiguration(pcm: "file", periodFrames: 480, periods: 2)
        let engine = MixerEngine(format: MixerFormat(sampleRate: 48000, channels: 2, maxFrames: 480))
        let thread = AudioOutputThread(
            engine: engine,
            output: try WAVFileOutput(path: first, configuration: configuration),
            requested: configuration,
            priority: 0,
            logger: Logger(label: "test")
        )
        try thread.start()
        Thread.sleep(forTimeInterval: 0.3)
        let next = try WAVFileOutput(path: second, configuration: configuration)
        #expect(thread.handOver(next, requested: configuration))
        Thread.sleep(forTimeInterval: 0.3)
        thread.reap()
        thread.stop()
        #expect(thread.counters.handovers.load(ordering: .relaxed) == 1)
        for path in [first, second] {
            let (samples, channels, rate) = try SoundFile.readPCM16(path)
            #expect(channels == 2 && rate == 48000)
            // About 0.3 s each, paced by the clock (generous bounds: a shared machine).
            #expect(samples.count / 2 > 4800 && samples.count / 2 < 48000, "\(path): \(samples.count / 2) frames")
        }
        let mono = PlaybackConfiguration(pcm: "file", channels: 1, periodFrames: 480)
        #expect(!thread.handOver(try WAVFileOutput(path: second, configuration: mono), requested: mono))
    }
}
