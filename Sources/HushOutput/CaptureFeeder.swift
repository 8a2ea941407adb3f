import HushALSA
import HushCore
import HushMixer
import HushSystem
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Feeds a live ALSA capture device into a ``SampleRing`` for the mixer: a microphone, or the capture side of
/// snd-aloop where mpd, librespot or `aplay -D hw:Loopback,0,1` play. A ``CaptureRouter`` reads the ring once per
/// period and hands it to whoever may hear it.
///
/// A thread of its own ("hush-capture") reads a period at a time, converts it to float and writes it to the ring;
/// what does not fit is dropped and counted, so the reader gets fresh audio, not stale seconds.
///
/// A device that fails (a USB microphone pulled out, a card unbound) is closed at once — the kernel frees a removed
/// card only when its last handle closes — and opened again 100 ms later, then every 250 ms, until it is back.
/// Meanwhile the ring gets nothing and readers get silence. ``lost`` says which, ``reopenings`` how often it came
/// back.
package final class CaptureFeeder: @unchecked Sendable {
    package let ring: SampleRing
    /// What the device granted when it was first opened (a reopened one must grant the same).
    package let granted: PlaybackConfiguration
    /// Frames dropped because the ring was full.
    package let dropped = Atomic<Int>(0)
    /// Reads that failed and closed the device.
    package let failedReads = Atomic<Int>(0)
    /// Whether the device is closed after a failure and being opened again.
    package let lost = Atomic<Bool>(false)
    /// Times the device was opened again after a failure.
    package let reopenings = Atomic<Int>(0)
    /// The microphone resampled to the output's clock, when its card is not the output's (nil: one clock).
    package let clockMatch: ClockMatch?
    /// The microphone's real rate over the latest window of the system clock, with the window's index
    /// (``RateMeter/packed``; 0 until the first); measured while the clock is matched.
    package let measuredRate = Atomic<Int>(0)
    private let requested: PlaybackConfiguration
    private var capture: ALSACapture?
    private let running = Atomic<Bool>(false)
    private var thread: NamedThread?
    /// The control side's view of ``lost``, for ``lostChanged()``.
    private var reportedLost = false
    /// Control side → capture thread: the microphone privacy switch (policy R21), the gate at the source. While it
    /// is set, what is read goes into the ring as silence, so no frame captured while the switch was on waits there
    /// for a reader after it is turned off (the ``CaptureRouter``'s own gate closes the other edge).
    package let muted = Atomic<Bool>(false)

    /// Opens `pcm` for capture at the mixer's rate and channels.
    /// `matchClock`: the microphone's card is not the output's, so its clock drifts from the output's; its frames
    /// are resampled to hold the ring at two periods (``ClockMatch``).
    package init(
        pcm: String,
        sampleRate: Int,
        channels: Int,
        periodFrames: Int,
        periods: Int = 4,
        matchClock: Bool = false
    ) throws(HardwareError) {
        requested = PlaybackConfiguration(
            pcm: pcm,
            sampleRate: sampleRate,
            channels: channels,
            format: .s16LE,
            periodFrames: periodFrames,
            periods: periods
        )
        let capture = try Self.open(requested)
        self.capture = capture
        granted = capture.granted
        // Half a second at least: the audio thread late by that much (its device underran, the machine stalled)
        // finds every frame still there, and hands them on at once (CaptureRouter catches up).
        ring = SampleRing(frames: max(sampleRate / 2, periodFrames * 8), channels: channels)
        if matchClock {
            do {
                clockMatch = try ClockMatch(
                    channels: channels,
                    sampleRate: sampleRate,
                    maxFrames: capture.granted.periodFrames,
                    targetFill: 2 * periodFrames
                )
            } catch {
                throw HardwareError(operation: "match the clock of", device: "'\(pcm)'", message: error.description)
            }
        } else {
            clockMatch = nil
        }
    }

    deinit { ring.deallocate() }

    /// Opens the device and insists on the mixer's rate and channels.
    private static func open(_ requested: PlaybackConfiguration) throws(HardwareError) -> ALSACapture {
        let capture = try ALSACapture(requested)
        guard capture.granted.sampleRate == requested.sampleRate, capture.granted.channels == requested.channels
        else {
            throw HardwareError(
                operation: "capture from",
                device: "'\(requested.pcm)'",
                errno: EINVAL,
                message: "it runs at \(capture.granted.sampleRate) Hz with \(capture.granted.channels) channels; "
                    + "the mixer needs \(requested.sampleRate) Hz with \(requested.channels) (use a plug: PCM)"
            )
        }
        return capture
    }

    /// Control side: the new value of ``lost`` when it changed since the last call (to say so once), else nil.
    package func lostChanged() -> Bool? {
        let now = lost.load(ordering: .acquiring)
        guard now != reportedLost else { return nil }
        reportedLost = now
        return now
    }

    /// Starts the reading thread; with `realtimePriority` above 0 it runs SCHED_FIFO at that priority, as the
    /// audio thread does (a microphone read late is a gap in a call). Returns the errno when the priority could
    /// not be had (the thread then runs with normal scheduling), 0 otherwise.
    @discardableResult
    package func start(realtimePriority: Int32 = 0) throws(HardwareError) -> Int32 {
        running.store(true, ordering: .releasing)
        do {
            thread = try NamedThread(name: "hush-capture") { [self] in loop() }
        } catch {
            running.store(false, ordering: .releasing)
            throw error
        }
        guard realtimePriority > 0 else { return 0 }
        return thread?.makeRealtime(priority: realtimePriority) ?? ESRCH
    }

    /// Stops the thread and waits for it.
    package func stop() {
        guard running.load(ordering: .acquiring), let thread else { return }
        running.store(false, ordering: .releasing)
        thread.join()
        self.thread = nil
    }

    private func loop() {
        let frames = granted.periodFrames
        let channels = granted.channels
        var pcm = [Int16](repeating: 0, count: frames * channels)
        var float = [Float](repeating: 0, count: frames * channels)
        var retry = ContinuousClock.now
        var wait = Duration.milliseconds(100)
        var gate = SourceMute(bufferFrames: granted.periodFrames * granted.periods)
        // The microphone's clock, from when its reads return; a stretch ends at an overrun or a reopening.
        var meter = RateMeter(skip: granted.periods + 1)
        var recoveries = 0
        while running.load(ordering: .relaxed) {
            guard let capture else {
                // Lost: try again when due, looking at `running` every 10 ms so stop() is never kept waiting.
                if ContinuousClock.now >= retry {
                    if let reopened = try? Self.open(requested) {
                        self.capture = reopened
                        reopenings.add(1, ordering: .relaxed)
                        lost.store(false, ordering: .releasing)
                        continue
                    }
                    retry = ContinuousClock.now + wait
                    wait = .milliseconds(250)
                }
                var pause = timespec(tv_sec: 0, tv_nsec: 10_000_000)
                nanosleep(&pause, nil)
                continue
            }
            let read = pcm.withUnsafeMutableBytes { capture.read(into: $0.baseAddress!, frames: frames) }
            if read > 0 {
                if gate.silences(frames: read, mutedNow: muted.load(ordering: .relaxed)) {
                    for i in 0..<(read * channels) { float[i] = 0 }
                } else {
                    for i in 0..<(read * channels) { float[i] = Float(pcm[i]) / 32768 }
                }
                if let clockMatch {
                    if capture.recoveries != recoveries || read < frames {
                        recoveries = capture.recoveries
                        meter.split()
                    } else if meter.tick(frames: read, at: monotonicNanoseconds()) {
                        measuredRate.store(meter.packed, ordering: .relaxed)
                    }
                    let lost = float.withUnsafeBufferPointer {
                        clockMatch.write($0.baseAddress!, frames: read, into: ring)
                    }
                    if lost > 0 { dropped.add(lost, ordering: .relaxed) }
                } else {
                    let written = float.withUnsafeBufferPointer { ring.write($0.baseAddress!, frames: read) }
                    if written < read { dropped.add(read - written, ordering: .relaxed) }
                }
            }
            if read < frames {
                // Beyond recovery: close it now (a removed card goes only when its last handle closes), reopen later.
                failedReads.add(1, ordering: .relaxed)
                self.capture = nil
                meter.split()
                recoveries = 0
                retry = ContinuousClock.now + .milliseconds(100)
                wait = .milliseconds(250)
                lost.store(true, ordering: .releasing)
            }
        }
    }
}

/// The privacy switch at the microphone's source (policy R21), decided after each read: while the switch is on, the
/// frames read are silence; when it has just been turned off, so are the frames of that read (captured, at least
/// in part, while it was on) and of the device's whole buffer after it (captured before the reader saw the switch
/// move, they wait in the kernel). Silence a few milliseconds longer than asked is the safe side: a recorder has to
/// be started again after the switch anyway (R21).
package struct SourceMute {
    /// The capture device's buffer, frames: the most it can hold that was captured before a read returned.
    package let bufferFrames: Int
    private var wasMuted = false
    private var remaining = 0

    package init(bufferFrames: Int) { self.bufferFrames = bufferFrames }

    /// After a read of `frames` frames, with the switch as it is now: whether to hand them on as silence.
    package mutating func silences(frames: Int, mutedNow: Bool) -> Bool {
        if mutedNow {
            wasMuted = true
            remaining = 0
            return true
        }
        if wasMuted {
            wasMuted = false
            remaining = bufferFrames
            return true
        }
        guard remaining > 0 else { return false }
        remaining -= frames
        return true
    }
}
