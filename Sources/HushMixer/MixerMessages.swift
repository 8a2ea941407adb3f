import HushCore

/// Where a voice's samples are: a decoded buffer the control side keeps alive until the voice is released.
public struct VoiceSource: BitwiseCopyable, @unchecked Sendable {
    public var samples: UnsafePointer<Float>
    public var frameCount: Int
    public var channels: Int
    /// A live or streamed source: frames come from this ring as they arrive (position and looping do not apply;
    /// frames that are late play as silence).
    public var ring: SampleRing?
    /// A source that produces its frames when asked (an application's stream through the `hush` ALSA device): the
    /// engine calls it for the frames it is about to mix, on the audio thread. Position and looping do not apply.
    public var pull: VoicePull?

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

    public init(_ pull: VoicePull) {
        // A valid pointer that is never read (the pull fills the engine's scratch buffer instead).
        samples = UnsafePointer(pull.scratchSentinel)
        frameCount = 0
        channels = pull.channels
        self.pull = pull
    }
}

/// A source the engine asks for frames: a C function and its context, so the call neither retains nor allocates.
///
/// `render(context, destination, frames)` writes up to `frames` interleaved frames of `channels` channels at the
/// mixer's rate and returns how many it wrote; the engine plays the rest of the period as silence. It is called only
/// while the voice renders (a paused voice is not asked: its source is held), from the audio thread, and must not
/// allocate, lock or block.
public struct VoicePull: BitwiseCopyable, @unchecked Sendable {
    public typealias Render = @convention(c) (UnsafeMutableRawPointer, UnsafeMutablePointer<Float>, Int) -> Int
    public var context: UnsafeMutableRawPointer
    public var render: Render
    public var channels: Int

    public init(context: UnsafeMutableRawPointer, channels: Int, render: Render) {
        precondition(channels == 1 || channels == 2, "a pulled voice is mono or stereo")
        self.context = context
        self.render = render
        self.channels = channels
    }

    nonisolated(unsafe) static let sentinel: UnsafeMutablePointer<Float> = {
        let pointer = UnsafeMutablePointer<Float>.allocate(capacity: 1)
        pointer.initialize(to: 0)
        return pointer
    }()
    var scratchSentinel: UnsafeMutablePointer<Float> { Self.sentinel }
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

/// Work the audio thread does once per period after the mix (an application's capture streams get their frames):
/// a C function and its context, so the call neither retains nor allocates. Same rules as ``VoicePull``.
public struct PeriodHook: BitwiseCopyable, @unchecked Sendable {
    public typealias Call = @convention(c) (UnsafeMutableRawPointer, Int) -> Void
    public typealias Wants = @convention(c) (UnsafeMutableRawPointer) -> Bool
    public var context: UnsafeMutableRawPointer
    public var call: Call
    /// Whether the hook needs periods now (a capture stream or relay is running, or one is on its way), so the
    /// audio thread must not go idle; nil: never. Called from either side: it may read atomics only.
    public var wantsPeriods: Wants?

    public init(context: UnsafeMutableRawPointer, call: Call, wantsPeriods: Wants? = nil) {
        self.context = context
        self.call = call
        self.wantsPeriods = wantsPeriods
    }
}

/// Two hooks the audio thread calls one after the other as one ``PeriodHook`` (the capture router's and hearing
/// safety's tap): made once on the control side and kept alive by its owner as long as the audio thread runs.
public final class PeriodHookPair: @unchecked Sendable {
    public let first: PeriodHook
    public let second: PeriodHook

    public init(_ first: PeriodHook, _ second: PeriodHook) {
        self.first = first
        self.second = second
    }

    /// Calls `first`, then `second`; wants periods when either does.
    public var hook: PeriodHook {
        PeriodHook(
            context: Unmanaged.passUnretained(self).toOpaque(),
            call: { context, frames in
                Unmanaged<PeriodHookPair>.fromOpaque(context)._withUnsafeGuaranteedRef { pair in
                    pair.first.call(pair.first.context, frames)
                    pair.second.call(pair.second.context, frames)
                }
            },
            wantsPeriods: { context in
                Unmanaged<PeriodHookPair>.fromOpaque(context)._withUnsafeGuaranteedRef { pair in
                    (pair.first.wantsPeriods.map { $0(pair.first.context) } ?? false)
                        || (pair.second.wantsPeriods.map { $0(pair.second.context) } ?? false)
                }
            }
        )
    }
}
