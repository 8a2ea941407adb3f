/// Identifies an audio session. Chosen by whoever activates it (the daemon assigns them per connection).
public struct SessionID: RawRepresentable, Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public init(_ value: UInt64) { self.rawValue = value }
    public var description: String { "session \(rawValue)" }
    public static func < (a: SessionID, b: SessionID) -> Bool { a.rawValue < b.rawValue }
}

/// Identifies a client: a control-socket connection, the console, or a scenario. Sessions belong to a client;
/// when it goes away, so do they (policy R10).
public struct ClientID: RawRepresentable, Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public init(_ value: UInt64) { self.rawValue = value }
    public var description: String { self == .hushd ? "hushd" : "client \(rawValue)" }
    public static func < (a: ClientID, b: ClientID) -> Bool { a.rawValue < b.rawValue }
    /// hushd itself, the owner of the sessions no connection asked for: the start-up sound (policy R25).
    public static let hushd = ClientID(UInt64.max)
}

/// Identifies an application's stream through the `hush` ALSA device: one PCM an application opened, carried by
/// one control-socket connection and a shared-memory ring (docs/protocol.md, "Streams").
public struct StreamID: RawRepresentable, Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public init(_ value: UInt64) { self.rawValue = value }
    public var description: String { "stream \(rawValue)" }
    public static func < (a: StreamID, b: StreamID) -> Bool { a.rawValue < b.rawValue }
}

/// Which way a stream's frames go.
/// What a `stream` request does to an open stream; each is the ALSA call the plugin forwards.
public enum StreamAction: String, Hashable, Sendable, CaseIterable, Codable, CustomStringConvertible {
    /// snd_pcm_start: frames start to move at the real rate.
    case start
    /// snd_pcm_pause(1): frames stop moving; the position is kept.
    case pause
    /// snd_pcm_pause(0): frames move again from where they stopped.
    case resume
    /// snd_pcm_drop: frames stop at once; what the ring holds is dropped.
    case stop
    /// snd_pcm_prepare: ready to start again (after `stop`, or to recover from an xrun).
    case prepare

    public var description: String { rawValue }
}

public enum StreamDirection: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    /// The application plays: frames go from it to a bus.
    case playback
    /// The application records: frames come from the microphone (or silence) to it.
    case capture
    public var description: String { rawValue }
}

/// The sample formats a stream may carry (interleaved, little-endian), as `hush_wire.h` numbers them.
public enum StreamSampleFormat: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    case s16LE = "S16_LE"
    case s32LE = "S32_LE"
    case floatLE = "FLOAT_LE"
    /// Bytes per sample.
    public var bytes: Int { self == .s16LE ? 2 : 4 }
    public var description: String { rawValue }
}

/// How a session wants to sound: its bus, category, options and mode.
public struct SessionConfiguration: Hashable, Sendable, CustomStringConvertible {
    public var bus: Bus
    public var category: Category
    public var options: CategoryOptions
    /// Declared short-lived (a prompt, a notification): what it interrupts may resume after it (policy R8).
    public var transient: Bool
    /// What the microphone's frames go through before the session hears them (policy R22).
    public var mode: SessionMode
    /// The session's own level, relative to its bus: 0 dB or below, never above (policy R26). The bus's volume
    /// still governs the result.
    public var level: SessionLevel

    public init(
        bus: Bus,
        category: Category,
        options: CategoryOptions = [],
        transient: Bool = false,
        mode: SessionMode = .default,
        level: SessionLevel = .unity
    ) {
        self.bus = bus
        self.category = category
        self.options = options
        self.transient = transient
        self.mode = mode
        self.level = level
    }

    /// Whether the session plays alongside non-mixable sessions instead of interrupting them (policy R6).
    /// ambient always mixes; duckOthers implies mixWithOthers, as on iOS.
    public var isMixable: Bool {
        category == .ambient || options.contains(.mixWithOthers) || options.contains(.duckOthers)
    }

    /// Whether interruptions this session causes are resumable (policy R8): ringer-bus sessions, calls
    /// (playAndRecord) and sessions activated as transient.
    public var interruptsTransiently: Bool { bus == .ringer || category == .playAndRecord || transient }

    public var description: String {
        var text = "\(bus) \(category)"
        if !options.isEmpty { text += " \(options)" }
        if transient { text += " transient" }
        if mode != .default { text += " \(mode)" }
        if level != .unity { text += " at \(level)" }
        return text
    }
}

/// A session's own level (policy R26): a gain in decibels from ``range``'s −96 dB to 0 dB, which an application
/// sets for its sound relative to others' — its clicks under its prompts — while the system or ringer volume
/// still governs the bus. Never above 0 dB: a session is never louder than its bus allows.
public struct SessionLevel: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The levels a session may take, in decibels.
    public static let range: ClosedRange<Float> = -96...0
    /// 0 dB: the session as loud as its bus allows.
    public static let unity = SessionLevel(uncheckedDecibels: 0)

    /// The level in decibels, within ``range``.
    public let decibels: Float

    /// The level of `decibels`, or nil outside ``range`` (or not a number).
    public init?(decibels: Float) {
        guard decibels.isFinite, Self.range.contains(decibels) else { return nil }
        self.decibels = decibels == 0 ? 0 : decibels  // −0 is 0
    }

    private init(uncheckedDecibels: Float) { decibels = uncheckedDecibels }

    /// The level a person typed: "-10", "-3.5", "-6dB" (the unit optional, any case); nil when it is not a number
    /// of decibels within ``range``. The one reading of the shell, the console and hushctl.
    public init?(text: String) {
        var number = Substring(text)
        if number.lowercased().hasSuffix("db") { number = number.dropLast(2) }
        guard let decibels = Float(number) else { return nil }
        self.init(decibels: decibels)
    }

    /// The level as a linear factor (1 at 0 dB).
    public var gain: Gain { Gain(decibels: decibels) }

    /// What a person reads: "-10 dB", "-3.5 dB", "0 dB".
    public var description: String { DecimalText.trimmed(decibels, places: 1) + " dB" }

    public static func < (a: SessionLevel, b: SessionLevel) -> Bool { a.decibels < b.decibels }
}
