import HushCore

/// What the policy knows about one active session.
public struct SessionRecord: Hashable, Sendable {
    /// Why a session is not playing.
    public enum PauseCause: String, Hashable, Sendable {
        /// Its client asked, or a media key did (R11, R15).
        case user
        /// Headphones were unplugged (R5, M3).
        case routeChange
        /// Another session took the floor (R6).
        case interruption
    }

    /// Where the session's sound is.
    public enum PlayState: Hashable, Sendable, CustomStringConvertible {
        /// Activated, never played.
        case idle
        case playing
        case paused(PauseCause)
        /// Stopped, or its sound came to its end.
        case stopped

        public var description: String {
            switch self {
            case .idle: "idle"
            case .playing: "playing"
            case .paused(let cause): "paused (\(cause))"
            case .stopped: "stopped"
            }
        }
    }

    /// Why a recording session does not hear the microphone though its sound may play (R21).
    public enum MicrophoneBlock: String, Hashable, Sendable, CustomStringConvertible {
        /// The privacy switch is on.
        case privacySwitch
        /// The switch was turned off since; the microphone waits for the session to be started again.
        case awaitingStart

        public var description: String {
            switch self {
            case .privacySwitch: "the privacy switch is on"
            case .awaitingStart: "waits to be started again after the privacy switch"
            }
        }
    }

    public let id: SessionID
    public let client: ClientID
    /// As activated; its level changes when the session sets it (R26).
    public internal(set) var configuration: SessionConfiguration
    public internal(set) var state: PlayState = .idle
    /// The sessions interrupting this one, oldest first. Empty when not interrupted.
    public internal(set) var interrupters: [SessionID] = []
    /// Whether every interrupter of the current interruption is transient (R8).
    public internal(set) var interruptionResumable = true
    /// Whether it was playing when the current interruption began, and nothing since cancelled that (R9, M3).
    public internal(set) var resumesAfterInterruption = false
    /// A non-mixable session that has not yet taken the floor because it was silent when activated (M1).
    public internal(set) var floorPending = false
    /// Set while the privacy switch keeps the microphone from this recording session, and after it until the
    /// session is started again (R21); nil otherwise.
    public internal(set) var microphoneBlock: MicrophoneBlock?
    /// When a person last acted on it (played or paused it, or unplugged under it); orders R11's choice.
    var lastUserActivity: UInt64 = 0

    /// What the engine was last told about this session's gain, and why.
    var emittedGain = Gain.unity
    var emittedSilenced = false
    var emittedDucked = false
    var emittedLevel = SessionLevel.unity
    var fresh = true

    public var isInterrupted: Bool { !interrupters.isEmpty }
    public var isPlaying: Bool { state == .playing }
}
