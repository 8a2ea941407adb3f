import HushCore
import HushPolicy

/// Drives an ``AudioPolicy`` with a manual timeline and carries its decisions out on a ``RecordingEngine``.
///
/// ```swift
/// var board = PolicyHarness()
/// board.activate(1, .music, .playback)
/// board.play(1)
/// let decisions = board.send(.input(.silenceSwitch(.silent)))
/// ```
public struct PolicyHarness: Sendable {
    public private(set) var policy: AudioPolicy
    public private(set) var engine = RecordingEngine()
    public private(set) var now: Instant
    /// What the last `send` returned.
    public private(set) var last: [Decision] = []
    /// Applications' streams (R17–R20), as the daemon's stream hub keeps them.
    public private(set) var streams = StreamPolicy()

    public init(
        configuration: PolicyConfiguration = PolicyConfiguration(),
        persisted: PersistedVolumes? = nil,
        start: Instant = .zero
    ) {
        policy = AudioPolicy(configuration: configuration, persisted: persisted)
        now = start
        last = policy.start(at: start)
        engine.apply(last)
    }

    /// Lets `duration` pass (delivering held-button repeats), then delivers `event`.
    @discardableResult
    public mutating func send(_ event: PolicyEvent, after duration: Duration = .zero) -> [Decision] {
        now = now + duration
        last = policy.handle(event, at: now)
        if case .finished(let id) = event { engine.finished(id) }
        engine.apply(last)
        // Sessions the policy no longer has are gone from the engine too, as the mixer drops their voices.
        let known = Set(engine.sessionGains.keys).union(engine.playing).union(engine.interrupted)
        for id in known where policy.session(id) == nil { engine.forget(id) }
        return last
    }

    /// Lets `duration` pass with nothing else happening.
    @discardableResult
    public mutating func wait(_ duration: Duration) -> [Decision] { send(.timePassed, after: duration) }

    @discardableResult
    public mutating func activate(
        _ id: UInt64,
        _ bus: Bus,
        _ category: Category,
        _ options: CategoryOptions = [],
        transient: Bool = false,
        mode: SessionMode = .default,
        level: SessionLevel = .unity,
        client: UInt64? = nil
    ) -> [Decision] {
        send(
            .activate(
                SessionID(id),
                client: ClientID(client ?? id),
                SessionConfiguration(
                    bus: bus,
                    category: category,
                    options: options,
                    transient: transient,
                    mode: mode,
                    level: level
                )
            )
        )
    }

    /// Sets session `id`'s own level in decibels (R26).
    @discardableResult
    public mutating func setLevel(_ id: UInt64, _ decibels: Float) -> [Decision] {
        send(.setLevel(SessionID(id), SessionLevel(decibels: decibels)!))
    }

    @discardableResult
    public mutating func play(_ id: UInt64) -> [Decision] { send(.play(SessionID(id))) }

    @discardableResult
    public mutating func pause(_ id: UInt64) -> [Decision] { send(.pause(SessionID(id))) }

    @discardableResult
    public mutating func deactivate(_ id: UInt64, notifyOthers: Bool) -> [Decision] {
        send(.deactivate(SessionID(id), notifyOthers: notifyOthers))
    }

    @discardableResult
    public mutating func input(_ event: InputEvent, after duration: Duration = .zero) -> [Decision] {
        send(.input(event), after: duration)
    }

    /// Whether the engine renders session `id`.
    public func isPlaying(_ id: UInt64) -> Bool { engine.playing.contains(SessionID(id)) }

    /// The gain the engine applies to session `id`.
    public func gain(_ id: UInt64) -> Gain { engine.gain(of: SessionID(id)) }

    /// The commands of the last `send`, without their reasons.
    public var lastCommands: [Command] { last.map(\.command) }

    /// The decisions of the last `send` whose command matches `predicate`.
    public func lastDecisions(where predicate: (Command) -> Bool) -> [Decision] {
        last.filter { predicate($0.command) }
    }

    // MARK: Applications' streams (R17–R20)

    /// Opens stream `id` as hushd's stream hub does: places it (R17), activates a session of its own when so
    /// placed (session `100 + id`, for a group client `1000 + id`), and records it.
    @discardableResult
    public mutating func openStream(
        _ id: UInt64,
        _ direction: StreamDirection,
        _ bus: Bus,
        _ category: Category,
        _ options: CategoryOptions = [],
        transient: Bool = false,
        mode: SessionMode = .default,
        process: Int32 = 500,
        user: UInt32 = 1000,
        name: String = "app",
        session named: UInt64? = nil,
        sessionOwner: UInt32? = nil
    ) throws(StreamPolicy.Refusal) -> Ruling<StreamPolicy.Placement> {
        let configuration = SessionConfiguration(
            bus: bus,
            category: category,
            options: options,
            transient: transient,
            mode: mode
        )
        let opening = StreamPolicy.Opening(
            process: process,
            user: user,
            name: name,
            direction: direction,
            configuration: configuration,
            session: named.map { SessionID($0) },
            sessionOwner: sessionOwner
        )
        let placement = try streams.place(opening, in: policy)
        let session: SessionID
        let group: ClientID?
        let joined: SessionConfiguration
        switch placement.value {
        case .join(let named, let configuration):
            (session, group, joined) = (named, nil, configuration)
        case .share(let shared, let partners):
            (session, group, joined) = (shared, partners, configuration)
        case .activate(let wanted):
            (session, group, joined) = (SessionID(100 + id), ClientID(1000 + id), wanted)
            send(.activate(session, client: group!, wanted))
        }
        streams.opened(
            StreamPolicy.Stream(
                id: StreamID(id),
                process: process,
                name: name,
                direction: direction,
                session: session,
                configuration: joined,
                group: group
            )
        )
        return placement
    }

    /// An application's start, pause, resume, stop or prepare on stream `id` (R18), carried out on the policy.
    @discardableResult
    public mutating func stream(_ id: UInt64, _ transport: StreamAction) -> Ruling<PolicyEvent?> {
        let ruling = streams.transport(transport, on: StreamID(id), in: policy)
        if let event = ruling.value { send(event) }
        return ruling
    }

    /// Closes stream `id` (R17); the session ends when it was its group's last.
    @discardableResult
    public mutating func closeStream(_ id: UInt64) -> Ruling<StreamPolicy.Ending> {
        let ending = streams.close(StreamID(id))
        if case .sessionEnds(let group) = ending.value { send(.clientGone(group)) }
        return ending
    }

    /// What stream `id` shows its application now (R19, R20).
    public func streamView(_ id: UInt64, microphonePresent: Bool = true) -> StreamPolicy.View? {
        streams.view(of: StreamID(id), in: policy, microphonePresent: microphonePresent)
    }
}
