import HushConfiguration
import HushControlServer
import HushCore
import HushProtocol
import HushSystem
import HushVoice
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// The control socket in hushd's loop: requests become policy events, sounds and replies; decisions and client
/// events go out to subscribers and to the owners of the sessions they concern.
///
/// Sessions belong to their connection: when it closes, the client is gone (R10) and its sessions end.
final class ControlParticipant: LoopParticipant, ControlHandler {
    let server: ControlServer
    unowned let daemon: Daemon
    let limits: HushdConfiguration.Control
    /// Per session: a name the client gave and the sound it plays, for status.
    private var names: [SessionID: String] = [:]
    private var sounds: [SessionID: String] = [:]
    /// Who each connection is (its peer credentials), for status and for the streams' session owners.
    private let credentials = Credentials()
    private var secondaryAudioHint = false
    /// Applications' streams through the `hush` ALSA device, each on a connection of its own.
    let streams: StreamHub

    /// The control socket as `configuration` says, listening: clients that connect before hushd is ready wait in
    /// its backlog and are answered by the whole daemon once it is.
    static func listen(
        _ configuration: HushdConfiguration.Control,
        logger: Logger
    ) throws(HardwareError) -> ControlServer {
        try ControlServer(
            path: configuration.socket,
            mode: mode_t(configuration.mode),
            group: configuration.socketGroup { UnixSocket.groupID($0) != nil },
            limits: ControlLimits(
                maxLineBytes: configuration.maxLineBytes,
                maxClients: configuration.maxClients,
                maxClientsPerProcess: configuration.maxClientsPerProcess,
                maxSessionsPerClient: configuration.maxSessionsPerClient
            ),
            allowedUIDs: Set(configuration.allowedUIDs),
            logger: logger
        )
    }

    /// - Parameter server: the socket, when it was opened before the daemon (``listen(_:logger:)``); else it is
    ///   opened here.
    init(
        configuration: HushdConfiguration.Control,
        streams streamLimits: HushdConfiguration.Streams = .init(),
        daemon: Daemon,
        server listening: ControlServer? = nil,
        microphoneChanged: @escaping (Bool) -> Void = { _ in }
    ) throws {
        self.daemon = daemon
        limits = configuration
        if let listening {
            server = listening
        } else {
            server = try Self.listen(configuration, logger: daemon.logger)
        }
        streams = StreamHub(
            host: daemon,
            limits: StreamHub.Limits(
                maxStreams: streamLimits.maxStreams,
                maxStreamsPerProcess: streamLimits.maxStreamsPerProcess,
                ringKiBMax: streamLimits.ringKiBMax
            ),
            reserveClientID: { [server] in server.reserveClientID() },
            peer: { [credentials] client in credentials[client] },
            microphoneChanged: microphoneChanged
        )
        server.handler = self
        daemon.streamPeriodNeeds = { [unowned self] in streams.periodNeeds }
        daemon.streamSummary = { [unowned self] in
            (streams.entries.count, streams.microphoneHolders.map { "\($0.id) (\($0.name), pid \($0.peer.pid))" })
        }
        // The privacy switch's gate: the streams (and the microphone light, R20) follow it at once.
        daemon.microphoneGateSinks.append { [unowned self] _ in streams.refresh() }
        daemon.decisionSinks.append { [unowned self] batch in
            // The streams first: what an application sees follows the decisions before anyone hears of them.
            streams.refresh()
            publish(batch)
        }
        daemon.finishedSinks.append { [unowned self] session in
            let owner = self.daemon.audio.policy.session(session)?.client
            self.server.send(.sessionFinished(session), toSubscribersAnd: owner)
        }
    }

    func close() {
        streams.closeAll()
        server.close()
    }

    // MARK: Loop

    var pollRequests: [pollfd] { server.pollRequests }
    var nextDeadline: Instant? { server.nextDeadline }
    func service(_ ready: [pollfd], now: Instant) {
        server.service(ready, now: now)
        streams.service()
    }

    // MARK: Events out

    private func publish(_ batch: Daemon.DecisionBatch) {
        let policy = daemon.audio.policy
        for decision in batch.decisions {
            if case .notify(let event) = decision.command {
                if case .secondaryAudioShouldBeSilenced(let hint) = event { secondaryAudioHint = hint }
                let owner = event.session.flatMap { policy.session($0)?.client }
                server.send(ControlEvent(event), toSubscribersAnd: owner)
            }
            server.send(
                .decision(DecisionReport(decision, cause: batch.cause, time: batch.time)),
                toSubscribersAnd: nil
            )
        }
    }

    // MARK: Requests in

    func handle(_ request: ControlRequest, from client: ControlClient) -> ControlReply {
        credentials[client.id] = client
        let id = request.id
        switch request.command {
        case .hello:
            return ControlReply(id: id, hello: HelloReport(version: Hushd.version, client: client.id))
        case .version:
            return ControlReply(id: id, hello: HelloReport(version: Hushd.version, client: client.id))
        case .activate(let configuration, let name):
            return activate(configuration, name: name, for: client, id: id)
        case .play(let session, let sound, let loop):
            if let refusal = owned(session, by: client, id: id) { return refusal }
            do {
                switch sound {
                case .file(let path): try daemon.audio.attach(.file(path), to: session, loop: loop)
                case .tone(let hertz): try daemon.audio.attach(.tone(hertz), to: session, loop: true)
                }
            } catch {
                return .failure(ControlError(.cannotPlay, error.description, field: "sound"), id: id)
            }
            sounds[session] = sound.description
            return reply(daemon.handle(.play(session), cause: "\(client.id) plays \(session)"), id: id)
        case .setLevel(let session, let level):
            if let refusal = owned(session, by: client, id: id) { return refusal }
            return reply(
                daemon.handle(.setLevel(session, level), cause: "\(client.id) sets \(session) to \(level)"),
                id: id
            )
        case .pause(let session):
            if let refusal = owned(session, by: client, id: id) { return refusal }
            return reply(daemon.handle(.pause(session), cause: "\(client.id) pauses \(session)"), id: id)
        case .resume(let session):
            if let refusal = owned(session, by: client, id: id) { return refusal }
            return reply(daemon.handle(.play(session), cause: "\(client.id) resumes \(session)"), id: id)
        case .stop(let session):
            if let refusal = owned(session, by: client, id: id) { return refusal }
            return reply(daemon.handle(.stop(session), cause: "\(client.id) stops \(session)"), id: id)
        case .deactivate(let session, let notifyOthers):
            if let refusal = owned(session, by: client, id: id) { return refusal }
            let made = daemon.handle(
                .deactivate(session, notifyOthers: notifyOthers),
                cause: "\(client.id) deactivates \(session)" + (notifyOthers ? ", notifying others" : "")
            )
            forget(session)
            return reply(made, id: id)
        case .getVolume(let kind):
            return ControlReply(id: id, volume: volumeReport(kind))
        case .setVolume(let kind, let change):
            let policy = daemon.audio.policy
            let current = kind == .system ? policy.systemVolume : policy.ringerVolume
            let target: VolumeStep
            switch change {
            case .step(let step): target = step
            case .delta(let delta): target = current.moved(by: delta)
            }
            let made = daemon.handle(
                .setVolume(kind, target),
                cause: "\(client.id) sets the \(kind) volume to \(target)"
            )
            if let failure = rejection(in: made, id: id) { return failure }
            return ControlReply(id: id, volume: volumeReport(kind))
        case .getRoute:
            return ControlReply(id: id, route: routeReport())
        case .setRoute(let route):
            let made = daemon.handle(
                .setRouteOverride(route),
                cause: "\(client.id): " + (route.map { "route override \($0)" } ?? "route back to automatic")
            )
            if let failure = rejection(in: made, id: id) { return failure }
            return ControlReply(id: id, route: routeReport())
        case .status:
            return ControlReply(id: id, status: status())
        case .openStream(let request):
            return openStream(request, for: client, id: id)
        case .stream(let stream, let action):
            do {
                let position = try streams.act(action, on: stream, for: client)
                var reply = ControlReply.ok(id: id)
                reply.position = position
                return reply
            } catch {
                return .failure(error, id: id)
            }
        case .closeStream(let stream):
            do {
                try streams.close(stream, for: client)
                return .ok(id: id)
            } catch {
                return .failure(error, id: id)
            }
        case .subscribe, .unsubscribe:
            // The server keeps subscriptions; it answers these itself.
            return .ok(id: id)
        }
    }

    func clientDisconnected(_ client: ControlClient) {
        streams.connectionClosed(client.id)
        credentials[client.id] = nil
        let sessions = daemon.audio.policy.sessions.filter { $0.client == client.id }.map(\.id)
        guard !sessions.isEmpty else { return }
        daemon.handle(.clientGone(client.id), cause: "\(client.id) (pid \(client.pid), uid \(client.uid)) disconnected")
        for session in sessions { forget(session) }
    }

    private func activate(
        _ configuration: SessionConfiguration,
        name: String?,
        for client: ControlClient,
        id: RequestID?
    ) -> ControlReply {
        let owned = daemon.audio.policy.sessions.filter { $0.client == client.id }.count
        guard owned < limits.maxSessionsPerClient else {
            return .failure(
                ControlError(
                    .tooManySessions,
                    "a client may have \(limits.maxSessionsPerClient) sessions ([control] max_sessions_per_client); "
                        + "deactivate one first"
                ),
                id: id
            )
        }
        let session = daemon.newSessionID()
        let made = daemon.handle(
            .activate(session, client: client.id, configuration),
            cause: "\(client.id) (pid \(client.pid), uid \(client.uid)) activates \(configuration)"
                + (name.map { " \"\($0)\"" } ?? "")
        )
        if let failure = rejection(in: made, id: id) { return failure }
        guard daemon.audio.policy.session(session) != nil else {
            return .failure(ControlError(.internalError, "the session was not activated"), id: id)
        }
        names[session] = name
        daemon.logger.info(
            "\(session) belongs to \(client.id): pid \(client.pid), uid \(client.uid), gid \(client.gid)"
        )
        return ControlReply(id: id, session: session)
    }

    private func openStream(_ request: StreamRequest, for client: ControlClient, id: RequestID?) -> ControlReply {
        let entry: StreamHub.Entry
        do {
            var request = request
            request.name = request.name ?? client.name
            entry = try streams.open(
                request,
                for: client
            )
        } catch {
            return .failure(error, id: id)
        }
        let memory = entry.memory
        let descriptors = [dup(memory.memoryDescriptor), dup(memory.eventDescriptor)]
        guard descriptors.allSatisfy({ $0 >= 0 }) else {
            let reason = String(cString: strerror(errno))
            for descriptor in descriptors where descriptor >= 0 { Glibc.close(descriptor) }
            try? streams.close(entry.id, for: client)
            return .failure(ControlError(.cannotStream, "cannot pass the stream's descriptors: \(reason)"), id: id)
        }
        return ControlReply(
            id: id,
            stream: StreamReport(
                id: entry.id,
                session: entry.session,
                ringFrames: memory.geometry.ringFrames,
                periodFrames: memory.geometry.periodFrames
            ),
            descriptors: descriptors
        )
    }

    /// nil when `session` exists and belongs to `client`; else the error reply.
    private func owned(_ session: SessionID, by client: ControlClient, id: RequestID?) -> ControlReply? {
        guard let record = daemon.audio.policy.session(session) else {
            return .failure(ControlError(.unknownSession, "there is no \(session)", field: "session"), id: id)
        }
        guard record.client == client.id else {
            return .failure(
                ControlError(.notYourSession, "\(session) belongs to another client", field: "session"),
                id: id
            )
        }
        return nil
    }

    private func forget(_ session: SessionID) {
        names[session] = nil
        sounds[session] = nil
    }

    private func rejection(in made: [Decision], id: RequestID?) -> ControlReply? {
        for decision in made {
            if case .reject(let rejection) = decision.command { return .failure(ControlError(rejection), id: id) }
        }
        return nil
    }

    private func reply(_ made: [Decision], id: RequestID?) -> ControlReply {
        rejection(in: made, id: id) ?? .ok(id: id)
    }

    private func volumeReport(_ kind: VolumeKind) -> VolumeReport {
        let policy = daemon.audio.policy
        let step = kind == .system ? policy.systemVolume : policy.ringerVolume
        return VolumeReport(kind: kind, step: step, gainDecibels: policy.configuration.curve.decibels(at: step))
    }

    private func routeReport() -> RouteReport {
        RouteReport(current: daemon.audio.policy.route, overridden: daemon.audio.policy.routeOverride != nil)
    }

    private func status() -> ControlStatus {
        let policy = daemon.audio.policy
        let curve = policy.configuration.curve
        let granted = daemon.output?.granted ?? daemon.setup.output
        let counters = daemon.outputCounters
        let sessions = policy.sessions.map { record -> ControlStatus.Session in
            // A stream's own session belongs to its streams: show the process that opened them.
            let owner =
                credentials[record.client]
                ?? streams.entries.values.first { $0.session == record.id }?.peer
            var pausedBy: String?
            let state: String
            switch record.state {
            case .idle: state = "idle"
            case .playing: state = "playing"
            case .stopped: state = "stopped"
            case .paused(let cause):
                state = "paused"
                pausedBy = cause.rawValue
            }
            return ControlStatus.Session(
                id: record.id,
                client: record.client,
                pid: owner?.pid,
                uid: owner?.uid,
                gid: owner?.gid,
                name: names[record.id] ?? streams.groupName(of: record.client),
                configuration: record.configuration,
                state: state,
                pausedBy: pausedBy,
                interruptedBy: record.interrupters,
                microphoneBlocked: record.microphoneBlock?.rawValue,
                sound: sounds[record.id]
            )
        }
        return ControlStatus(
            version: Hushd.version,
            uptimeSeconds: daemon.elapsed(daemon.clock.now()),
            silenceSwitch: policy.silenceSwitch,
            microphoneSwitch: policy.microphoneSwitch,
            jack: policy.jack,
            route: policy.route,
            routeOverridden: policy.routeOverride != nil,
            systemVolume: policy.systemVolume,
            systemGainDecibels: curve.decibels(at: policy.systemVolume),
            ringerVolume: policy.ringerVolume,
            ringerGainDecibels: curve.decibels(at: policy.ringerVolume),
            buttonsControl: policy.buttonTarget,
            secondaryAudioShouldBeSilenced: secondaryAudioHint,
            sessions: sessions,
            output: ControlStatus.Output(
                pcm: daemon.outputDescription,
                open: counters.open,
                sampleRate: granted.sampleRate,
                channels: granted.channels,
                periodFrames: granted.periodFrames,
                periods: granted.periods,
                xruns: counters.underruns,
                losses: counters.losses,
                latencyMilliseconds: daemon.latencyMilliseconds,
                pending: daemon.pendingRoute.map { pending in
                    .init(
                        route: pending.route,
                        pcm: pending.pcm,
                        error: pending.error.message,
                        attempts: pending.attempts,
                        seconds: Double((daemon.clock.now() - pending.since).milliseconds) / 1000
                    )
                },
                idle: counters.idle,
                measuredRate: daemon.outputMeasuredRate,
                period: daemon.periodRuling.map { ruling in
                    let period = daemon.router.period
                    return .init(
                        frames: period.frames,
                        ruled: ruling.value,
                        floor: granted.periodFrames,
                        ceiling: period.ceiling,
                        rule: ruling.rule,
                        reason: ruling.reason
                    )
                }
            ),
            clients: server.clients.count,
            streams: streams.entries.values.sorted { $0.id < $1.id }.map(streamStatus),
            microphone: streams.microphoneHolders.map(\.id),
            capture: daemon.setup.capturePCM.map { pcm in
                let match = daemon.microphone?.clockMatch
                let settled = (match?.settledSeconds.load(ordering: .relaxed) ?? 0) >= 60
                let drift = daemon.microphoneDriftPPM
                return ControlStatus.Capture(
                    pcm: pcm,
                    open: daemon.microphone != nil,
                    driftPPM: drift,
                    driftWindows: drift == nil ? nil : daemon.microphoneDriftWindows,
                    stretchPPM: settled ? match?.stretchPPM : nil,
                    measuredRate: daemon.microphoneMeasuredRate,
                    gapFrames: daemon.microphone?.ring.underflows
                )
            },
            voice: daemon.captureRouter.voicePath.map { path in
                let statistics = path.statistics
                return ControlStatus.Voice(
                    library: VoiceProcessor.libraryGeneration,
                    active: path.active.load(ordering: .relaxed),
                    delayMilliseconds: path.delayMilliseconds.load(ordering: .relaxed),
                    erleDecibels: statistics.echoReturnLossEnhancement,
                    estimatedDelayMilliseconds: statistics.estimatedDelayMilliseconds,
                    blocks: path.blocks.load(ordering: .relaxed),
                    underflows: path.underflows.load(ordering: .relaxed),
                    unavailable: path.failureDescription
                )
            },
            hearing: daemon.hearing?.status(policy)
        )
    }

    private func streamStatus(_ entry: StreamHub.Entry) -> ControlStatus.Stream {
        let geometry = entry.memory.geometry
        let state: ControlStatus.Stream.State
        switch entry.memory.state {
        case .prepared, .closed: state = .prepared
        case .running: state = entry.memory.isDraining ? .draining : .running
        case .held: state = .held
        case .paused: state = .paused
        }
        return ControlStatus.Stream(
            id: entry.id,
            session: entry.session,
            client: entry.peer.id,
            pid: entry.peer.pid,
            name: entry.name,
            direction: geometry.direction,
            configuration: entry.configuration,
            rate: geometry.rate,
            channels: geometry.channels,
            format: geometry.format,
            ringFrames: geometry.ringFrames,
            state: state,
            underruns: entry.playback?.underruns.load(ordering: .relaxed) ?? 0,
            underrunFrames: entry.playback?.underrunFrames.load(ordering: .relaxed) ?? 0,
            overruns: entry.capture?.overruns.load(ordering: .relaxed) ?? 0,
            overrunFrames: entry.capture?.overrunFrames.load(ordering: .relaxed) ?? 0,
            violations: entry.violations,
            microphone: entry.hearsMicrophone
        )
    }
}

/// Who each connection is, by client id: its peer credentials, as it first spoke.
final class Credentials {
    private var clients: [ClientID: ControlClient] = [:]
    subscript(client: ClientID) -> ControlClient? {
        get { clients[client] }
        set { clients[client] = newValue }
    }
}
