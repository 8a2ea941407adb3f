import HushCore

/// The control side of the mixer: turns the policy's commands (per session, ramps in time) into engine commands
/// (per voice slot, ramps in frames), keeps each sound's buffer alive while the engine reads it, and turns the
/// engine's reports back into session terms.
///
/// - Important: use from one thread (the daemon's main loop, or `hush-render`'s loop).
public final class MixerController {
    /// Why a sound could not be attached.
    public struct AttachError: Error, Hashable, Sendable, CustomStringConvertible {
        public var description: String
    }

    public let engine: MixerEngine
    /// How long a pause fades out: short enough that an unplug's pause ends inside one period (R5).
    public var pauseFade: Duration = .milliseconds(1)
    /// How long a resume fades in, and a stop fades out.
    public var resumeFade: Duration = .milliseconds(5)

    private var slots: [SessionID: Int32] = [:]
    private var buffers: [Int32: AudioBuffer] = [:]
    private var rings: [Int32: SampleRing] = [:]
    private var pulls: [Int32: UnsafeMutableRawPointer] = [:]
    private var releasing: Set<Int32> = []
    private var gains: [SessionID: Gain] = [:]
    private var pending: [MixerCommand] = []
    /// The loudest sample per bus in the latest report.
    public private(set) var peaks: [Bus: Float] = [:]
    /// Called with every peaks report as ``poll()`` reads it (`hush-render --plot` records them).
    public var onPeaks: ([Bus: Float]) -> Void = { _ in }

    public init(engine: MixerEngine) { self.engine = engine }

    /// Every session the controller holds something for: a voice, or a gain set before its sound came.
    public var knownSessions: Set<SessionID> { Set(slots.keys).union(gains.keys) }

    /// The sessions that have a sound attached.
    public var attachedSessions: [SessionID] { slots.keys.sorted() }

    /// The sessions whose sound is hushd's own — a clip that ends, a file streamed through a ring that needs
    /// topping up — and not an application's stream, which the application feeds and ends.
    public var sessionsWithOwnSound: [SessionID] {
        slots.filter { pulls[$0.value] == nil }.keys.sorted()
    }

    /// Gives `session` a sound on `bus`, paused at its start, at the gain the policy last set for it.
    public func attach(_ session: SessionID, bus: Bus, buffer: AudioBuffer, loop: Bool) throws(AttachError) {
        let format = engine.format
        guard buffer.sampleRate == format.sampleRate else {
            throw AttachError(
                description: "the sound is at \(buffer.sampleRate) Hz, the mixer runs at \(format.sampleRate) Hz"
            )
        }
        guard buffer.channels == 1 || buffer.channels == 2 else {
            throw AttachError(description: "the sound has \(buffer.channels) channels; hush plays mono or stereo")
        }
        let slot = try claimSlot(for: session)
        buffers[slot] = buffer
        send(
            .attach(
                voice: slot,
                bus: bus.index,
                source: VoiceSource(buffer),
                loop: loop,
                gain: (gains[session] ?? .unity).linear
            )
        )
    }

    /// Gives `session` a live or streamed source on `bus`: frames arrive through `ring` at the mixer's rate.
    /// The caller keeps feeding the ring and frees it after ``detach(_:)`` once ``isReleased(_:)`` says so.
    public func attach(_ session: SessionID, bus: Bus, ring: SampleRing) throws(AttachError) {
        guard ring.channels == 1 || ring.channels == 2 else {
            throw AttachError(description: "the source has \(ring.channels) channels; hush plays mono or stereo")
        }
        let slot = try claimSlot(for: session)
        rings[slot] = ring
        send(
            .attach(
                voice: slot,
                bus: bus.index,
                source: VoiceSource(ring),
                loop: false,
                gain: (gains[session] ?? .unity).linear
            )
        )
    }

    /// Gives `session` a source the engine pulls frames from (an application's stream). The caller keeps the
    /// pull's context alive until ``isReleased(pull:)`` says no voice calls it any more.
    public func attach(_ session: SessionID, bus: Bus, pull: VoicePull) throws(AttachError) {
        let slot = try claimSlot(for: session)
        pulls[slot] = pull.context
        send(
            .attach(
                voice: slot,
                bus: bus.index,
                source: VoiceSource(pull),
                loop: false,
                gain: (gains[session] ?? .unity).linear
            )
        )
    }

    /// Whether no voice calls the pull with this context any more (so the context may be freed).
    public func isReleased(pull context: UnsafeMutableRawPointer) -> Bool {
        !pulls.values.contains(context)
    }

    /// Whether no voice reads `ring` any more (so it may be freed).
    public func isReleased(_ ring: SampleRing) -> Bool {
        !rings.values.contains { $0.storage == ring.storage }
    }

    /// Frees whatever `session` had and gives it a voice slot no one uses or is releasing. The session's gain stays:
    /// the policy set it at activation (silenced under the switch, ducked), before any sound was attached.
    private func claimSlot(for session: SessionID) throws(AttachError) -> Int32 {
        releaseSlot(of: session)
        let used = Set(slots.values).union(releasing)
        guard let slot = (0..<Int32(engine.voiceCount)).first(where: { !used.contains($0) }) else {
            throw AttachError(description: "all \(engine.voiceCount) voices are in use")
        }
        slots[session] = slot
        return slot
    }

    /// Takes `session`'s sound away; its buffer is freed once the engine confirms.
    public func detach(_ session: SessionID) {
        gains[session] = nil
        releaseSlot(of: session)
    }

    /// Takes `session`'s sound away but keeps its gain, for a session that stays and gets another sound.
    public func releaseSlot(of session: SessionID) {
        guard let slot = slots.removeValue(forKey: session) else { return }
        releasing.insert(slot)
        send(.release(voice: slot))
    }

    /// Carries out one of the policy's commands; those that are not the mixer's business are ignored.
    public func apply(_ command: Command) {
        let format = engine.format
        switch command {
        case .setSessionGain(let session, let gain, let ramp):
            gains[session] = gain
            guard let slot = slots[session] else { return }
            send(.setVoiceGain(voice: slot, gain: gain.linear, rampFrames: format.frames(ramp)))
        case .setBusGain(let bus, let gain, let ramp):
            send(.setBusGain(bus: bus.index, gain: gain.linear, rampFrames: format.frames(ramp)))
        case .resume(let session):
            guard let slot = slots[session] else { return }
            send(.play(voice: slot, fadeFrames: format.frames(resumeFade)))
        case .pause(let session):
            guard let slot = slots[session] else { return }
            send(.pause(voice: slot, fadeFrames: format.frames(pauseFade)))
        case .stop(let session):
            guard let slot = slots[session] else { return }
            send(.stop(voice: slot, fadeFrames: format.frames(resumeFade)))
        case .selectRoute, .setAlertLight, .muteMicrophone, .playWarningSound, .notify, .persist, .reject, .note:
            break
        }
    }

    /// Asks the engine for the buses' peaks every `interval` (rounded up to whole periods), starting now.
    public func reportPeaks(every interval: Duration) {
        send(.setPeakInterval(frames: max(1, engine.format.frames(interval))))
    }

    /// Sends what the command ring could not take before, and reads the engine's reports: returns the sessions
    /// whose sound came to its end.
    public func poll() -> [SessionID] {
        flush()
        var finished: [SessionID] = []
        while let report = engine.telemetry.pop() {
            switch report {
            case .finished(let voice):
                if let session = slots.first(where: { $0.value == voice })?.key { finished.append(session) }
            case .released(let voice):
                releasing.remove(voice)
                buffers[voice] = nil
                rings[voice] = nil
                pulls[voice] = nil
            case .peaks(let effect, let music, let ringer):
                peaks = [.effect: effect, .music: music, .ringer: ringer]
                onPeaks(peaks)
            }
        }
        return finished.sorted()
    }

    private func send(_ command: MixerCommand) {
        flush()
        if !pending.isEmpty || !engine.commands.push(command) { pending.append(command) }
    }

    private func flush() {
        while let first = pending.first, engine.commands.push(first) { pending.removeFirst() }
    }
}
