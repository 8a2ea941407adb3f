import HushALSA
import HushCore
import HushMixer
import HushOutput
import HushPolicy
import HushStreams
import HushSystem
import HushVoice
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// hushd running: inputs → policy → mixer → device, with clients, the console, the state file and systemd around.
///
/// One thread runs ``run()``: a poll loop over the input sources and the other participants (control socket,
/// console, ALSA controls, state file). The audio thread renders and writes periods on its own. Everything that
/// changes what is heard — a button, the jack, a client, the console — goes through ``handle(_:cause:)``, and
/// every decision is announced to ``decisionSinks`` with its rule and reason.
package final class Daemon {
    /// What the daemon is built from (the configuration, turned into parts by ``DaemonBuilder``).
    package struct Setup {
        package var policy = PolicyConfiguration()
        package var persisted: PersistedVolumes?
        /// The output device asked for; routes may name other PCMs.
        package var output = PlaybackConfiguration()
        /// Where sound goes when the output device does not open at start (nil: start-up fails instead).
        package var fallbackWAV: String?
        package var realtimePriority: Int32 = 70
        /// How long nothing must be heard before the output stops and the audio thread sleeps; nil keeps it warm
        /// (`[output] idle_seconds`, `keep_warm`).
        package var idleAfter: Duration? = .seconds(5)
        /// The device of each route that has its own (headphones on the board's jack, a DAC HAT for the
        /// speaker); routes without one use `output`. Rate, channels and period must match `output`'s.
        package var routeOutputs: [Route: PlaybackConfiguration] = [:]
        /// Where clients may read sound files from.
        package var soundDirectories: [String] = []
        package var maxSessionsPerClient = 8
        /// The microphone's PCM (`[capture] pcm`), or nil: capture streams get silence.
        package var capturePCM: String?
        /// Periods in the microphone's buffer (`[capture] periods`, else `[output] periods`).
        package var capturePeriods: Int?
        /// What `voiceChat` runs on the microphone (`[voice]`; policy R22).
        package var voice = VoiceConfiguration()
        /// Whether the microphone's frames are resampled to the output's clock (`[capture] clock`, by default when
        /// the microphone's card is not the output's).
        package var matchMicrophoneClock = false
        /// Opens a playback device: ALSA unless given (tests give devices of their own, which fail as they are
        /// told to). Used at start-up and at every route change to a PCM of its own.
        package var openPlayback: @Sendable (PlaybackConfiguration) throws(HardwareError) -> any PCMOutput = {
            (configuration) throws(HardwareError) in try ALSAPlayback(configuration)
        }

        package init() {}
    }

    /// A batch of decisions with what caused them, for the console, the log and subscribers.
    package struct DecisionBatch {
        package var decisions: [Decision]
        package var cause: String
        /// Seconds since hushd started.
        package var time: Double
    }

    package let setup: Setup
    package let audio: AudioController
    package let logger: Logger
    package let clock: any MonotonicClock
    package let origin: Instant
    /// Where the sound goes: the output device, the audio thread, each route's PCM and its retries.
    package let router: OutputRouter
    /// The audio thread, once started.
    package var output: AudioOutputThread? { router.output }
    /// Hands the microphone (or silence) to applications' capture streams on the audio thread.
    package private(set) var captureRouter: CaptureRouter
    /// The microphone, when `[capture] pcm` is set and opened.
    package private(set) var microphone: CaptureFeeder?
    /// Hearing safety's ear on the mix (R29), when the board has a private route.
    package private(set) var hearingTap: HearingTap?
    /// The capture router's hook and the hearing tap's, as one for the audio thread (kept alive here).
    private var hooks: PeriodHookPair?
    /// Hearing safety's participant in the loop (R29), for status.
    var hearing: HearingParticipant?
    /// The open streams as R24 weighs them (set by the control socket's participant, which holds the streams).
    package var streamPeriodNeeds: () -> [OutputPeriod.Stream] = { [] }
    /// R24's ruling in force, nil until the first.
    package private(set) var periodRuling: Ruling<Int>?
    /// The pace streams read while there is no audio thread (it has none to give).
    let idlePace = OutputPace()

    /// Applications' streams and who hears the microphone, for the console (set by the control socket's
    /// participant, which holds the streams).
    package var streamSummary: () -> (streams: Int, microphone: [String]) = { (0, []) }
    /// Why the microphone is not there (for status), when it was configured.
    package private(set) var microphoneProblem: String?
    /// Where the sound goes now: a PCM name, or "file:PATH" for the WAV fallback.
    package var outputDescription: String { router.description }
    package private(set) var inputs: [InputSource]
    /// Others the loop waits on (control socket, console, ALSA controls, state file, watchdog).
    package var participants: [any LoopParticipant] = []
    /// Told of every decision batch.
    package var decisionSinks: [(DecisionBatch) -> Void] = []
    /// Told the moment the microphone privacy switch closes or opens the capture router's gate (R21), before the
    /// decision is logged or announced: the microphone light goes out with the gate, not after the log lines and
    /// the other sinks (which under load took 50 ms and more).
    package var microphoneGateSinks: [(Bool) -> Void] = []
    /// Told when a session's sound ended.
    package var finishedSinks: [(SessionID) -> Void] = []
    /// Told of every input source failure (for the console).
    package var problemSinks: [(String) -> Void] = []
    /// Set to stop ``run()`` after the current iteration.
    package var stopRequested = false
    private var nextSession: UInt64 = 1
    private var lastPolicyTime = Instant.zero
    private var failedSources: Set<String> = []
    /// The PCM the audio thread writes to (or last wrote to, while it is lost).
    package var currentPCM: String { router.currentPCM }
    /// The route whose PCM would not open, while it is retried; nil once the sound goes where the route says.
    package var pendingRoute: OutputRouter.PendingRoute? { router.pendingRoute }

    package init(setup: Setup, inputs: [InputSource], clock: any MonotonicClock, logger: Logger) {
        self.setup = setup
        self.inputs = inputs
        self.clock = clock
        self.logger = logger
        origin = clock.now()
        router = OutputRouter(
            configuration: OutputRouter.Configuration(
                output: setup.output,
                routeOutputs: setup.routeOutputs,
                fallbackWAV: setup.fallbackWAV,
                realtimePriority: setup.realtimePriority,
                idleAfter: setup.idleAfter,
                openPlayback: setup.openPlayback
            ),
            clock: clock,
            logger: logger
        )
        audio = AudioController(
            configuration: setup.policy,
            persisted: setup.persisted,
            format: MixerFormat(
                sampleRate: setup.output.sampleRate,
                channels: setup.output.channels,
                // The longest period R24 may choose.
                maxFrames: max(setup.output.maxPeriodFrames, 64)
            ),
            soundDirectories: setup.soundDirectories
        )
        captureRouter = CaptureRouter(
            microphone: nil,
            maxFrames: max(setup.output.periodFrames, 64),
            sampleRate: setup.output.sampleRate
        )
        audio.onDecisions = { [unowned self] made, cause, time in announce(made, cause: cause, at: time) }
        // R24 before the engine hears of a session's sound: its first frame is mixed in the period it needs.
        audio.beforeCommands = { [unowned self] in refreshPeriod() }
        audio.onFinished = { [unowned self] session in
            ownSoundFinished(session)
            for sink in finishedSinks { sink(session) }
        }
    }

    // MARK: Start-up and the loop

    /// Opens the output (or the fallback), starts the audio thread, reads the inputs' positions and applies the
    /// start-up decisions. An output that does not open is waited for (see `openOutput`); errors that remain here
    /// (the fallback file, the audio thread) stop hushd with a message naming what failed.
    package func start() throws(HardwareError) {
        openMicrophone()
        var hook = captureRouter.hook
        if let tap = openHearingTap() {
            let pair = PeriodHookPair(captureRouter.hook, tap.hook)
            hooks = pair
            hook = pair.hook
        }
        try router.start(route: audio.policy.route, engine: audio.engine, periodHook: hook)
        audio.start(at: policyTime())
        for source in inputs {
            do {
                for event in try source.currentState(now: clock.now()) {
                    handle(.input(event.event), cause: "\(event.event) (at start-up, from \(source.name))")
                }
            } catch {
                report(source, error)
            }
        }
    }

    /// The hearing tap and its thread, idle until a private route plays (R29); nil when the board has no private
    /// route, or (said why) when the thread cannot start: R27 and R28 hold without it.
    private func openHearingTap() -> HearingTap? {
        guard !setup.policy.hearing.privateRoutes.isEmpty else { return nil }
        let format = audio.engine.format
        do {
            let tap = try HearingTap(
                sampleRate: format.sampleRate,
                channels: format.channels,
                mix: audio.engine.lastMix
            )
            try tap.start()
            hearingTap = tap
            return tap
        } catch {
            let text =
                "hearing safety: \(error.description); exposure on private routes is not measured (R29), the start "
                + "level and the ceiling still hold (R27, R28)"
            logger.error("\(text)")
            return nil
        }
    }

    /// Opens `[capture] pcm` at the mixer's rate and channels. One that does not open is logged and left out:
    /// capture streams then get silence, and hushd plays on.
    private func openMicrophone() {
        guard let pcm = setup.capturePCM else { return }
        let format = audio.engine.format
        do {
            let match = setup.matchMicrophoneClock
            let feeder = try CaptureFeeder(
                pcm: pcm,
                sampleRate: format.sampleRate,
                channels: format.channels,
                periodFrames: setup.output.periodFrames,
                periods: setup.capturePeriods ?? max(setup.output.periods, 4),
                matchClock: match
            )
            // At the audio thread's priority: its reads are what the capture streams get the next period.
            let refused = try feeder.start(realtimePriority: setup.realtimePriority)
            if refused != 0 {
                let text =
                    "microphone: no real-time priority for hush-capture (\(String(cString: strerror(refused)))); "
                    + "a busy board may leave gaps in what recorders hear; raise LimitRTPRIO"
                logger.warning("\(text)")
            }
            microphone = feeder
            captureRouter = CaptureRouter(
                microphone: feeder.ring,
                maxFrames: format.maxFrames,
                voicePath: openVoicePath(),
                mix: audio.engine.lastMix,
                mixChannels: format.channels,
                sampleRate: format.sampleRate
            )
            captureRouter.muted.store(audio.policy.microphoneSwitch == .muted, ordering: .relaxed)
            feeder.muted.store(audio.policy.microphoneSwitch == .muted, ordering: .relaxed)
            let clock =
                match
                ? "on a card of its own, resampled to the output's clock ([capture] clock)" : "on the output's clock"
            logger.info("microphone \(pcm): \(feeder.granted.sampleRate) Hz, \(feeder.granted.channels) ch; \(clock)")
        } catch {
            microphoneProblem = error.description
            let text =
                "microphone: \(error.description); recording applications get silence until hushd is restarted "
                + "with a [capture] pcm that opens (check it against 'arecord -L')"
            logger.error("\(text)")
        }
    }

    /// The voice path of `voiceChat` (R22) and its thread, idle until a voiceChat stream runs; nil (said why) when
    /// the mixer's rate is not one webrtc-audio-processing takes or the thread cannot start.
    private func openVoicePath() -> VoicePath? {
        let format = audio.engine.format
        do throws(VoiceProcessorError) {
            let path = try VoicePath(
                sampleRate: format.sampleRate,
                maxFrames: format.maxFrames,
                configuration: setup.voice
            )
            do {
                // Below the audio and capture threads: its deadline is the cushion, not the period.
                let refused = try path.start(realtimePriority: max(0, setup.realtimePriority - 10))
                if refused != 0 {
                    logger.info("voice processing: no real-time priority (\(String(cString: strerror(refused))))")
                }
            } catch {
                logger.error("voice processing: \(error.description); voiceChat streams get the microphone unprocessed")
                return nil
            }
            return path
        } catch {
            logger.warning(
                "voice processing: \(error.description); voiceChat streams get the microphone unprocessed (R22)"
            )
            return nil
        }
    }

    /// The delay between a period's mix and the microphone frames read in the same period that hold its echo, ms:
    /// the output device's queue ahead of the mix (``AudioOutputThread/mixDelayFrames``), then the microphone's device period and the router's cushion (two periods and a
    /// half on average: a period's phase against the microphone's). Not the ring's level at the moment asked: a
    /// late audio thread's backlog (handed on at once, `CaptureRouter`) is not an echo's delay — the virtual board
    /// saw 304 ms passed for a path that had moved by 40.
    package var voiceDelayMilliseconds: Int {
        let rate = Double(audio.engine.format.sampleRate)
        let period = Double(setup.output.periodFrames)
        let output = Double(self.output?.mixDelayFrames ?? 0) / rate * 1000
        let capture = (period + (Double(CaptureRouter.cushionPeriods) + 0.5) * period) / rate * 1000
        return Int((output + capture).rounded())
    }

    /// The drift last said, ppm, to say it again only when it moved.
    private var reportedDrift: Double?

    /// The microphone's clock against the output's, ppm (positive: it runs slow), from the two devices' rates
    /// measured over the same windows of the system clock (``RateMeter``): the median of the last ``driftWindows``
    /// windows both measured (4 minutes), while hushd matches them (`[capture] clock = "match"`), disturbed windows
    /// left out (``DriftEstimate``); nil until both measured one window. A crystal's drift moves over minutes (with
    /// temperature); one window alone can be lumpy: snd-aloop, for one, makes a shifted rate as a 4 ms slip every
    /// 41 s.
    package var microphoneDriftPPM: Double? {
        noteMeasuredRates()
        return driftEstimate?.drift
    }

    /// How many windows ``microphoneDriftPPM`` is the median of now (at most ``driftWindows``).
    package var microphoneDriftWindows: Int {
        noteMeasuredRates()
        return driftEstimate?.count ?? 0
    }

    /// Windows of 30 s the drift is found over.
    static let driftWindows = 8

    /// The output device's real rate over its latest window (``RateMeter``), frames per second; nil until measured.
    package var outputMeasuredRate: Double? {
        RateMeter.unpack(output?.counters.measuredRate.load(ordering: .relaxed) ?? 0)?.rate
    }

    /// The microphone's real rate over its latest window while its clock is matched; nil until measured.
    package var microphoneMeasuredRate: Double? {
        guard let microphone, microphone.clockMatch != nil else { return nil }
        return RateMeter.unpack(microphone.measuredRate.load(ordering: .relaxed))?.rate
    }

    /// The drift from both meters' windows, made when the microphone is matched.
    private var driftEstimate: DriftEstimate?
    /// Windows left out so far, to say so once per new one.
    private var reportedRejections = 0

    private func noteMeasuredRates() {
        guard let microphone, microphone.clockMatch != nil, let output else { return }
        if driftEstimate == nil {
            driftEstimate = DriftEstimate(
                windows: Self.driftWindows,
                outputNominal: Double(audio.engine.format.sampleRate),
                microphoneNominal: Double(microphone.granted.sampleRate)
            )
        }
        if let figure = RateMeter.unpack(output.counters.measuredRate.load(ordering: .relaxed)) {
            driftEstimate?.output(figure)
        }
        if let heard = RateMeter.unpack(microphone.measuredRate.load(ordering: .relaxed)) {
            driftEstimate?.microphone(heard)
        }
        if let rejected = driftEstimate?.rejected, rejected > reportedRejections {
            reportedRejections = rejected
            let text =
                "microphone drift: a window of 30 s left out, a device's rate in it more than "
                + "\(Int(DriftEstimate.implausiblePPM)) ppm off (\(rejected) so far): the system was too busy to measure"
            logger.info("\(text)")
        }
    }

    /// Says the microphone's drift against the output's clock once it is found, and again when it moves by 20 ppm.
    private func reportDrift() {
        guard let pcm = setup.capturePCM, let drift = microphoneDriftPPM else { return }
        if let said = reportedDrift, abs(said - drift) < 20 { return }
        reportedDrift = drift
        let way = drift >= 0 ? "slow" : "fast"
        let text =
            "microphone \(pcm) runs \(Int(abs(drift).rounded())) ppm \(way) against the output's clock; hushd "
            + "resamples it so recorders and calls get no gaps"
        logger.notice("\(text)")
    }

    /// Says once that the microphone was lost (its reads fail: closed, and opened again every 250 ms) and once
    /// that it is back.
    private func reportMicrophone() {
        reportDrift()
        guard let microphone, let pcm = setup.capturePCM, let lost = microphone.lostChanged() else { return }
        if lost {
            let text =
                "microphone \(pcm): reads fail (the device is gone or broken); hushd closed it and opens it again "
                + "every 250 ms; recorders get silence meanwhile"
            logger.warning("\(text)")
        } else {
            logger.notice("microphone \(pcm) is back (opened again); recorders that may hear it do")
        }
    }

    /// Runs until a signal or ``stopRequested``; returns the exit status.
    package func run(signals: SignalDescriptor? = nil) -> Int32 {
        let signalWatcher = signals.map { SignalParticipant(signals: $0, daemon: self) }
        while !stopRequested {
            var everyone: [any LoopParticipant] = [InputParticipant(daemon: self)]
            everyone += participants
            if let signalWatcher { everyone.append(signalWatcher) }
            // hushd's own sounds need topping up (streamed files) and their ends reporting (clips) while they play:
            // every 50 ms. Applications' streams need nothing of the loop while they play — their clients feed
            // them and their sockets say when they end — so with only those, as without sound, once a second (20
            // wake-ups a second fewer for a music player: docs/performance.md, R24). With the output idle nothing
            // plays or moves, so only a descriptor or a deadline wakes the loop.
            let limit: Duration =
                output?.isIdle == true
                ? .seconds(86400) : audio.sessionsWithOwnSound.isEmpty ? .seconds(1) : .milliseconds(50)
            runLoopIteration(everyone, clock: clock, limit: limit)
            service()
        }
        return 0
    }

    /// Lets time pass: button repeats, finished voices, streams, output telemetry, and the output's devices: those
    /// the audio thread let go of are closed here, and a lost one is reopened here, never on the audio thread.
    package func service() {
        reportMicrophone()
        audio.service(at: policyTime())
        router.service()
    }

    /// Stops the audio thread and closes the device.
    package func shutDown() {
        hearingTap?.stop()
        captureRouter.voicePath?.stop()
        router.stop()
        microphone?.stop()
    }

    // MARK: The output's period (R24)

    /// Rules the period every active session and open stream can live with (R24) and hands it to the audio thread,
    /// which mixes it from its next period on. Called before the decisions that changed the sessions are carried
    /// out, and when a stream opens or closes: before any frame of theirs is mixed. Logs each change of period.
    package func refreshPeriod() {
        let granted = output?.granted ?? setup.output
        let route = audio.policy.route
        let shared =
            route != .speaker
            && router.configuration.device(for: route).pcm == router.configuration.device(for: .speaker).pcm
        let ruling = OutputPeriod.ruling(
            floor: granted.periodFrames,
            ceiling: granted.maxPeriodFrames,
            sessions: audio.policy.sessions,
            streams: streamPeriodNeeds(),
            sharedRoute: shared ? route : nil
        )
        guard ruling != periodRuling else { return }
        let changed = ruling.value != periodRuling?.value
        periodRuling = ruling
        router.setPeriod(ruling.value)
        guard changed else { return }
        let milliseconds = DecimalText.fixed(Double(ruling.value) * 1000 / Double(granted.sampleRate), places: 1)
        logger.info("output period \(ruling.value) frames (\(milliseconds) ms): \(ruling.reason) [\(ruling.rule)]")
    }

    // MARK: Events

    /// Hands `event` to the policy now and carries out its decisions.
    @discardableResult
    package func handle(_ event: PolicyEvent, cause: String? = nil) -> [Decision] {
        let made = audio.handle(event, at: policyTime(), cause: cause)
        if warningSoundDue {
            warningSoundDue = false
            if let path = warningSoundPath {
                playOwnSound(
                    path,
                    event: PolicyEvent.warningSound,
                    name: "hearing warning",
                    key: "hearing_warning",
                    rule: .r30
                )
            }
        }
        return made
    }

    /// hushd's own sounds while they play (the start-up sound, R25; the hearing warning's, R30): the name and the
    /// rule of each, for the log line that ends its session when the sound ends.
    package private(set) var ownSounds: [SessionID: (name: String, rule: Rule)] = [:]
    /// `[sounds] hearing_warning`: played when the policy asks (R30).
    package var warningSoundPath: String?
    /// The policy asked for the warning sound in the batch being carried out: played once that batch is done.
    private var warningSoundDue = false

    /// Plays the start-up sound `path` (`[sounds] startup`) once, in a session of hushd's own (policy R25), ended
    /// when the sound ends. A file that cannot be played is a warning: hushd goes on without it.
    package func playStartupSound(_ path: String) {
        playOwnSound(path, event: PolicyEvent.startupSound, name: "start-up", key: "startup", rule: .r25)
    }

    /// Plays `path` once in a new session of hushd's own that `event` hands the policy; the session ends when the
    /// sound ends (``ownSoundFinished(_:)``). A file that cannot be played is a warning naming `[sounds] key`:
    /// hushd goes on without it.
    private func playOwnSound(
        _ path: String,
        event: (SessionID) -> PolicyEvent,
        name: String,
        key: String,
        rule: Rule
    ) {
        let session = newSessionID()
        handle(event(session), cause: "\(name) sound \(path)")
        guard audio.policy.session(session)?.client == .hushd else { return }
        do {
            try audio.attach(.file(path), to: session, loop: false)
        } catch {
            logger.warning("\(name) sound not played: \(error.description) ([sounds] \(key))")
            handle(.deactivate(session, notifyOthers: true), cause: "the \(name) sound could not be played")
            return
        }
        ownSounds[session] = (name, rule)
    }

    /// One of hushd's own sounds came to its end: its session ends.
    private func ownSoundFinished(_ session: SessionID) {
        guard let sound = ownSounds.removeValue(forKey: session) else { return }
        handle(
            .deactivate(session, notifyOthers: true),
            cause: "the \(sound.name) sound finished [\(sound.rule.rawValue)]"
        )
    }

    /// A fresh session id.
    package func newSessionID() -> SessionID {
        while audio.policy.session(SessionID(nextSession)) != nil { nextSession += 1 }
        defer { nextSession += 1 }
        return SessionID(nextSession)
    }

    /// The policy's clock: the monotonic clock, never going back (events from several sources interleave).
    func policyTime() -> Instant {
        lastPolicyTime = max(lastPolicyTime, clock.now())
        return lastPolicyTime
    }

    /// Seconds since start, for the console.
    package func elapsed(_ time: Instant) -> Double { Double(time.nanoseconds - origin.nanoseconds) / 1e9 }

    /// Reads every input source now (tests drive the loop themselves).
    func readInputsForTesting() { readInputs() }

    fileprivate func readInputs() {
        for source in inputs {
            do {
                let events = try source.readEvents(now: clock.now())
                if failedSources.remove(source.name) != nil { logger.notice("\(source.name) works again") }
                for event in events { handle(.input(event.event), cause: "\(event.event)") }
            } catch {
                report(source, error)
            }
        }
    }

    private func report(_ source: InputSource, _ error: HardwareError) {
        // Once per failure, not once per poll: a person at the console needs one clear line.
        guard failedSources.insert(source.name).inserted else { return }
        let text = "\(source.name): \(error.description)"
        logger.error("\(text)")
        for sink in problemSinks { sink(text) }
    }

    private func announce(_ made: [Decision], cause: String, at time: Instant) {
        for decision in made {
            // R21 before anything is said: the capture router's own gate, below every stream's, closes (or opens)
            // from the audio thread's next period.
            if case .muteMicrophone(let muted) = decision.command {
                captureRouter.muted.store(muted, ordering: .relaxed)
                microphone?.muted.store(muted, ordering: .relaxed)
                for sink in microphoneGateSinks { sink(muted) }
                let text =
                    muted
                    ? "microphone privacy switch on: no application hears the microphone [R21] (after: \(cause))"
                    : "microphone privacy switch off: each recorder hears the microphone again once it is started "
                        + "again [R21] (after: \(cause))"
                logger.notice("\(text)")
            }
            if case .playWarningSound = decision.command { warningSoundDue = true }
            if case .notify(.hearingWarning(let warning)) = decision.command {
                // A person at the console (and journalctl -p warning) should see this one.
                logger.warning("hearing: \(warning) [\(decision.rule.rawValue)]")
            }
            logger.info("[\(decision.rule.rawValue)] \(decision.command) — \(decision.reason) (after: \(cause))")
            if case .selectRoute(let route) = decision.command { router.switchOutput(to: route) }
        }
        let batch = DecisionBatch(decisions: made, cause: cause, time: elapsed(time))
        for sink in decisionSinks { sink(batch) }
    }

    // MARK: Status

    /// Counters of the output, for status.
    package var outputCounters: (underruns: Int, losses: Int, open: Bool, periods: Int, idle: Bool) { router.counters }

    /// The output latency in milliseconds: the periods queued in the device.
    package var latencyMilliseconds: Double { router.latencyMilliseconds }
}

/// The input sources as a loop participant.
private final class InputParticipant: LoopParticipant {
    unowned let daemon: Daemon
    init(daemon: Daemon) { self.daemon = daemon }

    var pollRequests: [pollfd] {
        daemon.inputs.compactMap { $0.pollDescriptor }.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
    }

    var nextDeadline: Instant? {
        // A lost output device is reopened from the loop (`Daemon.service()`), 100 ms after the loss, then 250 ms;
        // a route's PCM that would not open is tried again (OutputRouter).
        let deadlines =
            daemon.inputs.compactMap(\.nextDeadline)
            + [daemon.audio.nextDeadline, daemon.router.nextDeadline].compactMap { $0 }
        return deadlines.min()
    }

    func service(_ ready: [pollfd], now: Instant) { daemon.readInputs() }
}

/// SIGINT/SIGTERM stop hushd cleanly; SIGHUP is logged (a reload is a restart: systemctl restart hushd).
private final class SignalParticipant: LoopParticipant {
    let signals: SignalDescriptor
    unowned let daemon: Daemon
    init(signals: SignalDescriptor, daemon: Daemon) {
        self.signals = signals
        self.daemon = daemon
    }

    var pollRequests: [pollfd] { [pollfd(fd: signals.descriptor, events: Int16(POLLIN), revents: 0)] }
    var nextDeadline: Instant? { nil }

    func service(_ ready: [pollfd], now: Instant) {
        for signal in signals.take() {
            switch signal {
            case SIGHUP:
                daemon.logger.notice("SIGHUP: hushd reads its configuration only at start; restart it to reload")
            default:
                daemon.logger.notice("signal \(signal): stopping")
                daemon.stopRequested = true
            }
        }
    }
}
