import HushAudioFile
import HushCore
import HushMixer
import HushPolicy

#if canImport(Glibc)
import Glibc
#endif

/// The policy and the mixer together: events go to the policy, its decisions to the mixer, and the sounds that
/// sessions play are loaded (clips), streamed (long files) or generated (tones) and attached to their voices.
///
/// This is the controller the daemon runs on a real clock. Everyone who changes what is heard goes through
/// ``handle(_:at:cause:)``: buttons, the jack, the console, control clients, ALSA mixer controls.
///
/// - Important: use from one thread (the daemon's loop). The mixer's real-time side runs elsewhere and is reached
///   only through the engine's rings.
package final class AudioController {
    /// What a session plays.
    public enum Sound: Hashable, Sendable, CustomStringConvertible {
        /// A file: held in memory up to ``clipSeconds``, streamed from disk beyond.
        case file(String)
        /// A file streamed from disk whatever its length.
        case stream(String)
        /// A sine tone at half scale, looped seamlessly (test tones, the console's `play tone`).
        case tone(Double)

        package var description: String {
            switch self {
            case .file(let path), .stream(let path): path
            case .tone(let hertz): "a \(hertz.formatted) Hz tone"
            }
        }
    }

    /// Why a sound could not be played: the file and the reason, or the session.
    package struct SoundError: Error, Hashable, Sendable, CustomStringConvertible {
        package var description: String
    }

    package private(set) var policy: AudioPolicy
    package let engine: MixerEngine
    package let mixer: MixerController
    /// Directories play requests may read from (their real paths); nil allows any path (offline renders).
    package let soundDirectories: [String]?
    /// Files longer than this are streamed from disk instead of held in memory.
    package var clipSeconds = 30.0
    /// Called with every batch of decisions, the event that caused them, and when.
    package var onDecisions: ([Decision], _ cause: String, _ time: Instant) -> Void = { _, _, _ in }
    /// Called when a session's sound played to its end (before the policy hears of it).
    package var onFinished: (SessionID) -> Void = { _ in }

    private var clips: [Sound: AudioBuffer] = [:]
    private var streams: [SessionID: Stream] = [:]
    private var retiring: [FileStreamer] = []

    private struct Stream {
        var streamer: FileStreamer
        var bus: Bus
        var path: String
        var loop: Bool
        var rewind = false
    }

    package init(
        configuration: PolicyConfiguration,
        persisted: PersistedVolumes?,
        format: MixerFormat,
        soundDirectories: [String]?
    ) {
        policy = AudioPolicy(configuration: configuration, persisted: persisted)
        engine = MixerEngine(format: format)
        mixer = MixerController(engine: engine)
        self.soundDirectories = soundDirectories?.map { Self.realPath($0) ?? $0 }
    }

    /// Applies the start-up decisions (volumes, bus gains, route).
    @discardableResult
    package func start(at time: Instant) -> [Decision] {
        let made = policy.start(at: time)
        apply(made, cause: "start-up", at: time)
        return made
    }

    /// Called after the policy decided and before its commands reach the engine: the daemon rules the output's
    /// period there (R24), so that a session's first frame is mixed in the period it needs.
    package var beforeCommands: () -> Void = {}

    /// Hands `event` to the policy and carries out its decisions.
    @discardableResult
    package func handle(_ event: PolicyEvent, at time: Instant, cause: String? = nil) -> [Decision] {
        let made = policy.handle(event, at: time)
        apply(made, cause: cause ?? event.description, at: time)
        return made
    }

    /// When ``service(at:)`` must run even if nothing else happens (a held button's next repeat).
    package var nextDeadline: Instant? { policy.nextDeadline }

    /// Lets time pass: held-button repeats, voices that finished, streams kept decoded ahead.
    package func service(at now: Instant) {
        while let deadline = policy.nextDeadline, deadline <= now {
            handle(.timePassed, at: deadline, cause: "time passed")
        }
        for session in mixer.poll() {
            onFinished(session)
            handle(.finished(session), at: now)
        }
        for (id, stream) in streams.sorted(by: { $0.key < $1.key }) {
            stream.streamer.topUp()
            if stream.streamer.finished, policy.session(id)?.isPlaying == true {
                mixer.apply(.stop(id))
                streams[id]?.rewind = true
                onFinished(id)
                handle(.finished(id), at: now)
            }
        }
        retiring.removeAll { mixer.isReleased($0.ring) }
    }

    /// Gives `session` its sound, replacing any it had. The sound starts paused (play it with `.play`), unless the
    /// session is playing already: then the new sound replaces the old at once, at the session's gain, because the
    /// policy answers a second `.play` with "already playing" and no command.
    package func attach(_ sound: Sound, to session: SessionID, loop: Bool) throws(SoundError) {
        try attachSound(sound, to: session, loop: loop)
        continueIfPlaying(session)
    }

    /// A playing session's new sound starts where the policy left the session: playing, at its gain.
    private func continueIfPlaying(_ session: SessionID) {
        if policy.session(session)?.isPlaying == true { mixer.apply(.resume(session)) }
    }

    private func attachSound(_ sound: Sound, to session: SessionID, loop: Bool) throws(SoundError) {
        guard let record = policy.session(session) else {
            throw SoundError(description: "there is no \(session)")
        }
        let bus = record.configuration.bus
        detachSound(of: session)
        switch sound {
        case .tone(let hertz):
            guard hertz >= 20, hertz <= Double(engine.format.sampleRate) / 2 else {
                throw SoundError(
                    description: "a tone must be from 20 Hz to \(engine.format.sampleRate / 2) Hz, not \(hertz)"
                )
            }
            try attachClip(sound, to: session, bus: bus, loop: loop) {
                ToneGenerator.sine(
                    frequency: hertz,
                    amplitude: 0.5,
                    seconds: 1,
                    sampleRate: engine.format.sampleRate,
                    loopable: true
                )
            }
        case .file(let requested), .stream(let requested):
            let path = try permitted(requested)
            var seconds = Double.infinity
            if case .file = sound {
                do {
                    seconds = try SoundFile.duration(of: path)
                } catch {
                    throw SoundError(description: error.description)
                }
            }
            if seconds <= clipSeconds {
                try attachClip(sound, to: session, bus: bus, loop: loop) { () throws(SoundError) in
                    do {
                        return try SoundFile.load(path, sampleRate: engine.format.sampleRate)
                    } catch let error as SoundFileError {
                        throw SoundError(description: error.description)
                    } catch {
                        throw SoundError(description: "cannot use sound file '\(path)': \(error)")
                    }
                }
            } else {
                do {
                    let streamer = try FileStreamer(path, sampleRate: engine.format.sampleRate, loop: loop)
                    try mixer.attach(session, bus: bus, ring: streamer.ring)
                    streams[session] = Stream(streamer: streamer, bus: bus, path: path, loop: loop)
                } catch let error as SoundFileError {
                    throw SoundError(description: error.description)
                } catch {
                    throw SoundError(description: "cannot play \(path): \(error)")
                }
            }
        }
    }

    /// Attaches a live source (a capture feeder's ring) to `session`.
    package func attach(ring: SampleRing, to session: SessionID) throws(SoundError) {
        guard let record = policy.session(session) else { throw SoundError(description: "there is no \(session)") }
        detachSound(of: session)
        do {
            try mixer.attach(session, bus: record.configuration.bus, ring: ring)
        } catch {
            throw SoundError(description: error.description)
        }
        continueIfPlaying(session)
    }

    /// Attaches an application's stream (the `hush` ALSA device) to `session`: a voice the engine pulls frames from.
    /// The caller keeps the pull's context alive until `mixer.isReleased(pull:)`.
    package func attach(pull: VoicePull, to session: SessionID) throws(SoundError) {
        guard let record = policy.session(session) else { throw SoundError(description: "there is no \(session)") }
        detachSound(of: session)
        do {
            try mixer.attach(session, bus: record.configuration.bus, pull: pull)
        } catch {
            throw SoundError(description: error.description)
        }
        continueIfPlaying(session)
    }

    /// Takes the sound away from a session that stays (an application closed the stream it attached to a session
    /// of its own); its gain stays.
    package func removeSound(of session: SessionID) { detachSound(of: session) }

    /// The sessions that have a sound.
    package var sessionsWithSound: [SessionID] { mixer.attachedSessions }

    /// The sessions whose sound hushd must look after while it plays: streamed files to top up, clips whose end
    /// to report. An application's stream needs nothing of the loop while it plays.
    package var sessionsWithOwnSound: [SessionID] { mixer.sessionsWithOwnSound }

    /// Clips held in memory, for status: how many and how many bytes.
    package var clipMemory: (count: Int, bytes: Int) {
        (clips.count, clips.values.reduce(0) { $0 + $1.frameCount * $1.channels * MemoryLayout<Float>.size })
    }

    private func attachClip(
        _ sound: Sound,
        to session: SessionID,
        bus: Bus,
        loop: Bool,
        load: () throws(SoundError) -> AudioBuffer
    ) throws(SoundError) {
        let buffer: AudioBuffer
        if let cached = clips[sound] {
            buffer = cached
        } else {
            buffer = try load()
            // A small cache: ringtones and effects repeat; a device plays a handful of them.
            if clips.count >= 32 { clips.removeAll() }
            clips[sound] = buffer
        }
        do {
            try mixer.attach(session, bus: bus, buffer: buffer, loop: loop)
        } catch {
            throw SoundError(description: error.description)
        }
    }

    /// Drops the session's sound. A session that stays (a new sound replaces the old) keeps the gain the policy
    /// gave it — silenced, ducked — so the new sound starts at it; a session that is gone is forgotten.
    private func detachSound(of session: SessionID, sessionGone: Bool = false) {
        if sessionGone {
            mixer.detach(session)
        } else {
            guard mixer.attachedSessions.contains(session) else { return }
            mixer.releaseSlot(of: session)
        }
        if let stream = streams.removeValue(forKey: session) { retiring.append(stream.streamer) }
    }

    /// The real path of `requested` when it is a regular file inside a sound directory; an error naming both
    /// otherwise.
    private func permitted(_ requested: String) throws(SoundError) -> String {
        guard let directories = soundDirectories else { return requested }
        func inside(_ path: String) -> Bool {
            directories.contains { path.hasPrefix($0.hasSuffix("/") ? $0 : $0 + "/") }
        }
        let outside = SoundError(
            description: "cannot use sound file '\(requested)': it is outside the sound directories ("
                + directories.joined(separator: ", ") + "); see [sounds] directories in the configuration"
        )
        guard let real = Self.realPath(requested) else {
            let reason = String(cString: strerror(errno))
            // A path that does not resolve is "outside" unless it names a place inside: a client must not learn
            // which files exist elsewhere on the machine from the difference between the two answers.
            guard inside(requested), !requested.split(separator: "/").contains("..") else { throw outside }
            throw SoundError(description: "cannot use sound file '\(requested)': \(reason)")
        }
        guard inside(real) else { throw outside }
        // A FIFO or a device would block hushd's loop in open() or read() for as long as no one writes to it.
        var info = stat()
        guard stat(real, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            throw SoundError(
                description: "cannot use sound file '\(requested)': it is not a regular file (a directory, FIFO or "
                    + "device); sound files must be ordinary files"
            )
        }
        return real
    }

    static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    private func apply(_ made: [Decision], cause: String, at time: Instant) {
        beforeCommands()
        for decision in made {
            switch decision.command {
            case .stop(let id) where streams[id] != nil:
                streams[id]?.rewind = true
            case .resume(let id) where streams[id]?.rewind == true:
                // A stopped stream starts again from the top: a fresh decoder and ring (the old voice is silent).
                if let stream = streams[id] {
                    retiring.append(stream.streamer)
                    if let fresh = try? FileStreamer(
                        stream.path,
                        sampleRate: engine.format.sampleRate,
                        loop: stream.loop
                    ),
                        (try? mixer.attach(id, bus: stream.bus, ring: fresh.ring)) != nil
                    {
                        streams[id] = Stream(streamer: fresh, bus: stream.bus, path: stream.path, loop: stream.loop)
                    }
                }
            default:
                break
            }
            mixer.apply(decision.command)
        }
        // Sessions the policy no longer knows (deactivated, their client gone) give their voices back.
        for session in mixer.knownSessions where policy.session(session) == nil {
            detachSound(of: session, sessionGone: true)
        }
        if !made.isEmpty { onDecisions(made, cause, time) }
    }
}

extension Double {
    /// "440" for whole numbers, "440.5" otherwise.
    var formatted: String { self == rounded() ? String(Int(self)) : String(self) }
}
