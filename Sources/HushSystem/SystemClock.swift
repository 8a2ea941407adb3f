import HushCore

#if canImport(Glibc)
import Glibc
#endif

/// The system's monotonic clock (CLOCK_MONOTONIC): the timeline kernel input timestamps use too.
package final class SystemClock: MonotonicClock, @unchecked Sendable {
    package init() {}

    package func now() -> Instant {
        var ts = timespec()
        // SAFETY: clock_gettime writes one timespec into the local; CLOCK_MONOTONIC always exists on Linux.
        let result = clock_gettime(CLOCK_MONOTONIC, &ts)
        precondition(result == 0, "CLOCK_MONOTONIC is unavailable")
        return Instant(nanoseconds: Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec))
    }

    /// Sleeps until `instant` (returns at once if it has passed).
    package func sleep(until instant: Instant) {
        let remaining = instant.nanoseconds - now().nanoseconds
        guard remaining > 0 else { return }
        var request = timespec(tv_sec: Int(remaining / 1_000_000_000), tv_nsec: Int(remaining % 1_000_000_000))
        var left = timespec()
        while nanosleep(&request, &left) == -1 && errno == EINTR { request = left }
    }
}

/// CLOCK_MONOTONIC in nanoseconds: a vDSO read, no system call, so the audio thread may call it.
@inline(__always)
package func monotonicNanoseconds() -> Int {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return now.tv_sec * 1_000_000_000 + now.tv_nsec
}
