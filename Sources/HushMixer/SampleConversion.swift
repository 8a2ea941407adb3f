import HushCore

/// The soft limiter and the conversions to device formats, kept apart so they are tested bit for bit.
public enum SampleConversion {
    /// Where the limiter's knee starts (about -1.9 dBFS): below it, samples pass unchanged.
    public static let limiterThreshold: Float = 0.8

    /// A soft limiter: the identity up to the threshold, then a smooth curve that approaches but never reaches
    /// full scale, so any sum of voices stays inside [-1, 1] without clipping or wrapping.
    @inline(__always) @_noAllocation @_noLocks
    public static func limit(_ x: Float) -> Float {
        let magnitude = abs(x)
        guard magnitude > limiterThreshold else { return x }
        let headroom = 1 - limiterThreshold
        let u = (magnitude - limiterThreshold) / headroom
        let y = limiterThreshold + headroom * (u / (1 + u))
        return x < 0 ? -y : y
    }

    /// Limits `count` samples in place; a block that stays under the knee (the usual case) is only scanned.
    @_noAllocation @_noLocks
    public static func limit(_ samples: UnsafeMutablePointer<Float>, count: Int) {
        var peakBits: UInt32 = 0
        for i in 0..<count { peakBits = max(peakBits, samples[i].bitPattern & 0x7FFF_FFFF) }
        guard Float(bitPattern: peakBits) > limiterThreshold else { return }
        for i in 0..<count { samples[i] = limit(samples[i]) }
    }

    /// Writes `count` float samples (already limited to [-1, 1]) to `output` in `format`.
    ///
    /// Integer formats scale symmetrically (1.0 → the largest positive value, -1.0 → its negation) and round to
    /// nearest, ties to even.
    @_noAllocation @_noLocks
    public static func write(
        _ samples: UnsafePointer<Float>,
        count: Int,
        to output: UnsafeMutableRawPointer,
        format: SampleFormat
    ) {
        // Rounding by the "magic number" trick: adding 1.5 × 2^23 (2^52 for doubles) leaves the integer,
        // rounded to nearest-even, in the low bits of the sum. No branches, no trapping conversions: these loops
        // vectorise.
        switch format {
        case .s16LE:
            let out = output.assumingMemoryBound(to: UInt16.self)
            for i in 0..<count {
                let scaled = max(-32767, min(32767, samples[i] * 32767)) + 12_582_912
                out[i] = UInt16(truncatingIfNeeded: scaled.bitPattern).littleEndian
            }
        case .s24_3LE:
            let out = output.assumingMemoryBound(to: UInt8.self)
            for i in 0..<count {
                let value = doubleRound(samples[i], 8_388_607)
                out[3 &* i] = UInt8(truncatingIfNeeded: value)
                out[3 &* i &+ 1] = UInt8(truncatingIfNeeded: value >> 8)
                out[3 &* i &+ 2] = UInt8(truncatingIfNeeded: value >> 16)
            }
        case .s32LE:
            let out = output.assumingMemoryBound(to: UInt32.self)
            for i in 0..<count { out[i] = doubleRound(samples[i], 2_147_483_647).littleEndian }
        case .floatLE:
            let out = output.assumingMemoryBound(to: UInt32.self)
            for i in 0..<count { out[i] = samples[i].bitPattern.littleEndian }
        }
    }

    /// `x × scale` clamped to ±scale, rounded to nearest-even, as the low 32 bits of a two's-complement integer.
    @inline(__always)
    private static func doubleRound(_ x: Float, _ scale: Double) -> UInt32 {
        let scaled = max(-scale, min(scale, Double(x) * scale)) + 6_755_399_441_055_744
        return UInt32(truncatingIfNeeded: scaled.bitPattern)
    }

}
