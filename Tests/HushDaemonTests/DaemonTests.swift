import Foundation
import HushALSA
import HushAudioFile
import HushCore
import HushSystem
import HushTesting
import Logging
import Testing

@testable import HushDaemon

/// The daemon's loop on the host, in real time: scripted inputs in, the WAV fallback out, the audio analysed.
@Suite("hushd's loop, heard through the WAV fallback", .serialized)
struct DaemonTests {
    static func temporary(_ name: String) -> String {
        let directory = NSTemporaryDirectory() + "hush-daemon-\(getpid())"
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return directory + "/" + name
    }

    @Test("inputs reach the policy and the audio: silence leaves the music, an unplug pauses it, events are logged")
    func loop() throws {
        let wav = Self.temporary("loop.wav")
        var setup = Daemon.Setup()
        setup.output = PlaybackConfiguration(pcm: "hush-no-such-device", periodFrames: 480, periods: 2)
        setup.fallbackWAV = wav
        setup.realtimePriority = 0
        let clock = SystemClock()
        let start = clock.now()
        let script = ScriptedInputSource(
            name: "scripted jack and switch",
            initialState: [.headphones(.plugged, source: .gpio), .silenceSwitch(.ring)],
            script: [
                TimedInputEvent(.silenceSwitch(.silent), at: start + .milliseconds(400)),
                TimedInputEvent(.headphones(.unplugged, source: .gpio), at: start + .milliseconds(800)),
            ]
        )
        let daemon = Daemon(setup: setup, inputs: [script], clock: clock, logger: Logger(label: "test"))
        var batches: [Daemon.DecisionBatch] = []
        daemon.decisionSinks.append { batches.append($0) }
        try daemon.start()
        #expect(daemon.outputDescription == "file:" + wav)
        let music = daemon.newSessionID()
        let effect = daemon.newSessionID()
        daemon.handle(.activate(music, client: ClientID(1), .init(bus: .music, category: .playback)))
        daemon.handle(.activate(effect, client: ClientID(1), .init(bus: .effect, category: .ambient)))
        try daemon.audio.attach(.tone(440), to: music, loop: true)
        try daemon.audio.attach(.tone(1000), to: effect, loop: true)
        daemon.handle(.play(music))
        daemon.handle(.play(effect))
        while clock.now() < start + .milliseconds(1200) {
            runLoopIteration([], clock: clock, limit: .milliseconds(10))
            daemon.readInputsForTesting()
            daemon.service()
        }
        daemon.shutDown()
        let (samples, channels, rate) = try SoundFile.readPCM16(wav)
        let left = ToneAnalysis.channel(0, of: samples.map { Float($0) / 32767 }, channels: channels)
        #expect(rate == 48000)
        func level(_ hz: Double, from: Double, to: Double) -> Double {
            let a = Int(from * 48000)
            let b = min(Int(to * 48000), left.count)
            guard a < b else { return -240 }
            return ToneAnalysis.level(of: hz, in: left[a..<b], sampleRate: 48000)
        }
        // The file starts when the output opened, a little before the sessions began.
        #expect(level(440, from: 0.1, to: 0.3) > -40, "music before silence")
        #expect(level(1000, from: 0.1, to: 0.3) > -40, "effect before silence")
        #expect(level(1000, from: 0.55, to: 0.75) < -80, "the silenced effect (R1)")
        #expect(level(440, from: 0.55, to: 0.75) > -40, "music through silence (R1)")
        #expect(level(440, from: 0.95, to: 1.1) < -80, "music paused by the unplug (R5)")
        let rules = batches.flatMap { $0.decisions.map(\.rule.rawValue) }
        #expect(rules.contains("R1") && rules.contains("R5"), "\(rules)")
        #expect(batches.contains { $0.cause.contains("headphones unplugged") })
    }

    @Test("a failing input source is reported once, and again only after it recovered")
    func failingSource() throws {
        var setup = Daemon.Setup()
        setup.output = PlaybackConfiguration(pcm: "hush-no-such-device", periodFrames: 480, periods: 2)
        setup.fallbackWAV = Self.temporary("failing.wav")
        setup.realtimePriority = 0
        let source = ScriptedInputSource(name: "flaky gpio")
        let daemon = Daemon(setup: setup, inputs: [source], clock: SystemClock(), logger: Logger(label: "test"))
        var problems: [String] = []
        daemon.problemSinks.append { problems.append($0) }
        try daemon.start()
        defer { daemon.shutDown() }
        let failure = HardwareError(operation: "read", device: "gpiochip9", errno: 19, message: "the chip is gone")
        source.nextError = failure
        daemon.readInputsForTesting()
        source.nextError = failure
        daemon.readInputsForTesting()
        #expect(problems == ["flaky gpio: cannot read gpiochip9: the chip is gone [errno 19]"])
        daemon.readInputsForTesting()
        source.nextError = failure
        daemon.readInputsForTesting()
        #expect(problems.count == 2)
    }

    /// A daemon whose output PCM opens through `devices` (no fallback), started now.
    static func lateOutputDaemon(
        _ devices: PendingRouteTests.Devices
    ) throws -> (Daemon, RecordingLogHandler.Box) {
        var setup = Daemon.Setup()
        setup.output = PlaybackConfiguration(pcm: "late-pcm", periodFrames: 240, periods: 2)
        setup.realtimePriority = 0
        setup.openPlayback = { [devices] (configuration) throws(HardwareError) in try devices.open(configuration) }
        let (logger, log) = RecordingLogHandler.logger()
        let daemon = Daemon(setup: setup, inputs: [], clock: SystemClock(), logger: logger)
        try daemon.start()
        return (daemon, log)
    }

    /// Calls `service()` as the loop would until `done` holds, for at most 5 s.
    static func serve(_ daemon: Daemon, until done: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(5)
        while !done() {
            guard Date() < deadline else { return false }
            usleep(10_000)
            daemon.service()
        }
        return true
    }

    @Test(
        "without a fallback, a PCM that is not there yet: hushd starts without sound, says why, plays once it appears"
    )
    func lateOutput() throws {
        let devices = PendingRouteTests.Devices()
        devices.set { $0.missing = ["late-pcm"] }
        let (daemon, log) = try Self.lateOutputDaemon(devices)
        defer { daemon.shutDown() }
        #expect(!daemon.outputCounters.open)
        #expect(daemon.outputDescription == "late-pcm")
        #expect(MonitorText.statusLine(of: daemon).hasSuffix("| OUT LOST"))
        #expect(
            log.messages(at: .error) == [
                "output: cannot open playback device 'late-pcm': no such device [errno 19]; hushd runs without sound and opens late-pcm as soon as it appears (tried every 250 ms). If that card should be here now, check [output] pcm against 'aplay -L'"
            ]
        )
        #expect(Self.serve(daemon) { devices.attempts.count >= 3 }, "the loop keeps trying")
        devices.set { $0.missing = [] }
        // Opened by the loop (`service`), never by the audio thread: nothing opens while nobody serves.
        let attempts = devices.attempts.count
        usleep(400_000)
        #expect(devices.attempts.count == attempts, "no attempt outside the loop")
        #expect(Self.serve(daemon) { devices.device("late-pcm") != nil })
        #expect(PendingRouteTests.waitForPeriods(3, on: devices.device("late-pcm")))
        #expect(Self.serve(daemon) { daemon.outputCounters.open })
        daemon.service()  // the loop's next look at the counters
        #expect(log.messages(at: .notice) == ["late-pcm: the output device is here; sound starts"])
        #expect(log.messages(at: .error).count == 1)
    }

    @Test("a PCM that appears with another period stays closed; the log says once what to set, and it opens after")
    func lateOutputWithAnotherPeriod() throws {
        let devices = PendingRouteTests.Devices()
        devices.set {
            $0.missing = ["late-pcm"]
            $0.grantedPeriod = 480
        }
        let (daemon, log) = try Self.lateOutputDaemon(devices)
        defer { daemon.shutDown() }
        devices.set { $0.missing = [] }
        #expect(Self.serve(daemon) { devices.state.withLock { $0.opened.count } >= 3 }, "opened and refused 3 times")
        #expect(!daemon.outputCounters.open)
        #expect(
            log.messages(at: .error).last
                == "late-pcm opened but offered 480-frame periods (or another rate or channel count) where hush-renders 240 frames at 48000 Hz, 2 ch; it stays closed. Set [output] period_frames = 480, or use a plughw: PCM"
        )
        #expect(log.messages(at: .error).count == 2, "the first error, and the refusal once")
        #expect(devices.state.withLock { $0.opened.allSatisfy { $0.closed.load(ordering: .relaxed) } })
        devices.set { $0.grantedPeriod = nil }
        #expect(Self.serve(daemon) { daemon.outputCounters.open })
    }

    /// `value()` once it is not nil, within 5 s.
    static func wait<T>(_ value: () -> T?) -> T? {
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline {
            if let found = value() { return found }
            usleep(5000)
        }
        return nil
    }
}
