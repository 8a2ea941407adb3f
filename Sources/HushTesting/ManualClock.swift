import HushCore

/// A clock that moves only when told to, so tests decide exactly when time passes.
public final class ManualClock: MonotonicClock, @unchecked Sendable {
    private var current: Instant

    public init(_ start: Instant = .zero) { current = start }

    public func now() -> Instant { current }

    /// Moves the clock forward by `duration` (never backwards).
    public func advance(by duration: Duration) {
        precondition(duration >= .zero, "a monotonic clock cannot go backwards")
        current = current + duration
    }

    /// Moves the clock to `instant`, which must not be earlier than now.
    public func advance(to instant: Instant) {
        precondition(instant >= current, "a monotonic clock cannot go backwards")
        current = instant
    }
}
