import Foundation
import HushTesting

#if canImport(Glibc)
import Glibc
#endif

// The voice scenario's signals: the offline echo tests' speech-like talkers (Tests/HushVoiceTests/EchoPath.swift's
// Talker and SplitMix, the same definitions, so that the board's figures compare with the offline ones), and a
// room response sparse enough for the echo room to run under TCG.

/// HushTesting's SplitMix64 generator with what the signals and the random runs draw from it: the same numbers on
/// every run and machine.
typealias SplitMix = SeededGenerator

extension SeededGenerator {
    /// Uniform in [0, 1).
    mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
    /// Roughly Gaussian (sum of four uniforms), unit variance.
    mutating func gaussian() -> Double { (unit() + unit() + unit() + unit() - 2) * 1.732 }
    /// Uniform in 0..<n.
    mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
}

/// A speech-like talker: a glottal pulse train (its pitch moving) through three formant resonators whose vowel
/// changes each syllable, syllables at about 4 per second with pauses between phrases, and a fricative at some
/// syllables' start (Tests/HushVoiceTests/EchoPath.swift, where it is described).
struct Talker {
    var pitch: Double
    var formantScale: Double
    var seed: UInt64
    var syllableRate = 4.0

    static let vowels: [(Double, Double, Double)] = [
        (730, 1090, 2440), (270, 2290, 3010), (300, 870, 2240), (530, 1840, 2480), (570, 840, 2410),
    ]

    /// `seconds` of the talker at `rate`, speaking where `active(t)`; RMS over its active syllables about `level`.
    func render(seconds: Double, rate: Int, level: Double, active: (Double) -> Bool) -> [Float] {
        var random = SplitMix(seed: seed)
        let count = Int(seconds * Double(rate))
        var out = [Float](repeating: 0, count: count)
        let fs = Double(rate)
        let syllable = 1 / syllableRate
        var y1 = [Double](repeating: 0, count: 3)
        var y2 = [Double](repeating: 0, count: 3)
        var a1 = [Double](repeating: 0, count: 3)
        var a2 = [Double](repeating: 0, count: 3)
        var gain = [Double](repeating: 0, count: 3)
        let bandwidths = [80.0, 110.0, 160.0]
        var phase = 0.0
        var glottal = 0.0
        var fricativeState = 0.0
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
            let f0 = pitch * (1 + 0.12 * sin(2 * Double.pi * 0.7 * t) + 0.08 * (0.5 - within))
            phase += f0 / fs
            var excitation = 0.0
            if phase >= 1 {
                phase -= 1
                excitation = 1
            }
            let previous = glottal
            glottal = 0.85 * glottal + excitation
            var x = glottal - previous + 0.02 * random.gaussian()
            for k in 0..<3 {
                let y = gain[k] * x + a1[k] * y1[k] + a2[k] * y2[k]
                y2[k] = y1[k]
                y1[k] = y
                x = y
            }
            var envelope = 0.0
            if !s.pause && within < 0.8 { envelope = 0.5 - 0.5 * cos(2 * Double.pi * within / 0.8) }
            var sample = x * envelope * s.loudness * 40
            if s.fricative && !s.pause && within * syllable < 0.06 {
                let noise = random.gaussian()
                let high = noise - fricativeState
                fricativeState = noise
                sample += 0.25 * high * sin(Double.pi * within * syllable / 0.06)
            }
            out[n] = active(t) ? Float(sample) : 0
        }
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

/// The room the echo room plays through: a direct path, 1 ms of dense early response, then reflections every
/// 0.5 to 4 ms decaying by 60 dB over `length`, its energy scaled to `attenuationDB`. About 90 taps: the echo room
/// convolves 48000 frames a second with them on an emulated CPU.
func roomResponse(rate: Int, length: Double = 0.08, attenuationDB: Double = -10, seed: UInt64 = 7) -> [(Int, Float)] {
    var random = SplitMix(seed: seed)
    let total = Int(length * Double(rate))
    let dense = rate / 1000
    let decay = log(1000.0) / Double(total)
    var taps: [(Int, Float)] = [(0, 1)]
    for tap in 1..<dense { taps.append((tap, Float(0.5 * random.gaussian() * exp(-decay * Double(tap))))) }
    var tap = dense
    while tap < total {
        taps.append((tap, Float(0.6 * random.gaussian() * exp(-decay * Double(tap)))))
        tap += rate / 2000 + Int(random.next() % UInt64(rate * 35 / 10000))
    }
    let energy = taps.reduce(0.0) { $0 + Double($1.1) * Double($1.1) }
    let scale = Float(pow(10, attenuationDB / 20) / energy.squareRoot())
    return taps.map { ($0.0, $0.1 * scale) }
}

/// Writes `samples` as raw little-endian float32 or 16-bit integers.
func writeRaw(_ path: String, _ samples: [Float], float: Bool) throws {
    var data = Data(capacity: samples.count * (float ? 4 : 2))
    for sample in samples {
        if float {
            withUnsafeBytes(of: sample.bitPattern.littleEndian) { data += $0 }
        } else {
            let value = Int16(max(-32768, min(32767, (sample * 32767).rounded())))
            withUnsafeBytes(of: value.littleEndian) { data += $0 }
        }
    }
    guard FileManager.default.createFile(atPath: path, contents: data) else {
        throw CheckFailure("cannot write \(path)")
    }
}

/// A raw little-endian float32 file of `channels` interleaved channels, one array per channel.
func readFloatChannels(_ path: String, channels: Int) -> [[Float]] {
    guard let data = FileManager.default.contents(atPath: path) else { return Array(repeating: [], count: channels) }
    let frames = data.count / 4 / channels
    var result = Array(repeating: [Float](repeating: 0, count: frames), count: channels)
    data.withUnsafeBytes { bytes in
        for frame in 0..<frames {
            for channel in 0..<channels {
                let bits = UInt32(
                    littleEndian: bytes.loadUnaligned(fromByteOffset: (frame * channels + channel) * 4, as: UInt32.self)
                )
                result[channel][frame] = Float(bitPattern: bits)
            }
        }
    }
    return result
}
