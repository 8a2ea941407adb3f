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
}
