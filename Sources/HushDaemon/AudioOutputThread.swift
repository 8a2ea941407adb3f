import HushALSA
import HushCore
import HushMixer
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The real-time audio thread: renders the mixer a period at a time and writes it to the ALSA device, keeping it
/// fed (with silence when nothing plays) so starting a sound costs no device start-up.
///
/// A dedicated pthread named "hush-audio", at SCHED_FIFO when permitted, with memory locked. It never logs: it
/// counts underruns and device losses in atomics that the control side reads and reports. After an underrun it
/// recovers the device and fades the output in; when the device disappears it closes it, keeps the engine's state
/// (nothing is rendered while it is gone) and reopens it with backoff.
public final class AudioOutputThread: @unchecked Sendable {
    /// What the control side can read at any time.
    public final class Counters: Sendable {
        public let underruns = Atomic<Int>(0)
        public let deviceLosses = Atomic<Int>(0)
        public let reopenings = Atomic<Int>(0)
        public let writeErrors = Atomic<Int>(0)
        public let periods = Atomic<Int>(0)
        /// 1 while the device is open and being fed.
        public let deviceOpen = Atomic<Int>(0)
        init() {}
    }

    public let engine: MixerEngine
    public let configuration: PlaybackConfiguration
    /// What the device granted at start: a reopened device must grant the same to be used.
    public let granted: PlaybackConfiguration
    public let counters = Counters()
    /// How long an underrun's fade-in lasts.
    public var recoveryFade: Duration = .milliseconds(5)
    /// The realtime priority to ask for (1–99); 0 keeps normal scheduling.
    public let priority: Int32
    private let running = Atomic<Bool>(false)
    private var thread: NamedThread?
    private var playback: ALSAPlayback?
    private let logger: Logger

    /// Opens the device (so configuration errors surface here, on the control side) and prepares the engine's
    /// format to match what was granted.
    public init(engine: MixerEngine, playback: ALSAPlayback, priority: Int32 = 70, logger: Logger) {
        self.engine = engine
        self.playback = playback
        configuration = playback.requested
        granted = playback.granted
        self.priority = priority
        self.logger = logger
        counters.deviceOpen.store(1, ordering: .relaxed)
    }

    /// Starts the thread. Logs, on the control side, what scheduling it got.
    public func start() throws(HardwareError) {
        guard !running.load(ordering: .acquiring) else { return }
        running.store(true, ordering: .releasing)
        if mlockall(MCL_CURRENT | MCL_FUTURE) != 0 {
            logger.warning(
                "cannot lock hushd's memory (\(String(cString: strerror(errno)))): a page fault may cause an underrun; raise LimitMEMLOCK"
            )
        }
        do {
            thread = try NamedThread(name: "hush-audio") { [self] in loop() }
        } catch {
            running.store(false, ordering: .releasing)
            throw error
        }
        if priority > 0 {
            let scheduled = thread?.makeRealtime(priority: priority) ?? ESRCH
            if scheduled == 0 {
                logger.info("audio thread 'hush-audio' runs at SCHED_FIFO priority \(priority)")
            } else {
                logger.warning(
                    "audio thread 'hush-audio' runs at normal priority: SCHED_FIFO \(priority) was refused (\(String(cString: strerror(scheduled)))); give hushd CAP_SYS_NICE or LimitRTPRIO=\(priority)"
                )
            }
        }
    }

    /// Stops the thread and waits for it.
    public func stop() {
        guard running.load(ordering: .acquiring), let thread else { return }
        running.store(false, ordering: .releasing)
        thread.join()
        self.thread = nil
    }

    private func loop() {
        let frames = granted.periodFrames
        let bytes = frames * granted.channels * granted.format.bytesPerSample
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 16)
        defer { buffer.deallocate() }
        var backoff = Duration.milliseconds(100)
        while running.load(ordering: .relaxed) {
            guard let device = playback else {
                sleepFor(backoff)
                backoff = min(backoff * 2, .milliseconds(250))
                if let reopened = try? ALSAPlayback(configuration), reopened.granted == granted {
                    playback = reopened
                    backoff = .milliseconds(100)
                    counters.reopenings.add(1, ordering: .relaxed)
                    counters.deviceOpen.store(1, ordering: .relaxed)
                    engine.fadeInOutput(frames: engine.format.frames(recoveryFade))
                }
                continue
            }
            engine.render(frames: frames, into: buffer, sampleFormat: device.granted.format)
            counters.periods.add(1, ordering: .relaxed)
            switch device.write(buffer, frames: frames) {
            case .written:
                break
            case .recovered:
                counters.underruns.add(1, ordering: .relaxed)
                engine.fadeInOutput(frames: engine.format.frames(recoveryFade))
            case .gone:
                // Close now, whoever else holds the object: the kernel frees a removed card only when its last
                // handle closes, and only then can the card come back.
                device.close()
                counters.deviceLosses.add(1, ordering: .relaxed)
                counters.deviceOpen.store(0, ordering: .relaxed)
                playback = nil
            case .failed:
                counters.writeErrors.add(1, ordering: .relaxed)
                sleepFor(.milliseconds(10))
            }
        }
    }

    private func sleepFor(_ duration: Duration) {
        var request = timespec(
            tv_sec: Int(duration.nanoseconds / 1_000_000_000),
            tv_nsec: Int(duration.nanoseconds % 1_000_000_000)
        )
        var left = timespec()
        while nanosleep(&request, &left) == -1 && errno == EINTR { request = left }
    }
}
