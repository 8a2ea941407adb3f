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
/// Figures come per window of the system clock, aligned to it (seconds 0–30, 30–60, … of CLOCK_MONOTONIC), not per
/// 30 s of each device's own periods: two meters — the microphone's and the output's — then measure the same stretch
/// of time, and whatever moves the system clock against the devices' (NTP slewing it by up to 500 ppm; an emulator's
/// timer ticks late under load, which moved both loopback devices together by 250 ppm between runs on the virtual
/// board) moves both figures alike and leaves their ratio, the drift, alone. The ring between them (which
/// `ClockMatch` keeps at its fill) says how much stretch was applied, which is the drift plus whatever the reader
/// lost or caught up, and so cannot be the figure people read. Pure and allocation-free: it runs on the audio and
/// capture threads, and tests run it on any clock they make up.
package struct RateMeter: Sendable {
    /// Periods left out at the start of each stretch.
    package let skip: Int
    /// The window's length, nanoseconds of the system clock.
    package let window: Int
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
    /// The window under way (its index since the clock's zero, -1 before the first) and its pooled stretches'
    /// centred sums, and the seconds they cover.
    private var current = -1
    private var pooledXX = 0.0
    private var pooledXY = 0.0
    private var covered = 0.0

    /// The rate found over the latest window that was at least half covered, frames per second; nil before one.
    package private(set) var rate: Double?
    /// That window's index: `rate` was measured from `index × window` to `(index + 1) × window` nanoseconds.
    package private(set) var index = -1

    /// - Parameter window: seconds; at least one.
    package init(skip: Int, window: Int = 30) {
        self.skip = skip
        self.window = max(window, 1) * 1_000_000_000
    }

    /// A period of `frames` completed at `nanoseconds` (CLOCK_MONOTONIC). Returns true when it closed a window
    /// with a figure (``rate`` and ``index`` are new).
    @discardableResult
    package mutating func tick(frames: Int, at nanoseconds: Int) -> Bool {
        var published = false
        let now = nanoseconds / window
        if now != current {
            // The window's end: the stretch is cut there, not broken (the device runs on).
            if current >= 0 {
                let running = seen > skip
                fold()
                published = publish()
                if running { seen = skip }
            }
            current = now
        }
        seen += 1
        guard seen > skip else { return published }
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
        return published
    }

    /// The device stopped or changed (an underrun, an overrun, idle, another device): the stretch ends here, and
    /// the next begins after `skip` periods.
    package mutating func split() {
        fold()
    }

    /// Adds the stretch under way to the window's pool, if long enough, and starts a new one.
    private mutating func fold() {
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
        guard covered * 2e9 >= Double(window), pooledXX > 0, pooledXY > 0 else { return false }
        rate = pooledXX / pooledXY
        index = current
        return true
    }

    /// A figure as one word, so that another thread reads the rate and its window together: the window's index
    /// above 40 bits of millionths of a frame per second (up to 1.09 MHz). 0 before the first figure.
    package var packed: Int {
        guard let rate else { return 0 }
        return index << 40 | Int((rate * 1e6).rounded()) & ((1 << 40) - 1)
    }

    /// The rate and window index from ``packed``; nil for 0.
    package static func unpack(_ word: Int) -> (rate: Double, index: Int)? {
        guard word != 0 else { return nil }
        return (Double(word & ((1 << 40) - 1)) / 1e6, word >> 40)
    }
}

/// Two rates as the drift between two clocks, ppm: positive when `clock` runs slow against `reference` (it makes
/// fewer frames a second).
package func driftPPM(of clock: Double, against reference: Double) -> Double {
    (reference / clock - 1) * 1e6
}

/// The microphone's drift against the output's clock, from the two ``RateMeter``s' windows: the median over the
/// latest `windows` windows both measured. The two threads publish at their own moments, so the output's figure of
/// a window is kept until the microphone's comes.
///
/// A window in which either device's rate is off its nominal rate by more than ``implausiblePPM`` is left out: no
/// crystal is that far off, so something disturbed the window (an emulated machine's timers stalled for most of a
/// second, a device that stopped without an xrun to say so), and one such window moved a mean by hundreds of ppm
/// on the virtual board beside a loaded host (hushd said 370 ppm where the devices ran 82 apart). The median then
/// keeps one lumpy window among the rest from moving the figure much. Pure: the daemon feeds it, tests make it up.
package struct DriftEstimate: Sendable {
    /// No real device's rate is this far off its nominal one, ppm.
    package static let implausiblePPM = 1000.0
    package let windows: Int
    let outputNominal: Double
    let microphoneNominal: Double
    private var outputFigures: [(rate: Double, index: Int)] = []
    private var drifts: [(drift: Double, index: Int)] = []
    private var lastMicrophoneIndex = -1
    /// Windows left out because a rate was implausible.
    package private(set) var rejected = 0

    package init(windows: Int, outputNominal: Double, microphoneNominal: Double) {
        self.windows = max(windows, 1)
        self.outputNominal = outputNominal
        self.microphoneNominal = microphoneNominal
    }

    /// The output meter's latest figure (the same figure again changes nothing).
    package mutating func output(_ figure: (rate: Double, index: Int)) {
        guard outputFigures.last?.index != figure.index else { return }
        outputFigures.append(figure)
        if outputFigures.count > 4 { outputFigures.removeFirst() }
    }

    /// The microphone meter's latest figure: with the output's of the same window, one more drift (or a window
    /// left out).
    package mutating func microphone(_ figure: (rate: Double, index: Int)) {
        guard figure.index != lastMicrophoneIndex,
            let played = outputFigures.last(where: { $0.index == figure.index })
        else { return }
        lastMicrophoneIndex = figure.index
        guard abs(driftPPM(of: figure.rate, against: microphoneNominal)) <= Self.implausiblePPM,
            abs(driftPPM(of: played.rate, against: outputNominal)) <= Self.implausiblePPM
        else {
            rejected += 1
            return
        }
        // Each against its nominal rate: a microphone opened at 16 kHz beside a 48 kHz output drifts by the ratio.
        let drift = driftPPM(of: figure.rate / microphoneNominal, against: played.rate / outputNominal)
        drifts.append((drift, figure.index))
        if drifts.count > windows { drifts.removeFirst() }
    }

    /// The median drift, ppm (positive: the microphone runs slow); nil before a window.
    package var drift: Double? {
        guard !drifts.isEmpty else { return nil }
        let sorted = drifts.map(\.drift).sorted()
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    /// How many windows ``drift`` is the median of.
    package var count: Int { drifts.count }
}
