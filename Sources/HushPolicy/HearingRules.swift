import HushCore

/// What a route's listener was exposed to over the last second (R29): hushd's level meter on the mix as it left for
/// the route, turned into dB(A) at the listener by the route's calibration, and the week's dose so far.
public struct Exposure: Hashable, Sendable, CustomStringConvertible {
    public var route: Route
    /// The momentary level at the listener, in dB(A).
    public var decibelsA: Double
    /// The week's sound dose (1 = 100 %: 80 dB(A) for 40 hours).
    public var dose: Double

    public init(route: Route, decibelsA: Double, dose: Double) {
        self.route = route
        self.decibelsA = decibelsA
        self.dose = dose
    }

    public var description: String {
        "\(DecimalText.fixed(decibelsA, places: 1)) dB(A) on \(route), dose \(Int((dose * 100).rounded(.down))) %"
    }
}

/// Where the hearing rules stand: the policy's, kept between events.
struct HearingState: Hashable, Sendable {
    /// Seconds in a row the momentary level has been over the limit.
    var loudSeconds = 0
    /// Since when it has been under the limit (for re-arming the momentary warning).
    var quietSince: Instant?
    /// A momentary warning was given and the person may have turned the volume up since: no other until re-armed.
    var loudWarned = false
    /// The highest multiple of 100 % the dose has been warned at.
    var doseWarned = 0
    /// The week's dose as last reported.
    var dose = 0.0
    /// A reduction under way: down to `target`, the next step at `next`.
    var reduction: (target: VolumeStep, next: Instant)?
    /// Until when the alert light shows the latest warning.
    var lightUntil: Instant?
    /// The session hushd plays the latest warning's sound in (R30), while it may still be active.
    var warningSession: SessionID?

    static func == (a: HearingState, b: HearingState) -> Bool {
        a.loudSeconds == b.loudSeconds && a.quietSince == b.quietSince && a.loudWarned == b.loudWarned
            && a.doseWarned == b.doseWarned && a.dose == b.dose && a.reduction?.target == b.reduction?.target
            && a.reduction?.next == b.reduction?.next && a.lightUntil == b.lightUntil
            && a.warningSession == b.warningSession
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(loudSeconds)
        hasher.combine(doseWarned)
        hasher.combine(reduction?.target)
    }
}

extension AudioPolicy {
    // MARK: - R27 hearing-start-level, R28 hearing-ceiling

    /// The full-scale reference's level at the listener on `route` at `step`, in dB(A); nil where the route has no
    /// calibration and is not private.
    public func referenceLevel(at step: VolumeStep, on route: Route) -> Double? {
        configuration.hearing.fullScale(on: route).map { $0 + Double(configuration.curve.decibels(at: step)) }
    }

    /// The highest step whose full-scale reference on `route` is at most `level` dB(A) (step 0, silence, always is).
    func highestStep(atMost level: Double, on route: Route) -> VolumeStep {
        guard let fullScale = configuration.hearing.fullScale(on: route) else { return .maximum }
        var step = VolumeStep.maximum
        while step > .minimum && fullScale + Double(configuration.curve.decibels(at: step)) > level + 1e-9 {
            step = step.moved(by: -1)
        }
        return step
    }

    /// The highest step any volume may take on `route`, and the rule that says so: the ceiling (R28), the enforced
    /// dose on a private route (R29); nil when nothing limits it.
    func volumeLimit(on route: Route, kind: VolumeKind) -> (step: VolumeStep, rule: Rule, why: String)? {
        let hearing = configuration.hearing
        var limit: (step: VolumeStep, rule: Rule, why: String)?
        if let ceiling = hearing.ceiling, hearing.fullScale(on: route) != nil {
            let step = highestStep(atMost: ceiling, on: route)
            if step < .maximum {
                limit = (
                    step, .r28, "the board's ceiling is \(DecimalText.fixed(ceiling, places: 0)) dB(A) on \(route)"
                )
            }
        }
        if kind == .system, hearing.privateRoutes.contains(route), hearingState.dose >= hearing.enforcedDose {
            let step = highestStep(atMost: hearing.startLimit, on: route)
            if limit == nil || step < limit!.step {
                limit = (
                    step, .r29,
                    "the week's sound dose is \(Int(hearingState.dose * 100)) %: the volume on \(route) stays at "
                        + "\(DecimalText.fixed(hearing.startLimit, places: 0)) dB(A) or below"
                )
            }
        }
        return limit
    }

    /// R27: the volume a private route starts at is at most the start limit's step. Returns the capped step.
    mutating func capStart(on target: Route, _ out: inout [Decision]) {
        let hearing = configuration.hearing
        guard hearing.privateRoutes.contains(target) else { return }
        let cap = highestStep(atMost: hearing.startLimit, on: target)
        let remembered = systemVolumes[target] ?? configuration.defaultSystemVolume
        guard remembered > cap else { return }
        systemVolumes[target] = cap
        let calibrated = hearing.fullScale[target] != nil
        out.append(
            Decision(
                .note("\(target) starts at system volume \(cap), not its remembered \(remembered)"),
                rule: .r27,
                reason: "a private route starts at no more than \(DecimalText.fixed(hearing.startLimit, places: 0)) "
                    + "dB(A) at the ear: full scale is "
                    + "\(DecimalText.fixed(hearing.fullScale(on: target) ?? 0, places: 0)) dB(A) there"
                    + (calibrated ? "" : " (not calibrated: the conservative assumption)")
            )
        )
    }

    /// R28: volumes over the ceiling's step on `route` come down to it.
    mutating func holdToCeiling(on target: Route, _ out: inout [Decision]) {
        for kind in VolumeKind.allCases {
            guard let limit = volumeLimit(on: target, kind: kind), limit.rule == .r28 else { continue }
            let current = kind == .system ? (systemVolumes[target] ?? configuration.defaultSystemVolume) : ringerVolume
            guard current > limit.step else { continue }
            if kind == .system { systemVolumes[target] = limit.step } else { ringerVolume = limit.step }
            out.append(
                Decision(
                    .note("the \(kind) volume on \(target) is held at \(limit.step), not \(current)"),
                    rule: .r28,
                    reason: limit.why
                )
            )
        }
    }

    // MARK: - R29 hearing-exposure

    /// A second's exposure on a route: warns and starts a reduction when the level stayed over the limit, or the
    /// dose passed another 100 %; at the enforced dose the volume stays down.
    mutating func exposure(_ exposure: Exposure, _ out: inout [Decision]) {
        let hearing = configuration.hearing
        guard exposure.route == route, hearing.privateRoutes.contains(route) else { return }
        hearingState.dose = exposure.dose
        let multiple = Int(exposure.dose.rounded(.down))
        if multiple < hearingState.doseWarned { hearingState.doseWarned = multiple }
        if exposure.decibelsA > hearing.momentaryLimit {
            hearingState.loudSeconds += 1
            hearingState.quietSince = nil
        } else {
            hearingState.loudSeconds = 0
            if hearingState.quietSince == nil { hearingState.quietSince = now }
            if let since = hearingState.quietSince, now - since >= hearing.rearmAfter {
                hearingState.loudWarned = false
            }
        }
        let enforced = exposure.dose >= hearing.enforcedDose
        if multiple >= 1, multiple > hearingState.doseWarned {
            hearingState.doseWarned = multiple
            warn(.dose, exposure, enforced: enforced, target: highestStep(atMost: hearing.startLimit, on: route), &out)
        } else if hearingState.loudSeconds > hearing.momentarySeconds, !hearingState.loudWarned {
            hearingState.loudWarned = true
            // Down by as much as the level is over the start limit, a step at a time.
            let over = exposure.decibelsA - hearing.startLimit
            let current = Double(configuration.curve.decibels(at: systemVolume))
            var target = systemVolume
            while target > .minimum, current - Double(configuration.curve.decibels(at: target)) < over {
                target = target.moved(by: -1)
            }
            warn(.loud, exposure, enforced: enforced, target: target, &out)
        } else if enforced, let limit = volumeLimit(on: route, kind: .system), systemVolume > limit.step,
            hearingState.reduction == nil
        {
            // The person may not keep it up at the enforced dose: down again, gradually.
            hearingState.reduction = (limit.step, now)
        }
    }

    private mutating func warn(
        _ kind: HearingWarning.Kind,
        _ exposure: Exposure,
        enforced: Bool,
        target: VolumeStep,
        _ out: inout [Decision]
    ) {
        let warning = HearingWarning(
            kind: kind,
            route: route,
            decibelsA: exposure.decibelsA,
            dosePercent: Int((exposure.dose * 100 + 1e-9).rounded(.down)),
            enforced: enforced
        )
        let hearing = configuration.hearing
        let why: String
        switch kind {
        case .loud:
            why =
                "\(DecimalText.fixed(exposure.decibelsA, places: 0)) dB(A) at the ear for more than "
                + "\(hearing.momentarySeconds) s, over the limit of \(DecimalText.fixed(hearing.momentaryLimit, places: 0)) "
                + "dB(A): the volume comes down gradually; the person may turn it up again"
        case .dose:
            why =
                "the week's sound dose passed \(warning.dosePercent / 100 * 100) % (100 % is 80 dB(A) for 40 hours): "
                + (enforced
                    ? "at \(Int(hearing.enforcedDose * 100)) % the volume comes down and stays down"
                    : "the volume comes down gradually; the person may turn it up again")
        }
        out.append(Decision(.notify(.hearingWarning(warning)), rule: .r29, reason: why))
        hearingState.lightUntil = now + hearing.warningLight
        if hearing.warningSound {
            // One that still sounds; one the console stopped is no reason to stay quiet.
            if let playing = hearingState.warningSession, session(playing)?.isPlaying == true {
                out.append(
                    Decision(
                        .note("the hearing warning sound in \(playing) is still playing"),
                        rule: .r30,
                        reason: "one warning sound at a time: a second would only be louder"
                    )
                )
            } else {
                out.append(
                    Decision(
                        .playWarningSound,
                        rule: .r30,
                        reason: "a board with no screen warns with a sound too: short, on the ringer bus"
                    )
                )
            }
        }
        if target < systemVolume {
            hearingState.reduction = (target, now)
        }
    }

    // MARK: - R30 hearing-warning-sound

    /// How the hearing warning's sound plays (R30): an alert on the ringer bus, at the ringer volume (R2), so that the
    /// reduction of the system volume does not take it down with the music; `ambient`, so the silence switch
    /// silences it as every alert (R1) and the alert light alone speaks (R29, R16); it mixes with what plays and
    /// ducks nothing: the music's only change is the reduction's, never faster than 1 dB per second (R29).
    public static let warningSoundConfiguration = SessionConfiguration(
        bus: .ringer,
        category: .ambient,
        options: [.mixWithOthers]
    )

    /// Whether `session` is hushd's hearing warning sound (R30).
    func isWarningSound(_ session: SessionRecord) -> Bool {
        session.client == .hushd && session.id == hearingState.warningSession
    }

    mutating func warningSound(_ id: SessionID, _ out: inout [Decision]) {
        // Known as the warning before it plays, so that the buttons' target is right from its first decision.
        let previous = hearingState.warningSession
        hearingState.warningSession = id
        let played = ownSound(
            id,
            Self.warningSoundConfiguration,
            rule: .r30,
            note: "is the hearing warning sound",
            silenced: "the silence switch is on: it plays silenced, as every alert (R1), and the alert light warns",
            heard: "an alert on the ringer bus at the ringer volume, mixed over what plays (no duck: only the "
                + "reduction lowers it); the volume buttons still move the system volume",
            &out
        )
        if !played { hearingState.warningSession = previous }
    }

    /// Steps a reduction under way down when its time has come: one volume step at a time, each ramped so that the
    /// level never falls faster than the configured rate (1 dB per second).
    mutating func continueReduction(_ out: inout [Decision]) {
        guard let reduction = hearingState.reduction else { return }
        guard systemVolume > reduction.target else {
            hearingState.reduction = nil
            return
        }
        guard reduction.next <= now else { return }
        let from = systemVolume
        let next = from.moved(by: -1)
        let drop = Double(configuration.curve.decibels(at: from) - configuration.curve.decibels(at: next))
        // The engine ramps the gain's amplitude in a straight line, so the level falls fastest at the ramp's end:
        // the ramp is long enough that even there it falls no faster than the rate.
        let ratio = next == .minimum ? 0.1 : Double(Gain(decibels: Float(-drop)).linear)  // to silence: as from -20 dB
        let seconds = 8.685_889_638 * (1 - ratio) / ratio / configuration.hearing.reductionRate  // 20 / ln 10
        systemVolumes[route] = next
        let ramp = Duration.milliseconds(Int64((seconds * 1000).rounded(.up)))
        let why =
            "hearing: the system volume on \(route) comes down from \(from) to \(next) over "
            + "\(DecimalText.fixed(seconds, places: 1)) s, towards \(reduction.target)"
        emitBusGains(&out, rule: .r29, reason: why, ramp: ramp)
        out.append(Decision(.notify(.volumeChanged(.system, next, route: route)), rule: .r29, reason: why))
        out.append(Decision(.persist(persistedVolumes), rule: .r29, reason: "remember the lowered volume"))
        hearingState.reduction = next > reduction.target ? (reduction.target, now + ramp) : nil
    }
}
