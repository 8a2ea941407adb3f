/// What a session's sound is for, after Apple's `AVAudioSession.Category`.
///
/// The category decides how the silence switch treats the session (policy R1), whether it can mix with others
/// (R6) and what happens when an interruption ends (R9).
public enum Category: String, Sendable, CaseIterable, Hashable, CustomStringConvertible {
    /// Sound that accompanies other audio (UI clicks, game effects). Mixable; silenced by the switch.
    case ambient
    /// The default: non-essential sound that takes the floor. Non-mixable; silenced by the switch.
    case soloAmbient
    /// Sound a person started on purpose (music, an alarm). Keeps sounding with the switch on.
    case playback
    /// Microphone capture only.
    case record
    /// Two-way audio: intercom and calls.
    case playAndRecord

    /// Whether the silence switch silences this category (policy R1).
    public var isSilencedBySwitch: Bool { self == .ambient || self == .soloAmbient }

    /// The bus a stream of this category plays on when it names none (the `hush` ALSA device without `BUS`):
    /// `ambient` sound accompanies others, so it is an effect; everything else — music, a game's soundtrack, a
    /// call's far end — plays on the music bus. The ringer bus is only ever chosen by name (a ringtone, an alarm).
    /// The one rule; docs/applications.md shows it.
    public var defaultBus: Bus { self == .ambient ? .effect : .music }

    /// Whether a session of this category hears the microphone.
    public var records: Bool { self == .record || self == .playAndRecord }

    public var description: String { rawValue }
}

/// Options that change how a session shares the output, after `AVAudioSession.CategoryOptions`.
public struct CategoryOptions: OptionSet, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Play alongside other sessions instead of interrupting them.
    public static let mixWithOthers = CategoryOptions(rawValue: 1 << 0)
    /// Lower every other audible session while this one is active (implies ``mixWithOthers``, as on iOS).
    public static let duckOthers = CategoryOptions(rawValue: 1 << 1)

    public var description: String {
        var names: [String] = []
        if contains(.mixWithOthers) { names.append("mixWithOthers") }
        if contains(.duckOthers) { names.append("duckOthers") }
        return names.isEmpty ? "[]" : "[" + names.joined(separator: ", ") + "]"
    }
}

/// What a session's microphone goes through, after Apple's `AVAudioSession.Mode` (policy R22). A mode matters only
/// to a session that records; a playback session's mode is carried and shown, and changes nothing.
public enum SessionMode: String, Sendable, CaseIterable, Hashable, CustomStringConvertible {
    /// The microphone as the board's profile delivers it.
    case `default`
    /// Two-way voice: echo cancellation against what hushd plays, noise suppression, a high-pass filter and
    /// (unless configured off) automatic gain — what `hush:voice` and a call get.
    case voiceChat
    /// The microphone exactly as it arrives, with no processing of any kind: for a tuner, a level meter, a test.
    case measurement

    /// Whether the microphone is processed for voice in this mode.
    public var processesVoice: Bool { self == .voiceChat }

    public var description: String { rawValue }
}
