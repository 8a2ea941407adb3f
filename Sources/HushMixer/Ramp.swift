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
}
