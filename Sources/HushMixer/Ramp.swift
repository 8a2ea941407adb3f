/// A gain that moves in a straight line, one step per frame, so changes never click or zipper.
struct Ramp: BitwiseCopyable {
    var value: Float
    var target: Float
    var step: Float = 0
    var remaining: Int32 = 0

    init(_ value: Float) {
        self.value = value
        target = value
    }

    /// Heads for `target` over `frames` frames (at once when `frames` ≤ 0).
    @inline(__always) @_noAllocation @_noLocks
    mutating func move(to target: Float, frames: Int32) {
        self.target = target
        if frames <= 0 {
            value = target
            step = 0
            remaining = 0
        } else {
            step = (target - value) / Float(frames)
            remaining = frames
        }
    }

    /// The value for the next frame.
    @inline(__always) @_noAllocation @_noLocks
    mutating func next() -> Float {
        guard remaining > 0 else { return value }
        remaining -= 1
        value = remaining == 0 ? target : value + step
        return value
    }

    var isMoving: Bool { remaining > 0 }

    /// Multiplies interleaved frames by this ramp's next `frames` values, advancing it.
    @inline(__always)
    mutating func multiplyInterleaved(_ samples: UnsafeMutablePointer<Float>, frames: Int, channels: Int) {
        for frame in 0..<frames {
            let gain = next()
            for channel in 0..<channels { samples[frame * channels + channel] *= gain }
        }
    }

    /// Multiplies `count` per-frame gains by this ramp's next `count` values, advancing it: the linear part in a
    /// loop the compiler vectorises, then the target.
    ///
    /// `ordinals` holds 1, 2, 3, … (as floats), so the loop needs no integer-to-float conversion and vectorises.
    @inline(__always) @_noAllocation @_noLocks
    mutating func multiply(_ gains: UnsafeMutablePointer<Float>, count: Int, ordinals: UnsafePointer<Float>) {
        guard remaining > 0 else {
            if value != 1 { for i in 0..<count { gains[i] *= value } }
            return
        }
        let moving = min(count, Int(remaining))
        let start = value
        let step = self.step
        for i in 0..<moving { gains[i] *= start + step * ordinals[i] }
        remaining -= Int32(moving)
        value = remaining == 0 ? target : start + step * Float(moving)
        if moving < count { for i in moving..<count { gains[i] *= value } }
    }

    /// The ramp's next `count` values as a line, and the ramp advanced past them exactly as ``multiply(_:count:ordinals:)``
    /// would: frame `i` (from 0) of the period has the value `start + step × (i + 1)` while `i < moving`, and `end`
    /// from there on. The engine computes the product of several ramps from these in one pass.
    @inline(__always) @_noAllocation @_noLocks
    mutating func advance(by count: Int) -> RampLine {
        guard remaining > 0 else { return RampLine(start: value, step: 0, end: value, moving: 0) }
        let moving = min(count, Int(remaining))
        let start = value
        remaining -= Int32(moving)
        value = remaining == 0 ? target : start + step * Float(moving)
        return RampLine(start: start, step: step, end: value, moving: moving)
    }
}

/// A ramp over one period: linear for the first `moving` frames, then constant at `end`.
struct RampLine: BitwiseCopyable {
    var start: Float
    var step: Float
    var end: Float
    var moving: Int

    /// The line's terms for the frames from `frame` on, up to the next change: `offset + slope × ordinal`. A
    /// constant has slope 0, and `end + 0 × ordinal` is exactly `end` (gains are never -0), so constant and moving
    /// stretches share one formula without changing a bit.
    @inline(__always)
    func terms(from frame: Int) -> (offset: Float, slope: Float) { frame < moving ? (start, step) : (end, 0) }
}
