/// A point on hush's monotonic timeline, in nanoseconds since an arbitrary origin.
///
/// The policy never reads a clock: the daemon (or a test, or `hush-render`) tells it the time with every event.
public struct Instant: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var nanoseconds: Int64

    public init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }

    public static let zero = Instant(nanoseconds: 0)

    /// `milliseconds` after the origin; handy in tests and scenarios.
    public static func milliseconds(_ milliseconds: Int64) -> Instant {
        Instant(nanoseconds: milliseconds * 1_000_000)
    }

    public static func < (a: Instant, b: Instant) -> Bool { a.nanoseconds < b.nanoseconds }

    public static func + (a: Instant, d: Duration) -> Instant { Instant(nanoseconds: a.nanoseconds + d.nanoseconds) }

    public static func - (a: Instant, b: Instant) -> Duration { .nanoseconds(a.nanoseconds - b.nanoseconds) }

    /// "1.525s": whole milliseconds (truncated).
    public var description: String { DecimalText.fixed(Double(nanoseconds / 1_000_000) / 1000, places: 3) + "s" }
}

extension Duration {
    /// The duration in whole nanoseconds (truncated).
    public var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }

    /// The duration in whole milliseconds (truncated), for logs and reasons.
    public var milliseconds: Int64 { nanoseconds / 1_000_000 }
}

/// A source of monotonic time. The daemon uses the system's monotonic clock; tests use `ManualClock`.
public protocol MonotonicClock: AnyObject {
    /// The current instant. Never goes backwards.
    func now() -> Instant
}
