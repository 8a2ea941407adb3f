import CHushWire
import HushAudioFile
import HushCore
import HushMixer
import Synchronization

/// An application's playback stream as the mixer sees it: a voice that pulls the client's frames out of the
/// shared ring, converts them to float at the mixer's rate, and tells the client where it is.
///
/// The engine calls ``voice`` only while the voice renders. A paused voice (interrupted, unplugged, paused by a
/// media key or by the application) is not asked, so nothing is consumed: the client's writes block like a paused
/// device's, its position and delay stay where they were. A silenced voice (R1) is asked as usual and mixed at gain
/// 0: consumed at the real rate.
///
/// **Nothing the client writes is trusted.** Per period the audio thread reads the client's counter and flags
/// once; a counter that is behind what was consumed or more than a ring ahead of it is a violation, counted, and
/// read as "nothing new". Float samples that are not numbers or beyond full scale are made silent or clipped
/// before they reach the mix. The geometry is hushd's own copy.
///
/// - Important: ``render(into:frames:)`` runs on the audio thread: no allocation, lock, or system call but the
///   one eventfd write per period while the client waits.
public final class PlaybackStream: @unchecked Sendable {
    public let memory: StreamMemory
    public let geometry: StreamGeometry
    let converter: RateConverter?
    /// Mixer frames per stream frame.
    let ratio: Double
    let channels: Int
    let ringFrames: UInt64
    let frameBytes: Int
    /// The ring's sample format, as the mixer's conversion names it.
    let format: SampleFormat

    // The audio thread's own state.
    private var consumed: UInt64 = 0
    /// Converted (float) frames at the stream's rate, waiting for the rate converter.
    private let staging: UnsafeMutablePointer<Float>
    private let stagingCapacity: Int
    private var staged = 0
    private var dry = false
    /// Mixer frames rendered since the ring ran empty: once they cover what was queued after its last frame (the
    /// converter's look-ahead and the output device's queue), everything written has been played.
    private var emptyRun = 0
    private var appliedPrepare = 0

    // Control side → audio thread.
    private let prepareGeneration = Atomic<Int>(0)
    private let prepareTarget = Atomic<UInt64>(0)
    /// The output's period in force and the frames queued between the mixer and the speaker (the device's
    /// buffer), at the mixer's rate: the audio thread's, read each period.
    public let pace: OutputPace
    /// Whether an empty ring is the application's lateness (R23: the stream is judged); draining never is. The
    /// plugin tells the application (XRUN) when `underrun_frames` grows while its stream runs.
    public let counting = Atomic<Bool>(false)

    // Audio thread → control side.
    /// Times the ring ran dry while the stream was running.
    public let underruns = Atomic<Int>(0)
    /// Stream frames the mixer wanted and the ring did not have.
    public let underrunFrames = Atomic<Int>(0)
    /// Periods in which the client's counter was impossible (and clamped).
    public let violations = Atomic<Int>(0)

    /// - Parameters:
    ///   - mixerRate: the rate the voice must deliver.
    ///   - maxFrames: the most frames the engine asks for at once.
    ///   - pace: the output's period and queue (the audio thread's ``OutputPace``).
    public init(
        memory: StreamMemory,
        mixerRate: Int,
        maxFrames: Int,
        pace: OutputPace = OutputPace()
    ) throws(StreamError) {
        self.memory = memory
        self.pace = pace
        geometry = memory.geometry
        precondition(geometry.direction == .playback)
        channels = geometry.channels
        ringFrames = UInt64(geometry.ringFrames)
        frameBytes = geometry.frameBytes
        format = geometry.format.sampleFormat
        ratio = Double(mixerRate) / Double(geometry.rate)
        converter = try StreamGeometry.converter(channels: channels, from: geometry.rate, to: mixerRate)
        // Enough input for the largest period, with room for the converter's appetite.
        stagingCapacity = Int((Double(maxFrames) / ratio).rounded(.up)) + 64
        staging = .allocate(capacity: stagingCapacity * channels)
        staging.initialize(repeating: 0, count: stagingCapacity * channels)
    }

    deinit { staging.deallocate() }

    /// The voice the mixer plays. The caller keeps this object alive until the mixer has released the voice.
    public var voice: VoicePull {
        VoicePull(context: Unmanaged.passUnretained(self).toOpaque(), channels: channels) { context, out, frames in
            Unmanaged<PlaybackStream>.fromOpaque(context)._withUnsafeGuaranteedRef {
                $0.render(into: out, frames: frames)
            }
        }
    }

    /// Control side: the application prepared the stream again (after a drop): what it wrote before is discarded.
    /// Returns the position the client continues from; the audio thread jumps there before it next reads. The
    /// client may not write while it prepares, so nothing the audio thread consumes can pass this position.
    public func prepare() -> UInt64 {
        let position = memory.clientPosition
        prepareTarget.store(position, ordering: .relaxed)
        prepareGeneration.add(1, ordering: .releasing)
        return position
    }

    /// Audio thread: fills `out` with up to `frames` frames at the mixer's rate; returns how many.
    func render(into out: UnsafeMutablePointer<Float>, frames: Int) -> Int {
        let generation = prepareGeneration.load(ordering: .acquiring)
        if generation != appliedPrepare {
            appliedPrepare = generation
            consumed = prepareTarget.load(ordering: .relaxed)
            staged = 0
            converter?.reset()
            emptyRun = Int.max / 2
            dry = false
        }
        let written = memory.clientFrames
        let flags = memory.clientFlags
        var available = written &- consumed
        if available > ringFrames {
            // Behind what was consumed, or more than a ring ahead: a confused or hostile client. Nothing new.
            violations.add(1, ordering: .relaxed)
            available = 0
        }
        var produced = 0
        /// Stream frames of silence put in for frames the ring did not have.
        var padded = 0
        let draining = flags & StreamMemory.drainingFlag != 0
        if let converter {
            while produced < frames {
                let wanted = Int((Double(frames - produced) / ratio).rounded(.up)) + 2
                var take = min(Int(available), stagingCapacity - staged, max(0, wanted - staged))
                if take > 0 {
                    read(take, into: staging + staged * channels)
                    staged += take
                    available -= UInt64(take)
                } else if available == 0 && staged < wanted {
                    // The ring is empty (drained, or the client is late): silence pushes the converter's last
                    // frames (its look-ahead) out, so they are heard now and the stream can say all was played.
                    take = min(stagingCapacity, wanted) - staged
                    (staging + staged * channels).update(repeating: 0, count: take * channels)
                    staged += take
                    padded += take
                }
                let (used, made) = converter.process(
                    staging,
                    frames: staged,
                    into: out + produced * channels,
                    capacity: frames - produced
                )
                if used > 0 {
                    (staging).update(from: staging + used * channels, count: (staged - used) * channels)
                    staged -= used
                }
                produced += made
                if made == 0 && take == 0 { break }
            }
        } else {
            produced = min(frames, Int(available))
            read(produced, into: out)
            available -= UInt64(produced)
        }

        emptyRun = available == 0 ? emptyRun &+ frames : 0
        if produced < frames || padded > 0 {
            if !draining && counting.load(ordering: .relaxed) {
                underrunFrames.add(Int(Double(frames - produced) / ratio) + padded, ordering: .relaxed)
                if !dry { underruns.add(1, ordering: .relaxed) }
                dry = true
            }
        } else if available > 0 {
            dry = false
        }
        publish(written: written, flags: flags, draining: draining, empty: available == 0)
        return produced
    }

    /// Copies `count` frames from the ring at `consumed` into `destination` as float, and advances `consumed`.
    private func read(_ count: Int, into destination: UnsafeMutablePointer<Float>) {
        var done = 0
        while done < count {
            let index = Int((consumed &+ UInt64(done)) % ringFrames)
            let chunk = min(count - done, Int(ringFrames) - index)
            SampleConversion.read(
                memory.ring + index * frameBytes,
                count: chunk * channels,
                format: format,
                into: destination + done * channels
            )
            done += chunk
        }
        consumed &+= UInt64(count)
    }

    /// Tells the client where hushd is: its position, the delay after it, what has been played, and wakes it when
    /// it waits for room or drains.
    private func publish(written: UInt64, flags: UInt32, draining: Bool, empty: Bool) {
        let queue = pace.queuedFrames.load(ordering: .relaxed)
        // Stream frames between `consumed` and the speaker: those waiting for the converter, and the output queue's.
        let queued = staged + Int(Double(queue) / ratio)
        let stillQueued =
            empty
            ? Int(Double(max(0, queue + Int(Double(staged) * ratio) - emptyRun)) / ratio)
            : queued
        // What is still on its way is never more than what was consumed: a stream's first periods are behind an
        // output queue longer than themselves, and `played` must not wrap (a client would think it all heard).
        let behind = UInt64(min(stillQueued, Int(ringFrames) * 4))
        var snapshot = hush_wire_snapshot()
        snapshot.server_frames = consumed
        snapshot.played_frames = consumed >= behind ? consumed - behind : 0
        snapshot.underrun_frames = UInt64(underrunFrames.load(ordering: .relaxed))
        snapshot.delay_frames = UInt32(clamping: queued)
        snapshot.current_period_frames = UInt32(
            clamping: Int((Double(pace.periodFrames.load(ordering: .relaxed)) / ratio).rounded(.up))
        )
        memory.publish(&snapshot)
        guard flags & StreamMemory.waitingFlag != 0 || draining else { return }
        let filled = written &- consumed
        let free = filled > ringFrames ? 0 : Int(ringFrames - filled)
        let wake = min(max(memory.wakeFrames, 1), Int(ringFrames))
        if free >= wake || draining { memory.signal() }
    }
}
