import HushCore
import HushMixer
import HushSystem
import HushVoice
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The microphone processed for voice (policy R22, `voiceChat`): echo-cancelled against the mix as it leaves
/// hushd for the route, noise-suppressed, high-passed, level kept — on a thread of its own, never on the audio
/// thread's deadline.
///
/// Three lock-free rings join the two threads. Each period the audio thread (``CaptureRouter``) writes the mix it
/// just rendered (the reference) and the microphone's frames it just read, mono, into two rings, and takes the
/// processed frames back from a third for the `voiceChat` streams. Both go in during the same period, so block *k*
/// of the reference and block *k* of the microphone are the same moment on hushd's clock, and the delay the
/// canceller needs is exactly what hushd knows: the frames queued in the output device after that period, plus the
/// frames waiting in the microphone's device and ring before it was read (``delayMilliseconds``, set by the
/// daemon). The voice thread wakes when the audio thread says a 10 ms block is complete (a time it writes, read
/// without a system call on the audio thread's side) and processes every whole block there is.
///
/// While the microphone privacy switch is on (R21) the router gives this path silence, and the streams it feeds get
/// silence whatever comes out of the canceller.
public final class VoicePath: @unchecked Sendable {
    /// The frames of one block (10 ms at the mixer's rate).
    public let blockFrames: Int
    public let sampleRate: Int
    public let configuration: VoiceConfiguration

    // Audio thread → voice thread.
    let reference: SampleRing
    let microphone: SampleRing
    /// CLOCK_MONOTONIC (ns) when the audio thread completed the latest block, 0 before the first.
    private let blockCompleted = Atomic<Int>(0)
    /// Audio thread → voice thread: the frames of the audio thread's latest period (blocks complete on its
    /// boundaries).
    private let periodFrames = Atomic<Int>(0)
    // Voice thread → audio thread.
    let processed: SampleRing

    // Control side → both.
    /// Some running capture stream wants processed frames: the audio thread feeds the rings and the voice thread
    /// works. Set by the daemon from the streams' rulings (R22), through ``setActive(_:)``.
    public let active = Atomic<Bool>(false)
    /// The delay to pass with each block, ms (output queue + microphone's queue; see above).
    public let delayMilliseconds = Atomic<Int>(0)

    // Voice thread → control side.
    /// Blocks processed since start.
    public let blocks = Atomic<Int>(0)
    /// The canceller's ERLE in hundredths of a dB, `Int.min` until it reports one.
    public let erleCentibels = Atomic<Int>(Int.min)
    /// The canceller's own delay estimate in ms (webrtc-audio-processing 1.x), -1 when it has none.
    public let estimatedDelayMilliseconds = Atomic<Int>(-1)
    /// Blocks the library refused, and whether the processor could not be made at all (the streams then get the
    /// microphone unprocessed, and the daemon says so).
    public let failedBlocks = Atomic<Int>(0)
    public let unavailable = Atomic<Bool>(false)
    private let failure = Mutex<String?>(nil)

    // Audio thread → control side.
    /// Periods in which the processed ring had too little (the voice thread was late): the streams got silence
    /// for the period, and delivery waited for its cushion again.
    public let underflows = Atomic<Int>(0)

    // Audio thread's own.
    private var feeding = false
    private var delivering = false
    private var countdown = 0
    private var fed = 0
    private let referenceScratch: UnsafeMutablePointer<Float>
    private let microphoneScratch: UnsafeMutablePointer<Float>
    private let processedScratch: UnsafeMutablePointer<Float>
    // The voice thread's blocks.
    private let referenceScratchVoice: UnsafeMutablePointer<Float>
    private let microphoneScratchVoice: UnsafeMutablePointer<Float>
    private let processedScratchVoice: UnsafeMutablePointer<Float>
    private let maxFrames: Int
    /// Periods to wait once a block is there before delivering: the cushion against the voice thread's jitter.
    private let cushionPeriods: Int

    // The voice thread's.
    private var thread: NamedThread?
    private let running = Atomic<Bool>(false)
    private var wake = sem_t()
    private var processor: VoiceProcessor?

    /// A path for a mixer at `sampleRate` (16000 or 48000) with periods of at most `maxFrames`.
    public init(
        sampleRate: Int,
        maxFrames: Int,
        configuration: VoiceConfiguration,
        cushionPeriods: Int = 2
    ) throws(VoiceProcessorError) {
        guard VoiceConfiguration.supportedSampleRates.contains(sampleRate) else {
            throw .unsupportedSampleRate(sampleRate)
        }
        self.sampleRate = sampleRate
        self.maxFrames = maxFrames
        self.cushionPeriods = cushionPeriods
        var configuration = configuration
        configuration.sampleRate = sampleRate
        configuration.referenceChannels = 1
        self.configuration = configuration
        blockFrames = configuration.framesPerBlock
        // Half a second each way: far more than a late voice thread needs, small beside hushd's footprint.
        reference = SampleRing(frames: sampleRate / 2, channels: 1)
        microphone = SampleRing(frames: sampleRate / 2, channels: 1)
        processed = SampleRing(frames: sampleRate / 2, channels: 1)
        referenceScratch = .allocate(capacity: max(maxFrames, blockFrames))
        referenceScratch.initialize(repeating: 0, count: max(maxFrames, blockFrames))
        microphoneScratch = .allocate(capacity: max(maxFrames, blockFrames))
        microphoneScratch.initialize(repeating: 0, count: max(maxFrames, blockFrames))
        processedScratch = .allocate(capacity: max(maxFrames, blockFrames))
        processedScratch.initialize(repeating: 0, count: max(maxFrames, blockFrames))
        referenceScratchVoice = .allocate(capacity: blockFrames)
        microphoneScratchVoice = .allocate(capacity: blockFrames)
        processedScratchVoice = .allocate(capacity: blockFrames)
        sem_init(&wake, 0, 0)
    }

    deinit {
        stop()
        sem_destroy(&wake)
        reference.deallocate()
        microphone.deallocate()
        processed.deallocate()
        referenceScratch.deallocate()
        microphoneScratch.deallocate()
        processedScratch.deallocate()
        referenceScratchVoice.deallocate()
        microphoneScratchVoice.deallocate()
        processedScratchVoice.deallocate()
    }

    // MARK: Control side

    /// Starts the voice thread (idle, blocked, until the path is active). With `realtimePriority` above 0 it runs
    /// SCHED_FIFO at that priority; returns the errno when that could not be had, 0 otherwise.
    @discardableResult
    public func start(realtimePriority: Int32 = 0) throws(HardwareError) -> Int32 {
        guard thread == nil else { return 0 }
        running.store(true, ordering: .releasing)
        thread = try NamedThread(name: "hush-voice") { [self] in loop() }
        guard realtimePriority > 0 else { return 0 }
        return thread?.makeRealtime(priority: realtimePriority) ?? ESRCH
    }

    /// Stops the voice thread and waits for it.
    public func stop() {
        guard let thread else { return }
        running.store(false, ordering: .releasing)
        sem_post(&wake)
        thread.join()
        self.thread = nil
    }

    /// Whether a running capture stream wants processed frames (R22); wakes the voice thread when it does.
    public func setActive(_ on: Bool) {
        guard active.load(ordering: .relaxed) != on else { return }
        active.store(on, ordering: .releasing)
        if on { sem_post(&wake) }
    }

    /// Why the processor could not be made, once it could not.
    public var failureDescription: String? { failure.withLock { $0 } }

    /// The canceller's figures as last published (about once a second while active).
    public var statistics: VoiceStatistics {
        let erle = erleCentibels.load(ordering: .relaxed)
        let delay = estimatedDelayMilliseconds.load(ordering: .relaxed)
        return VoiceStatistics(
            echoReturnLossEnhancement: erle == Int.min ? nil : Double(erle) / 100,
            estimatedDelayMilliseconds: delay < 0 ? nil : delay
        )
    }

    // MARK: Audio thread

    /// Audio thread, once per period after the mix: hands the voice thread this period's reference (`mix`,
    /// `mixChannels` interleaved) and microphone (`source`, `channels` interleaved; nil: silence), and returns the
    /// processed frames for the `voiceChat` streams (mono), or nil when there are none to give this period (they
    /// get silence) — or, when the processor could not be made, the microphone unprocessed.
    func period(
        mix: UnsafePointer<Float>?,
        mixChannels: Int,
        source: UnsafePointer<Float>?,
        channels: Int,
        frames: Int
    ) -> (samples: UnsafePointer<Float>, channels: Int)? {
        guard active.load(ordering: .acquiring) else {
            feeding = false
            delivering = false
            return nil
        }
        if unavailable.load(ordering: .relaxed) {
            return source.map { ($0, channels) }
        }
        let frames = min(frames, maxFrames)
        periodFrames.store(frames, ordering: .relaxed)
        if !feeding {
            // A fresh start: what the processed ring still holds is from before.
            feeding = true
            delivering = false
            processed.discard(keeping: 0)
        }
        Self.downmix(mix, channels: mixChannels, frames: frames, into: referenceScratch)
        Self.downmix(source, channels: channels, frames: frames, into: microphoneScratch)
        // Written together, so block k of each is the same period; a full ring (the voice thread stalled for half
        // a second) drops both alike and the pairing holds.
        if reference.capacity - reference.available >= frames && microphone.capacity - microphone.available >= frames {
            _ = reference.write(referenceScratch, frames: frames)
            _ = microphone.write(microphoneScratch, frames: frames)
            fed += frames
            if fed >= blockFrames {
                fed -= blockFrames
                blockCompleted.store(monotonicNanoseconds(), ordering: .releasing)
            }
        }
        if !delivering {
            guard processed.available >= frames else { return nil }
            if countdown == 0 { countdown = cushionPeriods + 1 }
            countdown -= 1
            guard countdown == 0 else { return nil }
            delivering = true
        }
        guard processed.read(into: processedScratch, frames: frames) == frames else {
            underflows.add(1, ordering: .relaxed)
            delivering = false
            return nil
        }
        return (UnsafePointer(processedScratch), 1)
    }

    @inline(__always)
    static func downmix(
        _ source: UnsafePointer<Float>?,
        channels: Int,
        frames: Int,
        into target: UnsafeMutablePointer<Float>
    ) {
        guard let source else {
            target.update(repeating: 0, count: frames)
            return
        }
        if channels == 1 {
            target.update(from: source, count: frames)
        } else {
            let scale = 1 / Float(channels)
            for frame in 0..<frames {
                var sum: Float = 0
                for channel in 0..<channels { sum += source[frame * channels + channel] }
                target[frame] = sum * scale
            }
        }
    }

    // MARK: Voice thread

    /// Processes every whole block both rings hold; returns how many. The voice thread's work, callable from a
    /// test on its own thread instead.
    @discardableResult
    public func processAvailable() -> Int {
        guard let processor = makeProcessor() else {
            // Unavailable: the audio thread passes the microphone through; nothing to do here but keep up.
            reference.discard(keeping: 0)
            microphone.discard(keeping: 0)
            return 0
        }
        var count = 0
        let block = blockFrames
        while reference.available >= block && microphone.available >= block {
            _ = reference.read(into: referenceScratchVoice, frames: block)
            _ = microphone.read(into: microphoneScratchVoice, frames: block)
            processor.setDelay(milliseconds: delayMilliseconds.load(ordering: .relaxed))
            do {
                try processor.analyzeReverse(UnsafeBufferPointer(start: referenceScratchVoice, count: block))
                try processor.process(
                    UnsafeBufferPointer(start: microphoneScratchVoice, count: block),
                    into: UnsafeMutableBufferPointer(start: processedScratchVoice, count: block)
                )
            } catch {
                // The block is lost to the library, not to the clock: silence in its place.
                failedBlocks.add(1, ordering: .relaxed)
                processedScratchVoice.update(repeating: 0, count: block)
            }
            _ = processed.write(processedScratchVoice, frames: block)
            count += 1
            let total = blocks.add(1, ordering: .relaxed).newValue
            if total % 100 == 0 { publish(processor.statistics()) }
        }
        return count
    }

    private func publish(_ statistics: VoiceStatistics) {
        erleCentibels.store(
            statistics.echoReturnLossEnhancement.map { Int(($0 * 100).rounded()) } ?? Int.min,
            ordering: .relaxed
        )
        estimatedDelayMilliseconds.store(statistics.estimatedDelayMilliseconds ?? -1, ordering: .relaxed)
    }

    private func makeProcessor() -> VoiceProcessor? {
        if let processor { return processor }
        guard !unavailable.load(ordering: .relaxed) else { return nil }
        do {
            processor = try VoiceProcessor(configuration, delayMilliseconds: delayMilliseconds.load(ordering: .relaxed))
        } catch {
            failure.withLock { $0 = error.description }
            unavailable.store(true, ordering: .releasing)
        }
        return processor
    }

    private func loop() {
        while running.load(ordering: .acquiring) {
            guard active.load(ordering: .acquiring) else {
                // Idle: no wake-ups at all until a voiceChat stream runs (or stop()).
                reference.discard(keeping: 0)
                microphone.discard(keeping: 0)
                sem_wait(&wake)
                continue
            }
            processAvailable()
            // Sleep until just after the next block is due: the latest completion plus 10 ms and a quarter of a
            // millisecond; at most 10 ms when none has come yet (the output idle, or just activated). Blocks complete
            // on the audio thread's period boundaries, not every 10 ms: when the period does not divide the block
            // (64 frames against 480), the next one comes up to a period after its 10 ms. So once that moment has
            // passed with nothing new, look again a period later, not a block later (which would leave every other
            // block waiting 10 ms, and the cushion behind it short).
            let last = blockCompleted.load(ordering: .acquiring)
            let now = monotonicNanoseconds()
            let blockNanoseconds = blockFrames * 1_000_000_000 / sampleRate
            let period = periodFrames.load(ordering: .relaxed)
            // (A stalled audio thread, its last block long past, is looked for every 10 ms, not every period.)
            let stalled = last == 0 || now - last > 2 * blockNanoseconds
            let step =
                period > 0 && !stalled ? min(blockNanoseconds, period * 1_000_000_000 / sampleRate) : blockNanoseconds
            var due = last == 0 ? now + blockNanoseconds : last + blockNanoseconds + 250_000
            if due <= now { due += ((now - due) / step + 1) * step }
            var until = timespec(tv_sec: due / 1_000_000_000, tv_nsec: due % 1_000_000_000)
            clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, nil)
        }
    }
}
