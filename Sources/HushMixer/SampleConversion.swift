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

    /// Writes `count` float samples (already limited to [-1, 1]) to `output` in `format`.
    ///
    /// Integer formats scale symmetrically (1.0 → the largest positive value, -1.0 → its negation) and round half
    /// away from zero.
    @_noAllocation @_noLocks
    public static func write(
        _ samples: UnsafePointer<Float>,
        count: Int,
        to output: UnsafeMutableRawPointer,
        format: SampleFormat
    ) {
        switch format {
        case .s16LE:
            let out = output.assumingMemoryBound(to: Int16.self)
            for i in 0..<count { out[i] = Int16(littleEndianValue: Int32(clampedRound(samples[i], 32767))) }
        case .s24_3LE:
            let out = output.assumingMemoryBound(to: UInt8.self)
            for i in 0..<count {
                let value = UInt32(bitPattern: clampedRound(samples[i], 8_388_607))
                out[3 * i] = UInt8(truncatingIfNeeded: value)
                out[3 * i + 1] = UInt8(truncatingIfNeeded: value >> 8)
                out[3 * i + 2] = UInt8(truncatingIfNeeded: value >> 16)
            }
        case .s32LE:
            let out = output.assumingMemoryBound(to: Int32.self)
            for i in 0..<count {
                let scaled = max(-2_147_483_647, min(2_147_483_647, Double(samples[i]) * 2_147_483_647))
                out[i] = Int32(scaled + (scaled < 0 ? -0.5 : 0.5)).littleEndian
            }
        case .floatLE:
            let out = output.assumingMemoryBound(to: UInt32.self)
            for i in 0..<count { out[i] = samples[i].bitPattern.littleEndian }
        }
    }

    /// `x × scale`, clamped to ±scale and rounded half away from zero.
    @inline(__always)
    private static func clampedRound(_ x: Float, _ scale: Float) -> Int32 {
        let scaled = max(-scale, min(scale, x * scale))
        return Int32(scaled + (scaled < 0 ? -0.5 : 0.5))
    }
}

extension Int16 {
    @inline(__always)
    fileprivate init(littleEndianValue value: Int32) { self = Int16(truncatingIfNeeded: value).littleEndian }
}
