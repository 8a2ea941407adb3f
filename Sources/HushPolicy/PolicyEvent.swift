import HushCore

/// Everything the policy reacts to. The time comes with each event (``AudioPolicy/handle(_:at:)``).
public enum PolicyEvent: Hashable, Sendable, CustomStringConvertible {
    /// The switch, a button, a media key or the jack.
    case input(InputEvent)
    /// A client asks for a session (R6, R7, R15).
    case activate(SessionID, client: ClientID, SessionConfiguration)
    /// A client is done with a session; with `notifyOthers` the sessions it interrupted may resume (R8).
    case deactivate(SessionID, notifyOthers: Bool)
    /// Start or continue a session's sound (R15).
    case play(SessionID)
    /// Pause a session's sound, keeping its position (R15).
    case pause(SessionID)
    /// Stop a session's sound (R15).
    case stop(SessionID)
    /// The engine reports that a session's sound came to its end.
    case finished(SessionID)
    /// A client disconnected or crashed (R10).
    case clientGone(ClientID)
    /// Set a volume directly: hushctl, the console, an ALSA mixer control (R2).
    case setVolume(VolumeKind, VolumeStep)
    /// Pick a route, or with nil go back to automatic routing (R13).
    case setRouteOverride(Route?)
    /// Nothing but time passing (held-button repeats, R3).
    case timePassed
    /// hushd is ready and plays its start-up sound in this new session of its own (R25).
    case startupSound(SessionID)
    /// hushd plays the hearing warning's sound, which the policy asked for (R30), in this new session of its own.
    case warningSound(SessionID)
    /// A session's own level, relative to its bus (R26).
    case setLevel(SessionID, SessionLevel)
    /// What the listener on the route was exposed to over the last second (R29), once a second while it plays.
    case exposure(Exposure)

    public var description: String {
        switch self {
        case .input(let event): "\(event)"
        case .activate(let id, let client, let configuration): "activate \(id) for \(client): \(configuration)"
        case .deactivate(let id, let notify): "deactivate \(id)" + (notify ? " notifying others" : "")
        case .play(let id): "play \(id)"
        case .pause(let id): "pause \(id)"
        case .stop(let id): "stop \(id)"
        case .finished(let id): "\(id) finished"
        case .clientGone(let client): "\(client) gone"
        case .setVolume(let kind, let step): "set \(kind) volume \(step)"
        case .setRouteOverride(let route): route.map { "route override \($0)" } ?? "route override cleared"
        case .timePassed: "time passed"
        case .startupSound(let id): "start-up sound in \(id)"
        case .warningSound(let id): "hearing warning sound in \(id)"
        case .setLevel(let id, let level): "set \(id) level \(level)"
        case .exposure(let exposure): "exposure \(exposure)"
        }
    }
}
