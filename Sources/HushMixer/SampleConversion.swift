import HushCore

/// The soft limiter and the conversions between float and the sample formats — to a device or a capture stream
/// (``write(_:count:to:format:)``), from a playback stream (``read(_:count:format:into:)``) — kept apart so they are
/// tested bit for bit.
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

    /// ``limit(_:count:)`` then ``write(_:count:to:format:)``, in one pass over the samples where it can: 16-bit
    /// output is converted while the block is scanned for the knee, and only a block that goes past it (rare) is
    /// limited and converted again. The bytes are those of the two calls, except that a NaN in the block no longer
    /// keeps the limiter off for the rest of it.
    @_noAllocation @_noLocks
    public static func limitAndWrite(
        _ samples: UnsafeMutablePointer<Float>,
        count: Int,
        to output: UnsafeMutableRawPointer,
        format: SampleFormat
    ) {
        typealias Vector = SIMD8<Float>
        let source = UnsafeRawPointer(samples)
        var peak = Vector(repeating: 0)
        var i = 0
        // The vector stores below write native-endian samples: the fused path is for little-endian hosts (all
        // that hush runs on); others scan, then convert with `write`.
        #if _endian(little)
        // A pattern, not `==`: Swift 6.0 compiles `==` on this String-backed enum with reference counting, which
        // @_noLocks refuses (6.3 does not).
        let fused = if case .s16LE = format { true } else { false }
        #else
        let fused = false
        #endif
        if fused {
            let one = Vector(repeating: 1)
            let scale = Vector(repeating: 32767)
            let magic = Vector(repeating: 12_582_912)
            while i &+ 8 <= count {
                let x = source.loadUnaligned(fromByteOffset: i &* 4, as: Vector.self)
                let m = unsafeBitCast(unsafeBitCast(x, to: SIMD8<UInt32>.self) & 0x7FFF_FFFF, to: Vector.self)
                peak = peak.replacing(with: m, where: m .> peak)
                // `max(-32767, min(32767, x × 32767))` as in `write`, computed as `max(-1, min(1, x)) × 32767`:
                // rounding is monotonic and ±1 × 32767 is exact, so both give the same float for every x, and a
                // NaN becomes 32767 in both. Clamping before the multiplication keeps the two selects a `minps`
                // and a `maxps` (after it, LLVM turns them into a blend of the packed 16-bit results).
                let upper = one.replacing(with: x, where: x .< one)
                let clamped = upper.replacing(with: -one, where: upper .< -one) * scale
                let bits = unsafeBitCast(clamped + magic, to: SIMD8<UInt32>.self)
                output.storeBytes(
                    of: SIMD8<UInt16>(truncatingIfNeeded: bits),
                    toByteOffset: i &* 2,
                    as: SIMD8<UInt16>.self
                )
                i &+= 8
            }
            let out = output.assumingMemoryBound(to: UInt16.self)
            while i < count {
                let x = samples[i]
                let m = Float(bitPattern: x.bitPattern & 0x7FFF_FFFF)
                if m > peak[0] { peak[0] = m }
                let scaled = max(-32767, min(32767, x * 32767)) + 12_582_912
                out[i] = UInt16(truncatingIfNeeded: scaled.bitPattern).littleEndian
                i &+= 1
            }
        } else {
            while i &+ 8 <= count {
                let x = source.loadUnaligned(fromByteOffset: i &* 4, as: Vector.self)
                let m = unsafeBitCast(unsafeBitCast(x, to: SIMD8<UInt32>.self) & 0x7FFF_FFFF, to: Vector.self)
                peak = peak.replacing(with: m, where: m .> peak)
                i &+= 8
            }
            while i < count {
                let m = Float(bitPattern: samples[i].bitPattern & 0x7FFF_FFFF)
                if m > peak[0] { peak[0] = m }
                i &+= 1
            }
        }
        var loudest: Float = 0
        for lane in 0..<8 where peak[lane] > loudest { loudest = peak[lane] }
        if loudest > limiterThreshold {
            for j in 0..<count { samples[j] = limit(samples[j]) }
        } else if fused {
            return
        }
        write(samples, count: count, to: output, format: format)
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

    /// Reads `count` samples in `format` from `input` as floats, the way into the mix (an application's stream):
    /// integers divided by 2^15, 2^23 or 2^31, so the most negative value is exactly -1 and the largest a step under 1
    /// (``write(_:count:to:format:)`` scales by one less, so that both +1 and -1 fit); floats as they are, but NaN
    /// becomes silence and anything beyond full scale is clipped, since whoever wrote them is not trusted.
    @_noAllocation @_noLocks
    public static func read(
        _ input: UnsafeRawPointer,
        count: Int,
        format: SampleFormat,
        into output: UnsafeMutablePointer<Float>
    ) {
        switch format {
        case .s16LE:
            let samples = input.assumingMemoryBound(to: Int16.self)
            for i in 0..<count { output[i] = Float(Int16(littleEndian: samples[i])) * (1 / 32768) }
        case .s24_3LE:
            let bytes = input.assumingMemoryBound(to: UInt8.self)
            for i in 0..<count {
                let value =
                    UInt32(bytes[3 &* i]) << 8 | UInt32(bytes[3 &* i &+ 1]) << 16 | UInt32(bytes[3 &* i &+ 2]) << 24
                output[i] = Float(Int32(bitPattern: value) >> 8) * (1 / 8_388_608)
            }
        case .s32LE:
            let samples = input.assumingMemoryBound(to: Int32.self)
            for i in 0..<count { output[i] = Float(Int32(littleEndian: samples[i])) * (1 / 2_147_483_648) }
        case .floatLE:
            let samples = input.assumingMemoryBound(to: UInt32.self)
            for i in 0..<count {
                let value = Float(bitPattern: UInt32(littleEndian: samples[i]))
                // NaN fails both comparisons and becomes silence; anything louder than full scale is clipped.
                output[i] = value >= -1 ? (value <= 1 ? value : 1) : (value < -1 ? -1 : 0)
            }
        }
    }

    /// `x × scale` clamped to ±scale, rounded to nearest-even, as the low 32 bits of a two's-complement integer.
    @inline(__always)
    private static func doubleRound(_ x: Float, _ scale: Double) -> UInt32 {
        let scaled = max(-scale, min(scale, Double(x) * scale)) + 6_755_399_441_055_744
        return UInt32(truncatingIfNeeded: scaled.bitPattern)
    }

}
