import HushControlServer
import HushCore
import HushMixer
import HushOutput
import HushPolicy
import HushProtocol
import HushStreams

#if canImport(Glibc)
import Glibc
#endif

/// Applications' streams through the `hush` ALSA device, on the daemon's side: each stream is a session (or part
/// of one), a voice on its bus or a listener of the microphone, and the policy's decisions become what the
/// application sees (docs/policy.md, "What an application sees").
///
/// **Sessions of streams.** A stream that names no session gets one of its own, activated with the stream's
/// category, bus and options — unless the same process already has a stream of the other direction with the same
/// category, bus, options and name: then both are one session (a SIP phone's playback and capture are one call,
/// not two calls interrupting each other). Such a session belongs to no connection but to its streams; it ends,
/// as by R10, when its last stream closes or its process dies. A stream that names a session (`SESSION=`) joins
/// it and never ends it.
final class StreamHub {

    struct Limits {
        var maxStreams = 32
        var maxStreamsPerProcess = 8
        var ringKiBMax = 512
    }

    /// One open stream.
    final class Entry {
        let id: StreamID
        let peer: ControlClient
        let name: String
        let session: SessionID
        let configuration: SessionConfiguration
        let memory: StreamMemory
        let playback: PlaybackStream?
        let capture: CaptureStream?
        /// The session the stream's own group activated (nil when it joined a session by id).
        let group: Group?
        /// Started by the application and not stopped since.
        var started = false
        var reportedViolations = 0

        init(
            id: StreamID,
            peer: ControlClient,
            name: String,
            session: SessionID,
            configuration: SessionConfiguration,
            memory: StreamMemory,
            playback: PlaybackStream?,
            capture: CaptureStream?,
            group: Group?
        ) {
            self.id = id
            self.peer = peer
            self.name = name
            self.session = session
            self.configuration = configuration
            self.memory = memory
            self.playback = playback
            self.capture = capture
            self.group = group
        }

        var direction: StreamDirection { memory.geometry.direction }
        var violations: Int {
            (playback?.violations.load(ordering: .relaxed) ?? 0) + (capture?.violations.load(ordering: .relaxed) ?? 0)
        }
        var hearsMicrophone: Bool { capture?.hearing.load(ordering: .relaxed) ?? false }
    }

    /// The streams of one process that share a session.
    final class Group {
        let client: ClientID
        let pid: Int32
        let name: String
        let configuration: SessionConfiguration
        let session: SessionID
        var streams: Set<StreamID> = []

        init(client: ClientID, pid: Int32, name: String, configuration: SessionConfiguration, session: SessionID) {
            self.client = client
            self.pid = pid
            self.name = name
            self.configuration = configuration
            self.session = session
        }
    }

    unowned let daemon: Daemon
    let limits: Limits
    let router: CaptureRouter
    private(set) var entries: [StreamID: Entry] = [:]
    private var groups: [ClientID: Group] = [:]
    /// Playback streams closed but perhaps still read by the audio thread.
    private var retiring: [PlaybackStream] = []
    private var nextStream: UInt64 = 1
    /// Stream groups' sessions belong to client ids of their own, from the control server's sequence, so no
    /// connection ever has one.
    var newClientID: () -> ClientID = {
        preconditionFailure("StreamHub.newClientID is set by the control socket's participant")
    }
    /// Whether any stream hears the microphone (the microphone light).
    private(set) var microphoneInUse = false
    var onMicrophoneChanged: (Bool) -> Void = { _ in }

    init(daemon: Daemon, limits: Limits) {
        self.daemon = daemon
        self.limits = limits
        router = daemon.captureRouter
        daemon.decisionSinks.append { [unowned self] _ in refresh() }
    }

    /// Whether `client` is a stream group's (so the control socket's status can say whose it is).
    func group(of client: ClientID) -> Group? { groups[client] }

    // MARK: Requests

    func open(_ request: StreamRequest, for peer: ControlClient) throws(ControlError) -> Entry {
        guard entries.count < limits.maxStreams else {
            throw ControlError(
                .tooManyStreams,
                "hushd has \(entries.count) streams open, the most [streams] max_streams allows; close one"
            )
        }
        let mine = entries.values.filter { $0.peer.pid == peer.pid }.count
        guard mine < limits.maxStreamsPerProcess else {
            throw ControlError(
                .tooManyStreams,
                "process \(peer.pid) has \(mine) streams open, the most [streams] max_streams_per_process "
                    + "allows"
            )
        }
        if request.direction == .capture, !router.hasRoom {
            throw ControlError(
                .tooManyStreams,
                "hushd has \(CaptureRouter.capacity) capture streams open, the most it can feed; close one"
            )
        }
        let format = daemon.audio.engine.format
        let id = StreamID(nextStream)
        let geometry = StreamGeometry(
            id: id,
            direction: request.direction,
            format: request.format,
            channels: request.channels,
            rate: request.rate,
            ringFrames: request.bufferFrames,
            periodFrames: (daemon.output?.granted.periodFrames ?? format.maxFrames) * request.rate
                / format.sampleRate + 1
        )
        do {
            try geometry.validate(maxRingBytes: limits.ringKiBMax * 1024)
        } catch {
            throw ControlError(.cannotStream, error.description)
        }
        let name = request.name ?? "pid \(peer.pid)"
        // The session: named, shared with the process's stream of the other direction, or its own.
        let session: SessionID
        let configuration: SessionConfiguration
        var group: Group?
        var activated = false
        if let named = request.session {
            guard let record = daemon.audio.policy.session(named) else {
                throw ControlError(.unknownSession, "there is no \(named)", field: "session")
            }
            guard peer.uid == 0 || owner(of: record)?.uid == peer.uid else {
                throw ControlError(
                    .notPermitted,
                    "\(named) belongs to another user's connection",
                    field: "session"
                )
            }
            if request.direction == .playback,
                entries.values.contains(where: { $0.session == named && $0.direction == .playback })
            {
                throw ControlError(
                    .cannotStream,
                    "\(named) already plays a stream; a session plays one stream at a time",
                    field: "session"
                )
            }
            if request.direction == .capture, !record.configuration.category.records {
                throw ControlError(
                    .notPermitted,
                    "\(named) is \(record.configuration.category): only record and playAndRecord sessions "
                        + "hear the microphone",
                    field: "session"
                )
            }
            session = named
            configuration = record.configuration
        } else {
            configuration = request.sessionConfiguration
            if request.direction == .capture, !configuration.category.records {
                throw ControlError(
                    .notPermitted,
                    "a \(configuration.category) stream cannot record: use CATEGORY=record or playAndRecord",
                    field: "category"
                )
            }
            if let partner = groups.values.first(where: { candidate in
                candidate.pid == peer.pid && candidate.configuration == configuration && candidate.name == name
                    && !candidate.streams.contains { entries[$0]?.direction == request.direction }
            }) {
                group = partner
                session = partner.session
            } else {
                let client = newClientID()
                session = daemon.newSessionID()
                let made = daemon.handle(
                    .activate(session, client: client, configuration),
                    cause: "\(name) (pid \(peer.pid), uid \(peer.uid)) opens a \(request.direction) stream: "
                        + "\(configuration)"
                )
                if let rejection = made.compactMap({ decision -> Rejection? in
                    if case .reject(let rejection) = decision.command { return rejection }
                    return nil
                }).first {
                    throw ControlError(rejection)
                }
                group = Group(client: client, pid: peer.pid, name: name, configuration: configuration, session: session)
                groups[client] = group
                activated = true
            }
        }
        // Everything that can fail from here undoes the activation.
        func undo() {
            if activated, let group {
                groups[group.client] = nil
                daemon.handle(.clientGone(group.client), cause: "\(name)'s stream could not be set up")
            }
        }
        let memory: StreamMemory
        var playback: PlaybackStream?
        var capture: CaptureStream?
        do {
            memory = try StreamMemory(geometry)
            switch request.direction {
            case .playback:
                playback = try PlaybackStream(memory: memory, mixerRate: format.sampleRate, maxFrames: format.maxFrames)
            case .capture:
                capture = try CaptureStream(memory: memory, mixerRate: format.sampleRate, maxFrames: format.maxFrames)
            }
        } catch {
            undo()
            throw ControlError(.cannotStream, error.description)
        }
        if let playback {
            playback.outputQueueFrames.store(daemon.output?.queuedFrames ?? 0, ordering: .relaxed)
            do {
                try daemon.audio.attach(pull: playback.voice, to: session)
            } catch {
                undo()
                throw ControlError(.cannotStream, error.description)
            }
        }
        if let capture { router.add(capture) }
        nextStream += 1
        let entry = Entry(
            id: id,
            peer: peer,
            name: name,
            session: session,
            configuration: configuration,
            memory: memory,
            playback: playback,
            capture: capture,
            group: group
        )
        entries[id] = entry
        group?.streams.insert(id)
        let opened =
            "\(id) opened by \(name) (pid \(peer.pid), uid \(peer.uid)): \(request.direction) \(configuration), "
            + "\(request.rate) Hz, \(request.channels) ch, \(request.format), \(request.bufferFrames) frames, "
            + "\(session)"
        daemon.logger.info("\(opened)")
        refresh()
        return entry
    }

    /// Carries out an application's start, pause, resume, stop or prepare; returns the position a prepare
    /// continues from.
    func act(_ action: StreamAction, on id: StreamID, for peer: ControlClient) throws(ControlError) -> UInt64? {
        guard let entry = entries[id] else {
            throw ControlError(.unknownStream, "there is no \(id)", field: "stream")
        }
        guard entry.peer.id == peer.id else {
            throw ControlError(.notPermitted, "\(id) belongs to another connection", field: "stream")
        }
        let who = "\(entry.name) (pid \(entry.peer.pid))"
        var position: UInt64?
        switch action {
        case .start, .resume:
            entry.started = true
            // Starting is asking to be heard (or to hear): the policy decides (an interruption may hold it, R6/M4).
            // For a recorder after an interruption this is the re-activation R9 waits for.
            let state = daemon.audio.policy.session(entry.session)?.state
            if state != .playing {
                daemon.handle(.play(entry.session), cause: "\(who) \(action == .start ? "starts" : "resumes") \(id)")
            }
        case .pause:
            daemon.handle(.pause(entry.session), cause: "\(who) pauses \(id)")
        case .stop:
            entry.started = false
            if !sharesSession(entry) {
                daemon.handle(.stop(entry.session), cause: "\(who) stops \(id)")
            }
        case .prepare:
            entry.started = false
            position = entry.playback?.prepare() ?? entry.capture?.prepare()
        }
        refresh()
        return position
    }

    func close(_ id: StreamID, for peer: ControlClient) throws(ControlError) {
        guard let entry = entries[id], entry.peer.id == peer.id else {
            throw ControlError(.unknownStream, "there is no \(id) of this connection", field: "stream")
        }
        end(entry, reason: "closed by \(entry.name)")
    }

    /// A connection closed: its streams end (their sessions as by R10 when they were the last of them).
    func connectionClosed(_ client: ClientID) {
        for entry in entries.values.filter({ $0.peer.id == client }).sorted(by: { $0.id < $1.id }) {
            end(entry, reason: "\(entry.name) (pid \(entry.peer.pid)) disconnected")
        }
    }

    /// hushd stops: every client is told the stream is over, so it fails with -ENODEV at once.
    func closeAll() {
        for entry in entries.values { entry.memory.setState(.closed) }
    }

    private func end(_ entry: Entry, reason: String) {
        entries[entry.id] = nil
        entry.memory.setState(.closed)
        if let capture = entry.capture { router.remove(capture) }
        if let playback = entry.playback { retiring.append(playback) }
        var figures = ""
        if let playback = entry.playback {
            let underruns = playback.underruns.load(ordering: .relaxed)
            figures = "; \(underruns) underrun\(underruns == 1 ? "" : "s")"
            if underruns > 0 {
                figures += " (\(playback.underrunFrames.load(ordering: .relaxed)) frames: the client was late)"
            }
        }
        if let capture = entry.capture, capture.overrunFrames.load(ordering: .relaxed) > 0 {
            figures =
                "; \(capture.overrunFrames.load(ordering: .relaxed)) frames dropped (the client did not read them)"
        }
        daemon.logger.info("\(entry.id) of \(entry.name) (pid \(entry.peer.pid)) ended: \(reason)\(figures)")
        if let group = entry.group {
            group.streams.remove(entry.id)
            if group.streams.isEmpty {
                groups[group.client] = nil
                daemon.handle(.clientGone(group.client), cause: "\(entry.id) of \(entry.name) ended (\(reason))")
            } else if entry.playback != nil {
                daemon.audio.removeSound(of: entry.session)
            }
        } else if entry.playback != nil {
            daemon.audio.removeSound(of: entry.session)
        }
        refresh()
    }

    private func sharesSession(_ entry: Entry) -> Bool {
        entries.values.contains { $0.id != entry.id && $0.session == entry.session && $0.started }
    }

    private func owner(of record: SessionRecord) -> ControlClient? {
        entries.values.first { $0.peer.id == record.client }?.peer ?? peerLookup(record.client)
    }

    /// Who a connection is (set by the control socket's participant).
    var peerLookup: (ClientID) -> ControlClient? = { _ in nil }

    // MARK: Decisions become states

    /// Brings every stream's state, silence flag and microphone gate up to date with the policy.
    func refresh() {
        let policy = daemon.audio.policy
        var anyHears = false
        for entry in entries.values {
            guard let record = policy.session(entry.session) else {
                entry.memory.setState(.closed)
                entry.capture?.allowed.store(false, ordering: .relaxed)
                continue
            }
            let state: StreamMemory.State
            switch record.state {
            case .playing: state = entry.started ? .running : .prepared
            case .paused(.user): state = .paused
            case .paused: state = .held
            case .idle, .stopped: state = entry.started ? .held : .prepared
            }
            if entry.memory.state != state { entry.memory.setState(state) }
            entry.playback?.counting.store(state == .running, ordering: .relaxed)
            entry.memory.setFlag(
                StreamMemory.silencedFlag,
                record.configuration.category.isSilencedBySwitch && policy.silenceSwitch == .silent
            )
            if let capture = entry.capture {
                // The microphone: only while the session plays — active, not interrupted, and (after an
                // interruption) started again by the application (R9).
                let allowed = state == .running && router.microphone != nil
                capture.allowed.store(allowed, ordering: .relaxed)
                capture.running.store(entry.started, ordering: .relaxed)
                anyHears = anyHears || allowed
            }
        }
        if anyHears != microphoneInUse {
            microphoneInUse = anyHears
            let holders = microphoneHolders.map { "\($0.id) (\($0.name), pid \($0.peer.pid))" }
            let text =
                anyHears ? "microphone in use: \(holders.joined(separator: ", "))" : "microphone no longer in use"
            daemon.logger.notice("\(text)")
            onMicrophoneChanged(anyHears)
        }
    }

    /// Lets go of what the audio thread released, and says once which streams' clients break the rules.
    func service() {
        router.reap()
        retiring.removeAll { daemon.audio.mixer.isReleased(pull: Unmanaged.passUnretained($0).toOpaque()) }
        let queue = daemon.output?.queuedFrames ?? 0
        for entry in entries.values {
            entry.playback?.outputQueueFrames.store(queue, ordering: .relaxed)
            let violations = entry.violations
            if violations > 0 && entry.reportedViolations == 0 {
                let text =
                    "\(entry.id) of \(entry.name) (pid \(entry.peer.pid), uid \(entry.peer.uid)) wrote impossible "
                    + "ring counters; hushd ignores them, and only this stream suffers"
                daemon.logger.warning("\(text)")
            }
            entry.reportedViolations = violations
        }
    }

    /// Who holds the microphone now.
    var microphoneHolders: [Entry] {
        entries.values.filter { $0.capture?.allowed.load(ordering: .relaxed) == true }.sorted { $0.id < $1.id }
    }
}
