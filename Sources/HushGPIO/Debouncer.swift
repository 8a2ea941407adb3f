import HushCore

/// Software debounce that adds no latency: the first edge is accepted at once, then the line is ignored for the
/// debounce window; when the window ends, the settled level is reported if it differs. A bounce train therefore
/// collapses to one event, and a real change during the window is never lost.
///
/// Pure logic, driven by edge events and time, so it is tested without hardware.
package struct Debouncer: Hashable, Sendable {
    package let window: Duration
    /// The level last reported (true = active).
    package private(set) var reported: Bool
    /// The end of the hold-off window, while one runs.
    package private(set) var holdUntil: Instant?
    /// The latest level seen during the window.
    private var latest: Bool

    /// A debouncer for a line whose level is `initial`, read from the hardware at start-up.
    package init(window: Duration = .milliseconds(10), initial: Bool) {
        self.window = window
        reported = initial
        latest = initial
    }

    /// When ``expire(at:level:)`` must be called, if a window is running.
    package var deadline: Instant? { holdUntil }

    /// An edge to `level` happened at `time`. Returns the level to report now, or nil.
    package mutating func edge(to level: Bool, at time: Instant) -> Bool? {
        latest = level
        if let holdUntil, time < holdUntil { return nil }
        holdUntil = nil
        guard level != reported else { return nil }
        reported = level
        holdUntil = time + window
        return level
    }

    /// The window ended at `time`; `level` is the line's level now (read from the hardware, or nil to trust the
    /// last edge). Returns the settled level to report if it differs from what was reported, starting a new window.
    package mutating func expire(at time: Instant, level: Bool? = nil) -> Bool? {
        guard let holdUntil, time >= holdUntil else { return nil }
        self.holdUntil = nil
        let settled = level ?? latest
        latest = settled
        guard settled != reported else { return nil }
        reported = settled
        self.holdUntil = holdUntil + window
        return settled
    }
}
