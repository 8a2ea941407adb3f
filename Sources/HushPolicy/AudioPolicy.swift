import HushCore

/// The audio-session policy: a pure, deterministic state machine.
///
/// Give it every event with the time it happened; it answers with the decisions that follow, each naming the rule
/// (``Rule``) that produced it. It reads no clock, does no I/O and logs nothing: the daemon, `hush-render` and
/// the tests drive it the same way. The rules are listed in docs/policy.md.
///
/// ```swift
/// var policy = AudioPolicy(configuration: .init(), persisted: nil)
/// let startup = policy.start(at: .zero)
/// let decisions = policy.handle(.input(.silenceSwitch(.silent)), at: .milliseconds(10))
/// ```
public struct AudioPolicy: Sendable {
    public let configuration: PolicyConfiguration

    /// The latest time the policy was told.
    public private(set) var now: Instant = .zero
    public private(set) var silenceSwitch: SilenceSwitchPosition = .ring
    /// The microphone privacy switch in force (R21): the board's, or the console's where it muted on its own.
    public private(set) var microphoneSwitch: MicrophoneSwitchPosition = .live
    /// The board's own switch as last reported (GPIO, evdev); `.live` on a board without one.
    public private(set) var boardMicrophoneSwitch: MicrophoneSwitchPosition = .live
    public private(set) var jack: JackState = .unplugged
    public private(set) var routeOverride: Route?
    public private(set) var route: Route = .speaker
    /// The remembered system volume of every configured route.
    public internal(set) var systemVolumes: [Route: VolumeStep] = [:]
    public internal(set) var ringerVolume: VolumeStep
    /// Where the hearing rules stand (R29).
    var hearingState = HearingState()
    /// Active sessions, in activation order.
    public private(set) var sessions: [SessionRecord] = []

    private var held: (button: VolumeButton, nextRepeat: Instant)?
    private var activityCounter: UInt64 = 0
    private var started = false
    private var emittedBusGains: [Bus: Gain] = [:]
    private var emittedButtonTarget: VolumeKind?
    private var emittedHint = false
    private var emittedAlertLight = false

    /// A policy that starts from `persisted` volumes (or the defaults), capped per R12.
    public init(configuration: PolicyConfiguration, persisted: PersistedVolumes?) {
        self.configuration = configuration
        let cap = configuration.startupMaximum
        ringerVolume = min(persisted?.ringer ?? configuration.defaultRingerVolume, cap)
        for route in configuration.routes {
            systemVolumes[route] = min(persisted?.system[route] ?? configuration.defaultSystemVolume, cap)
        }
        if let wanted = persisted?.routeOverride, configuration.routes.contains(wanted) {
            routeOverride = wanted
        }
        route = routeOverride ?? .speaker
    }

    /// The system volume in force on the current route.
    public var systemVolume: VolumeStep { systemVolumes[route] ?? configuration.defaultSystemVolume }

    /// Which volume the buttons control right now (R3, M8).
    public var buttonTarget: VolumeKind {
        // hushd's hearing warning is on the ringer bus but is not a ring: a press while it sounds lowers what is
        // loud (R30).
        if sessions.contains(where: { $0.configuration.bus == .ringer && isSounding($0) && !isWarningSound($0) }) {
            return .ringer
        }
        if sessions.contains(where: { $0.configuration.bus != .ringer }) { return .system }
        return configuration.idleButtonTarget
    }

    /// The volume button being held, if any (R3).
    public var heldButton: VolumeButton? { held?.button }

    /// When the policy next needs `.timePassed` (a held button's repeat, a hearing reduction's next step), or nil.
    public var nextDeadline: Instant? {
        let light = hearingState.lightUntil.flatMap { $0 > now ? $0 : nil }
        return [held?.nextRepeat, hearingState.reduction?.next, light].compactMap { $0 }.min()
    }

    /// The week's sound dose on private routes as last reported (R29; 1 = 100 %).
    public var soundDose: Double { hearingState.dose }

    /// Whether the alert light should be lit (R16): a ringer-bus session is playing, not interrupted, and muted by
    /// the silence switch — a ring the person would otherwise hear.
    public var alertLight: Bool { mutedRingLight || hearingLight }

    /// R16's part of the light: a muted ring.
    private var mutedRingLight: Bool {
        sessions.contains { session in
            session.configuration.bus == .ringer && session.isPlaying && !session.isInterrupted && isSilenced(session)
        }
    }

    /// R29's part: the light shows a hearing warning for a while (a board with no screen).
    var hearingLight: Bool { hearingState.lightUntil.map { now < $0 } ?? false }

    /// The session with `id`, if active.
    public func session(_ id: SessionID) -> SessionRecord? { sessions.first { $0.id == id } }

    // MARK: - Start-up

    /// The decisions that set the engine up at start-up (R12): route, bus gains, the buttons' target.
    /// Call once, before ``handle(_:at:)``.
    public mutating func start(at time: Instant) -> [Decision] {
        precondition(!started, "AudioPolicy.start(at:) called twice")
        started = true
        now = time
        var out: [Decision] = []
        capStart(on: route, &out)
        holdToCeiling(on: route, &out)
        let why =
            "start-up: system volume \(systemVolume) on \(route), ringer \(ringerVolume), "
            + "capped at \(configuration.startupMaximum)"
        emitBusGains(&out, rule: .r12, reason: why, ramp: .zero)
        out.append(
            Decision(
                .selectRoute(route),
                rule: .r12,
                reason: routeOverride == nil
                    ? "start-up: \(route) until the jack is read"
                    : "start-up: the remembered route override \(route)"
            )
        )
        reconcile(&out, trigger: .other)
        return out
    }

    // MARK: - R25 start-up sound

    /// How hushd's start-up sound plays (R25): a system sound, as a phone's: on the effect bus, `ambient`, mixed with
    /// whatever plays, so the silence switch silences it (R1) and the system volume scales it (R2).
    public static let startupSoundConfiguration = SessionConfiguration(
        bus: .effect,
        category: .ambient,
        options: [.mixWithOthers]
    )

    private mutating func startupSound(_ id: SessionID, _ out: inout [Decision]) {
        ownSound(
            id,
            Self.startupSoundConfiguration,
            rule: .r25,
            note: "is hushd's start-up sound",
            silenced: "hushd is ready; the silence switch is on, so it plays silenced, as every ambient sound (R1)",
            heard:
                "hushd is ready: a system sound on the effect bus, mixed with anything playing, at the system volume",
            &out
        )
    }

    /// Activates `id` as a session of hushd's own with `configuration` and plays it, saying why with `rule` (R25,
    /// R30); false when the policy refused it (an id already in use).
    @discardableResult
    mutating func ownSound(
        _ id: SessionID,
        _ configuration: SessionConfiguration,
        rule: Rule,
        note: String,
        silenced: String,
        heard: String,
        _ out: inout [Decision]
    ) -> Bool {
        activate(id, client: .hushd, configuration, &out)
        guard let index = sessions.firstIndex(where: { $0.id == id }), sessions[index].client == .hushd else {
            return false
        }
        out.append(
            Decision(.note("\(id) \(note)"), rule: rule, reason: isSilenced(sessions[index]) ? silenced : heard)
        )
        play(at: index, rule: rule, &out)
        return true
    }

    // MARK: - R26 session level

    /// A session sets its own level (R26). What it sounds at follows in ``reconcile(_:trigger:)``: the level times
    /// what the rules give the session (unity, the duck depth, silence), under its bus's volume.
    private mutating func setLevel(at index: Int, _ level: SessionLevel, _ out: inout [Decision]) {
        let id = sessions[index].id
        guard level != sessions[index].configuration.level else {
            out.append(
                Decision(.note("\(id) is already at \(level)"), rule: .r26, reason: "the level asked is its level")
            )
            return
        }
        sessions[index].configuration.level = level
    }

    // MARK: - Events

    /// Applies `event`, which happened at `time`, and returns what follows from it, in the order to carry out.
    ///
    /// Time never runs backwards: an earlier `time` than the last is taken as the last.
    public mutating func handle(_ event: PolicyEvent, at time: Instant) -> [Decision] {
        precondition(started, "AudioPolicy.handle(_:at:) before start(at:)")
        now = max(now, time)
        var out: [Decision] = []
        repeatHeldButton(&out)
        continueReduction(&out)
        var trigger = Trigger.other
        switch event {
        case .input(.silenceSwitch(let position)):
            trigger = .silenceSwitch
            setSilenceSwitch(position, &out)
        case .input(.volumeButton(let button, .press)):
            held = (button, now + configuration.repeatDelay)
            stepVolume(button, repeated: false, &out)
        case .input(.volumeButton(let button, .release)):
            if held?.button == button { held = nil }
        case .input(.mediaKey(let key)):
            mediaKey(key, &out)
        case .input(.headphones(let state, let source)):
            headphones(state, source: source, &out)
        case .input(.microphoneSwitch(let position, let source)):
            setMicrophoneSwitch(position, source: source, &out)
        case .activate(let id, let client, let configuration):
            activate(id, client: client, configuration, &out)
        case .deactivate(let id, let notifyOthers):
            guard let index = index(of: id, &out) else { break }
            deactivate(at: index, notifyOthers: notifyOthers, rule: .r15, &out)
        case .play(let id):
            guard let index = index(of: id, &out) else { break }
            play(at: index, rule: .r15, &out)
        case .pause(let id):
            guard let index = index(of: id, &out) else { break }
            pause(at: index, &out)
        case .stop(let id):
            guard let index = index(of: id, &out) else { break }
            stop(at: index, &out)
        case .finished(let id):
            guard let index = sessions.firstIndex(where: { $0.id == id }) else { break }
            sessions[index].state = .stopped
            sessions[index].resumesAfterInterruption = false
        case .clientGone(let client):
            clientGone(client, &out)
        case .setVolume(let kind, let step):
            setVolume(kind, step, rule: .r2, reason: "\(kind) volume set to \(step)", &out)
        case .setRouteOverride(let wanted):
            setRouteOverride(wanted, &out)
        case .timePassed:
            break
        case .startupSound(let id):
            startupSound(id, &out)
        case .warningSound(let id):
            warningSound(id, &out)
        case .setLevel(let id, let level):
            guard let index = index(of: id, &out) else { break }
            setLevel(at: index, level, &out)
        case .exposure(let exposure):
            self.exposure(exposure, &out)
            continueReduction(&out)
        }
        reconcile(&out, trigger: trigger)
        return out
    }

    /// What caused a reconciliation, to attribute derived changes to the right rule.
    private enum Trigger { case silenceSwitch, other }

    // MARK: - R1 silence switch

    private mutating func setSilenceSwitch(_ position: SilenceSwitchPosition, _ out: inout [Decision]) {
        guard position != silenceSwitch else {
            out.append(
                Decision(
                    .note("the silence switch is already \(position)"),
                    rule: .r1,
                    reason: "the switch reported the position it already had"
                )
            )
            return
        }
        silenceSwitch = position
        out.append(
            Decision(
                .notify(.silenceChanged(position)),
                rule: .r1,
                reason: position == .silent
                    ? "silence on: ambient and soloAmbient sessions (effects, ringtones) go silent"
                    : "silence off: ambient and soloAmbient sessions sound again"
            )
        )
    }

    private func isSilenced(_ session: SessionRecord) -> Bool {
        silenceSwitch == .silent && session.configuration.category.isSilencedBySwitch
    }

    /// Playing, not interrupted and not silenced: a person can hear it (M8).
    private func isSounding(_ session: SessionRecord) -> Bool {
        session.isPlaying && !session.isInterrupted && !isSilenced(session)
    }

    // MARK: - R2, R3 volumes and buttons

    private mutating func repeatHeldButton(_ out: inout [Decision]) {
        while let current = held, current.nextRepeat <= now {
            held = (current.button, current.nextRepeat + configuration.repeatInterval)
            stepVolume(current.button, repeated: true, &out)
        }
    }

    private mutating func stepVolume(_ button: VolumeButton, repeated: Bool, _ out: inout [Decision]) {
        let kind = buttonTarget
        let current = kind == .ringer ? ringerVolume : systemVolume
        let next = current.moved(by: button.delta)
        guard next != current else {
            if !repeated {
                out.append(
                    Decision(
                        .note("\(kind) volume is already at \(current)"),
                        rule: .r3,
                        reason: "\(button) pressed at the end of the range"
                    )
                )
            }
            return
        }
        let how = repeated ? "held" : "pressed"
        setVolume(kind, next, rule: .r3, reason: "\(button) \(how): \(kind) volume \(current) → \(next)", &out)
    }

    private mutating func setVolume(
        _ kind: VolumeKind,
        _ wanted: VolumeStep,
        rule: Rule,
        reason: String,
        _ out: inout [Decision]
    ) {
        var step = wanted
        let current = kind == .system ? systemVolume : ringerVolume
        if let limit = volumeLimit(on: route, kind: kind), step > limit.step {
            // Never above the limit; never a sudden drop either (a reduction under way brings it down).
            step = max(limit.step, min(step, current))
            out.append(
                Decision(
                    .note("the \(kind) volume on \(route) goes no higher than \(max(limit.step, current))"),
                    rule: limit.rule,
                    reason: limit.why
                )
            )
        }
        // The person's own choice ends a reduction (R29): after a warning they may turn it up again.
        if kind == .system && rule != .r29 { hearingState.reduction = nil }
        switch kind {
        case .system:
            guard systemVolumes[route] != step else { return }
            systemVolumes[route] = step
        case .ringer:
            guard ringerVolume != step else { return }
            ringerVolume = step
        }
        emitBusGains(&out, rule: rule, reason: reason, ramp: configuration.volumeRamp)
        out.append(
            Decision(
                .notify(.volumeChanged(kind, step, route: kind == .system ? route : nil)),
                rule: rule,
                reason: reason
            )
        )
        out.append(Decision(.persist(persistedVolumes), rule: rule, reason: "remember the new \(kind) volume"))
    }

    /// What survives a restart (R12).
    public var persistedVolumes: PersistedVolumes {
        PersistedVolumes(system: systemVolumes, ringer: ringerVolume, routeOverride: routeOverride)
    }

    /// Sends bus gains that differ from what the engine has (R2).
    mutating func emitBusGains(_ out: inout [Decision], rule: Rule, reason: String, ramp: Duration) {
        for bus in Bus.allCases {
            let step = bus.volumeKind == .ringer ? ringerVolume : systemVolume
            let gain = configuration.curve.gain(at: step)
            guard emittedBusGains[bus] != gain else { continue }
            emittedBusGains[bus] = gain
            out.append(Decision(.setBusGain(bus, gain, ramp: ramp), rule: rule, reason: reason))
        }
    }

    // MARK: - R4, R5, R13 routes

    private mutating func headphones(_ state: JackState, source: JackSource, _ out: inout [Decision]) {
        guard state != jack else {
            out.append(
                Decision(
                    .note("headphones already \(state)"),
                    rule: .m6,
                    reason: "\(source) reported the jack state hush already had"
                )
            )
            return
        }
        jack = state
        if state == .plugged {
            guard configuration.routes.contains(.headphones) else {
                out.append(
                    Decision(
                        .note("headphones plugged, but this board has no headphones route"),
                        rule: .r4,
                        reason: "add a headphones route to the configuration to use the jack"
                    )
                )
                return
            }
            if let chosen = routeOverride {
                out.append(
                    Decision(
                        .note("headphones plugged; output stays on \(chosen)"),
                        rule: .r13,
                        reason: "the route is overridden to \(chosen) until the override is cleared"
                    )
                )
                return
            }
            changeRoute(
                to: .headphones,
                reason: .newDeviceAvailable,
                rule: .r4,
                why: "headphones plugged (\(source)): output moves to headphones without a pause",
                &out
            )
        } else {
            // R5: pause before anything moves, so not one more frame reaches the speaker.
            for index in sessions.indices where sessions[index].configuration.category == .playback {
                if sessions[index].isPlaying {
                    sessions[index].state = .paused(.routeChange)
                    markActivity(index)
                    out.append(
                        Decision(
                            .pause(sessions[index].id),
                            rule: .r5,
                            reason: "headphones unplugged (\(source)): playback pauses before the speaker takes over"
                        )
                    )
                } else if sessions[index].isInterrupted && sessions[index].resumesAfterInterruption {
                    sessions[index].resumesAfterInterruption = false
                    sessions[index].state = .paused(.routeChange)
                    markActivity(index)
                    out.append(
                        Decision(
                            .note("\(sessions[index].id) will not resume after its interruption"),
                            rule: .m3,
                            reason: "headphones were unplugged while it was interrupted"
                        )
                    )
                }
            }
            if let chosen = routeOverride {
                out.append(
                    Decision(
                        .note("headphones unplugged; output stays on \(chosen)"),
                        rule: .r13,
                        reason: "the route is overridden to \(chosen) until the override is cleared"
                    )
                )
                return
            }
            changeRoute(
                to: .speaker,
                reason: .oldDeviceUnavailable,
                rule: .r5,
                why: "headphones unplugged (\(source)): output moves to the speaker",
                &out
            )
        }
    }

    private mutating func setRouteOverride(_ wanted: Route?, _ out: inout [Decision]) {
        if let wanted, !configuration.routes.contains(wanted) {
            let known = configuration.routes.map(\.name).joined(separator: ", ")
            out.append(
                Decision(
                    .reject(Rejection(.unknownRoute, "no route named '\(wanted)'; routes are: \(known)")),
                    rule: .r13,
                    reason: "route override to an unconfigured route"
                )
            )
            return
        }
        guard wanted != routeOverride else {
            out.append(
                Decision(
                    .note(wanted.map { "route already overridden to \($0)" } ?? "no route override set"),
                    rule: .r13,
                    reason: "the override asked for is already in force"
                )
            )
            return
        }
        routeOverride = wanted
        let automatic: Route =
            jack == .plugged && configuration.routes.contains(.headphones) ? .headphones : .speaker
        let target = wanted ?? automatic
        let why = wanted.map { "route overridden to \($0)" } ?? "route override cleared: back to \(automatic)"
        changeRoute(to: target, reason: .override, rule: .r13, why: why, &out)
        out.append(Decision(.persist(persistedVolumes), rule: .r13, reason: "remember the route override"))
    }

    /// Moves output to `target`: the new route's volume is in force before the first sample reaches it.
    private mutating func changeRoute(
        to target: Route,
        reason: RouteChangeReason,
        rule: Rule,
        why: String,
        _ out: inout [Decision]
    ) {
        guard target != route else {
            out.append(Decision(.note("output is already on \(target)"), rule: rule, reason: why))
            return
        }
        let previous = route
        route = target
        hearingState.reduction = nil
        hearingState.loudSeconds = 0
        capStart(on: target, &out)
        holdToCeiling(on: target, &out)
        emitBusGains(&out, rule: rule, reason: "\(why); system volume on \(target) is \(systemVolume)", ramp: .zero)
        out.append(Decision(.selectRoute(target), rule: rule, reason: why))
        out.append(
            Decision(
                .notify(.routeChanged(RouteChange(previous: previous, current: target, reason: reason))),
                rule: rule,
                reason: why
            )
        )
        out.append(
            Decision(
                .notify(.volumeChanged(.system, systemVolume, route: target)),
                rule: rule,
                reason: "\(target) remembers system volume \(systemVolume)"
            )
        )
    }

    // MARK: - R6, R8, R9, R15 sessions

    private func index(of id: SessionID, _ out: inout [Decision]) -> Int? {
        if let index = sessions.firstIndex(where: { $0.id == id }) { return index }
        out.append(
            Decision(
                .reject(Rejection(.unknownSession, session: id, "\(id) is not active")),
                rule: .r15,
                reason: "a request named a session that was never activated or is already gone"
            )
        )
        return nil
    }

    private mutating func markActivity(_ index: Int) {
        activityCounter += 1
        sessions[index].lastUserActivity = activityCounter
    }

    mutating func activate(
        _ id: SessionID,
        client: ClientID,
        _ configuration: SessionConfiguration,
        _ out: inout [Decision]
    ) {
        guard session(id) == nil else {
            out.append(
                Decision(
                    .reject(Rejection(.duplicateSession, session: id, "\(id) is already active")),
                    rule: .r15,
                    reason: "session ids are unique while active"
                )
            )
            return
        }
        sessions.append(SessionRecord(id: id, client: client, configuration: configuration))
        let index = sessions.count - 1
        out.append(Decision(.note("\(id) active: \(configuration)"), rule: .r15, reason: "\(client) activated it"))
        if configuration.category.records && microphoneSwitch == .muted { blockMicrophone(at: index, &out) }
        guard !configuration.isMixable else { return }
        if isSilenced(sessions[index]) {
            sessions[index].floorPending = true
            out.append(
                Decision(
                    .note("\(id) does not interrupt anything"),
                    rule: .m1,
                    reason: "it is silenced by the switch, and a silent session takes no floor"
                )
            )
            return
        }
        takeFloor(at: index, rule: .r6, &out)
    }

    /// R6 and M4: a non-mixable session interrupts the other non-mixable sessions, except that a transient one
    /// (ringer, call) keeps the floor against a non-transient newcomer, which starts interrupted instead.
    private mutating func takeFloor(at index: Int, rule: Rule, _ out: inout [Decision]) {
        sessions[index].floorPending = false
        let newcomer = sessions[index]
        for other in sessions.indices where other != index {
            let holder = sessions[other]
            guard !holder.configuration.isMixable, !holder.isInterrupted, !holder.floorPending else { continue }
            if holder.configuration.interruptsTransiently && !newcomer.configuration.interruptsTransiently {
                interrupt(
                    at: index,
                    by: holder,
                    rule: .m4,
                    reason: "\(holder.id) (\(holder.configuration)) holds the floor until it ends",
                    &out
                )
            }
        }
        for other in sessions.indices where other != index && !sessions[other].configuration.isMixable {
            guard !sessions[index].interrupters.contains(sessions[other].id) else { continue }
            interrupt(
                at: other,
                by: newcomer,
                rule: rule,
                reason: "\(newcomer.id) (\(newcomer.configuration)) does not mix with others",
                &out
            )
        }
    }

    private mutating func interrupt(
        at index: Int,
        by interrupter: SessionRecord,
        rule: Rule,
        reason: String,
        _ out: inout [Decision]
    ) {
        let resumable = interrupter.configuration.interruptsTransiently
        let id = sessions[index].id
        if sessions[index].isInterrupted {
            sessions[index].interruptionResumable = sessions[index].interruptionResumable && resumable
            sessions[index].interrupters.append(interrupter.id)
            return
        }
        sessions[index].interrupters = [interrupter.id]
        sessions[index].interruptionResumable = resumable
        sessions[index].resumesAfterInterruption = sessions[index].isPlaying
        if sessions[index].isPlaying {
            sessions[index].state = .paused(.interruption)
            out.append(Decision(.pause(id), rule: rule, reason: reason))
        }
        out.append(
            Decision(
                .notify(.interruptionBegan(id, cause: .session(interrupter.id))),
                rule: rule,
                reason: reason + (resumable ? " (resumable: the interrupter is transient)" : " (not resumable)")
            )
        )
    }

    /// R8 and R9: `ender` is gone; the sessions it interrupted get their interruption ended.
    private mutating func endInterruptions(by ender: SessionID, notifyOthers: Bool, _ out: inout [Decision]) {
        for index in sessions.indices {
            guard let position = sessions[index].interrupters.firstIndex(of: ender) else { continue }
            sessions[index].interrupters.remove(at: position)
            guard !sessions[index].isInterrupted else { continue }
            let shouldResume = notifyOthers && sessions[index].interruptionResumable
            let id = sessions[index].id
            out.append(
                Decision(
                    .notify(.interruptionEnded(id, shouldResume: shouldResume)),
                    rule: .r8,
                    reason: notifyOthers
                        ? "\(ender) ended, notifying others; the interruption was "
                            + (shouldResume ? "transient" : "not transient")
                        : "\(ender) ended without notifying others"
                )
            )
            let wasPlaying = sessions[index].resumesAfterInterruption
            sessions[index].resumesAfterInterruption = false
            guard wasPlaying else { continue }
            switch sessions[index].configuration.category {
            case .ambient, .soloAmbient:
                resume(
                    at: index,
                    rule: .r9,
                    reason: "interruption over: \(id) was playing and resumes on its own",
                    &out
                )
            case .playback where shouldResume:
                resume(at: index, rule: .r9, reason: "interruption over with shouldResume: \(id) was playing", &out)
            case .playback:
                out.append(
                    Decision(
                        .note("\(id) stays paused"),
                        rule: .r9,
                        reason: "playback resumes only when the interruption ends with shouldResume"
                    )
                )
            case .record, .playAndRecord:
                out.append(
                    Decision(
                        .note("\(id) stays paused"),
                        rule: .r9,
                        reason: "a microphone is never re-enabled without the person"
                    )
                )
            }
        }
    }

    private mutating func resume(at index: Int, rule: Rule, reason: String, _ out: inout [Decision]) {
        sessions[index].state = .playing
        out.append(Decision(.resume(sessions[index].id), rule: rule, reason: reason))
    }

    mutating func play(at index: Int, rule: Rule, _ out: inout [Decision]) {
        let id = sessions[index].id
        switch sessions[index].microphoneBlock {
        case .awaitingStart:
            sessions[index].microphoneBlock = nil
            out.append(
                Decision(
                    .note("\(id) may hear the microphone again"),
                    rule: .r21,
                    reason: "started again since the privacy switch was turned off"
                )
            )
            if sessions[index].isPlaying { return }
        case .privacySwitch:
            out.append(
                Decision(
                    .note("\(id)'s microphone stays off"),
                    rule: .r21,
                    reason: "the privacy switch is on; nothing a client asks turns the microphone on"
                )
            )
        case nil:
            break
        }
        if sessions[index].isPlaying {
            out.append(Decision(.note("\(id) is already playing"), rule: rule, reason: "play asked again"))
            return
        }
        if sessions[index].isInterrupted {
            let holders = sessions[index].interrupters.compactMap { session($0) }
            if let transient = holders.first(where: { $0.configuration.interruptsTransiently }) {
                out.append(
                    Decision(
                        .reject(
                            Rejection(
                                .interrupted,
                                session: id,
                                "\(id) cannot play while \(transient.id) (\(transient.configuration)) holds the floor"
                            )
                        ),
                        rule: .m5,
                        reason: "a transient interruption (ringtone, call) is never cut short by a play"
                    )
                )
                return
            }
            sessions[index].interrupters = []
            sessions[index].resumesAfterInterruption = false
            out.append(
                Decision(
                    .notify(.interruptionEnded(id, shouldResume: false)),
                    rule: .m5,
                    reason: "\(id) takes the floor back by playing"
                )
            )
            takeFloor(at: index, rule: .m5, &out)
        } else if sessions[index].floorPending && !isSilenced(sessions[index]) {
            takeFloor(at: index, rule: .r6, &out)
        }
        if let holder = sessions[index].interrupters.first {
            // M4 applied inside takeFloor: a transient session keeps the floor, so this one waits.
            out.append(
                Decision(
                    .reject(
                        Rejection(
                            .interrupted,
                            session: id,
                            "\(id) cannot play while \(holder) holds the floor"
                        )
                    ),
                    rule: .m4,
                    reason: "a transient session (ringtone, call) keeps the floor until it ends"
                )
            )
            return
        }
        markActivity(index)
        resume(at: index, rule: rule, reason: rule == .r11 ? "media key: \(id) plays" : "\(id) asked to play", &out)
    }

    private mutating func pause(at index: Int, _ out: inout [Decision]) {
        let id = sessions[index].id
        markActivity(index)
        if sessions[index].isPlaying {
            sessions[index].state = .paused(.user)
            out.append(Decision(.pause(id), rule: .r15, reason: "\(id) asked to pause"))
        } else if sessions[index].isInterrupted && sessions[index].resumesAfterInterruption {
            sessions[index].resumesAfterInterruption = false
            sessions[index].state = .paused(.user)
            out.append(
                Decision(
                    .note("\(id) will not resume after its interruption"),
                    rule: .r15,
                    reason: "paused by its client while interrupted"
                )
            )
        } else {
            if case .paused = sessions[index].state {} else { sessions[index].state = .paused(.user) }
            out.append(Decision(.note("\(id) is not playing"), rule: .r15, reason: "pause asked while not playing"))
        }
    }

    private mutating func stop(at index: Int, _ out: inout [Decision]) {
        let id = sessions[index].id
        sessions[index].resumesAfterInterruption = false
        switch sessions[index].state {
        case .idle, .stopped:
            sessions[index].state = .stopped
            out.append(Decision(.note("\(id) is not playing"), rule: .r15, reason: "stop asked while not playing"))
        case .playing, .paused:
            sessions[index].state = .stopped
            out.append(Decision(.stop(id), rule: .r15, reason: "\(id) asked to stop"))
        }
    }

    private mutating func deactivate(at index: Int, notifyOthers: Bool, rule: Rule, _ out: inout [Decision]) {
        let gone = sessions.remove(at: index)
        switch gone.state {
        case .playing, .paused:
            out.append(
                Decision(
                    .stop(gone.id),
                    rule: rule,
                    reason: rule == .r10
                        ? "\(gone.client) is gone, so \(gone.id) ends"
                        : "\(gone.id) deactivated"
                )
            )
        case .idle, .stopped:
            out.append(
                Decision(
                    .note("\(gone.id) deactivated"),
                    rule: rule,
                    reason: rule == .r10 ? "\(gone.client) is gone" : "its client deactivated it"
                )
            )
        }
        endInterruptions(by: gone.id, notifyOthers: notifyOthers, &out)
    }

    // MARK: - R21 microphone privacy

    private mutating func setMicrophoneSwitch(
        _ position: MicrophoneSwitchPosition,
        source: MicrophoneSwitchSource,
        _ out: inout [Decision]
    ) {
        if source.isBoard {
            let moved = position != boardMicrophoneSwitch
            boardMicrophoneSwitch = position
            guard moved else {
                out.append(
                    Decision(
                        .note("the board's microphone switch is already \(position)"),
                        rule: .r21,
                        reason: "a repeated report of the switch changes nothing"
                    )
                )
                return
            }
        } else if position == .live && boardMicrophoneSwitch == .muted {
            out.append(
                Decision(
                    .reject(
                        Rejection(
                            .notPermitted,
                            "the board's microphone privacy switch is on: only the switch turns the microphone back on"
                        )
                    ),
                    rule: .r21,
                    reason: "nothing but the switch itself overrules the privacy switch"
                )
            )
            return
        }
        guard position != microphoneSwitch else {
            out.append(
                Decision(
                    .note("the microphone switch is already \(position)"),
                    rule: .r21,
                    reason: "a repeated report of the switch changes nothing"
                )
            )
            return
        }
        microphoneSwitch = position
        switch position {
        case .muted:
            out.append(
                Decision(
                    .muteMicrophone(true),
                    rule: .r21,
                    reason: "the microphone privacy switch is on: no client hears the microphone, whatever it asks"
                )
            )
            for index in sessions.indices where sessions[index].configuration.category.records {
                blockMicrophone(at: index, &out)
            }
        case .live:
            out.append(
                Decision(
                    .muteMicrophone(false),
                    rule: .r21,
                    reason:
                        "the microphone privacy switch is off: the microphone is there for sessions started from now"
                )
            )
            for index in sessions.indices where sessions[index].microphoneBlock == .privacySwitch {
                let id = sessions[index].id
                sessions[index].microphoneBlock = .awaitingStart
                out.append(
                    Decision(
                        .notify(.interruptionEnded(id, shouldResume: false)),
                        rule: .r21,
                        reason: "the privacy switch is off, and \(id)'s microphone stays off until the application "
                            + "or the person starts it again: a microphone is never re-enabled behind the person's back"
                    )
                )
            }
        }
    }

    /// R21: the privacy switch takes the microphone from a recording session; its own sound plays on.
    private mutating func blockMicrophone(at index: Int, _ out: inout [Decision]) {
        let session = sessions[index]
        sessions[index].microphoneBlock = .privacySwitch
        out.append(
            Decision(
                .notify(.interruptionBegan(session.id, cause: .microphoneMuted)),
                rule: .r21,
                reason: "\(session.id) (\(session.configuration.category)) records, and the privacy switch is on: it "
                    + "receives silence at the real rate; what it plays goes on"
            )
        )
    }

    // MARK: - R10 client gone

    private mutating func clientGone(_ client: ClientID, _ out: inout [Decision]) {
        guard sessions.contains(where: { $0.client == client }) else {
            out.append(Decision(.note("\(client) had no sessions"), rule: .r10, reason: "\(client) disconnected"))
            return
        }
        while let index = sessions.firstIndex(where: { $0.client == client }) {
            deactivate(at: index, notifyOthers: true, rule: .r10, &out)
        }
    }

    // MARK: - R11 media keys

    private mutating func mediaKey(_ key: MediaKey, _ out: inout [Decision]) {
        let waiting = sessions.indices.filter { sessions[$0].microphoneBlock == .awaitingStart }
        if key == .play || key == .playPause,
            let index = waiting.max(by: { sessions[$0].lastUserActivity < sessions[$1].lastUserActivity })
        {
            // R21 before R11: the person's key is the start a microphone waits for after the privacy switch.
            markActivity(index)
            play(at: index, rule: .r11, &out)
            return
        }
        let candidates = sessions.indices.filter { index in
            let session = sessions[index]
            guard session.configuration.category == .playback, !session.isInterrupted else { return false }
            switch session.state {
            case .playing, .paused(.user), .paused(.routeChange): return true
            default: return false
            }
        }
        guard let index = candidates.max(by: { sessions[$0].lastUserActivity < sessions[$1].lastUserActivity })
        else {
            out.append(
                Decision(
                    .note("media key \(key) ignored"),
                    rule: .r11,
                    reason: "no playback session is playing or paused by the person or an unplug"
                )
            )
            return
        }
        let id = sessions[index].id
        switch key {
        case .playPause where sessions[index].isPlaying, .pause where sessions[index].isPlaying:
            markActivity(index)
            sessions[index].state = .paused(.user)
            out.append(Decision(.pause(id), rule: .r11, reason: "media key \(key): \(id) was playing"))
        case .playPause, .play:
            guard !sessions[index].isPlaying else {
                out.append(Decision(.note("\(id) is already playing"), rule: .r11, reason: "media key \(key)"))
                return
            }
            play(at: index, rule: .r11, &out)
        case .pause:
            out.append(Decision(.note("\(id) is already paused"), rule: .r11, reason: "media key \(key)"))
        case .next, .previous:
            out.append(
                Decision(
                    .notify(.remoteCommand(id, key)),
                    rule: .r11,
                    reason: "media key \(key) goes to \(sessions[index].client), which chooses the track"
                )
            )
        }
    }

    // MARK: - Derived state: gains, buttons, hint

    /// Brings the engine's session gains, the buttons' target, the secondary-audio hint and the alert light in
    /// line with the state, sending only what changed.
    private mutating func reconcile(_ out: inout [Decision], trigger: Trigger) {
        let duckers = sessions.filter(isDucking)
        for index in sessions.indices {
            let session = sessions[index]
            let silenced = isSilenced(session)
            let ducker = duckers.first { $0.id != session.id && !session.configuration.options.contains(.duckOthers) }
            let ducked = ducker != nil
            let level = session.configuration.level
            let gain = silenced ? Gain.silent : (ducked ? configuration.duckDepth : Gain.unity) * level.gain
            defer {
                sessions[index].emittedSilenced = silenced
                sessions[index].emittedDucked = ducked
                sessions[index].emittedLevel = level
                sessions[index].emittedGain = gain
                sessions[index].fresh = false
            }
            guard gain != session.emittedGain else { continue }
            let rule: Rule
            let ramp: Duration
            let reason: String
            if !silenced && (session.fresh ? !ducked : ducked == session.emittedDucked && level != session.emittedLevel)
            {
                rule = .r26
                ramp = session.fresh ? .zero : configuration.volumeRamp
                reason =
                    (session.fresh ? "it starts at its own level \(level)" : "its own level is now \(level)")
                    + (ducked ? ", under the duck depth" : "") + ", under its bus's volume"
            } else if silenced != session.emittedSilenced || (session.fresh && silenced) {
                rule = .r1
                ramp = session.fresh ? .zero : configuration.silenceRamp
                reason =
                    silenced
                    ? "silence switch on: \(session.configuration.category) sound is silenced"
                    : "silence switch off: \(session.configuration.category) sound returns"
            } else {
                rule = trigger == .silenceSwitch ? .m9 : .r7
                ramp = session.fresh ? .zero : ducked ? configuration.duckAttack : configuration.duckRelease
                if let ducker {
                    reason = "ducked by \(ducker.id) (duckOthers)"
                } else {
                    reason =
                        trigger == .silenceSwitch
                        ? "the ducking session is silenced, so it no longer ducks"
                        : "no ducking session is active any more"
                }
            }
            out.append(Decision(.setSessionGain(session.id, gain, ramp: ramp), rule: rule, reason: reason))
        }

        let target = buttonTarget
        if target != emittedButtonTarget {
            emittedButtonTarget = target
            let why: String
            switch target {
            case .ringer: why = "a ringer-bus session is sounding"
            case .system where sessions.contains { $0.configuration.bus != .ringer }:
                why = "an effect or music session is active"
            case .system: why = "nothing plays; idle target is system"
            }
            out.append(Decision(.notify(.buttonsControl(target)), rule: .r3, reason: why))
        }

        let hint = sessions.contains { session in
            (session.configuration.category == .playback || session.configuration.category == .playAndRecord)
                && !session.configuration.isMixable && isSounding(session)
        }
        if hint != emittedHint {
            emittedHint = hint
            out.append(
                Decision(
                    .notify(.secondaryAudioShouldBeSilenced(hint)),
                    rule: .r14,
                    reason: hint
                        ? "non-mixable playback is sounding: apps should silence secondary audio"
                        : "no non-mixable playback is sounding"
                )
            )
        }

        // A hearing warning's light that has been shown long enough is forgotten here, so that the next change of
        // the light is said with its own rule.
        var hearingLightEnded = false
        if let until = hearingState.lightUntil, now >= until {
            hearingState.lightUntil = nil
            hearingLightEnded = true
        }
        let light = alertLight
        if light != emittedAlertLight {
            emittedAlertLight = light
            let ringing = sessions.first { $0.configuration.bus == .ringer && $0.isPlaying && !$0.isInterrupted }
            let why: String
            var rule = Rule.r16
            if light, !mutedRingLight {
                rule = .r29
                why =
                    "a hearing warning: the alert light shows it for "
                    + "\(configuration.hearing.warningLight.milliseconds / 1000) s"
            } else if light, let ringing {
                why = "\(ringing.id) rings on the ringer bus, muted by the silence switch: the light shows it instead"
            } else if let ringing, silenceSwitch == .ring {
                why = "silence off: \(ringing.id) is heard again"
            } else if hearingLightEnded {
                rule = .r29
                why = "the hearing warning has been shown"
            } else {
                why = "no muted alert is ringing any more"
            }
            out.append(Decision(.setAlertLight(light), rule: rule, reason: why))
        }
    }

    /// R7, M9: an active, audible duckOthers session lowers the others. (duckOthers implies mixWithOthers, so a
    /// ducking session is never interrupted.)
    private func isDucking(_ session: SessionRecord) -> Bool {
        session.configuration.options.contains(.duckOthers) && !isSilenced(session)
    }
}
