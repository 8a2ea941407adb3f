import CHushWire
import HushAudioFile
import HushCore
import HushMixer
import Synchronization

/// An application's capture stream: each period the audio thread hands it the microphone's frames — or silence,
/// when the policy does not let it hear them — at the real rate, converted to the stream's rate, channels and
/// format, into the shared ring.
///
/// The real rate matters: a call's clock runs on the frames it receives, so a stream that may not hear the
/// microphone gets silence, never nothing. A client that does not read loses the newest frames (counted as
/// overrun); hushd never waits for it.
///
/// Samples leave as the mixer's output leaves for a device: ``HushMixer/SampleConversion/write(_:count:to:format:)``,
/// the same full scale (1.0 → 32767, symmetric) and rounding (to nearest, ties to even) for a capture stream as for
/// what hushd plays.
///
/// - Important: ``deliver(_:channels:frames:)`` runs on the audio thread.
public final class CaptureStream: CaptureConsumer, @unchecked Sendable {
    public let memory: StreamMemory
    public let geometry: StreamGeometry
    let converter: RateConverter?
    let ringFrames: UInt64
    let frameBytes: Int
    /// The ring's sample format, as the mixer's conversion names it.
    let format: SampleFormat
    private var written: UInt64 = 0
    /// The period's frames in the stream's channel count (mixer rate), then at the stream's rate.
    private let mapped: UnsafeMutablePointer<Float>
    private let converted: UnsafeMutablePointer<Float>
    private let convertedCapacity: Int

    /// The latch of an overrun episode: the ring was full while judged, and has not had room since.
    private var full = false
    private var appliedPrepare = 0

    // Control side → audio thread.
    /// Whether a full ring is the application's lateness (R23: the stream is judged). The plugin tells the
    /// application (XRUN) when `overrun_frames` grows while its stream runs.
    public let counting = Atomic<Bool>(false)
    private let prepareGeneration = Atomic<Int>(0)

    // Audio thread → control side.
    /// Times the ring was full while judged (R23): each an overrun the application is told of.
    public let overruns = Atomic<Int>(0)
    /// Frames dropped, while judged, because the client did not read them.
    public let overrunFrames = Atomic<Int>(0)
    /// Periods in which the client's counter was impossible (and clamped).
    public let violations = Atomic<Int>(0)

    public init(memory: StreamMemory, mixerRate: Int, maxFrames: Int) throws(StreamError) {
        self.memory = memory
        geometry = memory.geometry
        precondition(geometry.direction == .capture)
        let channels = geometry.channels
        ringFrames = UInt64(geometry.ringFrames)
        frameBytes = geometry.frameBytes
        format = geometry.format.sampleFormat
        converter = try StreamGeometry.converter(channels: channels, from: mixerRate, to: geometry.rate)
        mapped = .allocate(capacity: maxFrames * channels)
        mapped.initialize(repeating: 0, count: maxFrames * channels)
        convertedCapacity = Int((Double(maxFrames) * Double(geometry.rate) / Double(mixerRate)).rounded(.up)) + 64
        converted = .allocate(capacity: convertedCapacity * channels)
        converted.initialize(repeating: 0, count: convertedCapacity * channels)
        super.init(channels: channels)
    }

    deinit {
        mapped.deallocate()
        converted.deallocate()
    }

    /// Control side: the application prepared the stream again; it continues reading from the returned position
    /// (what was captured before is skipped by the client).
    public func prepare() -> UInt64 {
        prepareGeneration.add(1, ordering: .releasing)
        return memory.serverPosition
    }

    /// Audio thread: one period of `frames` frames at the mixer's rate with `sourceChannels` channels — the
    /// microphone's, or nil for silence.
    override func deliver(_ source: UnsafePointer<Float>?, channels sourceChannels: Int, frames: Int) {
        let microphone = take(source, channels: sourceChannels, frames: frames, into: mapped)
        if let converter {
            let made = converter.process(mapped, frames: frames, into: converted, capacity: convertedCapacity).made
            write(converted, count: made, microphone: microphone)
        } else {
            write(mapped, count: frames, microphone: microphone)
        }
    }

    private func write(_ samples: UnsafePointer<Float>, count: Int, microphone: Bool) {
        let read = memory.clientFrames
        var filled = written &- read
        if filled > ringFrames {
            // The client says it read what was never written, or is more than a ring behind: treat the ring as
            // full, so nothing it may be reading is overwritten.
            violations.add(1, ordering: .relaxed)
            filled = ringFrames
        }
        let room = Int(ringFrames - filled)
        let taken = min(room, count)
        let generation = prepareGeneration.load(ordering: .acquiring)
        if generation != appliedPrepare {
            appliedPrepare = generation
            full = false
        }
        if taken < count {
            // Frames lost either way; lateness (R23) only while judged, one episode until the ring has room again.
            if counting.load(ordering: .relaxed) {
                overrunFrames.add(count - taken, ordering: .relaxed)
                if !full { overruns.add(1, ordering: .relaxed) }
                full = true
            }
        } else {
            full = false
        }
        var done = 0
        while done < taken {
            let index = Int((written &+ UInt64(done)) % ringFrames)
            let chunk = min(taken - done, Int(ringFrames) - index)
            let target = memory.ring + index * frameBytes
            SampleConversion.write(samples + done * channels, count: chunk * channels, to: target, format: format)
            done += chunk
        }
        written &+= UInt64(taken)
        var snapshot = hush_wire_snapshot()
        snapshot.server_frames = written
        snapshot.overrun_frames = UInt64(overrunFrames.load(ordering: .relaxed))
        snapshot.audio_flags = microphone ? StreamMemory.microphoneFlag : 0
        memory.publish(&snapshot)
        let flags = memory.clientFlags
        guard flags & StreamMemory.waitingFlag != 0 else { return }
        let ready = Int(min(written &- read, ringFrames))
        if ready >= min(max(memory.wakeFrames, 1), Int(ringFrames)) { memory.signal() }
    }
}

extension StreamSampleFormat {
    /// The same format as the mixer's conversions name it.
    var sampleFormat: SampleFormat {
        switch self {
        case .s16LE: .s16LE
        case .s32LE: .s32LE
        case .floatLE: .floatLE
        }
    }
}
