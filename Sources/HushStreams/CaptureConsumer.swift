import HushMixer
import Synchronization

/// What the ``CaptureRouter`` hands the microphone to, once per period on the audio thread: an application's
/// capture stream (``CaptureStream``) or a relay onto one of the mixer's buses (``CaptureRelay``). Each gets the
/// microphone's frames only while the control side allows it, and silence otherwise.
///
/// - Important: ``deliver(_:channels:frames:)`` runs on the audio thread: no allocation, locks or system calls.
public class CaptureConsumer: @unchecked Sendable {
    /// The consumer's channel count (the router's frames are mapped to it).
    public let channels: Int

    // Control side → audio thread.
    /// Started (else nothing is delivered, not even silence).
    public let running = Atomic<Bool>(false)
    /// The policy lets this consumer hear the microphone.
    public let allowed = Atomic<Bool>(false)
    /// Its session is in `voiceChat` (R22): it gets the microphone processed for voice, where the router has a
    /// voice path.
    public let voice = Atomic<Bool>(false)

    // Audio thread → control side.
    /// Whether the last period delivered microphone frames (not silence).
    public let hearing = Atomic<Bool>(false)

    init(channels: Int) {
        self.channels = channels
    }

    /// Audio thread: one period of `frames` frames at the mixer's rate with `sourceChannels` channels — the
    /// microphone's, or nil for silence.
    func deliver(_ source: UnsafePointer<Float>?, channels sourceChannels: Int, frames: Int) {
        preconditionFailure("\(Self.self) must deliver")
    }

    /// Audio thread: writes the period into `target` in this consumer's channels — the microphone's frames when a
    /// source is there and the consumer is allowed to hear it, silence otherwise — and says which (also in
    /// ``hearing``).
    final func take(
        _ source: UnsafePointer<Float>?,
        channels sourceChannels: Int,
        frames: Int,
        into target: UnsafeMutablePointer<Float>
    ) -> Bool {
        let microphone = source != nil && allowed.load(ordering: .relaxed)
        hearing.store(microphone, ordering: .relaxed)
        guard microphone, let source else {
            target.update(repeating: 0, count: frames * channels)
            return false
        }
        switch (sourceChannels, channels) {
        case (1, 2):
            for i in 0..<frames {
                target[2 * i] = source[i]
                target[2 * i + 1] = source[i]
            }
        case (2, 1):
            for i in 0..<frames { target[i] = 0.5 * (source[2 * i] + source[2 * i + 1]) }
        default:
            target.update(from: source, count: frames * channels)
        }
        return true
    }
}

/// The microphone (or any capture device) relayed onto a bus: what the router hands it goes into a ring that a
/// session's voice plays — how `hushd play` puts a live capture (`capture=PCM`: mpd or librespot playing into
/// snd-aloop, a line input) on the music bus, gated like every other use of a capture device.
///
/// Only what it may hear goes into the ring: a relay that is not allowed (its session paused, interrupted or
/// stopped) writes nothing, so its session resumes with live audio, not with what was captured meanwhile. It adds
/// one period to the capture's way through hush (the router runs after the period's mix; the voice plays the
/// frames in the next).
public final class CaptureRelay: CaptureConsumer, @unchecked Sendable {
    /// What the session's voice plays.
    public let ring: SampleRing
    /// Frames that did not fit in the ring (its voice did not play them: paused, or not yet attached).
    public let droppedFrames = Atomic<Int>(0)
    private let scratch: UnsafeMutablePointer<Float>
    private let maxFrames: Int

    /// A relay of `channels` channels whose ring holds `ringFrames` frames; `maxFrames` is the longest period.
    public init(channels: Int, maxFrames: Int, ringFrames: Int) {
        self.maxFrames = maxFrames
        ring = SampleRing(frames: max(ringFrames, 2 * maxFrames), channels: channels)
        scratch = .allocate(capacity: maxFrames * channels)
        scratch.initialize(repeating: 0, count: maxFrames * channels)
        super.init(channels: channels)
        running.store(true, ordering: .relaxed)
    }

    deinit {
        ring.deallocate()
        scratch.deallocate()
    }

    override func deliver(_ source: UnsafePointer<Float>?, channels sourceChannels: Int, frames: Int) {
        let frames = min(frames, maxFrames)
        guard take(source, channels: sourceChannels, frames: frames, into: scratch) else { return }
        let written = ring.write(scratch, frames: frames)
        if written < frames { droppedFrames.add(frames - written, ordering: .relaxed) }
    }
}
