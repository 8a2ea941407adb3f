import HushTesting

#if canImport(Glibc)
import Glibc
#endif

/// A steady tone as it moved from one output to another (the speaker to the headphones), measured on the two
/// captures: each output on its own, and the two summed once aligned to the sample.
///
/// hushd cross-fades a route change over one period (`AudioOutputThread.advanceCrossfade`): the old device gets the
/// period faded out, the new one the same frames faded in, and the two gains add to one at every frame. So the sum
/// of the two captures, the headphones' shifted onto the speaker's frames, is the steady tone throughout. How far
/// each 1 ms window of that sum strays from the steady level is what a listener with one ear on each output would
/// hear as a gap (a dip) or a bump; hushd before the cross-fade stopped the speaker mid-queue and faded the
/// headphones in from silence, a dip of 12–49 dB.
///
/// The alignment uses neither the sum nor its level, so it cannot flatter the result: the middle of the speaker's
/// fall is put on the middle of the headphones' rise (to within a period of the tone), then the tone's phase just
/// before the fall and just after the rise gives the lag to the sample (both carry one continuous tone).
struct OutputMove {
    /// The steady tone on the speaker before the plug, in dBFS.
    let steadyLevel: Double
    /// Headphones' sample index = speaker's sample index + `lag`, from the phase of the tone.
    let lag: Int
    /// The lag from the fall's and rise's middles alone, before the phase refined it.
    let coarseLag: Int
    /// The lag the captures' arrival times give (their clocks, not the frames).
    let arrivalLag: Int
    /// The middle of the speaker's fall, in seconds into the speaker's capture: "the move".
    let move: Double
    /// How long the speaker took to fall from full level to silence, in ms (its 80–20 % span, scaled as for a
    /// straight fade).
    let fadeOut: Double
    /// How long the headphones took to rise from silence to full level, in ms (20–80 %, scaled the same way).
    let fadeIn: Double
    /// The quietest and the loudest 1 ms window of the aligned sum, in dB relative to the steady tone over the same
    /// window, with where each window's middle is, in ms after the move.
    let quietest: (decibels: Double, at: Double)
    let loudest: (decibels: Double, at: Double)
    /// How far the worst window strays from the steady level, in dB (either way).
    var worst: (decibels: Double, at: Double) { -quietest.decibels > loudest.decibels ? quietest : loudest }

    /// How long each window is, and how far before and after the move they go.
    static let window = 0.001
    static let span = 0.05

    /// Measures the move of a tone of `frequency` Hz from `speaker` to `headphones`, the two captures of one take at
    /// `sampleRate`. The speaker must fall between `from` and `to` seconds into its capture; `shift` is the
    /// headphones' capture's position at the speaker's capture's start (seconds), from the arrival times.
    init(
        speaker: [Float],
        headphones: [Float],
        frequency: Double,
        sampleRate: Int,
        from: Double,
        to: Double,
        shift: Double
    ) throws {
        let rate = Double(sampleRate)
        let toneSamples = rate / frequency
        let cycle = Int(toneSamples.rounded())
        let steady = (start: Int((from - 0.25) * rate), end: Int((from - 0.05) * rate))
        try require(steady.start >= 0, "the steady tone before the plug (0.25–0.05 s before it) is not in the capture")
        // The tone's frequency in these samples, to carry its phase across the move without drifting.
        let omega = Self.frequency(of: speaker, in: steady.start..<steady.end, near: 2 * .pi / toneSamples)
        let reference = Self.fit(speaker, steady.start..<steady.end, omega: omega, at: 0)
        let amplitude = reference.magnitude
        try require(
            amplitude > 1e-3,
            "no steady \(frequency) Hz tone on the speaker before the plug (\(Self.decibels(amplitude)) dBFS)"
        )
        steadyLevel = Self.decibels(amplitude)

        // Each output on its own: where its envelope (amplitude over one cycle of the tone) crosses 80, 50 and
        // 20 % of the steady level.
        let speakerEnvelope = Envelope(speaker, cycle: cycle)
        let headphonesEnvelope = Envelope(headphones, cycle: cycle)
        let last = Int(to * rate)
        guard
            let fall = (Int(from * rate)..<min(last, speaker.count)).first(where: {
                speakerEnvelope[$0] < 0.5 * amplitude
            })
        else {
            throw CheckFailure(
                "the tone never left the speaker between \(from) and \(to) s (it stayed above half its steady level)"
            )
        }
        let fallStart = (0..<fall).last { speakerEnvelope[$0] >= 0.8 * amplitude } ?? 0
        let fallEnd = (fall..<speaker.count).first { speakerEnvelope[$0] <= 0.2 * amplitude } ?? speaker.count
        // The headphones carry nothing before the move; their rise is searched for from the plug on.
        arrivalLag = Int((shift * rate).rounded())
        let searchFrom = max(0, Int(from * rate) + arrivalLag - Int(0.1 * rate))
        guard
            let rise = (searchFrom..<min(last + arrivalLag, headphones.count)).first(where: {
                headphonesEnvelope[$0] >= 0.5 * amplitude
            })
        else {
            throw CheckFailure("the tone never reached the headphones at half its steady level after the plug")
        }
        let riseStart = (0..<rise).last { headphonesEnvelope[$0] <= 0.2 * amplitude } ?? 0
        let riseEnd = (rise..<headphones.count).first { headphonesEnvelope[$0] >= 0.8 * amplitude } ?? headphones.count
        fadeOut = Double(fallEnd - fallStart) / 0.6 / rate * 1000
        fadeIn = Double(riseEnd - riseStart) / 0.6 / rate * 1000
        move = Double(fall) / rate

        // The lag: the fall's middle on the rise's middle, then the phase of the tone before the fall and after the
        // rise (20 cycles each, clear of the fades) moves it by less than half a cycle.
        coarseLag = rise - fall
        let cycles = Int((20 * toneSamples).rounded())
        let before = (fallStart - (fallEnd - fallStart) - cycle - cycles)..<(fallStart - (fallEnd - fallStart) - cycle)
        let after = (riseEnd + (riseEnd - riseStart) + cycle)..<(riseEnd + (riseEnd - riseStart) + cycle + cycles)
        try require(
            before.lowerBound >= 0 && after.upperBound <= headphones.count,
            "the steady tone around the move is not all in the captures (\(before), \(after))"
        )
        let speakerPhase = Self.fit(speaker, before, omega: omega, at: fall).phase
        let headphonesPhase = Self.fit(headphones, after, omega: omega, at: rise).phase
        lag = coarseLag + Int((Self.wrap(speakerPhase - headphonesPhase) / omega).rounded())

        // The sum, window by window, against the steady tone carried on over the same samples.
        let width = Int((Self.window * rate).rounded())
        let range = (fall - Int(Self.span * rate))..<(fall + Int(Self.span * rate) + width)
        try require(
            range.lowerBound >= 0 && range.upperBound <= speaker.count && range.lowerBound + lag >= 0
                && range.upperBound + lag <= headphones.count,
            "50 ms either side of the move are not in both captures (move at \(move) s, lag \(lag))"
        )
        var sum = [Double](repeating: 0, count: range.count + 1)
        var steadySum = [Double](repeating: 0, count: range.count + 1)
        for (offset, index) in range.enumerated() {
            let heard = Double(speaker[index]) + Double(headphones[index + lag])
            let expected = reference.value(at: index, omega: omega)
            sum[offset + 1] = sum[offset] + heard * heard
            steadySum[offset + 1] = steadySum[offset] + expected * expected
        }
        var quietest = (decibels: Double.infinity, at: 0.0)
        var loudest = (decibels: -Double.infinity, at: 0.0)
        for start in 0...(range.count - width) {
            let energy = max(1e-24, sum[start + width] - sum[start])
            let steadyEnergy = max(1e-24, steadySum[start + width] - steadySum[start])
            let level = 10 * log10(energy / steadyEnergy)
            let at = Double(range.lowerBound + start + width / 2 - fall) / rate * 1000
            if level < quietest.decibels { quietest = (level, at) }
            if level > loudest.decibels { loudest = (level, at) }
        }
        self.quietest = quietest
        self.loudest = loudest
    }

    /// A sine's phasor, fitted by least squares: the tone is `re · cos(ω(n − at)) − im · sin(ω(n − at))`.
    struct Phasor {
        let re: Double
        let im: Double
        let at: Int
        var magnitude: Double { (re * re + im * im).squareRoot() }
        var phase: Double { atan2(im, re) }
        func value(at index: Int, omega: Double) -> Double {
            let angle = omega * Double(index - at)
            return re * cos(angle) - im * sin(angle)
        }
    }

    /// The sine of angular frequency `omega` (radians per sample) that best fits `samples[range]`, its phase
    /// counted from sample `at`.
    static func fit(_ samples: [Float], _ range: Range<Int>, omega: Double, at: Int) -> Phasor {
        var (cc, ss, cs, xc, xs) = (0.0, 0.0, 0.0, 0.0, 0.0)
        for index in range {
            let angle = omega * Double(index - at)
            let (c, s, x) = (cos(angle), sin(angle), Double(samples[index]))
            cc += c * c
            ss += s * s
            cs += c * s
            xc += x * c
            xs += x * s
        }
        let determinant = cc * ss - cs * cs
        guard determinant > 0 else { return Phasor(re: 0, im: 0, at: at) }
        let a = (xc * ss - xs * cs) / determinant
        let b = (xs * cc - xc * cs) / determinant
        return Phasor(re: a, im: -b, at: at)
    }

    /// The tone's angular frequency in `samples[range]`, near `omega`: from how its phase moves between the
    /// range's two halves.
    static func frequency(of samples: [Float], in range: Range<Int>, near omega: Double) -> Double {
        let half = range.count / 2
        var estimate = omega
        for _ in 0..<2 {
            let first = fit(
                samples,
                range.lowerBound..<(range.lowerBound + half),
                omega: estimate,
                at: range.lowerBound
            )
            let second = fit(
                samples,
                (range.lowerBound + half)..<range.upperBound,
                omega: estimate,
                at: range.lowerBound
            )
            estimate += wrap(second.phase - first.phase) / Double(half)
        }
        return estimate
    }

    /// An angle in (−π, π].
    static func wrap(_ angle: Double) -> Double {
        var wrapped = angle.truncatingRemainder(dividingBy: 2 * .pi)
        if wrapped > .pi { wrapped -= 2 * .pi }
        if wrapped <= -.pi { wrapped += 2 * .pi }
        return wrapped
    }

    static func decibels(_ amplitude: Double) -> Double { 20 * log10(max(1e-12, amplitude)) }

    /// A capture's amplitude at each sample: the RMS over one cycle of the tone around it, times √2.
    struct Envelope {
        private let squares: [Double]
        private let cycle: Int
        init(_ samples: [Float], cycle: Int) {
            var squares = [Double](repeating: 0, count: samples.count + 1)
            for (index, sample) in samples.enumerated() {
                squares[index + 1] = squares[index] + Double(sample) * Double(sample)
            }
            self.squares = squares
            self.cycle = cycle
        }
        subscript(index: Int) -> Double {
            let low = max(0, index - cycle / 2)
            let high = min(squares.count - 1, low + cycle)
            guard high > low else { return 0 }
            return (2 * (squares[high] - squares[low]) / Double(high - low)).squareRoot()
        }
    }
}
