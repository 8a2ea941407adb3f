/// What the policy tells clients (through the daemon's control socket and console).
public enum ClientEvent: Hashable, Sendable, CustomStringConvertible {
    /// The session lost the floor to another (policy R6), or its microphone to the privacy switch (R21).
    /// Addressed to the session's client.
    case interruptionBegan(SessionID, cause: InterruptionCause)
    /// The interruption is over; `shouldResume` says whether the client may resume on its own (policy R8).
    case interruptionEnded(SessionID, shouldResume: Bool)
    /// The output route changed (policies R4, R5, R13).
    case routeChanged(RouteChange)
    /// A volume moved.
    case volumeChanged(VolumeKind, VolumeStep, route: Route?)
    /// The silence switch moved.
    case silenceChanged(SilenceSwitchPosition)
    /// Whether apps should silence secondary audio, such as a game's soundtrack (policy R14).
    case secondaryAudioShouldBeSilenced(Bool)
    /// Which volume the volume buttons now control (policy R3).
    case buttonsControl(VolumeKind)
    /// A media key the client should act on itself (next, previous), addressed to the session's client (R11).
    case remoteCommand(SessionID, MediaKey)
    /// The listener on a private route was exposed to too much sound, and the volume comes down (policy R29).
    case hearingWarning(HearingWarning)

    /// The session this event is addressed to, or nil for a broadcast to every subscriber.
    public var session: SessionID? {
        switch self {
        case .interruptionBegan(let id, _), .interruptionEnded(let id, _), .remoteCommand(let id, _): id
        default: nil
        }
    }

    public var description: String {
        switch self {
        case .interruptionBegan(let id, let cause): "interruption began for \(id) (\(cause))"
        case .interruptionEnded(let id, let shouldResume):
            "interruption ended for \(id)" + (shouldResume ? ", should resume" : ", should not resume")
        case .routeChanged(let change): "route changed \(change)"
        case .volumeChanged(let kind, let step, let route):
            "\(kind) volume \(step)" + (route.map { " on \($0)" } ?? "")
        case .silenceChanged(let position): "silence switch \(position)"
        case .secondaryAudioShouldBeSilenced(let hint): "secondary audio should be silenced: \(hint ? "yes" : "no")"
        case .buttonsControl(let kind): "volume buttons control the \(kind) volume"
        case .remoteCommand(let id, let key): "remote command \(key) for \(id)"
        case .hearingWarning(let warning): "hearing warning: \(warning)"
        }
    }
}

/// Why a session's interruption began.
public enum InterruptionCause: Hashable, Sendable, CustomStringConvertible {
    /// Another session took the floor (R6).
    case session(SessionID)
    /// The microphone privacy switch is on (R21): no client hears the microphone; the session's sound plays on.
    case microphoneMuted

    /// The session that interrupted, if a session did.
    public var session: SessionID? {
        if case .session(let id) = self { id } else { nil }
    }

    public var description: String {
        switch self {
        case .session(let id): "by \(id)"
        case .microphoneMuted: "the microphone privacy switch is on"
        }
    }
}

/// The volumes and route choice that survive a restart (policy R12).
public struct PersistedVolumes: Hashable, Sendable {
    /// The system volume remembered for each route, in route order.
    public var system: [Route: VolumeStep]
    public var ringer: VolumeStep
    public var routeOverride: Route?

    public init(system: [Route: VolumeStep] = [:], ringer: VolumeStep, routeOverride: Route? = nil) {
        self.system = system
        self.ringer = ringer
        self.routeOverride = routeOverride
    }
}

/// Why a request was refused; the daemon passes it back to the client that asked.
public struct Rejection: Hashable, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        case unknownSession, duplicateSession, interrupted, unknownRoute, notPermitted
    }
    public var code: Code
    public var session: SessionID?
    public var message: String
    public init(_ code: Code, session: SessionID? = nil, _ message: String) {
        self.code = code
        self.session = session
        self.message = message
    }
    public var description: String { message }
}

/// One thing the policy orders the engine, the router or the daemon to do.
public enum Command: Hashable, Sendable, CustomStringConvertible {
    /// Move a session's gain (silence, ducking) to `gain` over `ramp`.
    case setSessionGain(SessionID, Gain, ramp: Duration)
    /// Move a bus's gain (the volume that scales it) to `gain` over `ramp`.
    case setBusGain(Bus, Gain, ramp: Duration)
    /// Start or continue rendering a session from its current position.
    case resume(SessionID)
    /// Stop rendering a session, keeping its position.
    case pause(SessionID)
    /// Stop rendering a session and forget its position.
    case stop(SessionID)
    /// Send output to this route.
    case selectRoute(Route)
    /// Light or put out the alert light: the stand-in for a phone's vibration while the switch mutes an alert
    /// (policy R16). The daemon drives `[outputs.alert_led]`.
    case setAlertLight(Bool)
    /// Close the microphone at its source, or open it again (R21): while closed, the capture router hands every
    /// consumer silence at the real rate, and the capture card's "Capture Switch" is off where the card has one.
    case muteMicrophone(Bool)
    /// Play the hearing warning's sound (`[sounds] hearing_warning`, policy R30): the daemon gives it a session of
    /// its own and hands it back as `.warningSound`.
    case playWarningSound
    /// Tell clients something.
    case notify(ClientEvent)
    /// Write these volumes to the state file.
    case persist(PersistedVolumes)
    /// Refuse a request, with the reason for the client.
    case reject(Rejection)
    /// Nothing changes; said so the person at the console learns why.
    case note(String)

    public var description: String {
        switch self {
        case .setSessionGain(let id, let gain, let ramp): "set \(id) gain \(gain) over \(ramp.milliseconds) ms"
        case .setBusGain(let bus, let gain, let ramp): "set \(bus) bus gain \(gain) over \(ramp.milliseconds) ms"
        case .resume(let id): "resume \(id)"
        case .pause(let id): "pause \(id)"
        case .stop(let id): "stop \(id)"
        case .selectRoute(let route): "select route \(route)"
        case .setAlertLight(let on): "alert light \(on ? "on" : "off")"
        case .muteMicrophone(let muted): muted ? "close the microphone" : "open the microphone"
        case .playWarningSound: "play the hearing warning sound"
        case .notify(let event): "notify: \(event)"
        case .persist(let volumes):
            "persist volumes (system "
                + volumes.system.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value.rawValue)" }
                .joined(separator: ", ") + "; ringer \(volumes.ringer.rawValue)"
                + (volumes.routeOverride.map { "; route override \($0)" } ?? "") + ")"
        case .reject(let rejection): "reject: \(rejection)"
        case .note(let text): "no change: \(text)"
        }
    }
}

/// A command with the rule that produced it and a reason a person can read:
/// "[R1 silence-switch] set session 2 gain -inf dB over 20 ms — silence switch on silences ambient sound".
public typealias Decision = Ruling<Command>

extension Ruling where Value == Command {
    /// What the policy orders.
    public var command: Command {
        get { value }
        set { value = newValue }
    }
}

/// A value the policy settled — a command, a stream's state, whether it hears the microphone — with the rule that
/// settled it and a reason a person can read.
public struct Ruling<Value: Hashable & Sendable>: Hashable, Sendable, CustomStringConvertible {
    public var value: Value
    public var rule: Rule
    public var reason: String

    public init(_ value: Value, rule: Rule, reason: String) {
        self.value = value
        self.rule = rule
        self.reason = reason
    }

    /// "[R19 stream-state] held — session 3 is interrupted (R6): hushd holds the stream, position kept"
    public var description: String { "[\(rule)] \(value) — \(reason)" }
}

/// Why the volume on a private route comes down (policy R29), for the person: a light, a sound, the console, the
/// socket.
public struct HearingWarning: Hashable, Sendable, CustomStringConvertible {
    public enum Kind: String, Hashable, Sendable, CaseIterable {
        /// The momentary level stayed over the limit for several seconds.
        case loud
        /// The week's dose passed another 100 %.
        case dose
    }

    public var kind: Kind
    public var route: Route
    /// The momentary level at the listener, in dB(A), the second the warning came.
    public var decibelsA: Double
    /// The week's dose then, in percent.
    public var dosePercent: Int
    /// At the enforced dose (500 %) the reduction is not optional: the volume stays down.
    public var enforced: Bool

    public init(kind: Kind, route: Route, decibelsA: Double, dosePercent: Int, enforced: Bool) {
        self.kind = kind
        self.route = route
        self.decibelsA = decibelsA
        self.dosePercent = dosePercent
        self.enforced = enforced
    }

    public var description: String {
        let level = DecimalText.fixed(decibelsA, places: 0)
        switch kind {
        case .loud: return "\(level) dB(A) on \(route) for several seconds; the week's dose \(dosePercent) %"
        case .dose:
            return "the week's sound dose on \(route) is \(dosePercent) % (\(level) dB(A) now)"
                + (enforced ? "; the volume stays down" : "")
        }
    }
}
