import HushALSA
import HushConfiguration
import HushConsole
import HushControlServer
import HushCore
import HushMixer
import HushOutput
import HushPolicy
import HushRender
import HushStreams
import HushSystem
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
public final class Daemon {
    /// What the daemon is built from (the configuration, turned into parts by ``DaemonBuilder``).
    public struct Setup {
        public var policy = PolicyConfiguration()
        public var persisted: PersistedVolumes?
        /// The output device asked for; routes may name other PCMs.
        public var output = PlaybackConfiguration()
        /// Where sound goes when the output device does not open at start (nil: start-up fails instead).
        public var fallbackWAV: String?
        public var realtimePriority: Int32 = 70
        /// How long nothing must be heard before the output stops and the audio thread sleeps; nil keeps it warm
        /// (`[output] idle_seconds`, `keep_warm`).
        public var idleAfter: Duration? = .seconds(5)
        /// The device of each route that has its own (headphones on the board's jack, a DAC HAT for the
        /// speaker); routes without one use `output`. Rate, channels and period must match `output`'s.
        public var routeOutputs: [Route: PlaybackConfiguration] = [:]
        /// Where clients may read sound files from.
        public var soundDirectories: [String] = []
        public var maxSessionsPerClient = 8
        /// The microphone's PCM (`[capture] pcm`), or nil: capture streams get silence.
        public var capturePCM: String?
        /// Periods in the microphone's buffer (`[capture] periods`, else `[output] periods`).
        public var capturePeriods: Int?
        /// Opens a playback device: ALSA unless given (tests give devices of their own, which fail as they are
        /// told to). Used at start-up and at every route change to a PCM of its own.
        public var openPlayback: @Sendable (PlaybackConfiguration) throws(HardwareError) -> any PCMOutput = {
            (configuration) throws(HardwareError) in try ALSAPlayback(configuration)
        }

        public init() {}
    }

    /// A route whose PCM would not open — another program holds it, or its card is missing — so the sound stays
    /// where it was while hushd tries that PCM again: first after ``PendingRoute/firstRetry``, then at doubling
    /// intervals up to every ``PendingRoute/longestRetry``, until it opens or another route is chosen.
    public struct PendingRoute: Sendable {
        public static let firstRetry = Duration.milliseconds(250)
        public static let longestRetry = Duration.seconds(2)
        public var route: Route
        /// The PCM the route wants.
        public var pcm: String
        /// Why the last attempt failed.
        public var error: HardwareError
        /// Attempts so far, the first (at the route change) included.
        public var attempts: Int
        /// When the route changed.
        public var since: Instant
        /// When the PCM is tried next.
        public var nextAttempt: Instant
        var interval: Duration
    }

    /// A batch of decisions with what caused them, for the console, the log and subscribers.
    public struct DecisionBatch {
        public var decisions: [Decision]
        public var cause: String
        /// Seconds since hushd started.
        public var time: Double
    }

    public let setup: Setup
    public let audio: AudioController
    public let logger: Logger
    public let clock: any MonotonicClock
    public let origin: Instant
    public private(set) var output: AudioOutputThread?
    /// Hands the microphone (or silence) to applications' capture streams on the audio thread.
    public private(set) var captureRouter: CaptureRouter
    /// The microphone, when `[capture] pcm` is set and opened.
    public private(set) var microphone: CaptureFeeder?
    /// Applications' streams and who hears the microphone, for the console (set by the control socket's
    /// participant, which holds the streams).
    public var streamSummary: () -> (streams: Int, microphone: [String]) = { (0, []) }
    /// Why the microphone is not there (for status), when it was configured.
    public private(set) var microphoneProblem: String?
    /// Where the sound goes now: a PCM name, or "file:PATH" for the WAV fallback.
    public private(set) var outputDescription = "none"
    public private(set) var inputs: [InputSource]
    /// Others the loop waits on (control socket, console, ALSA controls, state file, watchdog).
    public var participants: [any LoopParticipant] = []
    /// Told of every decision batch.
    public var decisionSinks: [(DecisionBatch) -> Void] = []
    /// Told when a session's sound ended.
    public var finishedSinks: [(SessionID) -> Void] = []
    /// Told of every input source failure (for the console).
    public var problemSinks: [(String) -> Void] = []
    /// Set to stop ``run()`` after the current iteration.
    public var stopRequested = false
    private var nextSession: UInt64 = 1
    private var lastPolicyTime = Instant.zero
    private var failedSources: Set<String> = []
    /// The PCM the audio thread writes to (or last wrote to, while it is lost).
    public private(set) var currentPCM: String
    /// The route whose PCM would not open, while it is retried; nil once the sound goes where the route says.
    public private(set) var pendingRoute: PendingRoute?
    /// Whether the output has not opened once since start (the log then says it appeared, not that it is back).
    private var waitingSinceStart = false

    public init(setup: Setup, inputs: [InputSource], clock: any MonotonicClock, logger: Logger) {
        self.setup = setup
        self.inputs = inputs
        self.clock = clock
        self.logger = logger
        origin = clock.now()
        currentPCM = setup.output.pcm
        audio = AudioController(
            configuration: setup.policy,
            persisted: setup.persisted,
            format: MixerFormat(
                sampleRate: setup.output.sampleRate,
                channels: setup.output.channels,
                maxFrames: max(setup.output.periodFrames, 64)
            ),
            soundDirectories: setup.soundDirectories
        )
        captureRouter = CaptureRouter(microphone: nil, maxFrames: max(setup.output.periodFrames, 64))
        audio.onDecisions = { [unowned self] made, cause, time in announce(made, cause: cause, at: time) }
        audio.onFinished = { [unowned self] session in for sink in finishedSinks { sink(session) } }
    }

    // MARK: Start-up and the loop

    /// Opens the output (or the fallback), starts the audio thread, reads the inputs' positions and applies the
    /// start-up decisions. An output that does not open is waited for (see `openOutput`); errors that remain here
    /// (the fallback file, the audio thread) stop hushd with a message naming what failed.
    public func start() throws(HardwareError) {
        openMicrophone()
        try openOutput()
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

    /// Opens the output. A PCM that does not open goes to the WAV fallback if there is one; otherwise hushd starts
    /// without sound and the loop opens the PCM when it appears, as it reopens a lost one (a card whose
    /// driver comes up after hushd, a USB DAC plugged in later). Failing instead would leave the board without
    /// its buttons, socket and console, and systemd stops restarting a unit that fails five times in 10 s.
    private func openOutput() throws(HardwareError) {
        let configuration = setup.routeOutputs[audio.policy.route] ?? setup.output
        var device: (any PCMOutput)?
        do {
            let playback = try setup.openPlayback(configuration)
            logger.info("output \(configuration.pcm): \(playback.describeGrant)")
            device = playback
            outputDescription = configuration.pcm
        } catch {
            if let fallback = setup.fallbackWAV {
                let file = try WAVFileOutput(path: fallback, configuration: configuration)
                let hint = file.listeningHint.map { ": \($0)" } ?? ""
                logger.warning("\(error.description); sound goes to the WAV file \(fallback) instead\(hint)")
                device = file
                outputDescription = "file:" + fallback
            } else {
                logger.error(
                    "output: \(error.description); hushd runs without sound and opens \(configuration.pcm) as soon as it appears (tried every 250 ms). If that card should be here now, check [output] pcm against 'aplay -L'"
                )
                outputDescription = configuration.pcm
                waitingSinceStart = true
            }
        }
        currentPCM = configuration.pcm
        let open = setup.openPlayback
        let thread = AudioOutputThread(
            engine: audio.engine,
            output: device,
            requested: configuration,
            priority: setup.realtimePriority,
            logger: logger,
            open: { try? open($0) }
        )
        thread.periodHook = captureRouter.hook
        thread.idleAfter = setup.idleAfter
        output = thread
        try thread.start()
    }

    /// Opens `[capture] pcm` at the mixer's rate and channels. One that does not open is logged and left out:
    /// capture streams then get silence, and hushd plays on.
    private func openMicrophone() {
        guard let pcm = setup.capturePCM else { return }
        let format = audio.engine.format
        do {
            let feeder = try CaptureFeeder(
                pcm: pcm,
                sampleRate: format.sampleRate,
                channels: format.channels,
                periodFrames: setup.output.periodFrames,
                periods: setup.capturePeriods ?? max(setup.output.periods, 4)
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
            captureRouter = CaptureRouter(microphone: feeder.ring, maxFrames: format.maxFrames)
            logger.info(
                "microphone \(pcm): \(feeder.granted.sampleRate) Hz, \(feeder.granted.channels) ch"
            )
        } catch {
            microphoneProblem = error.description
            let text =
                "microphone: \(error.description); recording applications get silence until hushd is restarted "
                + "with a [capture] pcm that opens (check it against 'arecord -L')"
            logger.error("\(text)")
        }
    }

    /// Says once that the microphone was lost (its reads fail: closed, and opened again every 250 ms) and once
    /// that it is back.
    private func reportMicrophone() {
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
    public func run(signals: SignalDescriptor? = nil) -> Int32 {
        let signalWatcher = signals.map { SignalParticipant(signals: $0, daemon: self) }
        while !stopRequested {
            var everyone: [any LoopParticipant] = [InputParticipant(daemon: self)]
            everyone += participants
            if let signalWatcher { everyone.append(signalWatcher) }
            // Streams need topping up and finished voices reporting while sound plays; without sound, sleep long;
            // with the output idle nothing plays or moves, so only a descriptor or a deadline wakes the loop.
            let limit: Duration =
                output?.isIdle == true
                ? .seconds(86400) : audio.sessionsWithSound.isEmpty ? .seconds(1) : .milliseconds(50)
            runLoopIteration(everyone, clock: clock, limit: limit)
            service()
        }
        return 0
    }

    /// Lets time pass: button repeats, finished voices, streams, output telemetry, and the output's devices: those
    /// the audio thread let go of are closed here, and a lost one is reopened here, never on the audio thread.
    public func service() {
        reportMicrophone()
        audio.service(at: policyTime())
        output?.service()
        retryPendingRoute()
        reportOutput()
    }

    /// Stops the audio thread and closes the device.
    public func shutDown() {
        output?.stop()
        output = nil
        microphone?.stop()
    }

    // MARK: Events

    /// Hands `event` to the policy now and carries out its decisions.
    @discardableResult
    public func handle(_ event: PolicyEvent, cause: String? = nil) -> [Decision] {
        audio.handle(event, at: policyTime(), cause: cause)
    }

    /// A fresh session id.
    public func newSessionID() -> SessionID {
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
    public func elapsed(_ time: Instant) -> Double { Double(time.nanoseconds - origin.nanoseconds) / 1e9 }

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
            logger.info("[\(decision.rule.rawValue)] \(decision.command) — \(decision.reason) (after: \(cause))")
            if case .selectRoute(let route) = decision.command { switchOutput(to: route) }
        }
        let batch = DecisionBatch(decisions: made, cause: cause, time: elapsed(time))
        for sink in decisionSinks { sink(batch) }
    }

    /// A route with a PCM of its own: open it here (not on the audio thread) and hand it over. A PCM that will
    /// not open leaves the sound where it is and becomes the ``pendingRoute``, tried again from the loop.
    private func switchOutput(to route: Route) {
        let configuration = setup.routeOutputs[route] ?? setup.output
        let pcm = configuration.pcm
        guard let output, !outputDescription.hasPrefix("file:") else { return }
        if let pending = pendingRoute, pending.pcm != pcm {
            pendingRoute = nil
            logger.notice(
                "route \(route): hushd stops trying \(pending.pcm) (\(pending.attempts) attempt\(pending.attempts == 1 ? "" : "s") for \(pending.route))"
            )
        }
        guard pcm != currentPCM else { return }
        let now = clock.now()
        do {
            // A route switched back within a few periods finds its PCM still held by hushd itself (below).
            let device = try openRouteDevice(configuration, output: output, waitWhileBusy: .milliseconds(100))
            moveOutput(to: device, configuration, route: route, output: output)
        } catch {
            let interval = PendingRoute.firstRetry
            pendingRoute = PendingRoute(
                route: route,
                pcm: pcm,
                error: error,
                attempts: 1,
                since: now,
                nextAttempt: now + interval,
                interval: interval
            )
            logger.error(
                "route \(route): \(error.description); sound stays on \(currentPCM) and hushd tries \(pcm) again in \(interval.milliseconds) ms, then at most every \(PendingRoute.longestRetry.milliseconds / 1000) s"
            )
        }
    }

    /// Tries the pending route's PCM again if it is due (from the loop, through ``service()``).
    private func retryPendingRoute() {
        guard var pending = pendingRoute, let output else { return }
        let now = clock.now()
        guard now >= pending.nextAttempt else { return }
        let configuration = setup.routeOutputs[pending.route] ?? setup.output
        pending.attempts += 1
        do {
            // One attempt, no waiting: the loop serves clients and buttons between attempts.
            let device = try openRouteDevice(configuration, output: output, waitWhileBusy: .zero)
            pendingRoute = nil
            logger.notice(
                "route \(pending.route): \(pending.pcm) opened at attempt \(pending.attempts), \(Self.seconds(now - pending.since)) after the route changed"
            )
            moveOutput(to: device, configuration, route: pending.route, output: output)
        } catch {
            if error != pending.error {
                logger.error(
                    "route \(pending.route): \(error.description); sound stays on \(currentPCM), hushd keeps trying"
                )
            }
            pending.error = error
            pending.interval = min(pending.interval * 2, PendingRoute.longestRetry)
            pending.nextAttempt = now + pending.interval
            pendingRoute = pending
        }
    }

    private func moveOutput(
        to device: any PCMOutput,
        _ configuration: PlaybackConfiguration,
        route: Route,
        output: AudioOutputThread
    ) {
        if output.handOver(device, requested: configuration) {
            waitingSinceStart = false
            logger.info("route \(route): output moves to \(configuration.pcm)")
            currentPCM = configuration.pcm
            outputDescription = configuration.pcm
        } else {
            device.close()
            logger.error(
                "route \(route): \(configuration.pcm) granted \(device.describeGrant), unlike the running output; sound stays on \(currentPCM)"
            )
        }
    }

    /// "1.3 s", for the log and the console.
    static func seconds(_ duration: Duration) -> String {
        DecimalText.fixed(Double(duration.milliseconds) / 1000, places: 1) + " s"
    }

    /// Opens a route's PCM. A route switched back within a few periods (an override typed and cleared at once)
    /// finds its PCM still held by hushd itself: the audio thread passes the old device back at its next period,
    /// and the control side closes it (`reap`). So that device is closed first, and a busy PCM is tried again
    /// every 5 ms for up to `waitWhileBusy`.
    private func openRouteDevice(
        _ configuration: PlaybackConfiguration,
        output: AudioOutputThread,
        waitWhileBusy: Duration
    ) throws(HardwareError) -> any PCMOutput {
        let deadline = ContinuousClock.now + waitWhileBusy
        while true {
            output.reap()
            do {
                return try setup.openPlayback(configuration)
            } catch {
                guard error.errno == EBUSY, ContinuousClock.now < deadline else { throw error }
                usleep(5000)
            }
        }
    }

    private var reported = (underruns: 0, losses: 0, reopenings: 0, refusals: 0)
    private var refusalLogged = false
    /// Whether the log last said the output is idle.
    private var reportedIdle = false

    /// Logs what the audio thread counted since the last look (it never logs itself).
    private func reportOutput() {
        guard let counters = output?.counters else { return }
        let underruns = counters.underruns.load(ordering: .relaxed)
        let losses = counters.deviceLosses.load(ordering: .relaxed)
        let reopenings = counters.reopenings.load(ordering: .relaxed)
        // The gap and render figures cover the time since the last look, which is when the underruns happened.
        let gap = Duration.nanoseconds(counters.longestGap.exchange(0, ordering: .relaxed))
        let render = Duration.nanoseconds(counters.longestRender.exchange(0, ordering: .relaxed))
        if underruns != reported.underruns {
            let granted = output?.granted ?? setup.output
            let period = Duration.nanoseconds(granted.periodFrames * 1_000_000_000 / granted.sampleRate)
            let diagnosis = AudioOutputThread.diagnosis(
                gap: gap,
                render: render,
                period: period,
                queued: period * granted.periods
            )
            logger.warning(
                "\(currentPCM): \(underruns - reported.underruns) underrun(s) (\(underruns) in all), recovered with a fade-in; \(diagnosis)"
            )
        }
        if losses != reported.losses {
            logger.error(
                "\(currentPCM): the output device is gone; retrying every 250 ms, sound resumes when it is back"
            )
        }
        if reopenings != reported.reopenings {
            if waitingSinceStart {
                waitingSinceStart = false
                logger.notice("\(currentPCM): the output device is here; sound starts")
            } else {
                logger.notice("\(currentPCM): the output device is back")
            }
        }
        // Once per absence, not every 250 ms: the device keeps being tried, and refused, until it changes.
        let refusals = counters.refusals.load(ordering: .relaxed)
        if losses != reported.losses { refusalLogged = false }
        if refusals != reported.refusals && !refusalLogged {
            refusalLogged = true
            let period = counters.refusedPeriodFrames.load(ordering: .relaxed)
            let granted = output?.granted ?? setup.output
            logger.error(
                "\(currentPCM) opened but offered \(period)-frame periods (or another rate or channel count) where hush-renders \(granted.periodFrames) frames at \(granted.sampleRate) Hz, \(granted.channels) ch; it stays closed. Set [output] period_frames = \(period), or use a plughw: PCM"
            )
        }
        reported = (underruns, losses, reopenings, refusals)
        reportIdle()
    }

    /// Says when the output goes idle and when it runs again (info: both are ordinary).
    private func reportIdle() {
        guard let output, let idleAfter = output.idleAfter, output.isIdle != reportedIdle else { return }
        reportedIdle.toggle()
        if reportedIdle {
            logger.info(
                "output idle: nothing played for \(Self.seconds(idleAfter)); \(currentPCM) stopped until the next sound"
            )
        } else {
            logger.info("output running: \(currentPCM) started again for a sound")
        }
    }

    // MARK: Status

    /// Counters of the output, for status.
    public var outputCounters: (underruns: Int, losses: Int, open: Bool, periods: Int, idle: Bool) {
        guard let counters = output?.counters else { return (0, 0, false, 0, false) }
        return (
            counters.underruns.load(ordering: .relaxed), counters.deviceLosses.load(ordering: .relaxed),
            counters.deviceOpen.load(ordering: .relaxed) == 1, counters.periods.load(ordering: .relaxed),
            counters.idle.load(ordering: .relaxed) == 1
        )
    }

    /// The output latency in milliseconds: the periods queued in the device.
    public var latencyMilliseconds: Double {
        let granted = output?.granted ?? setup.output
        return Double(granted.periodFrames * granted.periods) * 1000 / Double(granted.sampleRate)
    }
}

/// The input sources as a loop participant.
private final class InputParticipant: LoopParticipant {
    unowned let daemon: Daemon
    init(daemon: Daemon) { self.daemon = daemon }

    var pollRequests: [pollfd] {
        daemon.inputs.compactMap { $0.pollDescriptor }.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
    }

    var nextDeadline: Instant? {
        // A lost output device is reopened from the loop (`Daemon.service()`), 100 ms after the loss, then 250 ms.
        let reopening = daemon.output?.untilNextReopening.map { daemon.clock.now() + $0 }
        let deadlines =
            daemon.inputs.compactMap(\.nextDeadline)
            + [daemon.audio.nextDeadline, daemon.pendingRoute?.nextAttempt, reopening].compactMap { $0 }
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
