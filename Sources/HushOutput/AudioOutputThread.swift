import HushALSA
import HushCore
import HushMixer
import HushSystem
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Where the audio thread writes periods: an ALSA device, or a WAV file paced like one.
///
/// - Important: `write` runs on the audio thread; everything else (opening, `close`) on the control side, even for
///   a device the audio thread found gone (see ``AudioOutputThread``).
package protocol PCMOutput: AnyObject {
    /// What the device granted: the engine renders in this format.
    var granted: PlaybackConfiguration { get }
    /// Queues `frames` frames, blocking until the device takes them.
    func write(_ buffer: UnsafeRawPointer, frames: Int) -> PCMWriteResult
    /// Makes ``waitForRoom()`` wait for room for periods of `frames` (R24's period in force). Audio thread.
    func setPeriod(_ frames: Int) -> PCMWriteResult
    /// Waits until the device wants the next period: where a device whose period can grow paces the thread (its
    /// writes do not block). Audio thread.
    func waitForRoom() -> PCMWriteResult
    /// Lets go of the device now.
    func close()
    /// What was asked and what was granted, for the log.
    var describeGrant: String { get }
    /// Stops the device, dropping what it holds (only silence), and keeps it open: the audio thread goes idle.
    /// Audio thread.
    func halt()
    /// Makes a halted device ready to start at the next writes. Audio thread.
    func resume() -> PCMWriteResult
}

extension PCMOutput {
    /// A device that needs no stopping (a test's fake): writes simply stop while idle.
    package func halt() {}
    package func resume() -> PCMWriteResult { .written }
    /// A device whose writes pace the thread (a test's fake, the WAV file): nothing to set, nothing to wait for.
    package func setPeriod(_ frames: Int) -> PCMWriteResult { .written }
    package func waitForRoom() -> PCMWriteResult { .written }

    package var describeGrant: String {
        "granted \(granted.sampleRate) Hz, \(granted.channels) ch, \(granted.format), \(granted.periodFrames)×\(granted.periods)"
    }
}

extension ALSAPlayback: PCMOutput {}

/// The real-time audio thread: renders the mixer a period at a time and writes it to the device. When nothing has
/// been heard for ``idleAfter`` it stops the device (keeping it open) and sleeps on an eventfd until the control
/// side has something for it (``wake()``): no wake-ups at all while idle. The first sound after idle restarts the
/// device and is in the first period written. With ``idleAfter`` nil (`[output] keep_warm`) it keeps the device
/// fed with silence, so a sound never waits for the device to start.
///
/// A dedicated pthread named "hush-audio", at SCHED_FIFO when permitted, with memory locked. It never logs: it
/// counts underruns and device losses in atomics that the control side reads and reports. After an underrun it
/// recovers the device and fades the output in. When the device disappears it hands it back to the control side
/// and keeps the engine's state (nothing is rendered while it is gone); the control side closes it, reopens it
/// with backoff (``service()``) and hands the new one over as it hands over a route's device.
///
/// - Important: what the audio thread may block on. It may wait on its own device (`write`, which paces it, and
///   the recovery after an underrun inside it; stopping and preparing it around idle), sleep while it has no
///   device, and block on its eventfd while idle. It must not open or close a
///   device (both may block for long in the driver, and a removed card's close waits on the kernel), allocate or
///   free memory, take a lock, log, or touch a file. Devices travel between it and the control side in boxes the
///   control side makes and frees, through two atomic slots: ``handOver(_:requested:)`` in, ``service()`` back
///   out. The device-loss path and the route change both follow this rule (docs/architecture.md, "The audio
///   thread").
package final class AudioOutputThread: @unchecked Sendable {
    /// What the control side can read at any time.
    package final class Counters: Sendable {
        package let underruns = Atomic<Int>(0)
        package let deviceLosses = Atomic<Int>(0)
        package let reopenings = Atomic<Int>(0)
        /// Devices that opened again but granted another rate, channel count or period than the engine renders
        /// (so they were closed again), and the period the last of them granted.
        package let refusals = Atomic<Int>(0)
        package let refusedPeriodFrames = Atomic<Int>(0)
        package let writeErrors = Atomic<Int>(0)
        package let periods = Atomic<Int>(0)
        /// 1 while the device is open and being fed.
        package let deviceOpen = Atomic<Int>(0)
        /// Devices switched to at a route change.
        package let handovers = Atomic<Int>(0)
        /// Route changes that cross-faded from the old device to the new one (the rest started from silence: the
        /// old device was lost, or there was none).
        package let crossfades = Atomic<Int>(0)
        /// The longest time from the start of one period to the start of the next, in nanoseconds, since the
        /// control side last took it (`exchange(0)`). About a period when all is well, since the blocking write
        /// paces the loop; far longer when the thread was held off — by the CPU, a higher-priority thread or a
        /// stall of the whole machine — which is what lies behind most underruns. Reading the monotonic clock
        /// twice a period is the whole cost: no system call (vDSO), no allocation, no lock.
        package let longestGap = Atomic<Int>(0)
        /// The longest render of one period, in nanoseconds, since last taken: hushd's own share of a period.
        package let longestRender = Atomic<Int>(0)
        /// 1 while the thread is idle: the device stopped, the thread asleep until woken.
        package let idle = Atomic<Int>(0)
        /// Times the thread went idle, and times it was woken from idle.
        package let idlings = Atomic<Int>(0)
        package let wakings = Atomic<Int>(0)
        /// Frames mixed per wake-up now (R24's period in force, within what the device allows); 0 before the first.
        package let periodFrames = Atomic<Int>(0)
        /// Times the period in force changed.
        package let periodChanges = Atomic<Int>(0)
        /// The device's real rate over the latest window of the system clock, with the window's index
        /// (``RateMeter/packed``; 0 until the first): the output's clock, against which a microphone on another
        /// card drifts.
        package let measuredRate = Atomic<Int>(0)
        init() {}
    }

    /// What most likely caused underruns, from the longest gap between periods and the longest render in the
    /// same stretch: a sentence for hushd's log.
    package static func diagnosis(gap: Duration, render: Duration, period: Duration, queued: Duration) -> String {
        func ms(_ duration: Duration) -> String {
            let value = Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
            guard value < 10 else { return "\(Int(value.rounded())) ms" }
            // Under a tenth of a millisecond (mixing silence, a few voices on a fast CPU) in microseconds, so that
            // the figure still says something.
            guard value >= 0.1 else { return "\(Int((value * 1000).rounded())) µs" }
            return DecimalText.fixed(value, places: 1) + " ms"
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

    package let engine: MixerEngine
    package let configuration: PlaybackConfiguration
    /// What the device granted at start: a reopened device must grant the same to be used.
    package let granted: PlaybackConfiguration
    package let counters = Counters()
    /// How long an underrun's fade-in lasts.
    package var recoveryFade: Duration = .milliseconds(5)
    /// How long a route change between two devices cross-fades: both play, the old fading out as the new fades in,
    /// so the move has no gap, no fade-in from silence and no jump in the waveform. At least one period.
    package var crossfade: Duration = .milliseconds(5)
    /// The realtime priority to ask for (1–99); 0 keeps normal scheduling.
    package let priority: Int32
    /// Called on the audio thread after each period's mix, with the period's frames (capture streams). Set before
    /// ``start()``. While it wants periods (a recorder or a relay runs) the thread does not go idle.
    package var periodHook: PeriodHook?
    /// Seconds of the system clock per figure of the device's measured rate (``Counters/measuredRate``). Set
    /// before ``start()``.
    package var rateWindow = 30
    /// How long nothing must have been heard (``MixerEngine/quietFrames``: no voice playing, no ramp or fade
    /// moving) before the thread stops the device and sleeps; nil never does (`[output] keep_warm`, `hushd play`).
    /// At least the device's queue, so only silence is dropped when it stops. Set before ``start()``.
    package var idleAfter: Duration?
    /// Whether the thread is idle now (the device stopped, no wake-ups): for status and the loop's deadlines.
    package var isIdle: Bool { counters.idle.load(ordering: .relaxed) == 1 }
    /// 1 from when the audio thread decides to go idle until someone takes it back to 0; whoever does (the control
    /// side in ``wake()``, or the thread itself when it finds work before sleeping) is the one that settles the
    /// wake-up, so the eventfd is written at most once per idle stretch and never missed.
    private let idleState = Atomic<Int>(0)
    /// The eventfd the idle thread blocks on reading (no timer); ``wake()`` rings it. Nil if none could be made
    /// (out of descriptors): the thread then never goes idle.
    private let wakeEvent = try? WakeEvent()
    /// Frames the device holds after a write: how far behind the mix the speaker is (a stream's delay), for the
    /// period in force.
    package var queuedFrames: Int {
        granted.queueFrames(forPeriod: max(granted.periodFrames, counters.periodFrames.load(ordering: .relaxed)))
    }
    /// Frames between a period's mix and the speaker when its first frame is mixed, at the period in force: with a
    /// fixed period the thread mixes a period ahead and its write waits for room (the whole queue); one whose
    /// period can grow waits for the wake level and then mixes, so only the wake level is ahead. The echo delay
    /// of the voice path (R22) starts from it.
    package var mixDelayFrames: Int {
        let period = max(granted.periodFrames, counters.periodFrames.load(ordering: .relaxed))
        return granted.adaptive ? granted.wakeLevel(forPeriod: period) : granted.queueFrames(forPeriod: period)
    }
    /// The period in force and the queue, for applications' streams (written here, on the audio thread).
    package let pace = OutputPace()
    /// The period the control side chose (R24), in frames; the thread mixes it from its next period on, within
    /// the device's floor and ceiling. Written by ``setPeriod(_:)``.
    private let chosenPeriod = Atomic<Int>(0)

    /// Control side: mix periods of `frames` from the next period on (R24's ruling), within what the device
    /// granted. The change never touches what is already queued: a shorter period's first frames follow the
    /// longer period's last, with no gap.
    package func setPeriod(_ frames: Int) {
        // Released: the thread that takes the commands pushed after this (acquiring) sees it.
        chosenPeriod.store(frames, ordering: .releasing)
    }
    private let running = Atomic<Bool>(false)
    private var thread: NamedThread?
    /// The box of the device the audio thread writes to (0 while it has none), with the reference it holds: owned
    /// by the audio thread once started.
    private var current: UInt = 0
    /// `current`'s device, so that writing to it needs no look into the box.
    private var playback: (any PCMOutput)?
    /// A lost device's box that the audio thread could not hand back yet (the slot still held another).
    private var lostBox: UInt = 0
    /// The device a route change moved away from, still written while the output cross-fades to the new one
    /// (its box, 0 when no cross-fade runs), and that device.
    private var fadingBox: UInt = 0
    private var fading: (any PCMOutput)?
    /// Frames of the cross-fade written so far, and the periods of silence still to write to the old device after
    /// it so that the end of its fade plays out of its queue before the control side closes it.
    private var fadePosition = 0
    private var fadeTailPeriods = 0
    /// Opens a device for a configuration (ALSA by default; tests and the WAV fallback give their own). Called on
    /// the control side only, from ``service()``.
    private let open: @Sendable (PlaybackConfiguration) -> (any PCMOutput)?
    /// A device handed from the control side to the audio thread (a route change, a reopened device), as an
    /// unmanaged reference to its box.
    private let incoming = Atomic<UInt>(0)
    /// A device the audio thread let go of (replaced at a handover, or lost), for the control side to close.
    private let outgoing = Atomic<UInt>(0)
    /// Control side: what to open when the device is lost (what was asked of the last device handed over).
    private var reopenConfiguration: PlaybackConfiguration
    /// Control side: when to try opening the lost device next (CLOCK_MONOTONIC nanoseconds), nil while it is not
    /// lost or a replacement is on its way to the audio thread.
    private var nextReopening: Int?
    /// Control side: the wait before the next attempt after this one fails (100 ms, doubling to 250 ms).
    private var reopenBackoff = AudioOutputThread.firstReopening
    private let logger: Logger

    /// The first attempt to reopen a lost device comes this long after the loss; each failure doubles the wait, up
    /// to ``longestReopening``.
    static let firstReopening = Duration.milliseconds(100)
    static let longestReopening = Duration.milliseconds(250)

    /// Opens the device (so configuration errors surface here, on the control side) and prepares the engine's
    /// format to match what was granted.
    package convenience init(engine: MixerEngine, playback: ALSAPlayback, priority: Int32 = 70, logger: Logger) {
        self.init(engine: engine, output: playback, requested: playback.requested, priority: priority, logger: logger)
    }

    /// - Parameters:
    ///   - output: the open device; `requested` is what was asked of it (reopened after a loss). Nil when the
    ///     device is not there yet (a card whose driver comes up after hushd): ``service()`` opens it as it would
    ///     reopen a lost one, and then it must grant the rate, channels and period asked for.
    ///   - open: how to reopen a lost device (ALSA unless given); called from ``service()``.
    package init(
        engine: MixerEngine,
        output: (any PCMOutput)?,
        requested: PlaybackConfiguration,
        priority: Int32 = 70,
        logger: Logger,
        open: @escaping @Sendable (PlaybackConfiguration) -> (any PCMOutput)? = { try? ALSAPlayback($0) }
    ) {
        self.engine = engine
        self.open = open
        configuration = requested
        reopenConfiguration = requested
        granted = output?.granted ?? requested
        self.priority = priority
        self.logger = logger
        // The runtime makes a type's metadata the first time code needs it, and may allocate to do so: the types
        // the audio thread first needs at a handover (a route change, often long after start) are made here.
        Self.prepareMetadata()
        chosenPeriod.store(granted.periodFrames, ordering: .relaxed)
        pace.set(period: granted.periodFrames, queued: granted.queueFrames(forPeriod: granted.periodFrames))
        if let output {
            current = Self.box(Handover(device: output, requested: requested, reason: .route))
            playback = output
        }
        counters.deviceOpen.store(output == nil ? 0 : 1, ordering: .relaxed)
    }

    /// Whether ``start()`` locks the process's memory (``lockMemory(logger:)``): `hushd play` sets it. hushd locks
    /// once its start-up is over, after handing back what only start-up needed (`ResidentMemory`); tests leave it
    /// off, so the test process is not locked.
    package var locksMemory = false

    /// Locks every page of the process as it is touched from now on, and those present now
    /// (`mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT)`): nothing mapped is faulted in for it, and a page the
    /// audio thread has touched is never paged out under it. Logs a warning when refused (RLIMIT_MEMLOCK).
    /// - Returns: whether the memory is locked.
    @discardableResult
    package static func lockMemory(logger: Logger) -> Bool {
        guard mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT) == 0 else {
            logger.warning(
                "cannot lock hushd's memory (\(String(cString: strerror(errno)))): a page fault may cause an underrun; raise LimitMEMLOCK"
            )
            return false
        }
        return true
    }

    /// Starts the thread. Logs, on the control side, what scheduling it got.
    package func start() throws(HardwareError) {
        guard !running.load(ordering: .acquiring) else { return }
        running.store(true, ordering: .releasing)
        if locksMemory { Self.lockMemory(logger: logger) }
        // A device not there at start is opened as a lost one is reopened.
        if current == 0 { scheduleReopening(after: Self.firstReopening) }
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

    /// Stops the thread and waits for it; closes every device it held or that was on its way.
    package func stop() {
        guard running.load(ordering: .acquiring), let thread else { return }
        running.store(false, ordering: .releasing)
        wake()
        thread.join()
        self.thread = nil
        // The audio thread has ended: what it owned is the control side's now.
        playback = nil
        fading = nil
        for bits in [current, lostBox, fadingBox] where bits != 0 { Self.unbox(bits).device.close() }
        current = 0
        lostBox = 0
        fadingBox = 0
        reap()
        if let pending = take(incoming) { pending.device.close() }
        nextReopening = nil
    }

    /// Hands `device` (already open, in the granted format) to the audio thread, which switches to it at the next
    /// period: a route change to another PCM without stopping the music. A device still waiting from an earlier
    /// handover is closed; a lost device is no longer reopened (this one takes its place).
    ///
    /// - Returns: false when the device's format differs from what the engine renders.
    @discardableResult
    package func handOver(_ device: any PCMOutput, requested: PlaybackConfiguration) -> Bool {
        guard Self.sameFormat(device.granted, granted) else { return false }
        send(Handover(device: device, requested: requested, reason: .route))
        return true
    }

    /// Control side, from the loop: closes what the audio thread let go of (a device replaced at a route change, or
    /// lost) and, while the device is lost, reopens it when due (``untilNextReopening``) and hands it over.
    package func service() {
        // Whatever this iteration of the loop asked of the engine (a sound, a stream's start, a route's device, a
        // recorder) is in its rings now: an idle thread wakes for it before anything of it is rendered.
        defer { wakeIfNeeded() }
        reap()
        guard let due = nextReopening, monotonicNanoseconds() >= due else { return }
        guard let reopened = open(reopenConfiguration) else {
            retryReopening()
            return
        }
        guard Self.sameFormat(reopened.granted, granted) else {
            // The engine renders one period size for good; a device that will not take it stays closed, and the
            // control side says what it granted instead.
            reopened.close()
            counters.refusedPeriodFrames.store(reopened.granted.periodFrames, ordering: .relaxed)
            counters.refusals.add(1, ordering: .relaxed)
            retryReopening()
            return
        }
        send(Handover(device: reopened, requested: reopenConfiguration, reason: .reopened))
    }

    /// Wakes the idle thread: it prepares the device and renders the next period at once. Harmless (one atomic
    /// load) when it is not idle. Control side, after pushing what it wants played.
    package func wake() {
        // Pairs with the fence in ``goIdle()``: either the thread sees what was pushed before this, or this sees
        // that it is idle.
        atomicMemoryFence(ordering: .sequentiallyConsistent)
        guard idleState.load(ordering: .sequentiallyConsistent) == 1,
            idleState.compareExchange(expected: 1, desired: 0, ordering: .sequentiallyConsistent).exchanged
        else { return }
        wakeEvent?.ring()
    }

    /// Wakes the idle thread if anything waits for it: commands for the engine, a device handed over, a recorder.
    package func wakeIfNeeded() {
        atomicMemoryFence(ordering: .sequentiallyConsistent)
        if idleState.load(ordering: .sequentiallyConsistent) == 1 && workWaiting() { wake() }
    }

    /// Whether something waits for the audio thread: commands in the engine's ring, a device in `incoming`, a
    /// period hook that wants periods. Atomics only: either side.
    private func workWaiting() -> Bool {
        if engine.commands.count > 0 || incoming.load(ordering: .acquiring) != 0 { return true }
        guard let hook = periodHook, let wants = hook.wantsPeriods else { return false }
        return wants(hook.context)
    }

    /// On the audio thread, after `quietFrames` reached the idle time: stops the device (what it holds is silence),
    /// blocks on the eventfd until woken, and prepares the device again. Nothing here allocates, locks or logs.
    /// Returns false when it did not go idle (a recorder or a command wants the thread).
    private func goIdle() -> Bool {
        guard let device = playback, let wakeEvent, !workWaiting() else { return false }
        device.halt()
        counters.idlings.add(1, ordering: .relaxed)
        counters.idle.store(1, ordering: .relaxed)
        idleState.store(1, ordering: .sequentiallyConsistent)
        atomicMemoryFence(ordering: .sequentiallyConsistent)
        let found = !running.load(ordering: .acquiring) || workWaiting()
        if !(found && idleState.compareExchange(expected: 1, desired: 0, ordering: .sequentiallyConsistent).exchanged) {
            // Someone else took the state back to 0 (or will): its write of the eventfd ends this read.
            wakeEvent.wait()
        }
        counters.idle.store(0, ordering: .relaxed)
        counters.wakings.add(1, ordering: .relaxed)
        guard running.load(ordering: .acquiring) else { return true }
        // Prepared, the device starts when the next periods have filled its buffer: they are written at once, the
        // first with the beginning of the sound that woke the thread.
        switch device.resume() {
        case .gone: handBackLost()
        case .failed: counters.writeErrors.add(1, ordering: .relaxed)
        case .written, .recovered: break
        }
        return true
    }

    /// How long until ``service()`` next tries to open the lost device (zero when due), nil while it is not lost.
    package var untilNextReopening: Duration? {
        nextReopening.map { .nanoseconds(max(0, $0 - monotonicNanoseconds())) }
    }

    /// Closes the devices the audio thread let go of; a lost one is reopened from ``service()``. Control side.
    package func reap() {
        let bits = outgoing.exchange(0, ordering: .acquiringAndReleasing)
        guard bits != 0 else { return }
        let box = Self.unbox(bits)
        box.device.close()
        // A device on its way to the audio thread takes the lost one's place: nothing to reopen.
        if box.reason == .lost && incoming.load(ordering: .acquiring) == 0 {
            reopenConfiguration = box.requested
            reopenBackoff = Self.firstReopening
            scheduleReopening(after: reopenBackoff)
        }
    }

    private func scheduleReopening(after wait: Duration) {
        nextReopening = monotonicNanoseconds() + Int(wait.nanoseconds)
    }

    private func retryReopening() {
        reopenBackoff = min(reopenBackoff * 2, Self.longestReopening)
        scheduleReopening(after: reopenBackoff)
    }

    /// Puts `box` in the incoming slot for the audio thread; a box already waiting there is closed and freed.
    private func send(_ box: Handover) {
        nextReopening = nil
        let previous = incoming.exchange(Self.box(box), ordering: .acquiringAndReleasing)
        if previous != 0 { Self.unbox(previous).device.close() }
        reap()
    }

    private func take(_ slot: borrowing Atomic<UInt>) -> Handover? {
        let bits = slot.exchange(0, ordering: .acquiringAndReleasing)
        return bits == 0 ? nil : Self.unbox(bits)
    }

    /// Whether the engine's rendering fits `a` as it fits `b`: the same rate, channels and period (the PCM's name
    /// and the sample format may differ: the engine converts to each device's format as it writes).
    static func sameFormat(_ a: PlaybackConfiguration, _ b: PlaybackConfiguration) -> Bool {
        a.sampleRate == b.sampleRate && a.channels == b.channels && a.periodFrames == b.periodFrames
    }

    /// A device in transit between the control side and the audio thread. Each device has one box from when the
    /// control side opens it to when the control side closes it: the audio thread only passes boxes on, so it
    /// never allocates or frees one.
    private final class Handover {
        let device: any PCMOutput
        /// What was asked of the device: what to reopen if it is lost.
        let requested: PlaybackConfiguration
        /// Why the device travels: set by whoever sends it.
        var reason: Reason
        enum Reason {
            /// A route's device (or the first one), to the audio thread; on the way back, one it replaced.
            case route
            /// A lost device opened again, to the audio thread.
            case reopened
            /// On the way back: the device is gone (a removed card); close it and open it again.
            case lost
        }
        init(device: any PCMOutput, requested: PlaybackConfiguration, reason: Reason) {
            self.device = device
            self.requested = requested
            self.reason = reason
        }
    }

    /// A box as the bits a slot holds, with a reference of its own.
    private static func box(_ handover: Handover) -> UInt {
        UInt(bitPattern: Unmanaged.passRetained(handover).toOpaque())
    }

    /// Takes the reference `bits` held back: control side only (the box may be freed when it goes).
    private static func unbox(_ bits: UInt) -> Handover {
        Unmanaged<Handover>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!).takeRetainedValue()
    }

    /// Looks into a box without taking its reference: what the audio thread does.
    private static func peek(_ bits: UInt) -> Handover {
        Unmanaged<Handover>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!).takeUnretainedValue()
    }

    /// On the audio thread: switches to a handed-over device, passing the old one back for the control side to
    /// close (closing a PCM is I/O and may block: not here).
    private func acceptHandover() {
        let bits = incoming.load(ordering: .relaxed)
        guard bits != 0, lostBox == 0, fadingBox == 0, outgoing.load(ordering: .acquiring) == 0 else { return }
        guard incoming.compareExchange(expected: bits, desired: 0, ordering: .acquiringAndReleasing).exchanged else {
            return
        }
        let handed = Self.peek(bits)
        let crossfading = current != 0 && handed.reason == .route
        if crossfading {
            // The old device keeps playing while the new one fades in; it goes back to the control side when its
            // fade has played out (``advanceCrossfade``). The box's own reference goes with it: nothing is
            // retained, released or freed on this thread.
            Self.peek(current).reason = .route
            fadingBox = current
            fading = playback
            fadePosition = 0
            // Silence for the old device's whole buffer, not only for what it holds at the shortest period (where
            // the thread is during a move, R24): the fade plays out, and no stale frame of a longer period is left
            // in the buffer for the driver to read past the end when the device stops (the virtual board heard one
            // as a click on snd-aloop).
            fadeTailPeriods = fading.map { $0.granted.bufferFrames / $0.granted.periodFrames } ?? 0
        } else if current != 0 {
            Self.peek(current).reason = .route
            outgoing.store(current, ordering: .releasing)
        }
        current = bits
        playback = handed.device
        if handed.reason == .reopened {
            counters.reopenings.add(1, ordering: .relaxed)
        } else {
            counters.handovers.add(1, ordering: .relaxed)
        }
        // A route's device handed over while the old one was lost (or never there) is a device again.
        counters.deviceOpen.store(1, ordering: .relaxed)
        if crossfading {
            counters.crossfades.add(1, ordering: .relaxed)
        } else {
            // From silence: a device after a loss, or the first one.
            engine.fadeInOutput(frames: engine.format.frames(recoveryFade))
        }
    }

    /// On the audio thread, during a cross-fade: `mix` holds this period as floats. Writes it to the old device
    /// faded out and leaves it in `output`, faded in, in the new device's format; after the fade, the old device
    /// gets silence until its queue has played the fade out, then goes back to the control side.
    ///
    /// The two gains add up to one at every frame, and both devices get the same frames: a signal heard on both
    /// (or summed, as the virtual board's check does) keeps its level and its phase through the move.
    private func advanceCrossfade(
        frames: Int,
        mix: UnsafeMutablePointer<Float>,
        scaled: UnsafeMutablePointer<Float>,
        oldOutput: UnsafeMutableRawPointer,
        output: UnsafeMutableRawPointer,
        newFormat: SampleFormat
    ) {
        guard let old = fading else { return }
        let channels = granted.channels
        let samples = frames * channels
        let length = max(Int(engine.format.frames(crossfade)), frames)
        if fadePosition < length {
            // Fading: the new device's gain rises from 0 to 1 over `length` frames, the old one's falls with it.
            let step = 1 / Float(length)
            for frame in 0..<frames {
                let gain = min(1, Float(fadePosition + frame + 1) * step)
                for channel in 0..<channels {
                    let index = frame * channels + channel
                    scaled[index] = mix[index] * (1 - gain)
                    mix[index] *= gain
                }
            }
            SampleConversion.write(scaled, count: samples, to: oldOutput, format: old.granted.format)
            fadePosition += frames
        } else {
            // Zero bits are silence in every sample format.
            oldOutput.initializeMemory(as: UInt8.self, repeating: 0, count: samples * 4)
            fadeTailPeriods -= 1
        }
        SampleConversion.write(mix, count: samples, to: output, format: newFormat)
        // The old device paces the fade as the new one fills: both play the same frames at the same time.
        var result = old.waitForRoom()
        if case .written = result { result = old.write(oldOutput, frames: frames) }
        // A device that went away or failed while fading out has nothing more to play: let it go now.
        let done = fadePosition >= length && fadeTailPeriods <= 0
        if case .written = result, !done { return }
        if case .recovered = result, !done { return }
        finishCrossfade()
    }

    /// Hands the faded-out device back to the control side (once the slot is free), ending the cross-fade.
    private func finishCrossfade() {
        guard fadingBox != 0 else { return }
        guard outgoing.compareExchange(expected: 0, desired: fadingBox, ordering: .acquiringAndReleasing).exchanged
        else {
            // The slot still holds another device: keep the old one silent one more period.
            fadeTailPeriods = 0
            return
        }
        fadingBox = 0
        fading = nil
    }

    /// On the audio thread: the device is gone. It is not closed here (the kernel frees a removed card only when its
    /// last handle closes, but that close may block): its box goes back to the control side, which closes it at
    /// once and reopens it.
    private func handBackLost() {
        counters.deviceLosses.add(1, ordering: .relaxed)
        counters.deviceOpen.store(0, ordering: .relaxed)
        // The box still holds the device: dropping this reference frees nothing.
        playback = nil
        Self.peek(current).reason = .lost
        lostBox = current
        current = 0
        publishLost()
    }

    /// Passes the lost device's box to the control side once the slot is free (a replaced device may still be
    /// there, waiting to be closed).
    private func publishLost() {
        guard lostBox != 0,
            outgoing.compareExchange(expected: 0, desired: lostBox, ordering: .acquiringAndReleasing).exchanged
        else { return }
        lostBox = 0
    }

    private func loop() {
        // The buffers have room for the longest period (the engine's too).
        let frames = max(granted.periodFrames, min(granted.maxPeriodFrames, engine.format.maxFrames))
        let floor = granted.periodFrames
        // Room for the widest sample format: a route's device may take another format than the first one.
        let samples = frames * granted.channels
        let bytes = samples * 4
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 16)
        defer { buffer.deallocate() }
        // For cross-fades: the period as floats, the old device's share, and the old device's bytes.
        let mix = UnsafeMutablePointer<Float>.allocate(capacity: samples)
        let scaled = UnsafeMutablePointer<Float>.allocate(capacity: samples)
        let oldOutput = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 16)
        defer {
            mix.deallocate()
            scaled.deallocate()
            oldOutput.deallocate()
        }
        // Without a device, how often to look for one: a period, within 1–10 ms.
        let idle = Duration.nanoseconds(min(max(floor * 1_000_000_000 / granted.sampleRate, 1_000_000), 10_000_000))
        // When the last period started; 0 until a period is written on the current device.
        var previousStart = 0
        // Quiet frames after which the thread goes idle (never less than the device's queue, which is then only
        // silence); nil keeps the device fed.
        let idleFrames = idleAfter.map { max(Int(engine.format.frames($0)), granted.bufferFrames) }
        // The device's clock, from when its writes return; a stretch ends wherever the device stopped or changed.
        var meter = RateMeter(skip: granted.periods + 1, window: rateWindow)
        // The period set on the device in `setOn` (a box), 0 until one is.
        var inForce = 0
        var setOn: UInt = 0
        while running.load(ordering: .relaxed) {
            // A handover seen now was published after the commands that go with it (R5's pauses before the
            // route moves): this period, rendered for the old device, carries them out — a pause's fade ends
            // there — and only the next period goes to the new device. So not a sample of a paused voice reaches
            // the route it was moved away from.
            let switching = incoming.load(ordering: .acquiring) != 0
            guard let device = playback else {
                previousStart = 0
                publishLost()
                if switching { acceptHandover() }
                if playback == nil { sleepFor(idle) }
                continue
            }
            // R24: the period the control side chose, within what this device allows; the shortest while a device
            // change waits or a cross-fade runs, so that both devices' queues are the same length.
            let period =
                switching || fadingBox != 0
                ? floor
                : max(floor, min(chosenPeriod.load(ordering: .relaxed), device.granted.maxPeriodFrames, frames))
            if period != inForce || setOn != current {
                if case .gone = device.setPeriod(period) {
                    handBackLost()
                    continue
                }
                if period != inForce && inForce != 0 { counters.periodChanges.add(1, ordering: .relaxed) }
                inForce = period
                setOn = current
                counters.periodFrames.store(period, ordering: .relaxed)
                pace.set(period: period, queued: granted.queueFrames(forPeriod: period))
                // The queue's length changed with it: a new line of the device's clock.
                meter.split()
            }
            // A device whose period can grow paces here, before the mix, so that what the control side asked
            // since is in it; one with a fixed period paces in its write, as ever.
            guard settle(device.waitForRoom(), meter: &meter) else { continue }
            let start = monotonicNanoseconds()
            if previousStart != 0 { Self.raise(counters.longestGap, to: start - previousStart) }
            previousStart = start
            // What the control side asked while the thread waited, and the period it chose before asking it: a
            // session or stream that needs a shorter period has its first frame mixed in one (R24), even when
            // the thread waited for a longer one (it is at that one's wake level, deeper than the shorter one's).
            engine.takeCommands()
            let mixed = min(period, max(floor, chosenPeriod.load(ordering: .acquiring)))
            if fadingBox != 0 {
                engine.render(
                    frames: mixed,
                    into: UnsafeMutableRawPointer(mix),
                    sampleFormat: .floatLE,
                    commands: false
                )
                advanceCrossfade(
                    frames: mixed,
                    mix: mix,
                    scaled: scaled,
                    oldOutput: oldOutput,
                    output: buffer,
                    newFormat: device.granted.format
                )
            } else {
                engine.render(frames: mixed, into: buffer, sampleFormat: device.granted.format, commands: false)
            }
            if let hook = periodHook { hook.call(hook.context, mixed) }
            Self.raise(counters.longestRender, to: monotonicNanoseconds() - start)
            counters.periods.add(1, ordering: .relaxed)
            let written = device.write(buffer, frames: mixed)
            if case .written = written {
                if meter.tick(frames: mixed, at: monotonicNanoseconds()) {
                    counters.measuredRate.store(meter.packed, ordering: .relaxed)
                }
            } else {
                _ = settle(written, meter: &meter)
            }
            if switching {
                acceptHandover()
                meter.split()
            }
            if let idleFrames, engine.quietFrames >= idleFrames, fadingBox == 0, lostBox == 0, goIdle() {
                // The device stopped while the thread slept: its clock's line starts again.
                meter.split()
                // The time asleep is not a gap between periods.
                previousStart = 0
            }
        }
    }

    /// After a wait or a write the device did not simply take: an underrun recovered is counted and faded in from,
    /// a lost device handed back, a failure counted and slept on; each starts a new line of the device's clock.
    /// Returns whether the period goes on (it does after a recovery, not after a loss or a failure).
    private func settle(_ result: PCMWriteResult, meter: inout RateMeter) -> Bool {
        switch result {
        case .written:
            return true
        case .recovered:
            counters.underruns.add(1, ordering: .relaxed)
            engine.fadeInOutput(frames: engine.format.frames(recoveryFade))
            meter.split()
            return true
        case .gone:
            handBackLost()
            meter.split()
            return false
        case .failed:
            counters.writeErrors.add(1, ordering: .relaxed)
            sleepFor(.milliseconds(10))
            meter.split()
            return false
        }
    }

    /// Makes, on the control side, the metadata of the types the audio thread needs only at its first handover or
    /// loss (the existential of a device, optional or not), so that making it never allocates on the audio thread.
    /// Found by `audioThreadAllocatesNothing` run alone: 3 allocations in `acceptHandover`, through
    /// `swift_getExistentialTypeMetadata`, when no handover had happened in the process before.
    private static func prepareMetadata() {
        let types: [Any.Type] = [(any PCMOutput).self, Optional<any PCMOutput>.self, Handover.self]
        _ = types.count
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
