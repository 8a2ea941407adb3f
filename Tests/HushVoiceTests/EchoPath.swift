import Foundation
import HushTesting

/// SplitMix64, as HushTesting has it.
typealias SplitMix = SeededGenerator

/// A room: the speaker's sound reaching the microphone through a direct path and exponentially decaying
/// reflections, `length` seconds long, its energy scaled to `attenuationDB` (negative).
struct RoomResponse {
    /// (tap, gain) pairs: sparse beyond the first 2 ms, so the tests' convolution stays quick in a debug build.
    let taps: [(Int, Float)]

    init(rate: Int, length: Double = 0.08, attenuationDB: Double = -10, seed: UInt64 = 7) {
        var random = SplitMix(seed: seed)
        let total = Int(length * Double(rate))
        let dense = rate / 500
        // A decay of 60 dB over the response's length.
        let decay = log(1000.0) / Double(total)
        var taps: [(Int, Float)] = [(0, 1)]
        for tap in 1..<dense { taps.append((tap, Float(0.5 * random.gaussian() * exp(-decay * Double(tap))))) }
        var tap = dense
        while tap < total {
            taps.append((tap, Float(0.6 * random.gaussian() * exp(-decay * Double(tap)))))
            tap += 1 + Int(random.next() % UInt64(rate / 2000))
        }
        let energy = taps.reduce(0.0) { $0 + Double($1.1) * Double($1.1) }
        let scale = Float(pow(10, attenuationDB / 20) / energy.squareRoot())
        self.taps = taps.map { ($0.0, $0.1 * scale) }
    }

    /// `signal` through the room.
    func apply(_ signal: [Float]) -> [Float] {
        var out = [Float](repeating: 0, count: signal.count)
        signal.withUnsafeBufferPointer { x in
            out.withUnsafeMutableBufferPointer { y in
                for (tap, gain) in taps {
                    var n = tap
                    while n < x.count {
                        y[n] += gain * x[n - tap]
                        n += 1
                    }
                }
            }
        }
        return out
    }
}

/// One echo path's signals: what hushd plays (`reference`), what the microphone hears (`microphone`: the echo,
/// the near-end talker, a noise floor) and the near-end talker with the same noise alone (`nearAlone`).
struct EchoScene {
    let rate: Int
    let reference: [Float]
    let microphone: [Float]
    let nearAlone: [Float]
    /// The echo alone (for the scene's own checks).
    let echo: [Float]
    /// The near-end talker's samples (0 where silent).
    let near: [Float]
    /// Where the near end talks, seconds.
    let nearWindows: [ClosedRange<Double>]

    /// - delay: seconds from the reference to its echo; `delayAfter` from `changeAt` on (a route change).
    /// - drift: the microphone's clock against the speaker's, parts per million.
    init(
        rate: Int = 48_000,
        seconds: Double = 12,
        delay: Double = 0.030,
        changeAt: Double? = nil,
        delayAfter: Double = 0.070,
        drift: Double = 0,
        nearWindows: [ClosedRange<Double>] = [3.0...4.5, 6.5...8.0, 9.5...11.0],
        farLevel: Double = 0.16,
        nearLevelDB: Double = -3,
        noiseDB: Double = -70
    ) {
        self.rate = rate
        self.nearWindows = nearWindows
        let count = Int(seconds * Double(rate))
        let far = Talker(pitch: 115, formantScale: 1, seed: 1)
            .render(seconds: seconds, rate: rate, level: farLevel) { _ in true }
        reference = far
        let room = RoomResponse(rate: rate)
        // What leaves the speaker, heard on the microphone's clock: the far end read at t·(1 + drift), delayed.
        var delayed = [Float](repeating: 0, count: count)
        for n in 0..<count {
            let t = Double(n) / Double(rate)
            let d = changeAt.map { t >= $0 ? delayAfter : delay } ?? delay
            let source = (t * (1 + drift * 1e-6) - d) * Double(rate)
            let i = Int(source.rounded(.down))
            guard i >= 0, i + 1 < count else { continue }
            let fraction = Float(source - Double(i))
            delayed[n] = far[i] * (1 - fraction) + far[i + 1] * fraction
        }
        let echo = room.apply(delayed)
        // The near end, as loud as the echo plus nearLevelDB over its syllables (the echo's RMS is over all of it).
        let echoRMS = (echo.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(count)).squareRoot()
        let near = Talker(pitch: 205, formantScale: 1.17, seed: 2, syllableRate: 4.6)
            .render(seconds: seconds, rate: rate, level: echoRMS * 2 * pow(10, nearLevelDB / 20)) { t in
                nearWindows.contains { $0.contains(t) }
            }
        var random = SplitMix(seed: 3)
        let noiseLevel = pow(10, noiseDB / 20)
        let noise = (0..<count).map { _ in Float(noiseLevel * random.gaussian()) }
        self.echo = echo
        self.near = near
        microphone = (0..<count).map { echo[$0] + near[$0] + noise[$0] }
        nearAlone = (0..<count).map { near[$0] + noise[$0] }
    }

    /// 100 ms windows (start sample) from `from` seconds on.
    func windows(from: Double, to: Double? = nil) -> [Int] {
        let length = rate / 10
        let end = Int((to ?? Double(reference.count) / Double(rate)) * Double(rate))
        return Array(stride(from: Int(from * Double(rate)), through: end - length, by: length))
    }

    private func talking(_ start: Int) -> Bool {
        let a = Double(start) / Double(rate)
        let b = a + 0.1
        // A margin of 50 ms: the near end's syllables ramp in and out.
        return nearWindows.contains { $0.lowerBound - 0.05 < b && a < $0.upperBound + 0.05 }
    }

    /// Far-end-only windows: no near end, and the echo at least 25 dB above the noise floor (so the ratio measures
    /// the canceller more than the floor; the talker's vowels differ by 20 dB and more, its pauses are silent).
    func farOnlyWindows(from: Double, to: Double? = nil) -> [Int] {
        windows(from: from, to: to).filter { start in
            !talking(start) && Measure.power(echo, start, rate / 10) > pow(10, 2.5) * pow(10, -70.0 / 10)
        }
    }

    /// Double-talk windows: the near end and the far end's echo both present, each at least 20 dB above the floor.
    func doubleTalkWindows() -> [Int] {
        windows(from: 1).filter { start in
            let length = rate / 10
            return nearWindows.contains {
                $0.contains(Double(start) / Double(rate)) && $0.contains(Double(start + length) / Double(rate))
            }
                && Measure.power(near, start, length) > 100 * pow(10, -70.0 / 10)
                && Measure.power(echo, start, length) > 100 * pow(10, -70.0 / 10)
        }
    }
}

enum Measure {
    static func power(_ x: [Float], _ start: Int, _ length: Int) -> Double {
        var sum = 0.0
        for n in start..<min(start + length, x.count) { sum += Double(x[n]) * Double(x[n]) }
        return sum / Double(length)
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return .nan }
        return sorted.count % 2 == 1
            ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }

    /// ERLE measured on the output: the median over `windows` of 10·log10(microphone power / output power).
    static func erle(microphone: [Float], output: [Float], windows: [Int], rate: Int) -> Double {
        median(windows.map { 10 * log10(power(microphone, $0, rate / 10) / max(power(output, $0, rate / 10), 1e-20)) })
    }

    /// The near end's level in double-talk against the near end alone: 10·log10 of the output's power over the
    /// near-alone output's, summed over `windows`.
    static func levelRatio(_ a: [Float], over b: [Float], windows: [Int], rate: Int) -> Double {
        let pa = windows.reduce(0.0) { $0 + power(a, $1, rate / 10) }
        let pb = windows.reduce(0.0) { $0 + power(b, $1, rate / 10) }
        return 10 * log10(pa / max(pb, 1e-20))
    }
}
