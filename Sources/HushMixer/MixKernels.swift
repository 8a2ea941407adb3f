/// The engine's inner loops, written with SIMD4<Float> so they vectorise on baseline x86-64 (SSE2) and on aarch64
/// (NEON) alike, whatever the auto-vectoriser makes of them.
///
/// Every loop computes exactly what the scalar formula next to it computes, in the same order, so the output is
/// the same to the bit with or without vectors (the scalar tails run the same formulas). Peaks are kept as the
/// lane-wise maximum of magnitudes (`a > peak ? a : peak`, one `maxps`/`fmax`), reduced once per call.
enum MixKernels {
    typealias Vector = SIMD4<Float>

    @inline(__always)
    static func load(_ base: UnsafePointer<Float>, _ index: Int) -> Vector {
        UnsafeRawPointer(base + index).loadUnaligned(as: Vector.self)
    }

    @inline(__always)
    static func store(_ value: Vector, _ base: UnsafeMutablePointer<Float>, _ index: Int) {
        UnsafeMutableRawPointer(base + index).storeBytes(of: value, as: Vector.self)
    }

    /// The magnitude of each lane: the sign bit cleared (one `andps`).
    @inline(__always)
    static func magnitude(_ value: Vector) -> Vector {
        unsafeBitCast(unsafeBitCast(value, to: SIMD4<UInt32>.self) & 0x7FFF_FFFF, to: Vector.self)
    }

    @inline(__always)
    static func raise(_ peak: inout Vector, _ samples: Vector) {
        let m = magnitude(samples)
        peak = peak.replacing(with: m, where: m .> peak)
    }

    @inline(__always)
    static func raise(_ peak: inout Vector, _ sample: Float) {
        let m = Float(bitPattern: sample.bitPattern & 0x7FFF_FFFF)
        if m > peak[0] { peak[0] = m }
    }

    /// The largest lane.
    @inline(__always)
    static func largest(_ peak: Vector) -> Float {
        var result = peak[0]
        for lane in 1..<4 where peak[lane] > result { result = peak[lane] }
        return result
    }

    /// Per-frame gains for `count` frames: `bus × voice × fade`, each a ``RampLine`` over the period, multiplied in
    /// that order (as three successive in-place multiplications did before: one rounding per product).
    @inline(__always)
    static func gains(
        _ gains: UnsafeMutablePointer<Float>,
        count: Int,
        bus: RampLine,
        voice: RampLine,
        fade: RampLine,
        ordinals: UnsafePointer<Float>
    ) {
        if bus.moving == 0 && voice.moving == 0 && fade.moving == 0 {
            let g = bus.end * voice.end * fade.end
            let v = Vector(repeating: g)
            var i = 0
            while i &+ 4 <= count {
                store(v, gains, i)
                i &+= 4
            }
            while i < count {
                gains[i] = g
                i &+= 1
            }
            return
        }
        // Stretches between the points where one of the ramps stops moving: inside each, every factor is a line,
        // a constant or exactly 1, and each combination has a loop of its own (a factor of 1 costs nothing).
        var from = 0
        while from < count {
            var to = count
            if bus.moving > from && bus.moving < to { to = bus.moving }
            if voice.moving > from && voice.moving < to { to = voice.moving }
            if fade.moving > from && fade.moving < to { to = fade.moving }
            let stretch = Stretch(gains: gains, ordinals: ordinals, from: from, to: to)
            stretch.bus(bus.terms(from: from), voice.terms(from: from), fade.terms(from: from))
            from = to
        }
    }

    /// Frames `from..<to` of a period, where the bus, voice and fade gains are each one ``GainFactor``.
    struct Stretch {
        var gains: UnsafeMutablePointer<Float>
        var ordinals: UnsafePointer<Float>
        var from: Int
        var to: Int

        @inline(__always)
        func bus(_ b: (Float, Float), _ v: (Float, Float), _ f: (Float, Float)) {
            if b.1 != 0 {
                voice(Linear(b), v, f)
            } else if b.0 == 1 {
                voice(Unity(), v, f)
            } else {
                voice(Constant(b.0), v, f)
            }
        }

        @inline(__always)
        func voice<B: GainFactor>(_ b: B, _ v: (Float, Float), _ f: (Float, Float)) {
            if v.1 != 0 {
                fade(b, Linear(v), f)
            } else if v.0 == 1 {
                fade(b, Unity(), f)
            } else {
                fade(b, Constant(v.0), f)
            }
        }

        @inline(__always)
        func fade<B: GainFactor, V: GainFactor>(_ b: B, _ v: V, _ f: (Float, Float)) {
            if f.1 != 0 {
                fill(b, v, Linear(f))
            } else if f.0 == 1 {
                fill(b, v, Unity())
            } else {
                fill(b, v, Constant(f.0))
            }
        }

        /// `(bus × voice) × fade` per frame, computed as `(voice × bus) × fade`: the same product, since a
        /// product of two floats does not depend on their order.
        @inline(__always)
        func fill<B: GainFactor, V: GainFactor, F: GainFactor>(_ b: B, _ v: V, _ f: F) {
            var i = from
            while i &+ 4 <= to {
                let o = load(ordinals, i)
                store(f.times(b.times(v.value(o), o), o), gains, i)
                i &+= 4
            }
            while i < to {
                let o = ordinals[i]
                gains[i] = f.times(b.times(v.value(o), o), o)
                i &+= 1
            }
        }
    }

    /// `out[f] += input[f] × gains[f]`, one channel in and out.
    @inline(__always)
    static func monoToMono(
        _ input: UnsafePointer<Float>,
        _ gains: UnsafePointer<Float>,
        _ out: UnsafeMutablePointer<Float>,
        frames: Int,
        peak: inout Vector
    ) {
        var p = peak
        var f = 0
        while f &+ 4 <= frames {
            let s = load(input, f) * load(gains, f)
            store(load(out, f) + s, out, f)
            raise(&p, s)
            f &+= 4
        }
        while f < frames {
            let s = input[f] * gains[f]
            out[f] += s
            raise(&p, s)
            f &+= 1
        }
        peak = p
    }

    /// `input[f] × gains[f]` added to both channels of frame `f`.
    @inline(__always)
    static func monoToStereo(
        _ input: UnsafePointer<Float>,
        _ gains: UnsafePointer<Float>,
        _ out: UnsafeMutablePointer<Float>,
        frames: Int,
        peak: inout Vector
    ) {
        var p = peak
        var f = 0
        while f &+ 4 <= frames {
            let s = load(input, f) * load(gains, f)
            let low = Vector(s[0], s[0], s[1], s[1])
            let high = Vector(s[2], s[2], s[3], s[3])
            store(load(out, 2 &* f) + low, out, 2 &* f)
            store(load(out, 2 &* f &+ 4) + high, out, 2 &* f &+ 4)
            raise(&p, s)
            f &+= 4
        }
        while f < frames {
            let s = input[f] * gains[f]
            out[2 &* f] += s
            out[2 &* f &+ 1] += s
            raise(&p, s)
            f &+= 1
        }
        peak = p
    }

    /// The average of frame `f`'s two channels times `gains[f]`, added to a mono output.
    @inline(__always)
    static func stereoToMono(
        _ input: UnsafePointer<Float>,
        _ gains: UnsafePointer<Float>,
        _ out: UnsafeMutablePointer<Float>,
        frames: Int,
        peak: inout Vector
    ) {
        var p = peak
        var f = 0
        while f &+ 4 <= frames {
            let a = load(input, 2 &* f)
            let b = load(input, 2 &* f &+ 4)
            let left = Vector(a[0], a[2], b[0], b[2])
            let right = Vector(a[1], a[3], b[1], b[3])
            let s = 0.5 * (left + right) * load(gains, f)
            store(load(out, f) + s, out, f)
            raise(&p, s)
            f &+= 4
        }
        while f < frames {
            let s = 0.5 * (input[2 &* f] + input[2 &* f &+ 1]) * gains[f]
            out[f] += s
            raise(&p, s)
            f &+= 1
        }
        peak = p
    }

    /// Frame `f`'s two channels times `gains[f]`, added to a stereo output.
    @inline(__always)
    static func stereoToStereo(
        _ input: UnsafePointer<Float>,
        _ gains: UnsafePointer<Float>,
        _ out: UnsafeMutablePointer<Float>,
        frames: Int,
        peak: inout Vector
    ) {
        var p = peak
        var f = 0
        while f &+ 4 <= frames {
            let g = load(gains, f)
            let low = load(input, 2 &* f) * Vector(g[0], g[0], g[1], g[1])
            let high = load(input, 2 &* f &+ 4) * Vector(g[2], g[2], g[3], g[3])
            store(load(out, 2 &* f) + low, out, 2 &* f)
            store(load(out, 2 &* f &+ 4) + high, out, 2 &* f &+ 4)
            raise(&p, low)
            raise(&p, high)
            f &+= 4
        }
        while f < frames {
            let left = input[2 &* f] * gains[f]
            let right = input[2 &* f &+ 1] * gains[f]
            out[2 &* f] += left
            out[2 &* f &+ 1] += right
            raise(&p, left)
            raise(&p, right)
            f &+= 1
        }
        peak = p
    }
}

/// One of the three gains a voice's samples are multiplied by, over a stretch of frames where it is exactly 1, a
/// constant or a line `offset + slope × ordinal`.
protocol GainFactor {
    /// The factor for the frames whose ordinals are `o`.
    func value(_ o: SIMD4<Float>) -> SIMD4<Float>
    /// `x` times the factor.
    func times(_ x: SIMD4<Float>, _ o: SIMD4<Float>) -> SIMD4<Float>
    func value(_ o: Float) -> Float
    func times(_ x: Float, _ o: Float) -> Float
}

struct Unity: GainFactor {
    @inline(__always) func value(_ o: SIMD4<Float>) -> SIMD4<Float> { SIMD4(repeating: 1) }
    @inline(__always) func times(_ x: SIMD4<Float>, _ o: SIMD4<Float>) -> SIMD4<Float> { x }
    @inline(__always) func value(_ o: Float) -> Float { 1 }
    @inline(__always) func times(_ x: Float, _ o: Float) -> Float { x }
}

struct Constant: GainFactor {
    var scalar: Float
    var vector: SIMD4<Float>
    @inline(__always) init(_ value: Float) {
        scalar = value
        vector = SIMD4(repeating: value)
    }
    @inline(__always) func value(_ o: SIMD4<Float>) -> SIMD4<Float> { vector }
    @inline(__always) func times(_ x: SIMD4<Float>, _ o: SIMD4<Float>) -> SIMD4<Float> { x * vector }
    @inline(__always) func value(_ o: Float) -> Float { scalar }
    @inline(__always) func times(_ x: Float, _ o: Float) -> Float { x * scalar }
}

struct Linear: GainFactor {
    var offset: Float
    var slope: Float
    var offsets: SIMD4<Float>
    var slopes: SIMD4<Float>
    @inline(__always) init(_ terms: (Float, Float)) {
        (offset, slope) = terms
        offsets = SIMD4(repeating: offset)
        slopes = SIMD4(repeating: slope)
    }
    @inline(__always) func value(_ o: SIMD4<Float>) -> SIMD4<Float> { offsets + slopes * o }
    @inline(__always) func times(_ x: SIMD4<Float>, _ o: SIMD4<Float>) -> SIMD4<Float> { x * (offsets + slopes * o) }
    @inline(__always) func value(_ o: Float) -> Float { offset + slope * o }
    @inline(__always) func times(_ x: Float, _ o: Float) -> Float { x * (offset + slope * o) }
}
