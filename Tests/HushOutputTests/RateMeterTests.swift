import Testing

@testable import HushOutput

/// A device's rate from the times its periods complete (``RateMeter``), on made-up clocks: late wake-ups, an
/// emulator's 4 ms timer ticks, underruns that stop the device, a buffer filled at once after each start.
@Suite("A device's rate from when its periods complete")
struct RateMeterTests {
    /// A small deterministic generator (SplitMix64), so every run sees the same jitter.
    struct Jitter {
        var state: UInt64
        mutating func next() -> Double {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return Double((z ^ (z >> 31)) >> 11) / Double(1 << 53)
        }
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

    /// Runs `device` for `seconds` through a meter; returns the meter's figures.
    static func measure(_ device: Device, seconds: Double, skip: Int = 5, window: Double = 30) -> [Double] {
        var meter = RateMeter(skip: skip, window: window)
        var jitter = Jitter(state: 26)
        var figures: [Double] = []
        var clock = 1000.0  // the device's time, s
        var burst = device.burst
        var index = 0
        var nextUnderrun = device.underrunEvery > 0 ? clock + device.underrunEvery : .infinity
        while clock < 1000 + seconds {
            let periodTime = Double(device.period) / device.trueRate
            // A started device takes its buffer at once: those periods return at the start.
            if burst > 0 { burst -= 1 } else { clock += periodTime }
            var seen = clock + jitter.next() * device.lateness
            index += 1
            if index % device.stallEvery == 0 { seen += 0.02 }
            if device.tick > 0 { seen = (seen / device.tick).rounded(.up) * device.tick }
            if meter.tick(frames: device.period, at: Int(seen * 1e9)), let rate = meter.rate { figures.append(rate) }
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

    @Test("late wake-ups on a 4 ms timer: the rate within 2 ppm, a figure every 30 s", arguments: [100.0, 0, -250])
    func jitteredClock(ppm: Double) {
        let device = Device(ppm: ppm)
        let figures = Self.measure(device, seconds: 95)
        let errors = figures.map { Self.ppm($0, device) }
        print("rate meter at \(ppm) ppm, 2 ms late wake-ups on 4 ms ticks: errors \(errors) ppm")
        #expect(figures.count == 3, "one figure per 30 s of periods: \(figures.count)")
        #expect(errors.allSatisfy { abs($0) < 2 }, "\(errors)")
    }

    @Test("an underrun every 10 s, each a 50 ms stop and a buffer taken at once: the stretches pool, the rate holds")
    func underruns() {
        let device = Device(ppm: 100, underrunEvery: 10, burst: 4)
        let figures = Self.measure(device, seconds: 100)
        let errors = figures.map { Self.ppm($0, device) }
        print("rate meter, an underrun every 10 s: errors \(errors) ppm")
        #expect(figures.count >= 3)
        #expect(errors.allSatisfy { abs($0) < 10 }, "\(errors)")
    }

    @Test("nothing before a whole window; a stretch of fewer than 8 periods does not count")
    func window() {
        var meter = RateMeter(skip: 0, window: 1)
        var early = false
        for index in 0..<30 { early = meter.tick(frames: 480, at: index * 10_000_000) || early }
        #expect(!early)
        #expect(meter.rate == nil)
        meter.split()
        // Seven periods, split: left out.
        for index in 0..<7 { meter.tick(frames: 480, at: 1_000_000_000 + index * 10_000_000) }
        meter.split()
        #expect(meter.rate == nil)
        var published = false
        for index in 0..<101 where !published {
            published = meter.tick(frames: 480, at: 2_000_000_000 + index * 10_000_000)
        }
        #expect(published)
        #expect(abs((meter.rate ?? 0) - 48000) < 1e-6, "\(meter.rate ?? 0)")
    }

    @Test("drift: a microphone that makes more frames a second than the output runs fast (negative)")
    func driftSign() {
        #expect(abs(driftPPM(of: 48004.8, against: 48000) + 100) < 0.01)
        #expect(abs(driftPPM(of: 47995.2, against: 48000) - 100) < 0.02)
    }
}
