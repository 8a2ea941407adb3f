import HushCore

#if canImport(Glibc)
import Glibc
#endif

/// Test and example tones, generated rather than shipped as files.
package enum ToneGenerator {
    /// A mono sine. With `loopable`, the frequency is nudged so a whole number of cycles fits, so a looped tone
    /// has no seam.
    package static func sine(
        frequency: Double,
        amplitude: Float,
        seconds: Double,
        sampleRate: Int,
        loopable: Bool = false
    ) -> AudioBuffer {
        let frames = Int(seconds * Double(sampleRate))
        let cycles = loopable ? max(1, (frequency * Double(frames) / Double(sampleRate)).rounded()) : 0
        let hz = loopable ? cycles * Double(sampleRate) / Double(frames) : frequency
        let samples = (0..<frames).map { amplitude * Float(sin(2 * Double.pi * hz * Double($0) / Double(sampleRate))) }
        return AudioBuffer(interleaved: samples, channels: 1, sampleRate: sampleRate)
    }
}
