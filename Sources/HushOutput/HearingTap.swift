import HushCore
import HushHearing
import HushMixer
import HushSystem
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Hearing safety's ear on the mix (policy R29): while a private route plays, the audio thread copies each
/// period's mix — what leaves hushd for the route — into a ring (no allocation, no system call); a thread of its
/// own, `hush-hearing`, measures it with HushHearing's ``LevelMeter`` four times a second and keeps each completed
/// second's A-weighted level for the daemon's loop, which turns it into dB(A) at the ear and the week's dose.
///
/// While no private route plays, the audio thread copies nothing and the thread sleeps on an eventfd: no wake-ups.
public final class HearingTap: @unchecked Sendable {
    public let sampleRate: Int
    public let channels: Int
    private let mix: UnsafePointer<Float>
    private let ring: SampleRing
    /// Control side → the audio thread and the meter's thread: a private route plays.
    private let activeFlag = Atomic<Bool>(false)
    private let running = Atomic<Bool>(false)
    /// The meter's thread → control side: each completed second's level (dB re a full-scale 1 kHz sine).
    private let levels = Mutex<[Double]>([])
    private let wake: WakeEvent
    private var thread: NamedThread?
    private let scratch: UnsafeMutablePointer<Float>
    private let scratchFrames: Int

    /// A tap on `mix`, the engine's interleaved float mix of `channels` at `sampleRate` (``MixerEngine/lastMix``).
    public init(sampleRate: Int, channels: Int, mix: UnsafePointer<Float>) throws(HardwareError) {
        self.sampleRate = sampleRate
        self.channels = channels
        self.mix = mix
        // A second of audio: the thread drains it every 250 ms.
        ring = SampleRing(frames: sampleRate, channels: channels)
        wake = try WakeEvent()
        scratchFrames = 4096
        scratch = .allocate(capacity: scratchFrames * channels)
        scratch.initialize(repeating: 0, count: scratchFrames * channels)
    }

    deinit {
        stop()
        ring.deallocate()
        scratch.deallocate()
    }

    /// The hook the audio thread calls after each period's mix.
    public var hook: PeriodHook {
        PeriodHook(
            context: Unmanaged.passUnretained(self).toOpaque(),
            call: { context, frames in
                Unmanaged<HearingTap>.fromOpaque(context)._withUnsafeGuaranteedRef { $0.period(frames: frames) }
            }
        )
    }

    /// Audio thread: the period's mix into the ring while active; what does not fit is dropped (the meter's
    /// thread was late: a second with fewer frames, never a stall of the audio thread).
    func period(frames: Int) {
        guard activeFlag.load(ordering: .relaxed) else { return }
        _ = ring.write(mix, frames: frames)
    }

    /// Whether the tap measures (a private route plays).
    public var isActive: Bool { activeFlag.load(ordering: .relaxed) }

    /// Control side: starts or stops measuring. Stopping forgets the second in progress.
    public func setActive(_ active: Bool) {
        guard activeFlag.exchange(active, ordering: .relaxed) != active else { return }
        wake.ring()
    }

    /// Control side: the levels of the seconds completed since the last call, oldest first.
    public func takeLevels() -> [Double] {
        levels.withLock { taken in
            defer { taken.removeAll(keepingCapacity: true) }
            return taken
        }
    }

    /// Starts the `hush-hearing` thread (an ordinary one: its deadline is a second, not a period).
    public func start() throws(HardwareError) {
        guard thread == nil else { return }
        running.store(true, ordering: .relaxed)
        thread = try NamedThread(name: "hush-hearing") { [self] in measure() }
    }

    /// Ends the thread and waits for it.
    public func stop() {
        guard let thread else { return }
        running.store(false, ordering: .relaxed)
        wake.ring()
        thread.join()
        self.thread = nil
    }

    private func measure() {
        var meter = LevelMeter(sampleRate: sampleRate, channels: channels)
        var measuring = false
        while running.load(ordering: .relaxed) {
            guard activeFlag.load(ordering: .relaxed) else {
                measuring = false
                wake.wait()
                continue
            }
            if !measuring {
                // A new stretch: what the ring held from before is not this listening's, nor is a part-second.
                while ring.read(into: scratch, frames: scratchFrames) > 0 {}
                meter = LevelMeter(sampleRate: sampleRate, channels: channels)
                measuring = true
            }
            usleep(250_000)
            var read = 0
            repeat {
                read = ring.read(into: scratch, frames: scratchFrames)
                guard read > 0 else { break }
                meter.append(UnsafeBufferPointer(start: scratch, count: read * channels)) { level in
                    levels.withLock { $0.append(level) }
                }
            } while read == scratchFrames
        }
    }
}
