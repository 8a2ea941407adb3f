/// A device's real rate, frames per second of CLOCK_MONOTONIC, from the times its periods complete: a blocking write
/// (or read) returns when the device has made room for (or filled) a period, so those times follow the device's
/// crystal, each late by a scheduling delay and never early. A least-squares line of time against frames through
/// them over many seconds gives the rate to a few ppm even when each time is off by milliseconds (an emulator's
/// timer ticks every 4 ms) and some by tens.
///
/// An underrun, an overrun, a device change or an idle stretch breaks the line: the device stopped, and its frames
/// no longer say what time it is. ``split()`` ends a stretch there; the stretches are pooled with one slope and an
/// intercept each, so a break loses nothing before it. The first ``skip`` periods of each stretch are left out: a
/// started device takes its whole buffer at once, and those writes return at once.
///
/// Two meters — the microphone's and the output's — give the two clocks' drift apart; the ring between them (which
/// `ClockMatch` keeps at its fill) says how much stretch was applied, which is the drift plus whatever the reader
/// lost or caught up, and so cannot be the figure people read. Pure and allocation-free: it runs on the audio and
/// capture threads, and tests run it on any clock they make up.
package struct RateMeter: Sendable {
    /// Periods left out at the start of each stretch.
    package let skip: Int
    /// Seconds of stretches pooled per figure.
    package let window: Double
    /// The fewest periods a stretch needs to count.
    static let shortest = 8

    /// The stretch under way: periods seen in it, where it began, and its points — frames since the origin (x)
    /// against seconds since it (y) — summed.
    private var seen = 0
    private var origin = 0
    private var frames = 0
    private var count = 0.0
    private var sumX = 0.0
    private var sumY = 0.0
    private var sumXX = 0.0
    private var sumXY = 0.0
    private var last = 0.0
    /// The pooled stretches' centred sums, and the seconds they cover.
    private var pooledXX = 0.0
    private var pooledXY = 0.0
    private var covered = 0.0

    /// The rate found over the latest whole window, frames per second; nil before the first.
    package private(set) var rate: Double?
    /// Windows completed.
    package private(set) var figures = 0

    package init(skip: Int, window: Double = 30) {
        self.skip = skip
        self.window = window
    }

    /// A period of `frames` completed at `nanoseconds` (CLOCK_MONOTONIC). Returns true when it completed a window
    /// (``rate`` is new).
    @discardableResult
    package mutating func tick(frames: Int, at nanoseconds: Int) -> Bool {
        seen += 1
        guard seen > skip else { return false }
        if seen == skip + 1 {
            origin = nanoseconds
            self.frames = 0
        }
        self.frames += frames
        // Time is what is off (a wake-up is late, never early), so it is the line's y: seconds per frame.
        let x = Double(self.frames)
        let y = Double(nanoseconds - origin) / 1e9
        count += 1
        sumX += x
        sumY += y
        sumXX += x * x
        sumXY += x * y
        last = y
        guard covered + last >= window else { return false }
        split()
        return publish()
    }

    /// The device stopped or changed (an underrun, an overrun, idle, another device): the stretch ends here.
    package mutating func split() {
        if count >= Double(Self.shortest) && last > 0 {
            pooledXX += sumXX - sumX * sumX / count
            pooledXY += sumXY - sumX * sumY / count
            covered += last
        }
        seen = 0
        frames = 0
        count = 0
        sumX = 0
        sumY = 0
        sumXX = 0
        sumXY = 0
        last = 0
    }

    private mutating func publish() -> Bool {
        defer {
            pooledXX = 0
            pooledXY = 0
            covered = 0
        }
        guard pooledXX > 0, pooledXY > 0 else { return false }
        rate = pooledXX / pooledXY
        figures += 1
        // The stretch goes on: its next period starts a new line (one period's slope is lost, not the time).
        seen = skip
        return true
    }
}

/// Two rates as the drift between two clocks, ppm: positive when `clock` runs slow against `reference` (it makes
/// fewer frames a second).
package func driftPPM(of clock: Double, against reference: Double) -> Double {
    (reference / clock - 1) * 1e6
}
