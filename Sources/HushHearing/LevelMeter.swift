#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The A-weighted level of audio, once a second: what a private route's listener is exposed to, before the
/// calibration turns it into dB(A) at the ear (``HearingCalibration``).
///
/// Welch's method with the exact weighting: Hann-windowed blocks, overlapping by half, each transformed, and the
/// power of every frequency bin weighted by ``AWeighting`` at that bin's frequency — the standard's curve itself,
/// not a filter's approximation of it, so it holds to 16 kHz and beyond at 48 kHz (where a bilinear IIR is off by
/// over 10 dB). Blocks are long enough (a bin of 3 Hz or less) that the steep weighting below 100 Hz changes
/// little across a tone's window. Stereo is one complex transform (left real, right imaginary); the louder channel
/// counts — a listener's exposure is their louder ear's.
///
/// The level is in dB relative to a full-scale sine at 1 kHz: a sine at full scale reads 0, at half scale -6.02.
/// For a thread of its own fed with the mix (never the audio thread): `append` allocates nothing.
public struct LevelMeter {
    public let sampleRate: Int
    public let channels: Int
    /// Points per transform: a power of two with bins of 3 Hz or less.
    public let blockFrames: Int
    private let fft: FFT
    private let window: [Double]
    /// Per bin 0...blockFrames/2: the weighting's power factor, counted twice for the bins that stand for two
    /// (positive and negative frequency), divided by the block's and the window's normalisation.
    private let weights: [Double]
    private var left: [Double]
    private var right: [Double]
    private var real: [Double]
    private var imaginary: [Double]
    private var filled = 0
    private var framesThisSecond = 0
    private var powerThisSecond = 0.0
    private var blocksThisSecond = 0

    /// A meter for audio at `sampleRate` with 1 or 2 interleaved `channels`.
    public init(sampleRate: Int, channels: Int) {
        precondition(sampleRate >= 8000 && (channels == 1 || channels == 2))
        self.sampleRate = sampleRate
        self.channels = channels
        var size = 1024
        while Double(sampleRate) / Double(size) > 3 { size *= 2 }
        blockFrames = size
        fft = FFT(size: size)
        window = (0..<size).map { 0.5 - 0.5 * cos(2 * Double.pi * Double($0) / Double(size)) }
        let windowPower = window.reduce(0) { $0 + $1 * $1 }
        weights = (0...size / 2).map { bin in
            let twice = bin == 0 || bin == size / 2 ? 1.0 : 2.0
            return twice * AWeighting.power(atHertz: Double(bin) * Double(sampleRate) / Double(size))
                / (Double(size) * windowPower)
        }
        left = [Double](repeating: 0, count: size)
        right = [Double](repeating: 0, count: size)
        real = [Double](repeating: 0, count: size)
        imaginary = [Double](repeating: 0, count: size)
    }

    /// A weighted mean square of a full-scale sine: the 0 of the meter's scale.
    static let fullScaleSine = 0.5

    /// Feeds interleaved frames; `second` is called with the A-weighted level (dB re a full-scale 1 kHz sine) of
    /// each second of audio that completes, the mean power of the blocks transformed in it.
    public mutating func append(_ samples: UnsafeBufferPointer<Float>, second: (Double) -> Void) {
        let frames = samples.count / channels
        var frame = 0
        while frame < frames {
            let take = min(frames - frame, blockFrames - filled, sampleRate - framesThisSecond)
            let (first, filled) = (frame, self.filled)
            let stereo = channels == 2
            left.withUnsafeMutableBufferPointer { left in
                right.withUnsafeMutableBufferPointer { right in
                    if stereo {
                        for index in 0..<take {
                            left[filled + index] = Double(samples[(first + index) * 2])
                            right[filled + index] = Double(samples[(first + index) * 2 + 1])
                        }
                    } else {
                        for index in 0..<take { left[filled + index] = Double(samples[first + index]) }
                    }
                }
            }
            self.filled += take
            framesThisSecond += take
            frame += take
            if self.filled == blockFrames {
                powerThisSecond += transformBlock()
                blocksThisSecond += 1
                // Half a block's overlap: the second half becomes the next block's first.
                let half = blockFrames / 2
                left.withUnsafeMutableBufferPointer {
                    $0.baseAddress!.update(from: $0.baseAddress! + half, count: half)
                }
                right.withUnsafeMutableBufferPointer {
                    $0.baseAddress!.update(from: $0.baseAddress! + half, count: half)
                }
                self.filled = half
            }
            if framesThisSecond == sampleRate {
                if blocksThisSecond > 0 {
                    second(Self.decibels(powerThisSecond / Double(blocksThisSecond)))
                }
                framesThisSecond = 0
                powerThisSecond = 0
                blocksThisSecond = 0
            }
        }
    }

    /// A weighted mean square as dB re a full-scale sine; -200 for silence.
    static func decibels(_ power: Double) -> Double {
        power > 0 ? max(-200, 10 * log10(power / fullScaleSine)) : -200
    }

    /// The current block's A-weighted mean square: the louder channel's.
    private mutating func transformBlock() -> Double {
        let size = blockFrames
        real.withUnsafeMutableBufferPointer { real in
            imaginary.withUnsafeMutableBufferPointer { imaginary in
                left.withUnsafeBufferPointer { left in
                    right.withUnsafeBufferPointer { right in
                        window.withUnsafeBufferPointer { window in
                            for index in 0..<size {
                                real[index] = left[index] * window[index]
                                imaginary[index] = right[index] * window[index]
                            }
                        }
                    }
                }
            }
        }
        fft.transform(&real, &imaginary)
        // Two real signals in one transform: L[k] = (X[k] + conj X[N-k]) / 2, R[k] = (X[k] - conj X[N-k]) / 2i.
        var leftPower = 0.0
        var rightPower = 0.0
        real.withUnsafeBufferPointer { real in
            imaginary.withUnsafeBufferPointer { imaginary in
                weights.withUnsafeBufferPointer { weights in
                    for bin in 0...size / 2 {
                        let mirror = (size - bin) & (size - 1)
                        let lr = real[bin] + real[mirror]
                        let li = imaginary[bin] - imaginary[mirror]
                        let rr = imaginary[bin] + imaginary[mirror]
                        let ri = real[mirror] - real[bin]
                        leftPower += weights[bin] * (lr * lr + li * li)
                        rightPower += weights[bin] * (rr * rr + ri * ri)
                    }
                }
            }
        }
        // The halves left out above: each component is twice what it stands for, each power four times.
        return (channels == 2 ? max(leftPower, rightPower) : leftPower) / 4
    }
}
