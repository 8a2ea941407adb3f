/// Decoded audio held in memory: interleaved 32-bit float frames at a known rate.
///
/// The storage is allocated once and never moves, so the real-time engine can read it through a pointer while the
/// control side keeps the buffer alive (it releases it only after the engine reports the voice released).
public final class AudioBuffer: @unchecked Sendable {
    public let channels: Int
    public let sampleRate: Int
    public let frameCount: Int
    /// `frameCount × channels` samples, interleaved.
    public let samples: UnsafeMutablePointer<Float>

    /// A buffer of `frameCount` silent frames.
    public init(frameCount: Int, channels: Int, sampleRate: Int) {
        precondition(channels > 0 && frameCount >= 0 && sampleRate > 0)
        self.channels = channels
        self.sampleRate = sampleRate
        self.frameCount = frameCount
        samples = .allocate(capacity: max(1, frameCount * channels))
        samples.initialize(repeating: 0, count: max(1, frameCount * channels))
    }

    /// A buffer whose samples `fill` writes (all `frameCount × channels` of them) before anyone reads it.
    public init(frameCount: Int, channels: Int, sampleRate: Int, fill: (UnsafeMutablePointer<Float>) -> Void) {
        precondition(channels > 0 && frameCount >= 0 && sampleRate > 0)
        self.channels = channels
        self.sampleRate = sampleRate
        self.frameCount = frameCount
        samples = .allocate(capacity: max(1, frameCount * channels))
        fill(samples)
    }

    /// A buffer holding `interleaved` samples.
    public convenience init(interleaved: [Float], channels: Int, sampleRate: Int) {
        self.init(frameCount: interleaved.count / channels, channels: channels, sampleRate: sampleRate)
        interleaved.withUnsafeBufferPointer { source in
            samples.update(from: source.baseAddress!, count: frameCount * channels)
        }
    }

    deinit { samples.deallocate() }

    /// A copy of the first `frames` frames.
    public func prefix(frames: Int) -> AudioBuffer {
        let copy = AudioBuffer(frameCount: min(frames, frameCount), channels: channels, sampleRate: sampleRate)
        copy.samples.update(from: samples, count: copy.frameCount * channels)
        return copy
    }

    /// The samples as an array (for tests and analysis, not for the real-time path).
    public var interleaved: [Float] { Array(UnsafeBufferPointer(start: samples, count: frameCount * channels)) }

    /// The duration in seconds.
    public var seconds: Double { Double(frameCount) / Double(sampleRate) }
}

/// How samples are laid out for an output device.
public enum SampleFormat: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// 16-bit signed little-endian.
    case s16LE = "S16_LE"
    /// 24-bit signed little-endian in 3 bytes.
    case s24_3LE = "S24_3LE"
    /// 32-bit signed little-endian.
    case s32LE = "S32_LE"
    /// 32-bit IEEE float little-endian.
    case floatLE = "FLOAT_LE"

    /// Bytes per sample.
    public var bytesPerSample: Int {
        switch self {
        case .s16LE: 2
        case .s24_3LE: 3
        case .s32LE, .floatLE: 4
        }
    }

    public var description: String { rawValue }
}
