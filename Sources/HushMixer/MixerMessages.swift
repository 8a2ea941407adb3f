import HushCore

/// Where a voice's samples are: a decoded buffer the control side keeps alive until the voice is released.
public struct VoiceSource: BitwiseCopyable, @unchecked Sendable {
    public var samples: UnsafePointer<Float>
    public var frameCount: Int
    public var channels: Int
    /// A live or streamed source: frames come from this ring as they arrive (position and looping do not apply;
    /// frames that are late play as silence).
    public var ring: SampleRing?

    public init(_ buffer: AudioBuffer) {
        samples = UnsafePointer(buffer.samples)
        frameCount = buffer.frameCount
        channels = buffer.channels
    }

    public init(_ ring: SampleRing) {
        samples = UnsafePointer(ring.storage)
        frameCount = 0
        channels = ring.channels
        self.ring = ring
    }
}

/// What the control side tells the real-time engine. Plain values only, so they cross the ring without allocation.
public enum MixerCommand: BitwiseCopyable, Sendable {
    /// Puts `source` in voice slot `voice` on `bus`, paused at its start, at `gain`.
    case attach(voice: Int32, bus: Int32, source: VoiceSource, loop: Bool, gain: Float)
    /// Moves the voice's gain to `gain` over `rampFrames`.
    case setVoiceGain(voice: Int32, gain: Float, rampFrames: Int32)
    /// Moves a bus's gain to `gain` over `rampFrames`.
    case setBusGain(bus: Int32, gain: Float, rampFrames: Int32)
    /// Plays from the current position, fading in over `fadeFrames`.
    case play(voice: Int32, fadeFrames: Int32)
    /// Fades out over `fadeFrames`, then holds the position.
    case pause(voice: Int32, fadeFrames: Int32)
    /// Fades out over `fadeFrames`, then goes back to the start.
    case stop(voice: Int32, fadeFrames: Int32)
    /// Frees the slot at once; the engine answers `released` so the buffer may be freed.
    case release(voice: Int32)
    /// Reports the buses' peaks every `frames` frames from now on (a tenth of a second until told otherwise).
    case setPeakInterval(frames: Int32)
}

/// What the engine tells the control side.
public enum MixerTelemetry: BitwiseCopyable, Sendable {
    /// A voice that does not loop came to the end of its sound (it is paused at its start again).
    case finished(voice: Int32)
    /// A voice slot is free; its source is no longer read.
    case released(voice: Int32)
    /// The loudest sample of each bus (after its gain) over the last report interval.
    case peaks(effect: Float, music: Float, ringer: Float)
}

extension Bus {
    /// The engine's index for the bus.
    public var index: Int32 {
        switch self {
        case .effect: 0
        case .music: 1
        case .ringer: 2
        }
    }
}
