import HushCore

/// Everything `status` reports: the controls, the route, the volumes, the sessions, the output device, the streams
/// and the microphone.
public struct ControlStatus: Codable, Hashable, Sendable {
    public var version: String
    /// Seconds since hushd started.
    public var uptimeSeconds: Double
    public var silenceSwitch: SilenceSwitchPosition
    /// The microphone privacy switch in force (R21); absent from a hushd that does not say.
    public var microphoneSwitch: MicrophoneSwitchPosition?
    public var jack: JackState
    public var route: String
    /// Whether the route is a person's pick rather than the jack's.
    public var routeOverridden: Bool
    public var systemVolume: Int
    /// The system volume's gain in dB; absent at step 0 (silence).
    public var systemGainDecibels: Double?
    public var ringerVolume: Int
    public var ringerGainDecibels: Double?
    /// Which volume the volume buttons move now (policy R3).
    public var buttonsControl: VolumeKind
    /// Whether apps should silence secondary audio (policy R14).
    public var secondaryAudioShouldBeSilenced: Bool
    public var sessions: [Session]
    public var output: Output
    /// Connections to the control socket.
    public var clients: Int
    /// The streams of the `hush` ALSA device, oldest first.
    public var streams: [Stream]
    /// The streams that receive the microphone's samples now (the others' capture gets silence), by id.
    public var microphone: [UInt64]
    /// The microphone's PCM (`[capture] pcm`); absent when none is configured.
    public var capture: Capture?
    /// The voice path of `voiceChat` (R22); absent when hushd has none (no microphone, or a mixer rate
    /// webrtc-audio-processing does not take).
    public var voice: Voice?
    /// Hearing safety (R27–R29); absent when the board has no private route.
    public var hearing: Hearing?

    public init(
        version: String,
        uptimeSeconds: Double,
        silenceSwitch: SilenceSwitchPosition,
        microphoneSwitch: MicrophoneSwitchPosition = .live,
        jack: JackState,
        route: Route,
        routeOverridden: Bool,
        systemVolume: VolumeStep,
        systemGainDecibels: Float,
        ringerVolume: VolumeStep,
        ringerGainDecibels: Float,
        buttonsControl: VolumeKind,
        secondaryAudioShouldBeSilenced: Bool,
        sessions: [Session],
        output: Output,
        clients: Int,
        streams: [Stream] = [],
        microphone: [StreamID] = [],
        capture: Capture? = nil,
        voice: Voice? = nil,
        hearing: Hearing? = nil
    ) {
        self.version = version
        self.uptimeSeconds = (uptimeSeconds * 1000).rounded() / 1000
        self.silenceSwitch = silenceSwitch
        self.microphoneSwitch = microphoneSwitch
        self.jack = jack
        self.route = route.name
        self.routeOverridden = routeOverridden
        self.systemVolume = systemVolume.rawValue
        self.systemGainDecibels = Self.rounded(systemGainDecibels)
        self.ringerVolume = ringerVolume.rawValue
        self.ringerGainDecibels = Self.rounded(ringerGainDecibels)
        self.buttonsControl = buttonsControl
        self.secondaryAudioShouldBeSilenced = secondaryAudioShouldBeSilenced
        self.sessions = sessions
        self.output = output
        self.clients = clients
        self.streams = streams
        self.microphone = microphone.map(\.rawValue)
        self.capture = capture
        self.voice = voice
        self.hearing = hearing
    }

    /// Hearing safety on the board's private routes (policy R27–R29).
    public struct Hearing: Codable, Hashable, Sendable {
        /// The private routes.
        public var privateRoutes: [String]
        /// Whether hushd measures now (the route in use is private).
        public var measuring: Bool
        /// The latest second's level at the listener, dB(A), and its route; absent before the first.
        public var decibelsA: Double?
        public var route: String?
        /// The week's sound dose, percent (100 % is 80 dB(A) for 40 hours).
        public var dosePercent: Double
        /// Whether the route in use has a measured calibration (else the conservative assumption).
        public var calibrated: Bool

        public init(
            privateRoutes: [String],
            measuring: Bool,
            decibelsA: Double? = nil,
            route: String? = nil,
            dosePercent: Double,
            calibrated: Bool
        ) {
            self.privateRoutes = privateRoutes
            self.measuring = measuring
            self.decibelsA = decibelsA.map { ($0 * 10).rounded() / 10 }
            self.route = route
            self.dosePercent = (dosePercent * 10).rounded() / 10
            self.calibrated = calibrated
        }
    }

    /// Decibels to a tenth, nil for silence (JSON has no infinity).
    static func rounded(_ decibels: Float) -> Double? {
        guard decibels.isFinite else { return nil }
        return (Double(decibels) * 10).rounded() / 10
    }

    /// One session as status shows it.
    public struct Session: Codable, Hashable, Sendable {
        public var id: UInt64
        public var client: UInt64
        /// The peer's process, user and group, for socket clients (absent for the console's sessions).
        public var pid: Int32?
        public var uid: UInt32?
        public var gid: UInt32?
        /// The name given at activation.
        public var name: String?
        public var bus: Bus
        public var category: HushCore.Category
        public var options: [String]
        public var transient: Bool
        /// What its microphone goes through (R22); absent for `default`.
        public var mode: SessionMode?
        /// Its own level in dB (R26); absent at 0 dB.
        public var gain: Double?
        /// Why a recording session does not hear the microphone though it may play (R21): privacySwitch, or
        /// awaitingStart after the switch was turned off; absent otherwise.
        public var microphoneBlocked: String?
        /// idle, playing, paused or stopped.
        public var state: String
        /// Why a paused session is paused: user, routeChange or interruption.
        public var pausedBy: String?
        /// The sessions interrupting this one, oldest first.
        public var interruptedBy: [UInt64]
        /// What it plays, if anything: a path or "440 Hz tone".
        public var sound: String?

        public init(
            id: SessionID,
            client: ClientID,
            pid: Int32? = nil,
            uid: UInt32? = nil,
            gid: UInt32? = nil,
            name: String? = nil,
            configuration: SessionConfiguration,
            state: String,
            pausedBy: String? = nil,
            interruptedBy: [SessionID] = [],
            microphoneBlocked: String? = nil,
            sound: String? = nil
        ) {
            self.id = id.rawValue
            self.client = client.rawValue
            self.pid = pid
            self.uid = uid
            self.gid = gid
            self.name = name
            bus = configuration.bus
            category = configuration.category
            options = configuration.options.names
            transient = configuration.transient
            mode = configuration.mode == .default ? nil : configuration.mode
            gain = configuration.level == .unity ? nil : Double("\(configuration.level.decibels)")
            self.microphoneBlocked = microphoneBlocked
            self.state = state
            self.pausedBy = pausedBy
            self.interruptedBy = interruptedBy.map(\.rawValue)
            self.sound = sound
        }
    }

    /// The output device.
    public struct Output: Codable, Hashable, Sendable {
        /// The PCM name, or "file:PATH" for the WAV fallback.
        public var pcm: String
        /// Whether the device is open (false while it is lost and being retried).
        public var open: Bool
        public var sampleRate: Int
        public var channels: Int
        public var periodFrames: Int
        public var periods: Int
        /// Underruns since start.
        public var xruns: Int
        /// Times the device was lost since start.
        public var losses: Int
        /// The periods queued in the device, in milliseconds.
        public var latencyMilliseconds: Double
        /// The route's own PCM when it would not open: the sound stays on `pcm` while hushd tries it again.
        public var pending: Pending?
        /// True while the output is idle: nothing played for `[output] idle_seconds`, so the device is stopped
        /// and the audio thread asleep until the next sound. Nil from a hushd that does not say.
        public var idle: Bool?
        /// The device's real rate, frames per second of the system's clock, measured from when its periods complete
        /// over the latest 30 s window of that clock (0–30 s, 30–60 s, …) at least half played; nil until then.
        public var measuredRate: Double?
        /// The period hushd mixes now and why (R24); nil from a hushd that does not say.
        public var period: Period?

        /// The output's period (R24 output-period): `frames` per wake-up now (as the audio thread last mixed),
        /// `ruled` what the rule asks from the thread's next period on, between `floor` (`period_frames`) and
        /// `ceiling` (`max_period_frames` as the device allows), with the rule's reason.
        public struct Period: Codable, Hashable, Sendable {
            public var frames: Int
            public var ruled: Int
            public var floor: Int
            public var ceiling: Int
            public var rule: String
            public var reason: String

            public init(frames: Int, ruled: Int, floor: Int, ceiling: Int, rule: Rule, reason: String) {
                self.frames = frames
                self.ruled = ruled
                self.floor = floor
                self.ceiling = ceiling
                self.rule = rule.rawValue
                self.reason = reason
            }
        }

        /// A route's PCM that would not open (another program holds it, or its card is missing).
        public struct Pending: Codable, Hashable, Sendable {
            public var route: String
            public var pcm: String
            /// Why the last attempt failed: "the device is busy: another program uses it (…)".
            public var error: String
            /// Attempts so far.
            public var attempts: Int
            /// Seconds since the route changed.
            public var seconds: Double

            public init(route: Route, pcm: String, error: String, attempts: Int, seconds: Double) {
                self.route = route.name
                self.pcm = pcm
                self.error = error
                self.attempts = attempts
                self.seconds = (seconds * 10).rounded() / 10
            }
        }

        public init(
            pcm: String,
            open: Bool,
            sampleRate: Int,
            channels: Int,
            periodFrames: Int,
            periods: Int,
            xruns: Int,
            losses: Int,
            latencyMilliseconds: Double,
            pending: Pending? = nil,
            idle: Bool? = nil,
            measuredRate: Double? = nil,
            period: Period? = nil
        ) {
            self.pcm = pcm
            self.open = open
            self.sampleRate = sampleRate
            self.channels = channels
            self.periodFrames = periodFrames
            self.periods = periods
            self.xruns = xruns
            self.losses = losses
            self.latencyMilliseconds = (latencyMilliseconds * 100).rounded() / 100
            self.pending = pending
            self.idle = idle
            self.measuredRate = measuredRate.map { ($0 * 1000).rounded() / 1000 }
            self.period = period
        }
    }

    /// One stream of the `hush` ALSA device as status shows it.
    public struct Stream: Codable, Hashable, Sendable {
        public var id: UInt64
        /// The session it plays or records in.
        public var session: UInt64
        /// The connection that carries it, and that connection's process.
        public var client: UInt64
        public var pid: Int32
        /// The name the plugin gave (the program's).
        public var name: String?
        public var direction: StreamDirection
        public var category: HushCore.Category
        public var bus: Bus
        /// Its session's mode (R22); absent for `default`.
        public var mode: SessionMode?
        public var rate: Int
        public var channels: Int
        public var format: StreamSampleFormat
        /// The ring's capacity in frames.
        public var ringFrames: Int
        public var state: State
        /// Playback: times the ring ran dry while the stream was judged (R23), each told to the application as an
        /// xrun unless its stop threshold is the boundary (0 for capture).
        public var underruns: Int
        /// Playback: frames hushd wanted and the ring did not have (0 for capture).
        public var underrunFrames: Int
        /// Capture: times the ring was full while the stream was judged (R23), each told to the application as an
        /// xrun unless its stop threshold is the boundary (0 for playback).
        public var overruns: Int
        /// Capture: frames dropped, while judged, because the client did not read them (0 for playback).
        public var overrunFrames: Int
        /// Times the client's counters were impossible (ahead of what it could have written or read) and hushd
        /// clamped them.
        public var violations: Int
        /// Capture: whether the stream receives the microphone's samples now (else silence). False for playback.
        public var microphone: Bool

        /// What hushd does with a stream's frames.
        public enum State: String, Codable, Hashable, Sendable, CaseIterable, CustomStringConvertible {
            /// Opened (or prepared again), not started: no frames move.
            case prepared
            /// Frames move at the real rate.
            case running
            /// The policy holds it (interrupted, paused by a route change or a media key): playback is not consumed;
            /// capture gets silence.
            case held
            /// The application paused it.
            case paused
            /// Playback: no more frames will come; the ring plays out.
            case draining
            public var description: String { rawValue }
        }

        public init(
            id: StreamID,
            session: SessionID,
            client: ClientID,
            pid: Int32,
            name: String? = nil,
            direction: StreamDirection,
            configuration: SessionConfiguration,
            rate: Int,
            channels: Int,
            format: StreamSampleFormat,
            ringFrames: Int,
            state: State,
            underruns: Int = 0,
            underrunFrames: Int = 0,
            overruns: Int = 0,
            overrunFrames: Int = 0,
            violations: Int = 0,
            microphone: Bool = false
        ) {
            self.id = id.rawValue
            self.session = session.rawValue
            self.client = client.rawValue
            self.pid = pid
            self.name = name
            self.direction = direction
            category = configuration.category
            bus = configuration.bus
            mode = configuration.mode == .default ? nil : configuration.mode
            self.rate = rate
            self.channels = channels
            self.format = format
            self.ringFrames = ringFrames
            self.state = state
            self.underruns = underruns
            self.underrunFrames = underrunFrames
            self.overruns = overruns
            self.overrunFrames = overrunFrames
            self.violations = violations
            self.microphone = microphone
        }
    }

    /// The voice path: webrtc-audio-processing on its own thread, fed the mix as it leaves and the microphone.
    public struct Voice: Codable, Hashable, Sendable {
        /// The library generation: "0.3" (bookworm) or "1.x" (trixie, AEC3).
        public var library: String
        /// Whether it runs now (a started voiceChat stream hears the microphone).
        public var active: Bool
        /// The echo delay hushd passes: the output device's queue and the microphone's, ms.
        public var delayMilliseconds: Int
        /// The canceller's own ERLE, dB, once it has one.
        public var erleDecibels: Double?
        /// The canceller's own delay figure, ms (1.x only).
        public var estimatedDelayMilliseconds: Int?
        /// 10 ms blocks processed since start.
        public var blocks: Int
        /// Periods the voiceChat streams got silence because the voice thread was late.
        public var underflows: Int
        /// Why there is no processing although the path exists (the library refused it): the streams then get the
        /// microphone unprocessed.
        public var unavailable: String?

        public init(
            library: String,
            active: Bool,
            delayMilliseconds: Int,
            erleDecibels: Double? = nil,
            estimatedDelayMilliseconds: Int? = nil,
            blocks: Int = 0,
            underflows: Int = 0,
            unavailable: String? = nil
        ) {
            self.library = library
            self.active = active
            self.delayMilliseconds = delayMilliseconds
            self.erleDecibels = erleDecibels.map { ($0 * 10).rounded() / 10 }
            self.estimatedDelayMilliseconds = estimatedDelayMilliseconds
            self.blocks = blocks
            self.underflows = underflows
            self.unavailable = unavailable
        }
    }

    /// The microphone's device (`[capture] pcm`).
    public struct Capture: Codable, Hashable, Sendable {
        /// The PCM name.
        public var pcm: String
        /// Whether the device is open now.
        public var open: Bool
        /// How far the microphone's clock runs from the output's, ppm (positive: slow), while hushd resamples it
        /// to the output's clock (`[capture] clock`): both devices' rates measured against the system's clock over
        /// the same 30 s windows of the system clock (so its own wandering cancels), averaged over the last 8 such
        /// windows; absent on one clock, and until both measured one window.
        public var driftPPM: Double?
        /// The windows of 30 s `driftPPM` is the average of (up to 8: 4 minutes).
        public var driftWindows: Int?
        /// The stretch the resampler applied over its last minute, ppm (negative: the microphone shrunk): the drift
        /// plus the frames a late reader lost or caught up; absent like `driftPPM`, and until a minute passed.
        public var stretchPPM: Double?
        /// The microphone's real rate, frames per second of the system's clock, measured like the output's
        /// (`output.measuredRate`) while the clock is matched; nil until then.
        public var measuredRate: Double?
        /// Frames of silence handed on in the microphone's place since start because its reader was late (each a
        /// period: a gap in what recorders heard); absent when the device never opened.
        public var gapFrames: Int?

        public init(
            pcm: String,
            open: Bool,
            driftPPM: Double? = nil,
            driftWindows: Int? = nil,
            stretchPPM: Double? = nil,
            measuredRate: Double? = nil,
            gapFrames: Int? = nil
        ) {
            self.pcm = pcm
            self.open = open
            self.driftPPM = driftPPM.map { ($0 * 10).rounded() / 10 }
            self.driftWindows = driftWindows
            self.stretchPPM = stretchPPM.map { ($0 * 10).rounded() / 10 }
            self.measuredRate = measuredRate.map { ($0 * 1000).rounded() / 1000 }
            self.gapFrames = gapFrames
        }
    }
}
