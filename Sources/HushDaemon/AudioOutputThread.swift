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
/// Where the audio thread writes periods: an ALSA device, or a WAV file paced like one.
///
/// - Important: `write` runs on the audio thread; `close` runs there too when the device is lost.
public protocol PCMOutput: AnyObject {
    /// What the device granted: the engine renders in this format.
    var granted: PlaybackConfiguration { get }
    /// Queues `frames` frames, blocking until the device takes them.
    func write(_ buffer: UnsafeRawPointer, frames: Int) -> ALSAPlayback.WriteResult
    /// Lets go of the device now.
    func close()
    /// What was asked and what was granted, for the log.
    var describeGrant: String { get }
}

extension PCMOutput {
    public var describeGrant: String {
        "granted \(granted.sampleRate) Hz, \(granted.channels) ch, \(granted.format), \(granted.periodFrames)×\(granted.periods)"
    }
}

extension ALSAPlayback: PCMOutput {}

public final class AudioOutputThread: @unchecked Sendable {
    /// What the control side can read at any time.
    public final class Counters: Sendable {
        public let underruns = Atomic<Int>(0)
        public let deviceLosses = Atomic<Int>(0)
        public let reopenings = Atomic<Int>(0)
        /// Devices that opened again but granted another rate, channel count or period than the engine renders
        /// (so they were closed again), and the period the last of them granted.
        public let refusals = Atomic<Int>(0)
        public let refusedPeriodFrames = Atomic<Int>(0)
        public let writeErrors = Atomic<Int>(0)
        public let periods = Atomic<Int>(0)
        /// 1 while the device is open and being fed.
        public let deviceOpen = Atomic<Int>(0)
        /// Devices switched to at a route change.
        public let handovers = Atomic<Int>(0)
        /// The longest time from the start of one period to the start of the next, in nanoseconds, since the
        /// control side last took it (`exchange(0)`). About a period when all is well, since the blocking write
        /// paces the loop; far longer when the thread was held off — by the CPU, a higher-priority thread or a
        /// stall of the whole machine — which is what lies behind most underruns. Reading the monotonic clock
        /// twice a period is the whole cost: no system call (vDSO), no allocation, no lock.
        public let longestGap = Atomic<Int>(0)
        /// The longest render of one period, in nanoseconds, since last taken: hushd's own share of a period.
        public let longestRender = Atomic<Int>(0)
        init() {}
    }

    /// What most likely caused underruns, from the longest gap between periods and the longest render in the
    /// same stretch: a sentence for hushd's log.
    public static func diagnosis(gap: Duration, render: Duration, period: Duration, queued: Duration) -> String {
        func ms(_ duration: Duration) -> String {
            let value = Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
            guard value < 10 else { return "\(Int(value.rounded())) ms" }
            // Under a tenth of a millisecond (mixing silence, a few voices on a fast CPU) in microseconds, so that
            // the figure still says something.
            guard value >= 0.1 else { return "\(Int((value * 1000).rounded())) µs" }
            let tenths = Int((value * 10).rounded())
            return "\(tenths / 10).\(tenths % 10) ms"
        }
        let figures =
            "the longest gap between periods was \(ms(gap)), with \(ms(queued)) queued; the longest render "
            + "took \(ms(render)) of a \(ms(period)) period"
        if render > period {
            return "\(figures): mixing one period took longer than playing it; raise period_frames or play fewer "
                + "sounds at once"
        }
        if gap > queued {
            return "\(figures): the audio thread was held off longer than the queue lasts; something else had the "
                + "CPU (a higher-priority thread, interrupts, a stalled machine)"
        }
        return "\(figures): the audio thread kept time; the device or its driver did not"
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
    /// The device the audio thread writes to (nil while it is gone); owned by the audio thread once started.
    private var playback: (any PCMOutput)?
    /// What to reopen after a loss; changes with a handed-over device.
    private var reopenConfiguration: PlaybackConfiguration
    /// Opens a device for a configuration (ALSA by default; tests and the WAV fallback give their own). Called on
    /// the audio thread only while the device is gone.
    private let open: @Sendable (PlaybackConfiguration) -> (any PCMOutput)?
    /// A device handed from the control side to the audio thread (a route change), as an unmanaged reference.
    private let incoming = Atomic<UInt>(0)
    /// The device the audio thread let go of after a handover, for the control side to release.
    private let outgoing = Atomic<UInt>(0)
    private let logger: Logger

    /// Opens the device (so configuration errors surface here, on the control side) and prepares the engine's
    /// format to match what was granted.
    public convenience init(engine: MixerEngine, playback: ALSAPlayback, priority: Int32 = 70, logger: Logger) {
        self.init(engine: engine, output: playback, requested: playback.requested, priority: priority, logger: logger)
    }

    /// - Parameters:
    ///   - output: the open device; `requested` is what was asked of it (reopened after a loss). Nil when the
    ///     device is not there yet (a card whose driver comes up after hushd): the thread opens it as it would
    ///     reopen a lost one, and then it must grant the rate, channels and period asked for.
    ///   - open: how to reopen a lost device (ALSA unless given).
    public init(
        engine: MixerEngine,
        output: (any PCMOutput)?,
        requested: PlaybackConfiguration,
        priority: Int32 = 70,
        logger: Logger,
        open: @escaping @Sendable (PlaybackConfiguration) -> (any PCMOutput)? = { try? ALSAPlayback($0) }
    ) {
        self.engine = engine
        self.playback = output
        self.open = open
        configuration = requested
        reopenConfiguration = requested
        granted = output?.granted ?? requested
        self.priority = priority
        self.logger = logger
        counters.deviceOpen.store(output == nil ? 0 : 1, ordering: .relaxed)
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

    /// Stops the thread and waits for it; closes the device.
    public func stop() {
        guard running.load(ordering: .acquiring), let thread else { return }
        running.store(false, ordering: .releasing)
        thread.join()
        self.thread = nil
        playback?.close()
        playback = nil
        reap()
        if let pending = take(incoming) { pending.close() }
    }

    /// Hands `device` (already open, in the granted format) to the audio thread, which switches to it at the next
    /// period: a route change to another PCM without stopping the music. A device still waiting from an earlier
    /// handover is closed.
    ///
    /// - Returns: false when the device's format differs from what the engine renders.
    @discardableResult
    public func handOver(_ device: any PCMOutput, requested: PlaybackConfiguration) -> Bool {
        guard Self.sameFormat(device.granted, granted) else { return false }
        let box = Handover(device: device, requested: requested)
        let bits = UInt(bitPattern: Unmanaged.passRetained(box).toOpaque())
        let previous = incoming.exchange(bits, ordering: .acquiringAndReleasing)
        if previous != 0 { Unmanaged<Handover>.fromOpaque(UnsafeRawPointer(bitPattern: previous)!).release() }
        reap()
        return true
    }

    /// Releases (closes) the device the audio thread let go of after a handover. Call from the control side.
    public func reap() {
        let bits = outgoing.exchange(0, ordering: .acquiringAndReleasing)
        guard bits != 0 else { return }
        let box = Unmanaged<Handover>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!).takeRetainedValue()
        box.device?.close()
    }

    private func take(_ slot: borrowing Atomic<UInt>) -> (any PCMOutput)? {
        let bits = slot.exchange(0, ordering: .acquiringAndReleasing)
        guard bits != 0 else { return nil }
        return Unmanaged<Handover>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!).takeRetainedValue().device
    }

    /// Whether the engine's rendering fits `a` as it fits `b`: the same rate, channels and period (the PCM's name
    /// and the sample format may differ: the engine converts to each device's format as it writes).
    static func sameFormat(_ a: PlaybackConfiguration, _ b: PlaybackConfiguration) -> Bool {
        a.sampleRate == b.sampleRate && a.channels == b.channels && a.periodFrames == b.periodFrames
    }

    /// A device in transit between the control side and the audio thread.
    private final class Handover {
        /// The device in transit; on the way back, the one let go of (nil if there was none).
        var device: (any PCMOutput)?
        var requested: PlaybackConfiguration
        init(device: any PCMOutput, requested: PlaybackConfiguration) {
            self.device = device
            self.requested = requested
        }
    }

    /// On the audio thread: switches to a handed-over device, passing the old one back for the control side to
    /// close (closing a PCM is I/O and may block: not here).
    private func acceptHandover() {
        let bits = incoming.load(ordering: .relaxed)
        guard bits != 0, outgoing.load(ordering: .acquiring) == 0 else { return }
        guard incoming.compareExchange(expected: bits, desired: 0, ordering: .acquiringAndReleasing).exchanged else {
            return
        }
        // The same box carries the old device back: nothing is allocated or freed on this thread.
        let handed = Unmanaged<Handover>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!).takeUnretainedValue()
        let device = handed.device
        let requested = handed.requested
        handed.device = playback
        handed.requested = reopenConfiguration
        playback = device
        reopenConfiguration = requested
        outgoing.store(bits, ordering: .releasing)
        counters.handovers.add(1, ordering: .relaxed)
        // A route's device handed over while the old one was lost (or never there) is a device again.
        if device != nil { counters.deviceOpen.store(1, ordering: .relaxed) }
        engine.fadeInOutput(frames: engine.format.frames(recoveryFade))
    }

    private func loop() {
        let frames = granted.periodFrames
        // Room for the widest sample format: a route's device may take another format than the first one.
        let bytes = frames * granted.channels * 4
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 16)
        defer { buffer.deallocate() }
        var backoff = Duration.milliseconds(100)
        // When the last period started; 0 until a period is written on the current device.
        var previousStart = 0
        while running.load(ordering: .relaxed) {
            // A handover seen now was published after the commands that go with it (R5's pauses before the
            // route moves): this period, rendered for the old device, carries them out — a pause's fade ends
            // there — and only the next period goes to the new device. So not a sample of a paused voice reaches
            // the route it was moved away from.
            let switching = incoming.load(ordering: .acquiring) != 0
            if switching && playback == nil { acceptHandover() }
            guard let device = playback else {
                previousStart = 0
                sleepFor(backoff)
                backoff = min(backoff * 2, .milliseconds(250))
                if let reopened = open(reopenConfiguration) {
                    if Self.sameFormat(reopened.granted, granted) {
                        playback = reopened
                        backoff = .milliseconds(100)
                        counters.reopenings.add(1, ordering: .relaxed)
                        counters.deviceOpen.store(1, ordering: .relaxed)
                        engine.fadeInOutput(frames: engine.format.frames(recoveryFade))
                    } else {
                        // The engine renders one period size for good; a device that will not take it stays
                        // closed, and the control side says what it granted instead.
                        counters.refusedPeriodFrames.store(reopened.granted.periodFrames, ordering: .relaxed)
                        counters.refusals.add(1, ordering: .relaxed)
                        reopened.close()
                    }
                }
                continue
            }
            let start = Self.monotonicNanoseconds()
            if previousStart != 0 { Self.raise(counters.longestGap, to: start - previousStart) }
            previousStart = start
            engine.render(frames: frames, into: buffer, sampleFormat: device.granted.format)
            Self.raise(counters.longestRender, to: Self.monotonicNanoseconds() - start)
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
            if switching { acceptHandover() }
        }
    }

    /// CLOCK_MONOTONIC in nanoseconds: a vDSO read, no system call.
    private static func monotonicNanoseconds() -> Int {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return now.tv_sec * 1_000_000_000 + now.tv_nsec
    }

    /// Keeps the larger of `counter` and `value`. Only the audio thread raises; the control side takes the value
    /// with `exchange(0)`, so a race between them moves a figure to the next report, never loses the larger one.
    private static func raise(_ counter: borrowing Atomic<Int>, to value: Int) {
        if value > counter.load(ordering: .relaxed) { counter.store(value, ordering: .relaxed) }
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
