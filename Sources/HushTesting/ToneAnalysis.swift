#if canImport(Glibc)
import Glibc
#endif

/// Measures audio the way a listener's ear (roughly) would, so tests check what came out, not what the code
/// meant to do.
public enum ToneAnalysis {
    /// The amplitude of the `frequency` component of `samples` (a full-scale sine gives 1), by the Goertzel
    /// algorithm over a Hann window.
    public static func amplitude(of frequency: Double, in samples: ArraySlice<Float>, sampleRate: Int) -> Double {
        let count = samples.count
        guard count > 1 else { return 0 }
        let k = 2 * cos(2 * Double.pi * frequency / Double(sampleRate))
        var s1 = 0.0
        var s2 = 0.0
        for (n, sample) in samples.enumerated() {
            let window = 0.5 - 0.5 * cos(2 * Double.pi * Double(n) / Double(count - 1))
            let s0 = Double(sample) * window + k * s1 - s2
            s2 = s1
            s1 = s0
        }
        let power = max(0, s1 * s1 + s2 * s2 - k * s1 * s2)
        return 2 * sqrt(power) / (Double(count) * 0.5)  // 0.5: the Hann window's coherent gain
    }

    /// `amplitude(of:)` in decibels relative to full scale.
    public static func level(of frequency: Double, in samples: ArraySlice<Float>, sampleRate: Int) -> Double {
        20 * log10(max(1e-12, amplitude(of: frequency, in: samples, sampleRate: sampleRate)))
    }

    /// The loudest component between `low` and `high` Hz (probed every `step` Hz), in dBFS.
    public static func loudestLevel(
        from low: Double,
        to high: Double,
        step: Double = 50,
        in samples: ArraySlice<Float>,
        sampleRate: Int
    ) -> Double {
        stride(from: low, through: high, by: step).map { level(of: $0, in: samples, sampleRate: sampleRate) }.max()
            ?? -240
    }

    /// The largest difference between neighbouring samples.
    public static func largestStep(in samples: ArraySlice<Float>) -> Float {
        zip(samples, samples.dropFirst()).map { abs($1 - $0) }.max() ?? 0
    }

    /// The frequency of a clean sine, from its zero crossings (interpolated), in Hz.
    public static func frequency(of samples: ArraySlice<Float>, sampleRate: Int) -> Double {
        var crossings: [Double] = []
        var last: Float = 0
        for (index, sample) in samples.enumerated() {
            if index > 0 && last < 0 && sample >= 0 {
                crossings.append(Double(index - 1) + Double(-last / (sample - last)))
            }
            last = sample
        }
        guard let first = crossings.first, let final = crossings.last, crossings.count > 1 else { return 0 }
        return Double(crossings.count - 1) * Double(sampleRate) / (final - first)
    }

    /// One channel of interleaved samples.
    public static func channel(_ channel: Int, of interleaved: [Float], channels: Int) -> [Float] {
        stride(from: channel, to: interleaved.count, by: channels).map { interleaved[$0] }
    }
}
