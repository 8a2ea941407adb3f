import CSamplerate
import HushCore

/// Why a rate converter could not be made.
public struct RateConverterError: Error, Hashable, Sendable, CustomStringConvertible {
    public var description: String
}

/// Converts interleaved float frames from one rate to another, a piece at a time: an application's stream at
/// 8, 16, 22.05 or 44.1 kHz on its way to the mixer's 48 kHz, or the microphone on its way to a recorder's rate.
///
/// libsamplerate's streaming interface with its fastest band-limited converter (SRC_SINC_FASTEST: 97 dB of
/// stop-band rejection, flat to 80 % of the band). Everything is allocated in `init`; ``process`` neither allocates
/// nor locks, so the audio thread may call it.
///
/// - Important: one thread at a time.
public final class RateConverter: @unchecked Sendable {
    public let channels: Int
    public let inputRate: Int
    public let outputRate: Int
    /// Output frames per input frame.
    public let ratio: Double
    private let state: OpaquePointer

    public init(channels: Int, from inputRate: Int, to outputRate: Int) throws(RateConverterError) {
        guard (1...2).contains(channels) else {
            throw RateConverterError(description: "\(channels) channels: the converter takes mono or stereo")
        }
        guard inputRate > 0, outputRate > 0, src_is_valid_ratio(Double(outputRate) / Double(inputRate)) != 0 else {
            throw RateConverterError(description: "cannot convert \(inputRate) Hz to \(outputRate) Hz")
        }
        var error: Int32 = 0
        guard let state = src_new(Int32(SRC_SINC_FASTEST), Int32(channels), &error) else {
            throw RateConverterError(description: "no rate converter: \(String(cString: src_strerror(error)))")
        }
        self.state = state
        self.channels = channels
        self.inputRate = inputRate
        self.outputRate = outputRate
        ratio = Double(outputRate) / Double(inputRate)
    }

    deinit { src_delete(state) }

    /// Converts up to `inputFrames` frames from `input` into at most `outputCapacity` frames at `output`. Returns
    /// how many input frames it used and how many output frames it made; the converter keeps a few frames of
    /// history of its own between calls. Real-time safe.
    @inline(__always)
    public func process(
        _ input: UnsafePointer<Float>,
        frames inputFrames: Int,
        into output: UnsafeMutablePointer<Float>,
        capacity outputCapacity: Int
    ) -> (used: Int, made: Int) {
        process(input, frames: inputFrames, into: output, capacity: outputCapacity, ratio: 1)
    }

    /// As ``process(_:frames:into:capacity:)``, with the ratio scaled by `correction` (a clock's drift matched:
    /// 1.0001 makes 0.01 % more frames). libsamplerate glides from the last call's ratio to this one across the
    /// call, so a correction that moves makes no step. Real-time safe.
    @inline(__always)
    public func process(
        _ input: UnsafePointer<Float>,
        frames inputFrames: Int,
        into output: UnsafeMutablePointer<Float>,
        capacity outputCapacity: Int,
        ratio correction: Double
    ) -> (used: Int, made: Int) {
        var data = SRC_DATA()
        data.data_in = input
        data.input_frames = inputFrames
        data.data_out = output
        data.output_frames = outputCapacity
        data.src_ratio = ratio * correction
        data.end_of_input = 0
        guard src_process(state, &data) == 0 else { return (inputFrames, 0) }
        return (data.input_frames_used, data.output_frames_gen)
    }

    /// Forgets the history (a stream that was dropped and starts again).
    public func reset() { src_reset(state) }
}
