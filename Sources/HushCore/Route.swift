/// A named output path: a PCM and/or mixer switches, configured per board.
///
/// `speaker` and `headphones` are known to the policy (plug and unplug move between them); boards may configure
/// more (`lineout`, `hdmi`, …) that a person picks through a route override (policy R13).
public struct Route: Hashable, Sendable, Comparable, CustomStringConvertible, ExpressibleByStringLiteral {
    public let name: String
    public init(_ name: String) { self.name = name }
    public init(stringLiteral value: String) { self.name = value }

    public static let speaker = Route("speaker")
    public static let headphones = Route("headphones")

    public var description: String { name }
    public static func < (a: Route, b: Route) -> Bool { a.name < b.name }
}

/// Why the output route changed, after `AVAudioSession.RouteChangeReason`.
public enum RouteChangeReason: String, Sendable, Hashable, CustomStringConvertible {
    /// Headphones were plugged in (policy R4).
    case newDeviceAvailable
    /// Headphones were unplugged (policy R5).
    case oldDeviceUnavailable
    /// A person picked a route, or cleared their pick (policy R13).
    case override

    public var description: String { rawValue }
}

/// A route change as reported to clients.
public struct RouteChange: Hashable, Sendable, CustomStringConvertible {
    public var previous: Route
    public var current: Route
    public var reason: RouteChangeReason
    public init(previous: Route, current: Route, reason: RouteChangeReason) {
        self.previous = previous
        self.current = current
        self.reason = reason
    }
    public var description: String { "\(previous) → \(current) (\(reason))" }
}
