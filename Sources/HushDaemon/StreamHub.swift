import HushControlServer
import HushCore
import HushMixer
import HushOutput
import HushPolicy
import HushProtocol
import HushStreams
import HushVoice
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// What the stream hub needs of the rest of hushd: the policy to read and to hand events to, the mixer to attach
/// voices to, the output's timing and fresh session ids. ``Daemon`` is the one in hushd.
protocol StreamHost: AnyObject {
    var policy: AudioPolicy { get }
    var mixerFormat: MixerFormat { get }
    /// The output's longest period (R24's ceiling), when there is an output.
    var outputPeriodFrames: Int? { get }
    /// The output's period in force and queue, which a playback stream's delay counts (the audio thread's).
    var outputPace: OutputPace { get }
    /// The streams opened or closed: the period may change (R24), before any frame of a new stream is mixed.
    func streamsChanged()
    /// The voice path's echo delay, ms (``Daemon/voiceDelayMilliseconds``).
    var voiceDelayMilliseconds: Int { get }
    /// Hands the microphone (or silence) to capture streams on the audio thread.
    var captureRouter: CaptureRouter { get }
    var logger: Logger { get }
    @discardableResult func handle(_ event: PolicyEvent, cause: String?) -> [Decision]
    func newSessionID() -> SessionID
    func attach(pull: VoicePull, to session: SessionID) throws(AudioController.SoundError)
    func removeSound(of session: SessionID)
    /// Whether the audio thread let go of a voice pulled from `context`.
    func isReleased(pull context: UnsafeMutableRawPointer) -> Bool
}

/// Applications' streams through the `hush` ALSA device, on the daemon's side: the mechanism. Each stream is a
/// memfd with the wire header and ring, a voice on its bus or a listener of the microphone; which session it is
/// part of, what its start and stop ask of the policy, what state it shows and whether it hears the microphone are
/// the policy's rules R17–R20 (``StreamPolicy``, docs/policy.md, "What an application sees"), which this carries
/// out.
final class StreamHub {
    struct Limits {
        var maxStreams = 32
        var maxStreamsPerProcess = 8
        var ringKiBMax = 512
    }

    /// One open stream: what the policy knows of it (``StreamPolicy/Stream``, as it opened) and its mechanism.
    final class Entry {
        let opened: StreamPolicy.Stream
        let peer: ControlClient
        let memory: StreamMemory
        /// The voice the engine pulls (playback), or what the capture router feeds (capture).
        let playback: PlaybackStream?
        let capture: CaptureStream?
        var reportedViolations = 0
        /// Underruns (playback) or overruns (capture) when the application last prepared the stream, and when a
        /// recovery was last logged (R23).
        var lateAtPrepare = 0
        var recoveryLogged: ContinuousClock.Instant?
        /// The application's own period, when it chose one (frames at its rate): R24 mixes no longer periods.
        var clientPeriodFrames: Int?

        init(
            _ opened: StreamPolicy.Stream,
            peer: ControlClient,
            memory: StreamMemory,
            playback: PlaybackStream?,
            capture: CaptureStream?
        ) {
            self.opened = opened
            self.peer = peer
            self.memory = memory
            self.playback = playback
            self.capture = capture
        }

        var id: StreamID { opened.id }
        var name: String { opened.name }
        /// Times it was late (R23): underruns for playback, overruns for capture.
        var late: Int {
            playback?.underruns.load(ordering: .relaxed) ?? capture?.overruns.load(ordering: .relaxed) ?? 0
        }
        var session: SessionID { opened.session }
        var configuration: SessionConfiguration { opened.configuration }
        var direction: StreamDirection { memory.geometry.direction }
        var violations: Int {
            (playback?.violations.load(ordering: .relaxed) ?? 0) + (capture?.violations.load(ordering: .relaxed) ?? 0)
        }
        var hearsMicrophone: Bool { capture?.hearing.load(ordering: .relaxed) ?? false }
    }

    private unowned let host: any StreamHost
    let limits: Limits
    private let router: CaptureRouter
    /// The stream rules' view of the streams (R17–R20).
    private(set) var rules = StreamPolicy()
    private(set) var entries: [StreamID: Entry] = [:]
    /// Playback streams closed but perhaps still read by the audio thread.
    private var retiring: [PlaybackStream] = []
    private var nextStream: UInt64 = 1
    /// A client id for a group of streams' session, from the control server's sequence, so no connection ever has
    /// one.
    private let reserveClientID: () -> ClientID
    /// Who a connection is.
    private let peer: (ClientID) -> ControlClient?
    /// Told when the microphone comes into use and when it no longer is (the microphone light).
    private let microphoneChanged: (Bool) -> Void
    /// Whether any stream hears the microphone (the microphone light).
    private(set) var microphoneInUse = false
    private var reportedVoiceFailure = false

    /// - Parameters:
    ///   - reserveClientID: a client id no connection has, for a group of streams' session.
    ///   - peer: who a connection is (the owner of a session a stream names).
    ///   - microphoneChanged: told when the microphone comes into use (R20) and when it no longer is.
    init(
        host: any StreamHost,
        limits: Limits,
        reserveClientID: @escaping () -> ClientID,
        peer: @escaping (ClientID) -> ControlClient?,
        microphoneChanged: @escaping (Bool) -> Void = { _ in }
    ) {
        self.host = host
        self.limits = limits
        self.reserveClientID = reserveClientID
        self.peer = peer
        self.microphoneChanged = microphoneChanged
        router = host.captureRouter
    }

    /// The name of the group of streams `client` stands for (so the control socket's status can say whose a
    /// session is), or nil when it is a connection's.
    func groupName(of client: ClientID) -> String? { rules.streams(of: client).first?.name }

    // MARK: Requests

    func open(_ request: StreamRequest, for peer: ControlClient) throws(ControlError) -> Entry {
        guard entries.count < limits.maxStreams else {
            throw ControlError(
                .tooManyStreams,
                "hushd has \(entries.count) streams open, the most [streams] max_streams allows; close one"
            )
        }
        let mine = rules.count(of: peer.pid)
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
        let format = host.mixerFormat
        let id = StreamID(nextStream)
        let geometry = StreamGeometry(
            id: id,
            direction: request.direction,
            format: request.format,
            channels: request.channels,
            rate: request.rate,
            ringFrames: request.bufferFrames,
            periodFrames: (host.outputPeriodFrames ?? format.maxFrames) * request.rate / format.sampleRate + 1
        )
        do {
            try geometry.validate(maxRingBytes: limits.ringKiBMax * 1024)
        } catch {
            throw ControlError(.cannotStream, error.description)
        }
        let name = request.name ?? "pid \(peer.pid)"
        // R17: the session it names, its partner's, or its own.
        let opening = StreamPolicy.Opening(
            process: peer.pid,
            user: peer.uid,
            name: name,
            direction: request.direction,
            configuration: request.sessionConfiguration,
            session: request.session,
            sessionOwner: request.session.flatMap { named in owner(of: named)?.uid }
        )
        let placement: Ruling<StreamPolicy.Placement>
        do {
            placement = try rules.place(opening, in: host.policy)
        } catch {
            throw ControlError(error)
        }
        let session: SessionID
        let configuration: SessionConfiguration
        var group: ClientID?
        var activated = false
        switch placement.value {
        case .join(let named, let joined):
            session = named
            configuration = joined
        case .share(let shared, let partners):
            session = shared
            configuration = request.sessionConfiguration
            group = partners
        case .activate(let wanted):
            let client = reserveClientID()
            session = host.newSessionID()
            configuration = wanted
            let made = host.handle(
                .activate(session, client: client, wanted),
                cause: "\(name) (pid \(peer.pid), uid \(peer.uid)) opens a \(request.direction) stream: "
                    + "\(wanted) [\(placement.rule)]"
            )
            if let rejection = made.compactMap({ decision -> Rejection? in
                if case .reject(let rejection) = decision.command { return rejection }
                return nil
            }).first {
                throw ControlError(rejection)
            }
            group = client
            activated = true
        }
        // Everything that can fail from here undoes the activation.
        func undo() {
            if activated, let group {
                host.handle(.clientGone(group), cause: "\(name)'s stream could not be set up")
            }
        }
        let memory: StreamMemory
        var playback: PlaybackStream?
        var capture: CaptureStream?
        do {
            memory = try StreamMemory(geometry)
            switch request.direction {
            case .playback:
                playback = try PlaybackStream(
                    memory: memory,
                    mixerRate: format.sampleRate,
                    maxFrames: format.maxFrames,
                    pace: host.outputPace
                )
            case .capture:
                capture = try CaptureStream(memory: memory, mixerRate: format.sampleRate, maxFrames: format.maxFrames)
            }
        } catch {
            undo()
            throw ControlError(.cannotStream, error.description)
        }
        if let playback {
            do {
                try host.attach(pull: playback.voice, to: session)
            } catch {
                undo()
                throw ControlError(.cannotStream, error.description)
            }
        }
        nextStream += 1
        let stream = StreamPolicy.Stream(
            id: id,
            process: peer.pid,
            name: name,
            direction: request.direction,
            session: session,
            configuration: configuration,
            group: group
        )
        let entry = Entry(stream, peer: peer, memory: memory, playback: playback, capture: capture)
        entry.clientPeriodFrames = request.periodFrames
        entries[id] = entry
        rules.opened(stream)
        let opened =
            "\(id) opened by \(name) (pid \(peer.pid), uid \(peer.uid)): \(request.direction) \(configuration), "
            + "\(request.rate) Hz, \(request.channels) ch, \(request.format), \(request.bufferFrames) frames, "
            + "\(session) [\(placement.rule)] \(placement.reason)"
        host.logger.info("\(opened)")
        host.streamsChanged()
        // After the period is ruled (R24: the floor, for a capture stream): the microphone's first periods for it
        // are short ones.
        if let capture { router.add(capture) }
        refresh()
        return entry
    }

    /// Carries out an application's start, pause, resume, stop or prepare (R18); returns the position a prepare
    /// continues from.
    func act(_ action: StreamAction, on id: StreamID, for peer: ControlClient) throws(ControlError) -> UInt64? {
        guard let entry = entries[id] else {
            throw ControlError(.unknownStream, "there is no \(id)", field: "stream")
        }
        guard entry.peer.id == peer.id else {
            throw ControlError(.notPermitted, "\(id) belongs to another connection", field: "stream")
        }
        let ruling = rules.transport(action, on: id, in: host.policy)
        if let event = ruling.value {
            host.handle(event, cause: "\(entry.name) (pid \(entry.peer.pid)) \(action.verb) \(id) [\(ruling.rule)]")
        }
        // The stream is no longer judged (R23) before the audio thread jumps to the prepared position: the empty ring
        // there is not an underrun.
        refresh()
        var position: UInt64?
        if action == .prepare {
            position = entry.playback?.prepare() ?? entry.capture?.prepare()
            recovered(entry)
        }
        return position
    }

    /// A prepare after lateness is the application's recovery from the xrun it was told of (R23): said in the log,
    /// at most every 10 s per stream (a program late every period must not flood it).
    private func recovered(_ entry: Entry) {
        let late = entry.late
        defer { entry.lateAtPrepare = late }
        guard late > entry.lateAtPrepare else { return }
        let now = ContinuousClock.now
        if let logged = entry.recoveryLogged, now - logged < .seconds(10) { return }
        entry.recoveryLogged = now
        let what = entry.playback != nil ? "underrun" : "overrun"
        host.logger.info(
            "\(entry.id) of \(entry.name) (pid \(entry.peer.pid)) prepared again after \(late) \(what)\(late == 1 ? "" : "s"): it was late, told, and recovered [\(Rule.r23)]"
        )
    }

    func close(_ id: StreamID, for peer: ControlClient) throws(ControlError) {
        guard let entry = entries[id], entry.peer.id == peer.id else {
            throw ControlError(.unknownStream, "there is no \(id) of this connection", field: "stream")
        }
        end(entry, reason: "closed by \(entry.name)")
    }

    /// A connection closed: its streams end (their sessions as by R10 when they were the last of them, R17).
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
        if let capture = entry.capture {
            let overruns = capture.overruns.load(ordering: .relaxed)
            figures = "; \(overruns) overrun\(overruns == 1 ? "" : "s")"
            if overruns > 0 {
                figures +=
                    " (\(capture.overrunFrames.load(ordering: .relaxed)) frames dropped: the client did not read them)"
            }
        }
        host.logger.info("\(entry.id) of \(entry.name) (pid \(entry.peer.pid)) ended: \(reason)\(figures)")
        let ending = rules.close(entry.id)
        switch ending.value {
        case .sessionEnds(let group):
            host.handle(.clientGone(group), cause: "\(entry.id) of \(entry.name) ended (\(reason)) [\(ending.rule)]")
        case .voiceLeaves(let session):
            host.removeSound(of: session)
        case .nothing:
            break
        }
        host.streamsChanged()
        refresh()
    }

    private func owner(of session: SessionID) -> ControlClient? {
        guard let record = host.policy.session(session) else { return nil }
        return entries.values.first { $0.peer.id == record.client }?.peer ?? peer(record.client)
    }

    // MARK: Rulings become states

    /// Brings every stream's state, silence flag and microphone gate up to date with the policy (R19, R20).
    func refresh() {
        let policy = host.policy
        let microphonePresent = router.microphone != nil
        let views = entries.values.compactMap { entry in
            rules.view(of: entry.id, in: policy, microphonePresent: microphonePresent).map { (entry, $0) }
        }
        let anyHears = views.contains { entry, view in entry.capture != nil && view.hearsMicrophone }
        // The light is lit before the audio thread may hand a stream its first microphone frame, and put out only
        // once no stream may have another (R20).
        if anyHears && !microphoneInUse { microphoneChanged(true) }
        var voiceStreams: [Entry] = []
        for (entry, view) in views {
            let state = StreamMemory.State(view.state.value)
            if entry.memory.state != state { entry.memory.setState(state) }
            entry.playback?.counting.store(view.judged.value, ordering: .relaxed)
            entry.capture?.counting.store(view.judged.value, ordering: .relaxed)
            entry.memory.setFlag(StreamMemory.silencedFlag, view.silenced.value)
            if let capture = entry.capture {
                let voice = view.processing?.value.processesVoice ?? false
                let started = rules.stream(entry.id)?.started ?? false
                capture.voice.store(voice, ordering: .relaxed)
                capture.allowed.store(view.hearsMicrophone, ordering: .relaxed)
                capture.running.store(view.receivesFrames, ordering: .relaxed)
                if voice && started && view.hearsMicrophone { voiceStreams.append(entry) }
            }
        }
        updateVoicePath(voiceStreams)
        if anyHears != microphoneInUse {
            microphoneInUse = anyHears
            if !anyHears { microphoneChanged(false) }
            let holders = microphoneHolders.map { "\($0.id) (\($0.name), pid \($0.peer.pid))" }
            let text =
                anyHears
                ? "microphone in use: \(holders.joined(separator: ", ")) [\(Rule.r20)]"
                : "microphone no longer in use [\(Rule.r20)]"
            host.logger.notice("\(text)")
        }
    }

    /// Runs the voice path while some started `voiceChat` stream hears the microphone (R22), with the delay hushd
    /// knows; says when it starts and stops.
    private func updateVoicePath(_ streams: [Entry]) {
        guard let path = router.voicePath else { return }
        path.delayMilliseconds.store(host.voiceDelayMilliseconds, ordering: .relaxed)
        let on = !streams.isEmpty
        guard on != path.active.load(ordering: .relaxed) else { return }
        path.setActive(on)
        if on {
            let who = streams.sorted { $0.id < $1.id }.map { "\($0.id) (\($0.name), pid \($0.peer.pid))" }
            let text =
                "voice processing on for \(who.joined(separator: ", ")): webrtc-audio-processing "
                + "\(VoiceProcessor.libraryGeneration), \(path.configuration), echo delay "
                + "\(path.delayMilliseconds.load(ordering: .relaxed)) ms [\(Rule.r22)]"
            host.logger.notice("\(text)")
        } else {
            host.logger.notice("voice processing off: no voiceChat stream hears the microphone [\(Rule.r22)]")
        }
    }

    /// Lets go of what the audio thread released, and says once which streams' clients break the rules.
    func service() {
        if let path = router.voicePath, path.active.load(ordering: .relaxed) {
            path.delayMilliseconds.store(host.voiceDelayMilliseconds, ordering: .relaxed)
            if let failure = path.failureDescription, !reportedVoiceFailure {
                reportedVoiceFailure = true
                host.logger.warning(
                    "voice processing: \(failure); voiceChat streams get the microphone unprocessed [\(Rule.r22)]"
                )
            }
        }
        router.reap()
        retiring.removeAll { host.isReleased(pull: Unmanaged.passUnretained($0).toOpaque()) }
        for entry in entries.values {
            let violations = entry.violations
            if violations > 0 && entry.reportedViolations == 0 {
                let text =
                    "\(entry.id) of \(entry.name) (pid \(entry.peer.pid), uid \(entry.peer.uid)) wrote impossible "
                    + "ring counters; hushd ignores them, and only this stream suffers"
                host.logger.warning("\(text)")
            }
            entry.reportedViolations = violations
        }
    }

    /// Who holds the microphone now.
    /// The open streams as R24 weighs them: each one's direction and buffer, at the mixer's rate.
    var periodNeeds: [OutputPeriod.Stream] {
        let rate = host.mixerFormat.sampleRate
        return entries.values.sorted { $0.id < $1.id }.map { entry in
            let geometry = entry.memory.geometry
            return OutputPeriod.Stream(
                id: entry.id,
                name: entry.name,
                direction: geometry.direction,
                bufferFrames: geometry.ringFrames * rate / max(1, geometry.rate),
                periodFrames: entry.clientPeriodFrames.map { $0 * rate / max(1, geometry.rate) }
            )
        }
    }

    var microphoneHolders: [Entry] {
        entries.values.filter { $0.capture?.allowed.load(ordering: .relaxed) == true }.sorted { $0.id < $1.id }
    }
}

extension StreamAction {
    /// "starts", for the log.
    var verb: String {
        switch self {
        case .start: "starts"
        case .pause: "pauses"
        case .resume: "resumes"
        case .stop: "stops"
        case .prepare: "prepares"
        }
    }
}

extension StreamMemory.State {
    /// The wire's value for what the stream rules say the application sees (R19).
    init(_ state: StreamPolicy.State) {
        switch state {
        case .prepared: self = .prepared
        case .running: self = .running
        case .held: self = .held
        case .paused: self = .paused
        case .closed: self = .closed
        }
    }
}

extension ControlError {
    /// A stream the rules refused (R17), as the control socket says it.
    init(_ refusal: StreamPolicy.Refusal) {
        let code: ControlError.Code =
            switch refusal.code {
            case .unknownSession: .unknownSession
            case .notPermitted: .notPermitted
            case .cannotStream: .cannotStream
            }
        self.init(code, refusal.message, field: refusal.field)
    }
}

extension Daemon: StreamHost {
    func streamsChanged() { refreshPeriod() }
    var policy: AudioPolicy { audio.policy }
    var mixerFormat: MixerFormat { audio.engine.format }
    var outputPeriodFrames: Int? { output?.granted.maxPeriodFrames }
    var outputPace: OutputPace { output?.pace ?? idlePace }
    func attach(pull: VoicePull, to session: SessionID) throws(AudioController.SoundError) {
        try audio.attach(pull: pull, to: session)
    }
    func removeSound(of session: SessionID) { audio.removeSound(of: session) }
    func isReleased(pull context: UnsafeMutableRawPointer) -> Bool { audio.mixer.isReleased(pull: context) }
}
