import HushMixer
import HushSystem
import Synchronization

/// Hands the microphone to its consumers — applications' capture streams, and relays onto a bus — once per period,
/// on the audio thread: the one place where the microphone's frames are read, so every consumer of a period gets
/// the same frames (a call and a recorder hear the same thing), and where one that may not hear them gets silence
/// instead.
///
/// Consumers come and go through a command ring, as voices do; a removed one is let go (``reap()``) only once the
/// audio thread confirms it no longer touches it.
public final class CaptureRouter: @unchecked Sendable {
    public static let capacity = 64
    private enum Command: BitwiseCopyable {
        case add(UnsafeMutableRawPointer)
        case remove(UnsafeMutableRawPointer)
    }
    private let commands = SPSCRing<Command>(capacity: 256)
    private let releasedRing = SPSCRing<UnsafeMutableRawPointer>(capacity: 256)
    private let slots: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    private var count = 0
    /// The microphone (a capture feeder's ring at the mixer's rate), or nil: silence for everyone.
    public let microphone: SampleRing?
    private let scratch: UnsafeMutablePointer<Float>
    private let maxFrames: Int
    /// Control side → audio thread: the microphone privacy switch (policy R21). While set, every consumer is handed
    /// silence from the next period, whatever it is allowed: the one gate below every other.
    public let muted = Atomic<Bool>(false)
    /// The consumers the audio thread hands periods to, as it last counted them: readable from either side.
    private let consumers = Atomic<Int>(0)
    /// Control side: streams added and not yet confirmed released.
    private var held: [ObjectIdentifier: CaptureConsumer] = [:]
    private var pendingCommands: [Command] = []

    /// The mixer's rate: how many frames of silence a second is, without a microphone.
    private let sampleRate: Int
    /// The voice path (R22 `voiceChat`), when there is a microphone and the mixer's rate allows one.
    public let voicePath: VoicePath?
    /// The engine's last mix (``HushMixer/MixerEngine/lastMix``) and its channels: the voice path's reference.
    private let mix: UnsafePointer<Float>?
    private let mixChannels: Int

    public init(
        microphone: SampleRing?,
        maxFrames: Int,
        voicePath: VoicePath? = nil,
        mix: UnsafePointer<Float>? = nil,
        mixChannels: Int = 2,
        sampleRate: Int = 48000
    ) {
        self.microphone = microphone
        self.maxFrames = maxFrames
        self.sampleRate = sampleRate
        self.voicePath = voicePath
        self.mix = mix
        self.mixChannels = mixChannels
        slots = .allocate(capacity: Self.capacity)
        slots.initialize(repeating: nil, count: Self.capacity)
        let channels = microphone?.channels ?? 2
        scratch = .allocate(capacity: maxFrames * channels)
        scratch.initialize(repeating: 0, count: maxFrames * channels)
    }

    deinit {
        slots.deallocate()
        scratch.deallocate()
        commands.deallocate()
        releasedRing.deallocate()
    }

    /// The hook the audio thread calls after each period's mix.
    public var hook: PeriodHook {
        PeriodHook(
            context: Unmanaged.passUnretained(self).toOpaque(),
            call: { context, frames in
                Unmanaged<CaptureRouter>.fromOpaque(context)._withUnsafeGuaranteedRef { $0.period(frames: frames) }
            },
            wantsPeriods: { context in
                Unmanaged<CaptureRouter>.fromOpaque(context)._withUnsafeGuaranteedRef { $0.wantsPeriods }
            }
        )
    }

    /// Whether a consumer takes periods, or one is on its way (the audio thread must not go idle): either side.
    public var wantsPeriods: Bool { consumers.load(ordering: .relaxed) > 0 || commands.count > 0 }

    /// Control side: whether another stream fits.
    public var hasRoom: Bool { held.count < Self.capacity }

    /// Control side: starts handing periods to `stream` (it keeps them until ``remove(_:)``).
    public func add(_ stream: CaptureConsumer) {
        held[ObjectIdentifier(stream)] = stream
        send(.add(Unmanaged.passUnretained(stream).toOpaque()))
    }

    /// Control side: stops handing periods to `stream`; it is let go once the audio thread confirms.
    public func remove(_ stream: CaptureConsumer) {
        send(.remove(Unmanaged.passUnretained(stream).toOpaque()))
    }

    /// Control side: lets go of the streams the audio thread no longer touches.
    public func reap() {
        flush()
        while let pointer = releasedRing.pop() {
            let stream = Unmanaged<CaptureConsumer>.fromOpaque(pointer).takeUnretainedValue()
            held[ObjectIdentifier(stream)] = nil
        }
    }

    private func send(_ command: Command) {
        flush()
        if !pendingCommands.isEmpty || !commands.push(command) { pendingCommands.append(command) }
    }

    private func flush() {
        while let first = pendingCommands.first, commands.push(first) { pendingCommands.removeFirst() }
    }

    /// Audio thread.
    func period(frames: Int) {
        let frames = min(frames, maxFrames)
        // Nobody heard the microphone until now: what waits is old. While the audio thread ran, the ring was read
        // every period and its newest three periods are the latest: they are kept, so a consumer added now starts
        // two periods behind the latest — a cushion that lets the microphone's reader be late by a period and more
        // (its periods and the audio thread's have phases of their own) without a gap in what is heard. After the
        // audio thread slept, the ring filled up and its reader dropped what came since: everything in it is old
        // (seconds, minutes), so all of it goes, and the cushion is two periods of silence instead.
        // (An overflow while consumers listened was a late audio thread, caught up below: seen, not stale.)
        let overflowed = microphone.map { $0.overflows != overflowsSeen } ?? false
        if let microphone { overflowsSeen = microphone.overflows }
        if count == 0, let microphone {
            if overflowed {
                microphone.discard(keeping: 0)
                primingPeriods = Self.cushionPeriods
            } else {
                microphone.discard(keeping: 3 * frames)
                primingPeriods = 0
            }
        }
        while let command = commands.pop() {
            switch command {
            case .add(let pointer):
                guard count < Self.capacity else { continue }
                slots[count] = pointer
                count += 1
            case .remove(let pointer):
                for index in 0..<count where slots[index] == pointer {
                    slots[index] = slots[count - 1]
                    slots[count - 1] = nil
                    count -= 1
                    break
                }
                // The control side holds a reference until this arrives; a full ring is retried next period.
                _ = releasedRing.push(pointer)
            }
        }
        consumers.store(count, ordering: .relaxed)
        deliver(frames: frames, mix: mix, catchingUp: false)
        guard count > 0 else {
            deliveredFrames = 0
            anchor = 0
            return
        }
        // Catching up. The audio thread was late — its device underran, the machine stalled — while the
        // microphone kept capturing: more than the cushion waits in its ring. Each waiting period is handed on now,
        // with silence for the mix that was never made, so recorders and calls receive frames at the microphone's
        // real rate and its clock, not the late audio thread's. Without a microphone the monotonic clock says how
        // many periods of silence are due. At most `catchUpLimit` a call: the rest in the next.
        var extra = 0
        if let microphone, microphone.available >= (Self.cushionPeriods + 3) * frames {
            // Beyond the cushion and two periods of its writer's jitter (a burst from a late feeder is not a
            // backlog); down to the cushion and one, so a burst after this leaves no gap.
            while extra < Self.catchUpLimit && microphone.available >= (Self.cushionPeriods + 2) * frames {
                deliver(frames: frames, mix: nil, catchingUp: true)
                extra += 1
            }
        } else if microphone == nil {
            let now = monotonicNanoseconds()
            if anchor == 0 {
                anchor = now
                deliveredFrames = frames
            }
            let due = Int((Double(now - anchor) / 1e9 * Double(sampleRate)).rounded(.down))
            while extra < Self.catchUpLimit && due - deliveredFrames >= (Self.cushionPeriods + 1) * frames {
                deliver(frames: frames, mix: nil, catchingUp: true)
                extra += 1
            }
            // Far behind (hushd was stopped): the rest is not handed on in bursts; time starts again from here.
            if due - deliveredFrames > sampleRate {
                anchor = now
                deliveredFrames = frames
            }
        }
        if extra > 0 { caughtUpPeriods.add(extra, ordering: .relaxed) }
    }

    /// Periods the router hands on after the one it is called for, while it waits for the late audio thread.
    public static let cushionPeriods = 2
    static let catchUpLimit = 16
    /// Periods handed on to catch up with the microphone's (or the clock's) real rate since start.
    public let caughtUpPeriods = Atomic<Int>(0)
    /// Audio thread: frames handed on since consumers came (without a microphone), and when that began.
    private var deliveredFrames = 0
    private var anchor = 0
    /// Audio thread: the microphone ring's overflow count at the last period.
    private var overflowsSeen = 0
    /// Audio thread: periods still to hand on as silence, not read, after a stale backlog was thrown away: the
    /// cushion the ring fills meanwhile (not underflows).
    private var primingPeriods = 0

    /// Audio thread: one period to every running consumer — the microphone's frames or silence — and the voice
    /// path's share.
    private func deliver(frames: Int, mix: UnsafePointer<Float>?, catchingUp: Bool) {
        var source: UnsafePointer<Float>?
        var channels = 2
        if let microphone {
            // Read every period, streams or not, so the microphone is always fresh. A whole period or none: when the
            // reader is later than the cushion, this period is silence and what did come waits for the next one, so
            // nothing is lost and the cushion is back (the underflow is counted).
            channels = microphone.channels
            var got = 0
            if primingPeriods > 0 && !catchingUp {
                primingPeriods -= 1
            } else {
                got = microphone.available >= frames ? microphone.read(into: scratch, frames: frames) : 0
                // A gap in what consumers hear (nobody hears one while none listens).
                if got < frames && !catchingUp && count > 0 { microphone.countUnderflow(frames) }
            }
            (scratch + got * channels).update(repeating: 0, count: (frames - got) * channels)
            // Read and thrown away while muted, so the microphone stays fresh for when the switch opens.
            if !muted.load(ordering: .relaxed) { source = UnsafePointer(scratch) }
        }
        deliveredFrames += frames
        guard count > 0 || voicePath != nil else { return }
        // The voice path takes the same frames (silence while muted) and gives back the processed ones; while
        // muted its streams get silence too, whatever the canceller makes of it.
        var voice = voicePath?.period(
            mix: mix,
            mixChannels: mixChannels,
            source: source,
            channels: channels,
            frames: frames
        )
        if muted.load(ordering: .relaxed) { voice = nil }
        for index in 0..<count {
            guard let pointer = slots[index] else { continue }
            Unmanaged<CaptureConsumer>.fromOpaque(pointer)._withUnsafeGuaranteedRef { stream in
                guard stream.running.load(ordering: .relaxed) else { return }
                if voicePath != nil && stream.voice.load(ordering: .relaxed) {
                    stream.deliver(voice?.samples, channels: voice?.channels ?? 1, frames: frames)
                } else {
                    stream.deliver(source, channels: channels, frames: frames)
                }
            }
        }
    }
}

/// Several capture devices, each with its router (a scenario that relays two inputs), behind the audio thread's
/// one period hook: each router runs in turn after the period's mix.
public final class CaptureRouters: @unchecked Sendable {
    public let routers: [CaptureRouter]
    private let pointers: UnsafeMutableBufferPointer<UnsafeMutableRawPointer>

    public init(_ routers: [CaptureRouter]) {
        self.routers = routers
        pointers = .allocate(capacity: routers.count)
        for (index, router) in routers.enumerated() {
            pointers[index] = Unmanaged.passUnretained(router).toOpaque()
        }
    }

    deinit { pointers.deallocate() }

    /// The hook the audio thread calls after each period's mix; this object must outlive the thread's use of it.
    public var hook: PeriodHook {
        PeriodHook(
            context: Unmanaged.passUnretained(self).toOpaque(),
            call: { context, frames in
                Unmanaged<CaptureRouters>.fromOpaque(context)._withUnsafeGuaranteedRef { group in
                    for pointer in group.pointers {
                        Unmanaged<CaptureRouter>.fromOpaque(pointer)._withUnsafeGuaranteedRef {
                            $0.period(frames: frames)
                        }
                    }
                }
            },
            wantsPeriods: { context in
                Unmanaged<CaptureRouters>.fromOpaque(context)._withUnsafeGuaranteedRef { group in
                    group.pointers.contains { pointer in
                        Unmanaged<CaptureRouter>.fromOpaque(pointer)._withUnsafeGuaranteedRef { $0.wantsPeriods }
                    }
                }
            }
        )
    }
}
