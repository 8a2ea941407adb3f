import Foundation
import HushTesting

#if canImport(Glibc)
import Glibc
#endif

// The voice scenario's signals: the offline echo tests' speech-like talkers (Tests/HushVoiceTests/EchoPath.swift's
// Talker and SplitMix, the same definitions, so that the board's figures compare with the offline ones), and a
// room response sparse enough for the echo room to run under TCG.

/// SplitMix64, as HushTesting has it (with `unit`, `gaussian` and `below`).
typealias SplitMix = SeededGenerator

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
