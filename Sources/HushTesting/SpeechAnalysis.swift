#if canImport(Glibc)
import Glibc
#endif

/// Judging speech (espeak-ng's) in a mix against the program's own WAV of the same text: the speech band's level in
/// 20 ms windows, where the speech is, and how closely one envelope follows the other. One definition for the host
/// tests (ALSAApplicationsTests) and the virtual board's (hush-vboard-streams --apps).
public enum SpeechAnalysis {
    /// The level of the speech band (100 Hz to 4 kHz) in 20 ms windows, `perSecond` of them a second (by default
    /// one after the other), in dBFS (the RMS of a full-scale sine reads −3).
    public static func levels(_ samples: [Float], rate: Int, perSecond: Int = 50) -> [Double] {
        var highPass = Biquad(lowPass: false, hertz: 100, rate: rate)
        var lowPass = Biquad(lowPass: true, hertz: 4000, rate: rate)
        var energy = [0.0]  // energy[n]: the sum of the squares of the first n filtered samples
        energy.reserveCapacity(samples.count + 1)
        for sample in samples {
            let filtered = lowPass(highPass(Double(sample)))
            energy.append(energy[energy.count - 1] + filtered * filtered)
        }
        let window = rate / 50
        let count = samples.count < window ? 0 : (samples.count - window) * perSecond / rate + 1
        return (0..<count).map { index in
            let start = index * rate / perSecond
            return 10 * log10(max(1e-24, (energy[start + window] - energy[start]) / Double(window)))
        }
    }

    /// The windows where there is speech: within 40 dB of the loudest.
    public static func windows(_ levels: [Double]) -> [Int] {
        let loudest = levels.max() ?? -240
        return levels.indices.filter { levels[$0] > loudest - 40 && levels[$0] > -200 }
    }

    /// Pearson's correlation of the pairs.
    public static func correlation(_ pairs: [(Double, Double)]) -> Double {
        let n = Double(pairs.count)
        guard n > 1 else { return 0 }
        let meanX = pairs.reduce(0) { $0 + $1.0 } / n
        let meanY = pairs.reduce(0) { $0 + $1.1 } / n
        var xy = 0.0
        var xx = 0.0
        var yy = 0.0
        for (x, y) in pairs {
            xy += (x - meanX) * (y - meanY)
            xx += (x - meanX) * (x - meanX)
            yy += (y - meanY) * (y - meanY)
        }
        return xx > 0 && yy > 0 ? xy / (xx * yy).squareRoot() : 0
    }

    /// How closely the mix's speech envelope follows the reference's: the best correlation of their levels in
    /// 20 ms windows every 5 ms, over the reference's speech, with the mix shifted by up to 50 ms from where its
    /// speech begins (each floored 60 dB under its loudest, so silence between words counts the same in both).
    public static func envelopeCorrelation(reference: [Float], referenceRate: Int, mix: [Float], mixRate: Int) -> Double
    {
        let referenceLevels = levels(reference, rate: referenceRate, perSecond: 200)
        let mixLevels = levels(mix, rate: mixRate, perSecond: 200)
        let referenceSpeech = windows(referenceLevels)
        guard let referenceFirst = referenceSpeech.first, let referenceLast = referenceSpeech.last,
            let mixFirst = windows(mixLevels).first
        else { return 0 }
        let referenceFloor = (referenceLevels.max() ?? -240) - 60
        let mixFloor = (mixLevels.max() ?? -240) - 60
        let reach = 10  // 50 ms
        return (-reach...reach).map { shift in
            correlation(
                (referenceFirst...referenceLast).compactMap { index in
                    let other = index - referenceFirst + mixFirst + shift
                    guard other >= 0 && other < mixLevels.count else { return nil }
                    return (max(referenceLevels[index], referenceFloor), max(mixLevels[other], mixFloor))
                }
            )
        }.max() ?? 0
    }

    /// A second-order Butterworth filter (RBJ's cookbook), low- or high-pass.
    struct Biquad {
        var b0, b1, b2, a1, a2: Double
        var x1 = 0.0, x2 = 0.0, y1 = 0.0, y2 = 0.0

        init(lowPass: Bool, hertz: Double, rate: Int) {
            let w0 = 2 * Double.pi * hertz / Double(rate)
            let alpha = sin(w0) / (2 * 0.5.squareRoot())  // sin(w0) / 2Q
            let c = cos(w0)
            let a0 = 1 + alpha
            let edge = lowPass ? (1 - c) / 2 : (1 + c) / 2
            b0 = edge / a0
            b1 = (lowPass ? 2 * edge : -2 * edge) / a0
            b2 = edge / a0
            a1 = -2 * c / a0
            a2 = (1 - alpha) / a0
        }

        mutating func callAsFunction(_ x: Double) -> Double {
            let y = b0 * x + b1 * x1 + b2 * x2 - a1 * y1 - a2 * y2
            (x2, x1, y2, y1) = (x1, x, y1, y)
            return y
        }
    }
}

extension ToneAnalysis {
    /// The most consecutive samples for which `isQuiet` holds (a gap inside a tone is a run of them).
    public static func longestRun(in samples: ArraySlice<Float>, where isQuiet: (Float) -> Bool) -> Int {
        var longest = 0
        var run = 0
        for sample in samples {
            run = isQuiet(sample) ? run + 1 : 0
            longest = max(longest, run)
        }
        return longest
    }
}
