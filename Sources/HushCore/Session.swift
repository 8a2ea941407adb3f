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
    public var description: String { "client \(rawValue)" }
    public static func < (a: ClientID, b: ClientID) -> Bool { a.rawValue < b.rawValue }
}

/// How a session wants to sound: its bus, category and options.
public struct SessionConfiguration: Hashable, Sendable, CustomStringConvertible {
    public var bus: Bus
    public var category: Category
    public var options: CategoryOptions
    /// Declared short-lived (a prompt, a notification): what it interrupts may resume after it (policy R8).
    public var transient: Bool

    public init(bus: Bus, category: Category, options: CategoryOptions = [], transient: Bool = false) {
        self.bus = bus
        self.category = category
        self.options = options
        self.transient = transient
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
        return text
    }
}
