import FoundationEssentials
import HushALSA
import HushAudioFile
import HushCore
import HushMixer
import HushOutput
import HushPolicy
import HushStreams
import HushSystem
import Logging

/// Runs the real policy and the real mixer over a scenario, offline, on a manual clock: `hush-render`.
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
    /// What `--plot` draws: the buses' peaks as the engine reported them, the state, the events and their rules.
    public private(set) var timeline = ScenarioTimeline()

    /// The policy, the mixer and the sounds: the same controller the daemon runs.
    private let audio: AudioController
    private var policy: AudioPolicy { audio.policy }
    private var engine: MixerEngine { audio.engine }
    private var controller: MixerController { audio.mixer }
    /// Live captures (`play` only), one per capture device the scenario names, each read by its router once per
    /// period and relayed to the sessions that name it; kept until the audio thread has stopped.
    private var captures: [String: (feeder: CaptureFeeder, router: CaptureRouter)] = [:]
    /// Each capture session's relay; a relay is let go with the renderer (the mixer may still read its ring).
    private var relays: [(session: SessionID, relay: CaptureRelay, router: CaptureRouter)] = []
    private var live = false
    /// False while soaking: hours of decisions and timeline would be growth of the renderer's own making.
    private var keepsRecord = true

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
        audio = AudioController(
            configuration: configuration,
            persisted: nil,
            format: format,
            soundDirectories: nil
        )
        // Offline, every file is held in memory as `hush-render` always did; stream= asks for streaming.
        audio.clipSeconds = SoundFile.defaultMaximumSeconds
        audio.onDecisions = { [unowned self] made, cause, time in
            guard keepsRecord else { return }
            log(made, at: time)
            timeline.record(made.map(\.rule), cause: cause, at: time, state: policy)
        }
    }

    /// Renders the whole scenario; returns the interleaved 16-bit output.
    public func render() throws(RenderError) -> [Int16] {
        let rate = Int64(format.sampleRate)
        let totalFrames = Int(scenario.end.nanoseconds * rate / 1_000_000_000)
        var output = [Int16](repeating: 0, count: totalFrames * format.channels)
        timeline = ScenarioTimeline(end: scenario.end, sampleRate: format.sampleRate, periodFrames: periodFrames)
        // A report is read at the start of the period after the one that ended its interval: it ends at the
        // frames rendered so far.
        controller.reportPeaks(every: ScenarioTimeline.peakInterval)
        controller.onPeaks = { [unowned self] peaks in
            timeline.record(peaks, until: engine.framesRendered)
        }
        defer { controller.onPeaks = { _ in } }
        audio.start(at: .zero)
        timeline.note(policy, at: .zero)
        var next = 0
        var frame = 0
        while frame < totalFrames {
            let now = Instant(nanoseconds: Int64(frame) * 1_000_000_000 / rate)
            while next < scenario.steps.count && scenario.steps[next].time <= now {
                try perform(scenario.steps[next])
                next += 1
            }
            audio.service(at: now)
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

    /// Runs the scenario through the policy and the mixer as `render()` does, but keeps nothing of it — no
    /// output, decisions or timeline — so that what grows over hours of simulated time is the daemon's own code:
    /// the soak of issue 6 (`hush-render --soak`, docs/reliability.md#soak).
    ///
    /// - Parameters:
    ///   - interval: scenario time between two calls of `sample`.
    ///   - sample: called at the start, every `interval` after, and at the end, with the scenario time and the
    ///     number of sessions the policy holds.
    public func soak(every interval: Duration, sample: (Instant, _ sessions: Int) -> Void) throws(RenderError) {
        keepsRecord = false
        defer { keepsRecord = true }
        let rate = Int64(format.sampleRate)
        let totalFrames = Int(scenario.end.nanoseconds * rate / 1_000_000_000)
        // One period's buffer, overwritten each period.
        var period = [Int16](repeating: 0, count: periodFrames * format.channels)
        audio.start(at: .zero)
        var next = 0
        var frame = 0
        var due = Instant.zero
        while frame < totalFrames {
            let now = Instant(nanoseconds: Int64(frame) * 1_000_000_000 / rate)
            if now >= due {
                sample(now, policy.sessions.count)
                due = due + interval
            }
            while next < scenario.steps.count && scenario.steps[next].time <= now {
                try perform(scenario.steps[next])
                next += 1
            }
            audio.service(at: now)
            let frames = min(periodFrames, totalFrames - frame)
            period.withUnsafeMutableBufferPointer { buffer in
                engine.render(
                    frames: frames,
                    into: UnsafeMutableRawPointer(buffer.baseAddress!),
                    sampleFormat: sampleFormat
                )
            }
            frame += frames
        }
        sample(scenario.end, policy.sessions.count)
    }

    /// Plays the scenario in real time on `playback` through the audio thread; returns the thread's counters.
    ///
    /// The scenario's clock is the system's monotonic clock from the moment the thread starts.
    package func play(
        on playback: ALSAPlayback,
        priority: Int32,
        logger: Logger
    ) throws(RenderError)
        -> AudioOutputThread.Counters
    {
        let clock = SystemClock()
        live = true
        try openCaptures()
        defer { for capture in captures.values { capture.feeder.stop() } }
        let output = AudioOutputThread(engine: engine, playback: playback, priority: priority, logger: logger)
        output.locksMemory = true
        let routers = CaptureRouters(captures.values.map(\.router))
        if !captures.isEmpty { output.periodHook = routers.hook }
        do {
            try output.start()
        } catch {
            throw RenderError(description: error.description)
        }
        defer { output.stop() }
        let origin = clock.now()
        func elapsed() -> Instant { Instant(nanoseconds: clock.now().nanoseconds - origin.nanoseconds) }
        audio.start(at: .zero)
        var next = 0
        var reportedUnderruns = 0
        while elapsed() < scenario.end {
            let now = elapsed()
            while next < scenario.steps.count && scenario.steps[next].time <= now {
                try perform(scenario.steps[next])
                next += 1
            }
            audio.service(at: now)
            gateRelays()
            for (pcm, capture) in captures {
                guard let lost = capture.feeder.lostChanged() else { continue }
                if lost {
                    logger.warning(
                        "capture \(pcm): reads fail (the device is gone); closed, and opened again every 250 ms"
                    )
                } else {
                    logger.notice("capture \(pcm) is back (opened again)")
                }
            }
            // Closes what the audio thread let go of and reopens a lost device, off the real-time thread.
            output.service()
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
        if keepsRecord { timeline.begin(step, at: time, state: policy) }
        defer { if keepsRecord { timeline.end(step, state: policy) } }
        for event in step.request.policyEvents(policy) ?? [] {
            audio.handle(event, at: time)
        }
        guard case .activate(let id?, _, _) = step.request, policy.session(id) != nil, let sound = step.sound else {
            return
        }
        do {
            switch sound {
            case .capture(let pcm): try attachCapture(id, pcm: pcm, line: step.line)
            case .file(let path): try audio.attach(.file(path), to: id, loop: step.loop)
            case .stream(let path): try audio.attach(.stream(path), to: id, loop: step.loop)
            case .tone(let frequency): try audio.attach(.tone(frequency), to: id, loop: step.loop)
            }
        } catch let error as AudioController.SoundError {
            throw RenderError(description: "line \(step.line): \(error.description)")
        } catch let error as RenderError {
            throw error
        } catch {
            throw RenderError(description: "line \(step.line): \(error)")
        }
    }

    /// Records decisions for `--events`.
    private func log(_ made: [Decision], at time: Instant) {
        for decision in made {
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

    /// Opens every capture device the scenario names, before the audio thread starts (its period hook reads
    /// them), so one that does not open stops the scenario at once, naming its first line.
    private func openCaptures() throws(RenderError) {
        for step in scenario.steps {
            guard case .capture(let pcm)? = step.sound, captures[pcm] == nil else { continue }
            do {
                let feeder = try CaptureFeeder(
                    pcm: pcm,
                    sampleRate: format.sampleRate,
                    channels: format.channels,
                    periodFrames: periodFrames
                )
                try feeder.start()
                captures[pcm] = (feeder, CaptureRouter(microphone: feeder.ring, maxFrames: format.maxFrames))
            } catch {
                throw RenderError(description: "line \(step.line): \(error.description)")
            }
        }
    }

    /// A capture session's sound: a relay of its device's router, played by the session's voice.
    private func attachCapture(_ id: SessionID, pcm: String, line: Int) throws(RenderError) {
        guard live, let capture = captures[pcm] else {
            throw RenderError(description: "line \(line): capture=\(pcm) is live audio: use hushd play, not render")
        }
        for old in relays where old.session == id { old.router.remove(old.relay) }
        let relay = CaptureRelay(channels: format.channels, maxFrames: format.maxFrames, ringFrames: periodFrames * 8)
        do {
            try audio.attach(ring: relay.ring, to: id)
        } catch {
            throw RenderError(description: "line \(line): \(error.description)")
        }
        capture.router.add(relay)
        relays.append((id, relay, capture.router))
        gateRelays()
    }

    /// A relay hears its device only while its session plays: paused, interrupted or ended, it writes nothing, and
    /// its session resumes with live audio.
    private func gateRelays() {
        for (session, relay, _) in relays {
            var playing = false
            if case .playing? = policy.session(session)?.state { playing = true }
            relay.allowed.store(playing, ordering: .relaxed)
        }
        for capture in captures.values { capture.router.reap() }
    }
}
