#if canImport(Glibc)
import Glibc
#endif

/// Signals for measuring echo cancellation, shared by HushVoiceTests (offline) and the virtual board's voice checks,
/// so their figures compare: a speech-like talker on SplitMix64 (``SeededGenerator``), the same on every machine.
extension SeededGenerator {
    /// Uniform in [0, 1).
    package mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
    /// Roughly Gaussian (sum of four uniforms), unit variance.
    package mutating func gaussian() -> Double { (unit() + unit() + unit() + unit() - 2) * 1.732 }
    /// Uniform in 0..<n.
    package mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
}

/// A speech-like talker: a glottal pulse train (its pitch moving) through three formant resonators whose vowel
/// changes each syllable, syllables at about 4 per second with pauses between phrases, and a fricative (shaped
/// noise) at some syllables' start. Not speech, but what a canceller meets in speech: a harmonic spectrum with
/// moving formants, onsets, pauses, and broadband bursts.
package struct Talker {
    package init(pitch: Double, formantScale: Double, seed: UInt64, syllableRate: Double = 4.0) {
        self.pitch = pitch
        self.formantScale = formantScale
        self.seed = seed
        self.syllableRate = syllableRate
    }

    package var pitch: Double
    package var formantScale: Double
    package var seed: UInt64
    /// Syllables per second.
    package var syllableRate = 4.0

    /// (F1, F2, F3) of five vowels, Hz.
    static let vowels: [(Double, Double, Double)] = [
        (730, 1090, 2440), (270, 2290, 3010), (300, 870, 2240), (530, 1840, 2480), (570, 840, 2410),
    ]

    /// `seconds` of the talker at `rate`, with `active(t)` saying when it speaks at all; RMS over its active
    /// syllables about `level`.
    package func render(seconds: Double, rate: Int, level: Double, active: (Double) -> Bool) -> [Float] {
        var random = SeededGenerator(seed: seed)
        let count = Int(seconds * Double(rate))
        var out = [Float](repeating: 0, count: count)
        let fs = Double(rate)
        let syllable = 1 / syllableRate
        // Formant resonators: y = b*x + a1*y1 + a2*y2, coefficients updated every 32 samples.
        var y1 = [Double](repeating: 0, count: 3)
        var y2 = [Double](repeating: 0, count: 3)
        var a1 = [Double](repeating: 0, count: 3)
        var a2 = [Double](repeating: 0, count: 3)
        var gain = [Double](repeating: 0, count: 3)
        let bandwidths = [80.0, 110.0, 160.0]
        var phase = 0.0
        var glottal = 0.0
        var fricativeState = 0.0
        // Per syllable: its vowel, the next vowel (a glide), whether it starts with a fricative, whether it is a
        // pause (about one in six), and its loudness.
        let syllables = Int(seconds / syllable) + 2
        var plan: [(vowel: Int, next: Int, fricative: Bool, pause: Bool, loudness: Double)] = []
        for _ in 0..<syllables {
            plan.append(
                (
                    Int(random.next() % 5), Int(random.next() % 5), random.unit() < 0.4, random.unit() < 0.17,
                    0.6 + 0.4 * random.unit()
                )
            )
        }
        for n in 0..<count {
            let t = Double(n) / fs
            let index = Int(t / syllable)
            let within = t / syllable - Double(index)
            let s = plan[index]
            if n % 32 == 0 {
                let glide = min(1, within * 1.5)
                let from = Self.vowels[s.vowel]
                let to = Self.vowels[s.next]
                let formants = [
                    from.0 + (to.0 - from.0) * glide, from.1 + (to.1 - from.1) * glide,
                    from.2 + (to.2 - from.2) * glide,
                ]
                for k in 0..<3 {
                    let f = formants[k] * formantScale
                    let r = exp(-Double.pi * bandwidths[k] / fs)
                    a1[k] = 2 * r * cos(2 * Double.pi * f / fs)
                    a2[k] = -r * r
                    gain[k] = 1 - r
                }
            }
            // The pitch moves within a phrase and falls at each syllable's end.
            let f0 = pitch * (1 + 0.12 * sin(2 * Double.pi * 0.7 * t) + 0.08 * (0.5 - within))
            phase += f0 / fs
            var excitation = 0.0
            if phase >= 1 {
                phase -= 1
                excitation = 1
            }
            // A glottal pulse: the impulse through a one-pole low-pass (spectral tilt), its derivative taken.
            let previous = glottal
            glottal = 0.85 * glottal + excitation
            var x = glottal - previous + 0.02 * random.gaussian()
            // The cascade of formants.
            for k in 0..<3 {
                let y = gain[k] * x + a1[k] * y1[k] + a2[k] * y2[k]
                y2[k] = y1[k]
                y1[k] = y
                x = y
            }
            // Envelope: a raised cosine over 80 % of the syllable, silent in a pause.
            var envelope = 0.0
            if !s.pause && within < 0.8 { envelope = 0.5 - 0.5 * cos(2 * Double.pi * within / 0.8) }
            var sample = x * envelope * s.loudness * 40
            // A fricative: high-passed noise over the syllable's first 60 ms.
            if s.fricative && !s.pause && within * syllable < 0.06 {
                let noise = random.gaussian()
                let high = noise - fricativeState
                fricativeState = noise
                sample += 0.25 * high * sin(Double.pi * within * syllable / 0.06)
            }
            out[n] = active(t) ? Float(sample) : 0
        }
        // Scale to the level asked for, over the samples it speaks.
        var power = 0.0
        var voiced = 0
        for v in out where v != 0 {
            power += Double(v) * Double(v)
            voiced += 1
        }
        let scale = voiced > 0 && power > 0 ? Float(level / (power / Double(voiced)).squareRoot()) : 0
        for n in 0..<count { out[n] *= scale }
        return out
    }
}
