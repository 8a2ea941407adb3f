import HushCore

/// Something hushd tells clients without being asked: sent to subscribers, and to a session's owner for events
/// about its own sessions even when it has not subscribed.
///
/// On the wire an event is an object with an `event` field naming its kind (replies have `ok` instead):
/// `{"event":"interruption-began","session":3,"by":4,"reason":"session"}`.
public enum ControlEvent: Hashable, Sendable {
    /// The session lost the floor to another (policy R6), or its microphone to the privacy switch (R21).
    case interruptionBegan(SessionID, cause: InterruptionCause)
    /// The interruption is over; `shouldResume` says whether the client may resume on its own (policy R8).
    case interruptionEnded(SessionID, shouldResume: Bool)
    /// The output route changed (policies R4, R5, R13).
    case routeChanged(RouteChange)
    /// A volume moved; `route` is the route whose system volume it is.
    case volumeChanged(VolumeKind, VolumeStep, route: Route?)
    case silenceChanged(SilenceSwitchPosition)
    /// Whether apps should silence secondary audio (policy R14).
    case secondaryAudioHint(shouldBeSilenced: Bool)
    /// Which volume the volume buttons now control (policy R3).
    case buttonsControl(VolumeKind)
    /// A media key the session's client should act on itself (policy R11).
    case remoteCommand(SessionID, MediaKey)
    /// The session's sound came to its end.
    case sessionFinished(SessionID)
    /// The listener on a private route heard too much; the volume comes down (policy R29).
    case hearingWarning(HearingWarning)
    /// A policy decision, with the rule that made it and why.
    case decision(DecisionReport)

    /// A policy notification as an event.
    public init(_ event: ClientEvent) {
        switch event {
        case .interruptionBegan(let id, let cause): self = .interruptionBegan(id, cause: cause)
        case .interruptionEnded(let id, let shouldResume): self = .interruptionEnded(id, shouldResume: shouldResume)
        case .routeChanged(let change): self = .routeChanged(change)
        case .volumeChanged(let kind, let step, let route): self = .volumeChanged(kind, step, route: route)
        case .silenceChanged(let position): self = .silenceChanged(position)
        case .secondaryAudioShouldBeSilenced(let hint): self = .secondaryAudioHint(shouldBeSilenced: hint)
        case .buttonsControl(let kind): self = .buttonsControl(kind)
        case .remoteCommand(let id, let key): self = .remoteCommand(id, key)
        case .hearingWarning(let warning): self = .hearingWarning(warning)
        }
    }

    public var kind: ControlEventKind {
        switch self {
        case .interruptionBegan: .interruptionBegan
        case .interruptionEnded: .interruptionEnded
        case .routeChanged: .routeChanged
        case .volumeChanged: .volumeChanged
        case .silenceChanged: .silenceChanged
        case .secondaryAudioHint: .secondaryAudioHint
        case .buttonsControl: .buttonsControl
        case .remoteCommand: .remoteCommand
        case .sessionFinished: .sessionFinished
        case .hearingWarning: .hearingWarning
        case .decision: .decision
        }
    }

    /// The session the event is about, whose owner receives it even unsubscribed.
    public var session: SessionID? {
        switch self {
        case .interruptionBegan(let id, _), .interruptionEnded(let id, _), .remoteCommand(let id, _),
            .sessionFinished(let id):
            id
        default: nil
        }
    }
}

/// A policy decision as subscribers see it.
public struct DecisionReport: Codable, Hashable, Sendable {
    /// "R5".
    public var rule: String
    /// "headphones-unplugged".
    public var title: String
    /// What was done: "pause session 3".
    public var command: String
    public var reason: String
    /// What caused it: "headphones unplugged (reported by alsaControl)".
    public var cause: String?
    /// Seconds since hushd started.
    public var time: Double?

    public init(_ decision: Decision, cause: String? = nil, time: Double? = nil) {
        rule = decision.rule.rawValue
        title = decision.rule.title
        command = "\(decision.command)"
        reason = decision.reason
        self.cause = cause
        self.time = time.map { ($0 * 1000).rounded() / 1000 }
    }

    public init(rule: String, title: String, command: String, reason: String, cause: String?, time: Double?) {
        self.rule = rule
        self.title = title
        self.command = command
        self.reason = reason
        self.cause = cause
        self.time = time
    }
}

extension ControlEvent: Codable {
    private enum Key: String, CodingKey {
        case event, session, by, shouldResume, previous, route, reason, kind, step, position, shouldBeSilenced, key
        case rule, title, command, cause, time
        case decibelsA, dosePercent, enforced
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(kind, forKey: .event)
        switch self {
        case .interruptionBegan(let id, let cause):
            try container.encode(id.rawValue, forKey: .session)
            switch cause {
            case .session(let by):
                try container.encode(by.rawValue, forKey: .by)
                try container.encode("session", forKey: .reason)
            case .microphoneMuted:
                try container.encode("microphoneMuted", forKey: .reason)
            }
        case .interruptionEnded(let id, let shouldResume):
            try container.encode(id.rawValue, forKey: .session)
            try container.encode(shouldResume, forKey: .shouldResume)
        case .routeChanged(let change):
            try container.encode(change.previous.name, forKey: .previous)
            try container.encode(change.current.name, forKey: .route)
            try container.encode(change.reason, forKey: .reason)
        case .volumeChanged(let kind, let step, let route):
            try container.encode(kind, forKey: .kind)
            try container.encode(step.rawValue, forKey: .step)
            try container.encodeIfPresent(route?.name, forKey: .route)
        case .silenceChanged(let position):
            try container.encode(position, forKey: .position)
        case .secondaryAudioHint(let hint):
            try container.encode(hint, forKey: .shouldBeSilenced)
        case .buttonsControl(let kind):
            try container.encode(kind, forKey: .kind)
        case .remoteCommand(let id, let key):
            try container.encode(id.rawValue, forKey: .session)
            try container.encode(key, forKey: .key)
        case .sessionFinished(let id):
            try container.encode(id.rawValue, forKey: .session)
        case .hearingWarning(let warning):
            try container.encode(warning.kind.rawValue, forKey: .kind)
            try container.encode(warning.route.name, forKey: .route)
            try container.encode((warning.decibelsA * 10).rounded() / 10, forKey: .decibelsA)
            try container.encode(warning.dosePercent, forKey: .dosePercent)
            try container.encode(warning.enforced, forKey: .enforced)
        case .decision(let report):
            try container.encode(report.rule, forKey: .rule)
            try container.encode(report.title, forKey: .title)
            try container.encode(report.command, forKey: .command)
            try container.encode(report.reason, forKey: .reason)
            try container.encodeIfPresent(report.cause, forKey: .cause)
            try container.encodeIfPresent(report.time, forKey: .time)
        }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        func session(_ key: Key = .session) throws -> SessionID {
            SessionID(try container.decode(UInt64.self, forKey: key))
        }
        switch try container.decode(ControlEventKind.self, forKey: .event) {
        case .interruptionBegan:
            switch try container.decodeIfPresent(String.self, forKey: .reason) ?? "session" {
            case "session": self = .interruptionBegan(try session(), cause: .session(try session(.by)))
            case "microphoneMuted": self = .interruptionBegan(try session(), cause: .microphoneMuted)
            case let other:
                throw DecodingError.dataCorruptedError(
                    forKey: .reason,
                    in: container,
                    debugDescription: "an interruption's reason is session or microphoneMuted, not '\(other)'"
                )
            }
        case .interruptionEnded:
            self = .interruptionEnded(
                try session(),
                shouldResume: try container.decode(Bool.self, forKey: .shouldResume)
            )
        case .routeChanged:
            self = .routeChanged(
                RouteChange(
                    previous: Route(try container.decode(String.self, forKey: .previous)),
                    current: Route(try container.decode(String.self, forKey: .route)),
                    reason: try container.decode(RouteChangeReason.self, forKey: .reason)
                )
            )
        case .volumeChanged:
            let step = try container.decode(Int.self, forKey: .step)
            guard let volume = VolumeStep(rawValue: step) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .step,
                    in: container,
                    debugDescription: "volume step \(step) is outside 0…\(VolumeStep.count)"
                )
            }
            self = .volumeChanged(
                try container.decode(VolumeKind.self, forKey: .kind),
                volume,
                route: try container.decodeIfPresent(String.self, forKey: .route).map { Route($0) }
            )
        case .silenceChanged:
            self = .silenceChanged(try container.decode(SilenceSwitchPosition.self, forKey: .position))
        case .secondaryAudioHint:
            self = .secondaryAudioHint(shouldBeSilenced: try container.decode(Bool.self, forKey: .shouldBeSilenced))
        case .buttonsControl:
            self = .buttonsControl(try container.decode(VolumeKind.self, forKey: .kind))
        case .remoteCommand:
            self = .remoteCommand(try session(), try container.decode(MediaKey.self, forKey: .key))
        case .sessionFinished:
            self = .sessionFinished(try session())
        case .hearingWarning:
            let name = try container.decode(String.self, forKey: .kind)
            guard let kind = HearingWarning.Kind(rawValue: name) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .kind,
                    in: container,
                    debugDescription: "a hearing warning's kind is loud or dose, not '\(name)'"
                )
            }
            self = .hearingWarning(
                HearingWarning(
                    kind: kind,
                    route: Route(try container.decode(String.self, forKey: .route)),
                    decibelsA: try container.decode(Double.self, forKey: .decibelsA),
                    dosePercent: try container.decode(Int.self, forKey: .dosePercent),
                    enforced: try container.decode(Bool.self, forKey: .enforced)
                )
            )
        case .decision:
            self = .decision(
                DecisionReport(
                    rule: try container.decode(String.self, forKey: .rule),
                    title: try container.decode(String.self, forKey: .title),
                    command: try container.decode(String.self, forKey: .command),
                    reason: try container.decode(String.self, forKey: .reason),
                    cause: try container.decodeIfPresent(String.self, forKey: .cause),
                    time: try container.decodeIfPresent(Double.self, forKey: .time)
                )
            )
        }
    }
}
