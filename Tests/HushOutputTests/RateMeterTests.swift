import HushTesting
import Testing

@testable import HushOutput

/// A device's rate from the times its periods complete (``RateMeter``), on made-up clocks: late wake-ups, an
/// emulator's 4 ms timer ticks, underruns that stop the device, a buffer filled at once after each start, a system
/// clock that runs fast and slow by turns.
@Suite("A device's rate from when its periods complete")
struct RateMeterTests {
    /// Uniform in [0, 1) from the shared seeded generator, so every run sees the same jitter.
    struct Jitter {
        var generator: SeededGenerator
        init(state: UInt64) { generator = SeededGenerator(seed: state) }
        mutating func next() -> Double { Double(generator.next() >> 11) / Double(1 << 53) }
    }

    struct Device {
        var ppm: Double
        var period = 64
        var rate = 48000.0
        /// A wake-up up to this late (uniform), and one in `stallEvery` periods 20 ms late.
        var lateness = 0.002
        var stallEvery = 500
        /// The timer's tick: completions are seen at the next tick (0: exactly).
        var tick = 0.004
        /// An underrun every this many seconds stops the device for `stop` seconds (0: never).
        var underrunEvery = 0.0
        var stop = 0.05
        /// Periods taken at once after each start (the buffer filling).
        var burst = 4
        var trueRate: Double { rate * (1 + ppm * 1e-6) }
    }

    /// The system clock's reading at true time `t` when it runs `error(t)` fast (ppm), piecewise constant over
    /// 10 s steps; nil error: exact.
    static func systemTime(_ t: Double, error: ((Int) -> Double)?) -> Double {
        guard let error else { return t }
        var reading = 0.0
        var step = 0
        while Double(step + 1) * 10 <= t {
            reading += 10 * (1 + error(step) * 1e-6)
            step += 1
        }
        return reading + (t - Double(step) * 10) * (1 + error(step) * 1e-6)
    }

    /// Runs `device` from 0 to `seconds` of true time through a meter; returns its figures (rate, window index).
    static func measure(
        _ device: Device,
        seconds: Double,
        skip: Int = 5,
        window: Int = 30,
        clockError: ((Int) -> Double)? = nil,
        seed: UInt64 = 26
    ) -> [(rate: Double, index: Int)] {
        var meter = RateMeter(skip: skip, window: window)
        var jitter = Jitter(state: seed)
        var figures: [(Double, Int)] = []
        var clock = 0.0  // the device's time, s
        var burst = device.burst
        var index = 0
        var nextUnderrun = device.underrunEvery > 0 ? device.underrunEvery : .infinity
        while clock < seconds {
            let periodTime = Double(device.period) / device.trueRate
            // A started device takes its buffer at once: those periods return at the start.
            if burst > 0 { burst -= 1 } else { clock += periodTime }
            var seen = clock + jitter.next() * device.lateness
            index += 1
            if index % device.stallEvery == 0 { seen += 0.02 }
            if device.tick > 0 { seen = (seen / device.tick).rounded(.up) * device.tick }
            let reading = systemTime(seen, error: clockError)
            if meter.tick(frames: device.period, at: Int(reading * 1e9)), let rate = meter.rate {
                figures.append((rate, meter.index))
            }
            if clock >= nextUnderrun {
                meter.split()
                clock += device.stop
                burst = device.burst
                nextUnderrun = clock + device.underrunEvery
            }
        }
        return figures
    }

    static func ppm(_ measured: Double, _ device: Device) -> Double { (measured / device.trueRate - 1) * 1e6 }

    @Test(
        "late wake-ups on a 4 ms timer: the rate within 2 ppm, a figure per 30 s window",
        arguments: [100.0, 0, -250]
    )
    func jitteredClock(ppm: Double) {
        let device = Device(ppm: ppm)
        let figures = Self.measure(device, seconds: 125)
        let errors = figures.map { Self.ppm($0.rate, device) }
        print("rate meter at \(ppm) ppm, 2 ms late wake-ups on 4 ms ticks: errors \(errors) ppm")
        // Windows 0–30, 30–60, 60–90, 90–120; the last, 120–125, is under way.
        #expect(figures.map(\.index) == [0, 1, 2, 3])
        #expect(errors.allSatisfy { abs($0) < 2 }, "\(errors)")
    }

    @Test("an underrun every 10 s, each a 50 ms stop and a buffer taken at once: the stretches pool, the rate holds")
    func underruns() {
        let device = Device(ppm: 100, underrunEvery: 10, burst: 4)
        let errors = Self.measure(device, seconds: 100).map { Self.ppm($0.rate, device) }
        print("rate meter, an underrun every 10 s: errors \(errors) ppm")
        #expect(errors.count == 3)
        #expect(errors.allSatisfy { abs($0) < 10 }, "\(errors)")
    }

    @Test(
        "a system clock 300 ppm fast, then slow, by turns: two devices' drift is exact over one window, wrong across two"
    )
    func alignedWindows() {
        // The system clock's error changes every 10 s; the microphone runs 100 ppm slow against the output.
        let error: (Int) -> Double = { step in [300, -300, 150, -200, 50, 250][step % 6] }
        let output = Device(ppm: 0)
        let microphone = Device(ppm: -100, period: 256)
        let played = Self.measure(output, seconds: 125, clockError: error)
        let heard = Self.measure(microphone, seconds: 125, clockError: error, seed: 3)
        var same: [Double] = []
        var across: [Double] = []
        for figure in heard {
            if let match = played.first(where: { $0.index == figure.index }) {
                same.append(driftPPM(of: figure.rate, against: match.rate))
            }
            if let next = played.first(where: { $0.index == figure.index + 1 }) {
                across.append(driftPPM(of: figure.rate, against: next.rate))
            }
        }
        print("rate meters under a wandering system clock: drift from one window \(same), across windows \(across) ppm")
        #expect(same.count >= 3)
        #expect(same.allSatisfy { abs($0 - 100) < 5 }, "\(same)")
        #expect(across.contains { abs($0 - 100) > 50 }, "the clock's wandering shows across windows: \(across)")
    }

    @Test("nothing before a window closes; a window less than half covered gives no figure")
    func window() {
        var meter = RateMeter(skip: 0, window: 1)
        var published = false
        // 0.3 s of periods in window 0, then a jump to window 1: too little of window 0 to say anything.
        for index in 0..<30 { published = meter.tick(frames: 480, at: index * 10_000_000) || published }
        published = meter.tick(frames: 480, at: 1_000_000_000) || published
        #expect(!published && meter.rate == nil)
        // All of window 1, then window 2 begins: a figure for window 1.
        for index in 1..<101 { published = meter.tick(frames: 480, at: 1_000_000_000 + index * 10_000_000) }
        #expect(published)
        #expect(meter.index == 1)
        #expect(abs((meter.rate ?? 0) - 48000) < 1e-6, "\(meter.rate ?? 0)")
        let word = meter.packed
        #expect(RateMeter.unpack(word)?.index == 1)
        #expect(abs((RateMeter.unpack(word)?.rate ?? 0) - 48000) < 1e-6)
        #expect(RateMeter.unpack(0) == nil)
    }

    @Test("drift: a microphone that makes more frames a second than the output runs fast (negative)")
    func driftSign() {
        #expect(abs(driftPPM(of: 48004.8, against: 48000) + 100) < 0.02)
        #expect(abs(driftPPM(of: 47995.2, against: 48000) - 100) < 0.02)
    }
}

/// The drift hushd says from the two meters' windows (``DriftEstimate``).
@Suite("The microphone's drift from both meters' windows")
struct DriftEstimateTests {
    /// A microphone `ppm` slow against an output at exactly 16 kHz, in window `index`.
    static func feed(_ estimate: inout DriftEstimate, index: Int, ppm: Double, output: Double = 16000) {
        estimate.output((output, index))
        estimate.microphone((16000 * (1 - ppm / 1e6), index))
    }

    @Test("the median of the latest windows: one lumpy window among eight moves it little")
    func median() {
        var estimate = DriftEstimate(windows: 8, outputNominal: 16000, microphoneNominal: 16000)
        #expect(estimate.drift == nil)
        for (index, ppm) in [100.0, 98, 102, 99, 101, 100, 400, 100].enumerated() {
            Self.feed(&estimate, index: index, ppm: ppm)
        }
        let drift = estimate.drift ?? 0
        #expect(estimate.count == 8 && abs(drift - 100) < 1, "median \(drift); a mean would be 137.5")
        // The oldest windows leave as new ones come.
        for index in 8..<16 { Self.feed(&estimate, index: index, ppm: -50) }
        #expect(estimate.count == 8 && abs((estimate.drift ?? 0) + 50) < 0.5)
    }

    @Test("a window with a rate more than 1000 ppm off its nominal one is left out and counted")
    func implausible() {
        var estimate = DriftEstimate(windows: 8, outputNominal: 16000, microphoneNominal: 16000)
        Self.feed(&estimate, index: 0, ppm: 80)
        // The emulated machine stalled: the output measured 820 ppm slow, the microphone 1300 fast.
        Self.feed(&estimate, index: 1, ppm: -1300, output: 15986.9)
        Self.feed(&estimate, index: 2, ppm: 82, output: 15986.9 - 10)
        Self.feed(&estimate, index: 3, ppm: 84)
        #expect(estimate.rejected == 2)
        #expect(estimate.count == 2 && abs((estimate.drift ?? 0) - 82) < 0.5)
    }

    @Test("a drift needs both meters' figures of the same window; a figure said twice counts once")
    func matching() {
        var estimate = DriftEstimate(windows: 8, outputNominal: 48000, microphoneNominal: 16000)
        estimate.microphone((15998.4, 5))
        #expect(estimate.count == 0, "the output has not measured window 5")
        estimate.output((48000, 4))
        estimate.microphone((15998.4, 5))
        #expect(estimate.count == 0)
        estimate.output((48000, 5))
        estimate.microphone((15998.4, 5))
        estimate.microphone((15998.4, 5))
        #expect(estimate.count == 1)
        #expect(abs((estimate.drift ?? 0) - 100) < 0.1, "each rate against its own nominal one: 100 ppm slow")
    }
}
