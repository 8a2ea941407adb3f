import Foundation
import HushALSA
import HushAudioFile
import HushCore
import HushMixer
import HushPolicy
import Logging

/// Runs the real policy and the real mixer over a scenario, offline, on a manual clock: `hushd render`.
///
/// Time advances one period at a time. Events due by the start of a period are handed to the policy (at their
/// own time), its decisions go to the mixer, and the period is rendered — as in the daemon, where commands reach
/// the audio thread at the next period. Same scenario, same bytes out.
public final class ScenarioRenderer {
    /// One decision, with when it was made, for `--events`.
    public struct LoggedDecision: Codable, Equatable, Sendable {
        public var time: Double
        public var rule: String
        public var title: String
        public var command: String
        public var reason: String
    }

    /// Why a render failed: the scenario, a sound, or the output.
    public struct RenderError: Error, CustomStringConvertible {
        public var description: String
    }

    public let scenario: Scenario
    public let format: MixerFormat
    public let periodFrames: Int
    public let sampleFormat: SampleFormat
    public private(set) var decisions: [LoggedDecision] = []

    private var policy: AudioPolicy
    private let engine: MixerEngine
    private let controller: MixerController
    private var sounds: [Scenario.Sound: AudioBuffer] = [:]
    /// Live captures feeding voices (`play` only); kept until the engine no longer reads them.
    private var feeders: [CaptureFeeder] = []
    /// Streamed files by session; those being let go wait here until the engine no longer reads their ring.
    private var streams: [SessionID: (streamer: FileStreamer, bus: Bus, path: String, loop: Bool, rewind: Bool)] = [:]
    private var retiringStreams: [FileStreamer] = []
    private var live = false

    public init(
        scenario: Scenario,
        configuration: PolicyConfiguration = PolicyConfiguration(),
        sampleRate: Int = 48000,
        channels: Int = 2,
        periodFrames: Int = 64
    ) {
        self.scenario = scenario
        self.periodFrames = periodFrames
        format = MixerFormat(sampleRate: sampleRate, channels: channels, maxFrames: periodFrames)
        sampleFormat = .s16LE
        policy = AudioPolicy(configuration: configuration, persisted: nil)
        engine = MixerEngine(format: format)
        controller = MixerController(engine: engine)
    }

    /// Renders the whole scenario; returns the interleaved 16-bit output.
    public func render() throws(RenderError) -> [Int16] {
        let rate = Int64(format.sampleRate)
        let totalFrames = Int(scenario.end.nanoseconds * rate / 1_000_000_000)
        var output = [Int16](repeating: 0, count: totalFrames * format.channels)
        apply(policy.start(at: .zero), at: .zero)
        var next = 0
        var frame = 0
        while frame < totalFrames {
            let now = Instant(nanoseconds: Int64(frame) * 1_000_000_000 / rate)
            while next < scenario.steps.count && scenario.steps[next].time <= now {
                try perform(scenario.steps[next])
                next += 1
            }
            while let deadline = policy.nextDeadline, deadline <= now {
                apply(policy.handle(.timePassed, at: deadline), at: deadline)
            }
            for session in controller.poll() {
                apply(policy.handle(.finished(session), at: now), at: now)
            }
            try serviceStreams(at: now)
            let frames = min(periodFrames, totalFrames - frame)
            output.withUnsafeMutableBufferPointer { buffer in
                engine.render(
                    frames: frames,
                    into: UnsafeMutableRawPointer(buffer.baseAddress! + frame * format.channels),
                    sampleFormat: sampleFormat
                )
            }
            frame += frames
        }
        return output
    }

    /// Plays the scenario in real time on `playback` through the audio thread; returns the thread's counters.
    ///
    /// The scenario's clock is the system's monotonic clock from the moment the thread starts.
    public func play(
        on playback: ALSAPlayback,
        priority: Int32,
        logger: Logger
    ) throws(RenderError)
        -> AudioOutputThread.Counters
    {
        let clock = SystemClock()
        live = true
        defer { for feeder in feeders { feeder.stop() } }
        let output = AudioOutputThread(engine: engine, playback: playback, priority: priority, logger: logger)
        do {
            try output.start()
        } catch {
            throw RenderError(description: error.description)
        }
        defer { output.stop() }
        let origin = clock.now()
        func elapsed() -> Instant { Instant(nanoseconds: clock.now().nanoseconds - origin.nanoseconds) }
        apply(policy.start(at: .zero), at: .zero)
        var next = 0
        var reportedUnderruns = 0
        while elapsed() < scenario.end {
            let now = elapsed()
            while next < scenario.steps.count && scenario.steps[next].time <= now {
                try perform(scenario.steps[next])
                next += 1
            }
            while let deadline = policy.nextDeadline, deadline <= now {
                apply(policy.handle(.timePassed, at: deadline), at: deadline)
            }
            for session in controller.poll() { apply(policy.handle(.finished(session), at: now), at: now) }
            try serviceStreams(at: now)
            let underruns = output.counters.underruns.load(ordering: .relaxed)
            if underruns != reportedUnderruns {
                logger.warning(
                    "\(playback.granted.pcm): \(underruns - reportedUnderruns) underrun(s), recovered with a fade-in"
                )
                reportedUnderruns = underruns
            }
            var wake = now + .milliseconds(5)
            if next < scenario.steps.count { wake = min(wake, scenario.steps[next].time) }
            if let deadline = policy.nextDeadline { wake = min(wake, deadline) }
            clock.sleep(until: Instant(nanoseconds: origin.nanoseconds + wake.nanoseconds))
        }
        return output.counters
    }

    /// Renders and writes a 16-bit WAV file.
    public func render(to path: String) throws(RenderError) {
        let samples = try render()
        do {
            try SoundFile.writePCM16(samples, channels: format.channels, sampleRate: format.sampleRate, to: path)
        } catch {
            throw RenderError(description: error.description)
        }
    }

    /// The decisions as JSON lines.
    public func eventLines() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return decisions.map { String(decoding: (try? encoder.encode($0)) ?? Data(), as: UTF8.self) + "\n" }
            .joined()
    }

    private func perform(_ step: Scenario.Step) throws(RenderError) {
        let time = step.time
        switch step.command {
        case .event(let event):
            apply(policy.handle(event, at: time), at: time)
            if case .activate(let id, _, let configuration) = event, case .stream(let path) = step.sound,
                policy.session(id) != nil
            {
                try attachStream(id, bus: configuration.bus, path: path, loop: step.loop, line: step.line)
            } else if case .activate(let id, _, let configuration) = event, case .capture(let pcm) = step.sound,
                policy.session(id) != nil
            {
                try attachCapture(id, bus: configuration.bus, pcm: pcm, line: step.line)
            } else if case .activate(let id, _, let configuration) = event, let sound = step.sound,
                policy.session(id) != nil
            {
                let buffer = try load(sound, line: step.line)
                do {
                    try controller.attach(id, bus: configuration.bus, buffer: buffer, loop: step.loop)
                } catch {
                    throw RenderError(description: "line \(step.line): \(error.description)")
                }
            }
        case .tap(let button):
            apply(policy.handle(.input(.volumeButton(button, .press)), at: time), at: time)
            apply(policy.handle(.input(.volumeButton(button, .release)), at: time), at: time)
        case .releaseHeld:
            if let button = policy.heldButton {
                apply(policy.handle(.input(.volumeButton(button, .release)), at: time), at: time)
            }
        case .wait, .status, .help, .quit:
            break
        }
        for session in controller.attachedSessions where policy.session(session) == nil {
            controller.detach(session)
            if let stream = streams.removeValue(forKey: session) { retiringStreams.append(stream.streamer) }
        }
    }

    private func attachStream(_ id: SessionID, bus: Bus, path: String, loop: Bool, line: Int) throws(RenderError) {
        do {
            let streamer = try FileStreamer(path, sampleRate: format.sampleRate, loop: loop)
            try controller.attach(id, bus: bus, ring: streamer.ring)
            streams[id] = (streamer, bus, path, loop, false)
        } catch let error as SoundFileError {
            throw RenderError(description: "line \(line): \(error.description)")
        } catch {
            throw RenderError(description: "line \(line): \(error)")
        }
    }

    /// Keeps streamed files decoded ahead, reports the ones that ended, frees the ones no longer read.
    private func serviceStreams(at now: Instant) throws(RenderError) {
        for (id, stream) in streams.sorted(by: { $0.key < $1.key }) {
            stream.streamer.topUp()
            if stream.streamer.finished, policy.session(id)?.isPlaying == true {
                controller.apply(.stop(id))
                streams[id]?.rewind = true
                apply(policy.handle(.finished(id), at: now), at: now)
            }
        }
        retiringStreams.removeAll { controller.isReleased($0.ring) }
    }

    private func apply(_ made: [Decision], at time: Instant) {
        for decision in made {
            switch decision.command {
            case .stop(let id) where streams[id] != nil:
                streams[id]?.rewind = true
            case .resume(let id) where streams[id]?.rewind == true:
                // A stopped stream starts again from the top: a fresh decoder and ring (the old voice is silent).
                if let stream = streams[id] {
                    retiringStreams.append(stream.streamer)
                    if let fresh = try? FileStreamer(stream.path, sampleRate: format.sampleRate, loop: stream.loop),
                        (try? controller.attach(id, bus: stream.bus, ring: fresh.ring)) != nil
                    {
                        streams[id] = (fresh, stream.bus, stream.path, stream.loop, false)
                    }
                }
            default:
                break
            }
            controller.apply(decision.command)
            decisions.append(
                LoggedDecision(
                    time: Double(time.nanoseconds) / 1e9,
                    rule: decision.rule.rawValue,
                    title: decision.rule.title,
                    command: decision.command.description,
                    reason: decision.reason
                )
            )
        }
    }

    private func attachCapture(_ id: SessionID, bus: Bus, pcm: String, line: Int) throws(RenderError) {
        guard live else {
            throw RenderError(description: "line \(line): capture=\(pcm) is live audio: use hushd play, not render")
        }
        do {
            let feeder = try CaptureFeeder(
                pcm: pcm,
                sampleRate: format.sampleRate,
                channels: format.channels,
                periodFrames: periodFrames
            )
            try feeder.start()
            feeders.append(feeder)
            try controller.attach(id, bus: bus, ring: feeder.ring)
        } catch let error as HardwareError {
            throw RenderError(description: "line \(line): \(error.description)")
        } catch {
            throw RenderError(description: "line \(line): \(error)")
        }
    }

    private func load(_ sound: Scenario.Sound, line: Int) throws(RenderError) -> AudioBuffer {
        if let cached = sounds[sound] { return cached }
        let buffer: AudioBuffer
        switch sound {
        case .tone(let frequency):
            buffer = ToneGenerator.sine(
                frequency: frequency,
                amplitude: 0.5,
                seconds: 1,
                sampleRate: format.sampleRate,
                loopable: true
            )
        case .capture(let pcm):
            throw RenderError(description: "line \(line): capture=\(pcm) is live audio: use hushd play, not render")
        case .stream(let path):
            throw RenderError(description: "line \(line): stream=\(path) is attached as a stream, not loaded")
        case .file(let path):
            do {
                buffer = try SoundFile.load(path, sampleRate: format.sampleRate)
            } catch {
                throw RenderError(description: "line \(line): \(error.description)")
            }
        }
        sounds[sound] = buffer
        return buffer
    }
}
