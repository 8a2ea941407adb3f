import HushALSA
import HushCore
import HushMixer
import HushSystem
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Feeds a live ALSA capture device into a ``SampleRing`` for the mixer: the capture side of snd-aloop, where
/// mpd, librespot or `aplay -D hw:Loopback,0,1` play, becomes a voice on the music bus.
///
/// A thread of its own ("hush-capture") reads a period at a time, converts it to float and writes it to the ring;
/// what does not fit (the voice is paused) is dropped and counted, so a paused voice resumes with fresh audio,
/// not with stale seconds.
public final class CaptureFeeder: @unchecked Sendable {
    public let ring: SampleRing
    public let capture: ALSACapture
    /// Frames dropped because the ring was full.
    public let dropped = Atomic<Int>(0)
    /// Reads that got nothing (the device failed and did not recover: a USB microphone pulled out). Each waits
    /// 10 ms before the next try, so a dead device never spins the thread, which may run SCHED_FIFO.
    public let failedReads = Atomic<Int>(0)
    private let running = Atomic<Bool>(false)
    private var thread: NamedThread?

    /// Opens `pcm` for capture at the mixer's rate and channels.
    public init(pcm: String, sampleRate: Int, channels: Int, periodFrames: Int, periods: Int = 4) throws(HardwareError)
    {
        capture = try ALSACapture(
            PlaybackConfiguration(
                pcm: pcm,
                sampleRate: sampleRate,
                channels: channels,
                format: .s16LE,
                periodFrames: periodFrames,
                periods: periods
            )
        )
        guard capture.granted.sampleRate == sampleRate, capture.granted.channels == channels else {
            throw HardwareError(
                operation: "capture from",
                device: "'\(pcm)'",
                errno: EINVAL,
                message: "it runs at \(capture.granted.sampleRate) Hz with \(capture.granted.channels) channels; "
                    + "the mixer needs \(sampleRate) Hz with \(channels) (use a plug: PCM)"
            )
        }
        ring = SampleRing(frames: max(4096, periodFrames * 8), channels: channels)
    }

    deinit { ring.deallocate() }

    /// Starts the reading thread; with `realtimePriority` above 0 it runs SCHED_FIFO at that priority, as the
    /// audio thread does (a microphone read late is a gap in a call). Returns the errno when the priority could
    /// not be had (the thread then runs with normal scheduling), 0 otherwise.
    @discardableResult
    public func start(realtimePriority: Int32 = 0) throws(HardwareError) -> Int32 {
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
    public func stop() {
        guard running.load(ordering: .acquiring), let thread else { return }
        running.store(false, ordering: .releasing)
        thread.join()
        self.thread = nil
    }

    private func loop() {
        let frames = capture.granted.periodFrames
        let channels = capture.granted.channels
        var pcm = [Int16](repeating: 0, count: frames * channels)
        var float = [Float](repeating: 0, count: frames * channels)
        while running.load(ordering: .relaxed) {
            let read = pcm.withUnsafeMutableBytes { capture.read(into: $0.baseAddress!, frames: frames) }
            guard read > 0 else {
                failedReads.add(1, ordering: .relaxed)
                var pause = timespec(tv_sec: 0, tv_nsec: 10_000_000)
                nanosleep(&pause, nil)
                continue
            }
            for i in 0..<(read * channels) { float[i] = Float(pcm[i]) / 32768 }
            let written = float.withUnsafeBufferPointer { ring.write($0.baseAddress!, frames: read) }
            if written < read { dropped.add(read - written, ordering: .relaxed) }
        }
    }
}
