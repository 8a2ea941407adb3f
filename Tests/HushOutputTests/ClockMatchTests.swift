import HushMixer
import Testing

@testable import HushOutput

#if canImport(Glibc)
import Glibc
#endif

/// A microphone on a clock of its own (a USB microphone beside an I2S amplifier): its frames come `ppm` faster or
/// slower than the output takes them, a period at a time each, in a simulation of `seconds` of both clocks. What the
/// reader (the capture router, a whole period or none) finds in the ring, with and without ``ClockMatch``.
@Suite("The microphone's clock matched to the output's")
struct ClockMatchTests {
    static let rate = 48000
    static let period = 64
    static let target = 2 * period

    struct Outcome {
        var gaps = 0
        var dropped = 0
        var fills: [Int] = []
        var drift: Double?
    }

    /// `match`: resample through a ClockMatch; else write the frames as they come.
    /// `asleep`: the reader reads nothing then (hushd's audio thread asleep); when it wakes it throws the ring's
    /// stale backlog away and lets two periods come before it reads, as the capture router does.
    static func simulate(
        ppm: Double,
        seconds: Double,
        match: Bool,
        asleep: ClosedRange<Double>? = nil
    ) throws -> Outcome {
        let ring = SampleRing(frames: 4096, channels: 1)
        defer { ring.deallocate() }
        let matcher = match ? try ClockMatch(channels: 1, sampleRate: rate, maxFrames: period, targetFill: target) : nil
        var outcome = Outcome()
        // A tone, so the converter has something to carry.
        var phase = 0.0
        var block = [Float](repeating: 0, count: period)
        var out = [Float](repeating: 0, count: period)
        let writeEvery = Double(period) / (Double(rate) * (1 + ppm * 1e-6))
        let readEvery = Double(period) / Double(rate)
        var nextWrite = 0.0
        var nextRead = readEvery / 2
        // Two periods waiting when reading starts, as the router's cushion leaves it.
        for _ in 0..<2 { block.withUnsafeBufferPointer { _ = ring.write($0.baseAddress!, frames: period) } }
        while min(nextWrite, nextRead) < seconds {
            if nextWrite <= nextRead {
                for index in 0..<period {
                    block[index] = Float(sin(phase) * 0.25)
                    phase += 2 * .pi * 440 / Double(rate)
                }
                block.withUnsafeBufferPointer { pointer in
                    if let matcher {
                        outcome.dropped += matcher.write(pointer.baseAddress!, frames: period, into: ring)
                    } else {
                        outcome.dropped += period - ring.write(pointer.baseAddress!, frames: period)
                    }
                }
                nextWrite += writeEvery
            } else if let asleep, asleep.contains(nextRead) {
                nextRead += readEvery
                if !asleep.contains(nextRead) {
                    ring.discard(keeping: 0)
                    nextRead += 2 * readEvery
                }
            } else {
                if ring.available >= period {
                    out.withUnsafeMutableBufferPointer { _ = ring.read(into: $0.baseAddress!, frames: period) }
                } else {
                    outcome.gaps += 1
                }
                if nextRead > seconds / 2 { outcome.fills.append(ring.available) }
                nextRead += readEvery
            }
        }
        outcome.drift = matcher?.stretchPPM
        return outcome
    }

    @Test(
        "±100 ppm: without matching the reader finds gaps (or the writer drops); with it, neither, and the drift is found",
        arguments: [100.0, -100.0]
    )
    func drift(ppm: Double) throws {
        let seconds = 240.0
        let bare = try Self.simulate(ppm: ppm, seconds: seconds, match: false)
        let matched = try Self.simulate(ppm: ppm, seconds: seconds, match: true)
        let fills = matched.fills
        print(
            "clock match at \(ppm) ppm over \(Int(seconds)) s: without, \(bare.gaps) gaps and \(bare.dropped) frames "
                + "dropped; with, \(matched.gaps) gaps, \(matched.dropped) dropped, fill \(fills.min() ?? 0)…"
                + "\(fills.max() ?? 0) frames in the second half, drift found \(matched.drift ?? .nan) ppm"
        )
        // Slow microphone (ppm < 0 in this simulation's terms: fewer frames than taken) runs dry without it; a fast
        // one fills the ring, and from 4096 frames it drops.
        #expect(ppm < 0 ? bare.gaps > 0 : bare.fills.last! > Self.target + 400, "the simulation shows the problem")
        #expect(matched.gaps == 0 && matched.dropped == 0)
        #expect(fills.allSatisfy { abs($0 - Self.target) <= 2 * Self.period }, "held near its target")
        // A microphone that gives more frames than taken (+ppm here) is shrunk: the drift reads as negative.
        #expect(abs((matched.drift ?? 0) + ppm) < 15, "drift found: \(matched.drift ?? .nan) for \(ppm)")
    }

    @Test("a reader asleep for 20 s (the ring full, its frames dropped) leaves the drift found as it was")
    func readerAsleep() throws {
        // The drift is the stretch over the last whole minute of the microphone's clock: 120 to 180 s here, with the
        // reader asleep from 130 to 150 s and awake again for 30 s after.
        let outcome = try Self.simulate(ppm: 100, seconds: 181, match: true, asleep: 130...150)
        let drift = try #require(outcome.drift)
        print(
            "clock match, 100 ppm, the reader asleep 20 s: drift over the minute around it \(drift) ppm; gaps after "
                + "waking \(outcome.gaps)"
        )
        #expect(abs(drift + 100) < 15, "drift \(drift) ppm over the minute with the sleep in it")
        #expect(outcome.gaps == 0, "no gap once awake")
    }

    @Test("one clock: the ratio stays at 1 within a few ppm and nothing is lost")
    func sameClock() throws {
        let matched = try Self.simulate(ppm: 0, seconds: 60, match: true)
        #expect(matched.gaps == 0 && matched.dropped == 0)
        #expect(abs(matched.drift ?? 99) < 5, "drift found: \(matched.drift ?? .nan)")
    }
}
