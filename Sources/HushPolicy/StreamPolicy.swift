import HushCore

/// The rules of applications' streams through the `hush` ALSA device (R17–R20): how a stream becomes a session,
/// what the application's start, pause and stop ask of the policy, what state the application sees in each
/// situation of the policy, and when a capture stream hears the microphone.
///
/// Pure, like ``AudioPolicy``, which it reads and never changes: what follows for the sessions is returned as
/// ``PolicyEvent``s for the daemon to hand to the policy. The daemon's `StreamHub` keeps the mechanism (shared
/// memory, rings, voices, descriptors) and carries these rulings out.
///
/// ```swift
/// var streams = StreamPolicy()
/// let placement = try streams.place(opening, in: policy)   // R17: its own session, a partner's, or a named one
/// streams.opened(stream)
/// let event = streams.transport(.start, on: stream.id, in: policy)   // R18: .play(session) unless it plays
/// let view = streams.view(of: stream.id, in: policy, microphonePresent: true)   // R19, R20
/// ```
public struct StreamPolicy: Sendable {
    /// One open stream, as the policy knows it.
    public struct Stream: Hashable, Sendable {
        public let id: StreamID
        public let process: Int32
        public let name: String
        public let direction: StreamDirection
        public let session: SessionID
        /// The session's configuration: the stream's own, or the named session's.
        public let configuration: SessionConfiguration
        /// The client of the group of streams the session belongs to (R17); nil when the stream joined a session
        /// by its id, which it never ends.
        public let group: ClientID?
        /// Started by the application and not stopped since (R18).
        public internal(set) var started = false

        public init(
            id: StreamID,
            process: Int32,
            name: String,
            direction: StreamDirection,
            session: SessionID,
            configuration: SessionConfiguration,
            group: ClientID?
        ) {
            self.id = id
            self.process = process
            self.name = name
            self.direction = direction
            self.session = session
            self.configuration = configuration
            self.group = group
        }
    }

    /// A stream an application asks to open.
    public struct Opening: Hashable, Sendable {
        public var process: Int32
        /// The user the process runs as.
        public var user: UInt32
        public var name: String
        public var direction: StreamDirection
        /// The session the stream asks for by its device's arguments (category, options, bus).
        public var configuration: SessionConfiguration
        /// The session it names (`SESSION=`), if any, and the user whose connection owns that session (nil when
        /// nobody's is known).
        public var session: SessionID?
        public var sessionOwner: UInt32?

        public init(
            process: Int32,
            user: UInt32,
            name: String,
            direction: StreamDirection,
            configuration: SessionConfiguration,
            session: SessionID? = nil,
            sessionOwner: UInt32? = nil
        ) {
            self.process = process
            self.user = user
            self.name = name
            self.direction = direction
            self.configuration = configuration
            self.session = session
            self.sessionOwner = sessionOwner
        }
    }

    /// Where a new stream goes (R17).
    public enum Placement: Hashable, Sendable {
        /// Into the session it named; the stream never ends it.
        case join(SessionID, SessionConfiguration)
        /// Into the session of the same process's stream of the other direction, with the same category, bus,
        /// options and name: a SIP phone's playback and capture are one call, not two calls interrupting each
        /// other.
        case share(SessionID, group: ClientID)
        /// Into a session of its own, activated with this configuration for a new group of streams.
        case activate(SessionConfiguration)
    }

    /// A stream the rules refuse, with the reason for the application.
    public struct Refusal: Error, Hashable, Sendable, CustomStringConvertible {
        public enum Code: String, Hashable, Sendable {
            case unknownSession, notPermitted, cannotStream
        }
        public var code: Code
        public var message: String
        /// The argument the refusal is about (`session`, `category`).
        public var field: String
        public var rule: Rule { .r17 }

        public init(_ code: Code, _ message: String, field: String) {
            self.code = code
            self.message = message
            self.field = field
        }

        public var description: String { "[\(rule)] \(message)" }
    }

    /// What an application's stream sees (R19).
    public enum State: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
        /// Ready, not moving: not started, or started and then stopped.
        case prepared
        /// Frames move at the real rate.
        case running
        /// Held by the policy (interrupted, unplugged, paused by a media key, waiting for the floor): hushd stops
        /// consuming and the position is kept, like a paused device's.
        case held
        /// Paused by the person (the application's pause, or a media key on it).
        case paused
        /// Its session is gone: the application's next call fails with -ENODEV.
        case closed

        public var description: String { rawValue }
    }

    /// A stream's state, silence and microphone, each with the rule and the reason.
    public struct View: Hashable, Sendable, CustomStringConvertible {
        public var state: Ruling<State>
        /// Whether the silence switch mutes what it plays (R1): the plugin says so, and hushd still consumes it.
        public var silenced: Ruling<Bool>
        /// Whether it hears the microphone (R20, R21); nil for a playback stream.
        public var microphone: Ruling<Bool>?
        /// What the microphone goes through before the stream receives it (R22); nil for a playback stream.
        public var processing: Ruling<SessionMode>?
        /// Whether an application that falls behind is late (R23): its empty playback ring is an underrun, its full
        /// capture ring an overrun, each counted and told to it as ALSA tells it (XRUN).
        public var judged: Ruling<Bool>
        /// Capture: whether hushd hands it frames at the real rate (the microphone's or silence, R20): the
        /// application started it and has not paused it — a paused device captures nothing (R19). False for
        /// playback.
        public var receivesFrames: Bool = false

        /// Whether hushd consumes (or delivers) its frames at the real rate.
        public var moves: Bool { state.value == .running }
        public var hearsMicrophone: Bool { microphone?.value ?? false }

        public var description: String {
            var text = "\(state.value) (\(state.reason))"
            if silenced.value { text += "; silenced (\(silenced.reason))" }
            if let microphone {
                text += "; microphone \(microphone.value ? "heard" : "not heard") (\(microphone.reason))"
            }
            if let processing { text += "; \(processing.value) (\(processing.reason))" }
            return text
        }
    }

    /// What closing a stream does to its session (R17).
    public enum Ending: Hashable, Sendable {
        /// It was the last stream of its group: the session ends as by R10 (the group's client is gone).
        case sessionEnds(ClientID)
        /// A playback stream leaves a session that goes on (another stream of its group, or a session it joined
        /// by id): its voice leaves the mixer.
        case voiceLeaves(SessionID)
        /// A capture stream leaves a session that goes on.
        case nothing
    }

    public private(set) var streams: [StreamID: Stream] = [:]

    public init() {}

    /// The stream with `id`, if open.
    public func stream(_ id: StreamID) -> Stream? { streams[id] }

    /// The open streams of `process`.
    public func count(of process: Int32) -> Int { streams.values.filter { $0.process == process }.count }

    /// The streams a group of streams (a client of their own) is made of, in opening order.
    public func streams(of group: ClientID) -> [Stream] {
        streams.values.filter { $0.group == group }.sorted { $0.id < $1.id }
    }

    // MARK: R17 stream-session

    /// Where a new stream goes: the session it names, the session of the same process's stream of the other
    /// direction, or a session of its own. Refuses what no session could honour.
    public func place(_ opening: Opening, in policy: AudioPolicy) throws(Refusal) -> Ruling<Placement> {
        if let named = opening.session {
            guard let record = policy.session(named) else {
                throw Refusal(.unknownSession, "there is no \(named)", field: "session")
            }
            guard opening.user == 0 || opening.sessionOwner == opening.user else {
                throw Refusal(.notPermitted, "\(named) belongs to another user's connection", field: "session")
            }
            if opening.direction == .playback,
                streams.values.contains(where: { $0.session == named && $0.direction == .playback })
            {
                throw Refusal(
                    .cannotStream,
                    "\(named) already plays a stream; a session plays one stream at a time",
                    field: "session"
                )
            }
            if opening.direction == .capture, !record.configuration.category.records {
                throw Refusal(
                    .notPermitted,
                    "\(named) is \(record.configuration.category): only record and playAndRecord sessions "
                        + "hear the microphone",
                    field: "session"
                )
            }
            return Ruling(
                .join(named, record.configuration),
                rule: .r17,
                reason: "the stream names \(named): it joins it and never ends it"
            )
        }
        let configuration = opening.configuration
        if opening.direction == .capture, !configuration.category.records {
            throw Refusal(
                .notPermitted,
                "a \(configuration.category) stream cannot record: use CATEGORY=record or playAndRecord",
                field: "category"
            )
        }
        let partner = streams.values.sorted { $0.id < $1.id }.first { stream in
            guard let group = stream.group else { return false }
            return stream.process == opening.process && stream.configuration == configuration
                && stream.name == opening.name
                && !streams.values.contains { $0.group == group && $0.direction == opening.direction }
        }
        if let partner, let group = partner.group {
            return Ruling(
                .share(partner.session, group: group),
                rule: .r17,
                reason: "process \(opening.process) already has a \(partner.direction) stream \(partner.id) named "
                    + "'\(opening.name)' with the same \(configuration): the two are one session, not two "
                    + "interrupting each other"
            )
        }
        return Ruling(
            .activate(configuration),
            rule: .r17,
            reason: "a stream that names no session activates one of its own: \(configuration)"
        )
    }

    /// Records a stream that opened where ``place(_:in:)`` said.
    public mutating func opened(_ stream: Stream) {
        precondition(streams[stream.id] == nil, "\(stream.id) opened twice")
        streams[stream.id] = stream
    }

    /// Forgets a stream; says what follows for its session.
    public mutating func close(_ id: StreamID) -> Ruling<Ending> {
        guard let stream = streams.removeValue(forKey: id) else {
            return Ruling(.nothing, rule: .r17, reason: "\(id) is not open")
        }
        if let group = stream.group, !streams.values.contains(where: { $0.group == group }) {
            return Ruling(
                .sessionEnds(group),
                rule: .r17,
                reason: "\(id) was the last stream of \(stream.session): the session ends as its client's would (R10)"
            )
        }
        if stream.direction == .playback {
            let why =
                stream.group == nil
                ? "\(stream.session) was named by the stream and goes on without its sound"
                : "\(stream.session) goes on with its other stream"
            return Ruling(.voiceLeaves(stream.session), rule: .r17, reason: why)
        }
        return Ruling(.nothing, rule: .r17, reason: "\(stream.session) goes on with its other stream")
    }

    // MARK: R18 stream-transport

    /// What the application's start, pause, resume, stop or prepare asks of the session: the event for the
    /// policy, or nil when the session need not change.
    public mutating func transport(
        _ transport: StreamAction,
        on id: StreamID,
        in policy: AudioPolicy
    ) -> Ruling<PolicyEvent?> {
        guard var stream = streams[id] else { return Ruling(nil, rule: .r18, reason: "\(id) is not open") }
        defer { streams[id] = stream }
        let session = stream.session
        switch transport {
        case .start, .resume:
            stream.started = true
            let record = policy.session(session)
            if stream.direction == .capture, record?.microphoneBlock == .awaitingStart {
                return Ruling(
                    .play(session),
                    rule: .r18,
                    reason: "the application starts its capture stream again: the start the microphone waits for "
                        + "since the privacy switch was turned off (R21)"
                )
            }
            guard record?.state != .playing else {
                return Ruling(nil, rule: .r18, reason: "\(session) already plays")
            }
            return Ruling(
                .play(session),
                rule: .r18,
                reason: "starting a stream is asking to be heard (or to hear): the policy decides, and an "
                    + "interruption may hold it (R6, M4); for a recorder after an interruption this is the start "
                    + "R9 waits for"
            )
        case .pause:
            return Ruling(
                .pause(session),
                rule: .r18,
                reason: "the application pauses its stream: paused by the person"
            )
        case .stop:
            stream.started = false
            if let other = streams.values.first(where: { $0.id != id && $0.session == session && $0.started }) {
                return Ruling(nil, rule: .r18, reason: "\(other.id) of \(session) still runs: the session plays on")
            }
            return Ruling(.stop(session), rule: .r18, reason: "the application stops its stream")
        case .prepare:
            stream.started = false
            return Ruling(nil, rule: .r18, reason: "a prepared stream waits for its start; the session is unchanged")
        }
    }

    // MARK: R19 stream-state, R20 microphone-gate

    /// What a stream shows its application now, given the policy's state, and whether a microphone is there.
    public func view(of id: StreamID, in policy: AudioPolicy, microphonePresent: Bool) -> View? {
        guard let stream = streams[id] else { return nil }
        return Self.view(
            of: stream,
            session: policy.session(stream.session),
            silenceSwitch: policy.silenceSwitch,
            microphoneSwitch: policy.microphoneSwitch,
            microphonePresent: microphonePresent
        )
    }

    /// What a stream shows its application when its session is `session` (nil: gone).
    public static func view(
        of stream: Stream,
        session record: SessionRecord?,
        silenceSwitch: SilenceSwitchPosition,
        microphoneSwitch: MicrophoneSwitchPosition = .live,
        microphonePresent: Bool
    ) -> View {
        let state = state(of: stream, session: record)
        let silenced: Ruling<Bool>
        if let record, record.configuration.category.isSilencedBySwitch, silenceSwitch == .silent {
            silenced = Ruling(
                true,
                rule: .r1,
                reason:
                    "\(record.configuration.category) is silenced by the switch: consumed at the real rate at gain 0"
            )
        } else {
            silenced = Ruling(false, rule: .r1, reason: "not silenced")
        }
        var microphone: Ruling<Bool>?
        var processing: Ruling<SessionMode>?
        if stream.direction == .capture {
            microphone = Self.microphone(
                state: state.value,
                session: stream.session,
                block: microphoneSwitch == .muted ? .privacySwitch : record?.microphoneBlock,
                present: microphonePresent
            )
            processing = Self.processing(record?.configuration.mode ?? stream.configuration.mode)
        }
        return View(
            state: state,
            silenced: silenced,
            microphone: microphone,
            processing: processing,
            judged: judged(state.value, direction: stream.direction),
            receivesFrames: stream.direction == .capture && stream.started && state.value != .paused
        )
    }

    private static func state(of stream: Stream, session record: SessionRecord?) -> Ruling<State> {
        guard let record else {
            return Ruling(.closed, rule: .r19, reason: "\(stream.session) is gone: the stream is over")
        }
        let started = stream.started
        switch record.state {
        case .playing:
            return started
                ? Ruling(.running, rule: .r19, reason: "\(record.id) plays and the application started the stream")
                : Ruling(.prepared, rule: .r19, reason: "\(record.id) plays, but this stream is not started")
        case .paused(.user):
            return Ruling(.paused, rule: .r19, reason: "\(record.id) is paused by the person (R15, R11)")
        case .paused(let cause):
            let why = cause == .routeChange ? "paused by the unplug (R5)" : "interrupted (R6)"
            return Ruling(.held, rule: .r19, reason: "\(record.id) is \(why): hushd holds the stream, position kept")
        case .idle, .stopped:
            return started
                ? Ruling(
                    .held,
                    rule: .r19,
                    reason:
                        "\(record.id) does not play (\(record.state)\(record.isInterrupted ? ", interrupted" : "")): the started stream is held"
                )
                : Ruling(.prepared, rule: .r19, reason: "\(record.id) does not play and the stream is not started")
        }
    }

    private static func microphone(
        state: State,
        session: SessionID,
        block: SessionRecord.MicrophoneBlock?,
        present: Bool
    ) -> Ruling<Bool> {
        // R21 first: nothing the application or its session's state does opens a microphone the switch closed.
        switch block {
        case .privacySwitch:
            return Ruling(
                false,
                rule: .r21,
                reason: "the microphone privacy switch is on: the stream receives silence at the real rate"
            )
        case .awaitingStart:
            return Ruling(
                false,
                rule: .r21,
                reason: "the privacy switch was turned off since this stream last heard the microphone: it receives "
                    + "silence until the application (or the person) starts it again"
            )
        case nil:
            break
        }
        guard state == .running else {
            return Ruling(
                false,
                rule: .r20,
                reason: "the stream is \(state): it receives silence at the real rate; after an interruption the "
                    + "microphone waits for the application to start the stream again (R9)"
            )
        }
        guard present else {
            return Ruling(false, rule: .r20, reason: "hushd has no microphone: the stream receives silence")
        }
        return Ruling(true, rule: .r20, reason: "\(session) plays and the application started the stream")
    }

    // MARK: R23 late-application

    /// Whether a stream in `state` is judged late when its application falls behind (R23). A device that runs
    /// judges: frames move at the real rate whatever the application does, so the ring running dry (playback) or
    /// full (capture) is the application's lateness, as on a sound card. What the policy stopped is not: a held
    /// playback stream is not consumed, a paused or prepared one does not move. A held capture stream still
    /// receives silence at the real rate (R20), so not reading it is late. Silenced playback (R1) is consumed at the
    /// real rate and judged.
    static func judged(_ state: State, direction: StreamDirection) -> Ruling<Bool> {
        switch (state, direction) {
        case (.running, _):
            return Ruling(
                true,
                rule: .r23,
                reason: "frames move at the real rate: an empty ring is an underrun, a full one an overrun (XRUN)"
            )
        case (.held, .capture):
            return Ruling(
                true,
                rule: .r23,
                reason: "held, the stream still receives silence at the real rate: not reading it is an overrun"
            )
        case (.held, .playback):
            return Ruling(false, rule: .r23, reason: "held by the policy, not consumed: an empty ring is not late")
        case (.paused, _):
            return Ruling(false, rule: .r23, reason: "paused: nothing moves, nothing is late")
        case (.prepared, _):
            return Ruling(false, rule: .r23, reason: "not started: nothing moves, nothing is late")
        case (.closed, _):
            return Ruling(false, rule: .r23, reason: "the stream is over")
        }
    }

    // MARK: R22 capture-mode

    /// What a capture stream's frames go through: its session's mode, each stream its own. One microphone feeds
    /// every mode at once — a call's processed voice and a measurement's raw signal are computed side by side — so
    /// no session's mode is imposed on another's.
    private static func processing(_ mode: SessionMode) -> Ruling<SessionMode> {
        switch mode {
        case .default:
            return Ruling(mode, rule: .r22, reason: "the microphone as the board's profile delivers it")
        case .voiceChat:
            return Ruling(
                mode,
                rule: .r22,
                reason: "echo cancelled against what hushd plays, with the delay hushd knows; noise suppressed, "
                    + "high-passed, level kept"
            )
        case .measurement:
            return Ruling(
                mode,
                rule: .r22,
                reason: "no processing at all, whatever other sessions' modes ask for: a call's processing never "
                    + "reaches a measurement"
            )
        }
    }
}
