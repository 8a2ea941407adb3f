import HushAudioFile
import HushMixer
import Synchronization

/// How far a microphone's clock runs from the output's, found from the microphone's ring: read once a period on
/// the output's clock, written once a period on the microphone's. On one card the two share a crystal and the ring's
/// fill only wobbles with the periods' phase; on two cards (a USB microphone beside an I2S amplifier) it creeps —
/// 100 ppm is 4.8 frames a second at 48 kHz, a period every 13 s at 64 frames — until the reader finds a gap or the
/// writer drops frames.
///
/// A proportional-integral controller on the fill, smoothed over the phase's wobble, gives the resampling ratio that
/// keeps the fill at its target; its integral part is the drift itself. Pure: the feeder's thread runs it, and tests
/// run it on any clock they make up.
package struct DriftController: Sendable {
    /// The fill to hold, frames.
    package let target: Double
    package let sampleRate: Double
    /// The largest correction, either way (1000 ppm: ten times what crystals drift).
    package static let limit = 1e-3
    /// Seconds of fill error to ratio, and its integral per second: the fill is an integrator of the ratio, so the
    /// loop is s² + P·s + I with the fill's smoothing in it; P = 0.3/s and I = 0.0225/s² put both poles near
    /// 0.15 rad/s, critically damped — settled in about 30 s, and a period's wobble of the fill (64 frames) moves the
    /// ratio by 400 ppm at most before smoothing, 60 after.
    static let proportional = 0.3
    static let integralGain = 0.0225
    /// The fill's smoothing time constant, s.
    static let smoothing = 2.0

    package private(set) var smoothedFill: Double
    package private(set) var integral = 0.0
    /// Seconds of microphone clock seen.
    package private(set) var elapsed = 0.0

    package init(target: Int, sampleRate: Int) {
        self.target = Double(target)
        self.sampleRate = Double(sampleRate)
        smoothedFill = Double(target)
    }

    /// After `frames` frames came from the microphone and the ring held `fill` frames: the ratio (output frames per
    /// input frame) to resample the next frames with.
    package mutating func update(fill: Int, frames: Int) -> Double {
        let dt = Double(frames) / sampleRate
        elapsed += dt
        let alpha = min(1, dt / Self.smoothing)
        smoothedFill += (Double(fill) - smoothedFill) * alpha
        let error = (target - smoothedFill) / sampleRate
        integral = min(max(integral + Self.integralGain * error * dt, -Self.limit), Self.limit)
        let correction = min(max(Self.proportional * error + integral, -Self.limit), Self.limit)
        averageCorrection += (correction - averageCorrection) * min(1, dt / Self.driftAveraging)
        return 1 + correction
    }

    /// The correction averaged over about ``driftAveraging`` seconds: once settled, the drift.
    package private(set) var averageCorrection = 0.0
    static let driftAveraging = 20.0

    /// The microphone's clock against the output's, ppm: positive when the microphone runs slow (it gives fewer
    /// frames than the output takes, and is stretched).
    package var driftPPM: Double { averageCorrection * 1e6 }
}

/// The microphone's frames on their way into its ring, resampled by the ``DriftController``'s ratio so the ring
/// neither runs dry nor overflows when the microphone's clock is not the output's. Allocation-free after `init`.
package final class ClockMatch: @unchecked Sendable {
    private let converter: RateConverter
    private var controller: DriftController
    private let scratch: UnsafeMutablePointer<Float>
    private let capacity: Int
    private let channels: Int
    /// The stretch applied, in hundredths of a ppm (control side reads it): frames made over frames taken, over the
    /// last complete window of ``window`` seconds, 0 before the first. It is the drift plus what the fill asked for
    /// (a reader that lost or caught up frames), so it wobbles by hundreds of ppm where the reader is late now and
    /// then; the drift people read comes from the two clocks' ``RateMeter``s.
    package let stretchCentiPPM = Atomic<Int>(0)
    /// Frames taken and made in the window under way, and its length in frames of the microphone's clock.
    private var taken = 0
    private var made = 0
    private let window: Int
    /// Seconds of microphone clock the controller has seen (settled after about 30).
    package let settledSeconds = Atomic<Int>(0)

    package init(channels: Int, sampleRate: Int, maxFrames: Int, targetFill: Int) throws(RateConverterError) {
        converter = try RateConverter(channels: channels, from: sampleRate, to: sampleRate)
        window = 60 * sampleRate
        controller = DriftController(target: targetFill, sampleRate: sampleRate)
        holdAbove = 4 * targetFill
        self.channels = channels
        capacity = maxFrames * 2 + 64
        scratch = .allocate(capacity: capacity * channels)
        scratch.initialize(repeating: 0, count: capacity * channels)
    }

    deinit { scratch.deallocate() }

    /// Above this fill the reader is away or far behind, not drifting: 4 × the target.
    private let holdAbove: Int

    /// Writes `frames` frames of `source` into `ring`, resampled; returns the frames it could not fit.
    ///
    /// Drift moves the fill by a few frames a second (100 ppm is 4.8 at 48 kHz). A fill far above the target, or a
    /// ring that cannot take the frames, is the reader's absence — hushd's audio thread asleep while nobody records
    /// or plays, or late — and says nothing about the clocks: the controller is left as it was instead of winding
    /// up to its limit, and the frames go at the drift found so far (its integral).
    package func write(_ source: UnsafePointer<Float>, frames: Int, into ring: SampleRing) -> Int {
        let fill = ring.available
        let ratio =
            fill <= holdAbove && fill + frames <= ring.capacity
            ? controller.update(fill: fill, frames: frames) : 1 + controller.integral
        var used = 0
        var dropped = 0
        while used < frames {
            let (took, made) = converter.process(
                source + used * channels,
                frames: frames - used,
                into: scratch,
                capacity: capacity,
                ratio: ratio
            )
            let written = ring.write(scratch, frames: made)
            dropped += made - written
            used += took
            self.taken += took
            self.made += made
            if took == 0 && made == 0 { break }
        }
        if taken >= window {
            // The stretch that held the fill (the controller's own figure carries its wobble).
            let stretch = Double(self.made) / Double(taken) - 1
            stretchCentiPPM.store(Int((stretch * 1e8).rounded()), ordering: .relaxed)
            taken = 0
            self.made = 0
        }
        settledSeconds.store(Int(controller.elapsed), ordering: .relaxed)
        return dropped
    }

    /// The stretch applied over the last whole window, ppm: negative when the microphone gave more frames than the
    /// output took (it was shrunk).
    package var stretchPPM: Double { Double(stretchCentiPPM.load(ordering: .relaxed)) / 100 }
}
