import HushCore

/// A stand-in for the mixer, router and client hub: it carries out decisions on a model and records them,
/// so tests check what the engine was told to do, not what the policy thinks it did.
public struct RecordingEngine: Sendable {
    /// Every decision, in order.
    public private(set) var log: [Decision] = []
    /// Each session's gain as last set (sessions never set are at unity).
    public private(set) var sessionGains: [SessionID: Gain] = [:]
    /// Each bus's gain as last set.
    public private(set) var busGains: [Bus: Gain] = [:]
    /// Sessions the engine is rendering.
    public private(set) var playing: Set<SessionID> = []
    /// Sessions whose client was told their interruption began and not yet that it ended.
    public private(set) var interrupted: Set<SessionID> = []
    /// Sessions told the privacy switch took their microphone (R21), and not yet that it is off again.
    public private(set) var microphoneInterrupted: Set<SessionID> = []
    /// Whether the microphone is closed at its source (R21).
    public private(set) var microphoneMuted = false
    public private(set) var route: Route?
    /// Whether the alert light is lit (R16).
    public private(set) var alertLight = false
    public private(set) var notifications: [ClientEvent] = []
    public private(set) var persisted: PersistedVolumes?
    public private(set) var rejections: [Rejection] = []

    public init() {}

    /// The gain the engine applies to `session` (unity if never set).
    public func gain(of session: SessionID) -> Gain { sessionGains[session] ?? .unity }

    /// Carries out `decisions` in order.
    public mutating func apply(_ decisions: [Decision]) {
        for decision in decisions { apply(decision) }
    }

    public mutating func apply(_ decision: Decision) {
        log.append(decision)
        switch decision.command {
        case .setSessionGain(let id, let gain, _): sessionGains[id] = gain
        case .setBusGain(let bus, let gain, _): busGains[bus] = gain
        case .resume(let id): playing.insert(id)
        case .pause(let id): playing.remove(id)
        case .stop(let id):
            playing.remove(id)
        case .selectRoute(let route): self.route = route
        case .setAlertLight(let on): alertLight = on
        case .muteMicrophone(let muted): microphoneMuted = muted
        case .notify(let event):
            notifications.append(event)
            switch event {
            case .interruptionBegan(let id, .microphoneMuted): microphoneInterrupted.insert(id)
            case .interruptionBegan(let id, .session): interrupted.insert(id)
            case .interruptionEnded(let id, _) where decision.rule == .r21: microphoneInterrupted.remove(id)
            case .interruptionEnded(let id, _): interrupted.remove(id)
            default: break
            }
        case .persist(let volumes): persisted = volumes
        case .reject(let rejection): rejections.append(rejection)
        case .note, .playWarningSound: break
        }
    }

    /// The engine's own report that a session's sound came to its end.
    public mutating func finished(_ id: SessionID) { playing.remove(id) }

    /// Forgets a session that is gone (deactivated), as the mixer drops its voice.
    public mutating func forget(_ id: SessionID) {
        sessionGains[id] = nil
        playing.remove(id)
        interrupted.remove(id)
        microphoneInterrupted.remove(id)
    }
}
