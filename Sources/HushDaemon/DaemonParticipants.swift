import HushALSA
import HushConfiguration
import HushCore
import HushHearing
import HushOutput
import HushPolicy
import HushProtocol
import HushSystem
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// The state file in hushd's loop: the policy's `persist` decisions are saved (at most once a second, by the
/// store), pending writes flushed when due and at shutdown.
final class StateParticipant: LoopParticipant {
    let store: StateStore
    unowned let daemon: Daemon

    init(store: StateStore, daemon: Daemon) {
        self.store = store
        self.daemon = daemon
        daemon.decisionSinks.append { [unowned self] batch in
            for decision in batch.decisions {
                if case .persist(let volumes) = decision.command {
                    self.store.save(volumes, now: self.daemon.clock.now())
                }
            }
        }
    }

    var pollRequests: [pollfd] { [] }
    var nextDeadline: Instant? { store.nextDeadline }
    func service(_ ready: [pollfd], now: Instant) { store.flush(now: now) }
}

/// hushd's volumes and silence switch as ALSA user controls on the output card: set when the policy changes them;
/// a change someone makes with amixer or alsamixer goes through the policy like a button press.
final class VolumeControlsParticipant: LoopParticipant {
    let controls: ALSAVolumeControls
    unowned let daemon: Daemon
    private var failing = false

    init(controls: ALSAVolumeControls, daemon: Daemon) {
        self.controls = controls
        self.daemon = daemon
        daemon.decisionSinks.append { [unowned self] _ in show() }
        show()
    }

    var pollRequests: [pollfd] {
        controls.pollDescriptor.map { [pollfd(fd: $0, events: Int16(POLLIN), revents: 0)] } ?? []
    }

    var nextDeadline: Instant? { controls.nextDeadline }

    func service(_ ready: [pollfd], now: Instant) {
        for change in controls.readChanges(now: now) {
            daemon.handle(
                .setVolume(change.kind, change.step),
                cause: "\(change.kind) volume set to \(change.step) on the mixer control"
            )
        }
        show()
    }

    /// Shows the policy's volumes on the controls (the store skips unchanged values).
    private func show() {
        let policy = daemon.audio.policy
        do {
            try controls.set(.system, policy.systemVolume)
            try controls.set(.ringer, policy.ringerVolume)
            try controls.setSilence(policy.silenceSwitch == .silent)
            failing = false
        } catch {
            if !failing { daemon.logger.error("\(controls.name): \(error.description)") }
            failing = true
        }
    }
}

/// systemd's watchdog: pinged from the loop, so a hung loop is restarted by systemd.
final class WatchdogParticipant: LoopParticipant {
    let notifier: SystemdNotifier
    let interval: Duration
    private var next: Instant

    init(notifier: SystemdNotifier, interval: Duration, now: Instant) {
        self.notifier = notifier
        self.interval = interval
        next = now
    }

    var pollRequests: [pollfd] { [] }
    var nextDeadline: Instant? { next }

    func service(_ ready: [pollfd], now: Instant) {
        guard now >= next else { return }
        notifier.watchdog()
        next = now + interval
    }
}

/// A route's mixer switches (`[routes.NAME] switches`), set in order whenever the policy selects the route, and
/// once at start-up for the route hushd starts on: headphones turn the speaker amplifier's switch off, the speaker
/// turns it back on.
///
/// A switch that cannot be set is logged, naming the route, card and control, and the rest are still set: sound
/// on the wrong amplifier is better than none. The next selection of the route tries again.
final class RouteSwitches {
    typealias Setter = (HushdConfiguration.MixerSwitch) throws(HardwareError) -> Void
    let switches: [Route: [HushdConfiguration.MixerSwitch]]
    unowned let daemon: Daemon
    private let setter: Setter

    init(switches: [Route: [HushdConfiguration.MixerSwitch]], daemon: Daemon, setter: @escaping Setter) {
        self.switches = switches.filter { !$0.value.isEmpty }
        self.daemon = daemon
        self.setter = setter
        daemon.decisionSinks.append { [unowned self] batch in
            for decision in batch.decisions {
                if case .selectRoute(let route) = decision.command { apply(route) }
            }
        }
        apply(daemon.audio.policy.route)
    }

    /// The real switches: each through its card's control interface, as `amixer cset` would.
    static func alsa(_ mixerSwitch: HushdConfiguration.MixerSwitch) throws(HardwareError) {
        try ALSAElementClient(card: mixerSwitch.card).set(mixerSwitch.element, to: mixerSwitch.value)
    }

    func apply(_ route: Route) {
        for mixerSwitch in switches[route] ?? [] {
            let what = "\(mixerSwitch.element) on card '\(mixerSwitch.card)'"
            do {
                try setter(mixerSwitch)
                daemon.logger.info("route \(route): \(what) \(Self.describe(mixerSwitch))")
            } catch {
                daemon.logger.error(
                    "route \(route): \(what) left as it was (wanted \(Self.describe(mixerSwitch))): \(error.description)"
                )
                for sink in daemon.problemSinks { sink("route \(route): \(error.description)") }
            }
        }
    }

    static func describe(_ mixerSwitch: HushdConfiguration.MixerSwitch) -> String {
        mixerSwitch.element.name.hasSuffix("Switch")
            ? (mixerSwitch.value == 0 ? "off" : "on") : "set to \(mixerSwitch.value)"
    }
}

/// The capture card's own switch (`[capture] privacy_control`, "Capture Switch"), turned off while the microphone
/// privacy switch is on (R21) and put back as it was when the switch opens: the codec stops listening too. hushd's
/// own gate holds without it, so a card without the control is said once, at notice level, and is no error.
final class CaptureCardSwitch {
    /// Reads the control's value, nil when the card has no such control; writes a value to all its channels.
    struct Control {
        var read: () throws(HardwareError) -> Int?
        var write: (Int) throws(HardwareError) -> Void
    }
    let card: String
    let element: ALSAElementName
    unowned let daemon: Daemon
    private let control: Control
    /// The value found before hushd turned it off, to put back.
    private var saved: Int?
    private var reportedMissing = false

    init(card: String, element: ALSAElementName, daemon: Daemon, control: Control) {
        self.card = card
        self.element = element
        self.daemon = daemon
        self.control = control
        daemon.decisionSinks.append { [unowned self] batch in
            for decision in batch.decisions {
                if case .muteMicrophone(let muted) = decision.command { apply(muted: muted) }
            }
        }
        // The switch read at start-up came before this existed.
        if daemon.audio.policy.microphoneSwitch == .muted { apply(muted: true) }
    }

    /// The real control, through the card's control interface, as `amixer cset` would.
    static func alsa(card: String, element: ALSAElementName) -> Control {
        Control(
            read: { () throws(HardwareError) -> Int? in
                let client = try ALSAElementClient(card: card)
                guard client.info(element) != nil else { return nil }
                return try client.read(element)
            },
            write: { (value) throws(HardwareError) in try ALSAElementClient(card: card).set(element, to: value) }
        )
    }

    func apply(muted: Bool) {
        let what = "\(element) on card '\(card)'"
        do {
            if muted {
                guard let value = try control.read() else {
                    if !reportedMissing {
                        daemon.logger.notice(
                            "microphone privacy: card '\(card)' has no \(element); hushd's own silence holds [R21]"
                        )
                    }
                    reportedMissing = true
                    return
                }
                saved = value
                try control.write(0)
                daemon.logger.notice("microphone privacy: \(what) off [R21]")
            } else if let value = saved {
                try control.write(value)
                saved = nil
                daemon.logger.notice("microphone privacy: \(what) back \(value == 0 ? "off" : "on"), as it was [R21]")
            }
        } catch {
            let text =
                "microphone privacy: \(what) left as it was (wanted \(muted ? "off" : "on")): \(error.description); "
                + "hushd's own silence still holds [R21]"
            daemon.logger.error("\(text)")
        }
    }
}

/// The alert light (`[outputs.alert_led]`), lit and put out as the policy decides (R16). Put out when hushd stops,
/// so a light left on means hushd is still running.
final class AlertLight {
    let line: any OutputLine
    unowned let daemon: Daemon
    private(set) var lit = false
    private var failing = false

    init(line: any OutputLine, daemon: Daemon) {
        self.line = line
        self.daemon = daemon
        daemon.decisionSinks.append { [unowned self] batch in
            for decision in batch.decisions {
                if case .setAlertLight(let on) = decision.command { set(on) }
            }
        }
        set(daemon.audio.policy.alertLight)
    }

    func set(_ on: Bool) {
        do {
            try line.set(on)
            lit = on
            if failing { daemon.logger.notice("\(line.name): the alert light works again") }
            failing = false
        } catch {
            if !failing { daemon.logger.error("alert light: \(error.description)") }
            failing = true
        }
    }
}

/// A light hushd drives from its own state: the microphone light (`[outputs.mic_led]`), lit exactly while an
/// application receives the microphone's samples — the privacy indicator phones have. Put out when hushd stops.
final class IndicatorLight {
    let line: any OutputLine
    let what: String
    let logger: Logger
    private(set) var lit = false
    private var failing = false

    init(line: any OutputLine, what: String, logger: Logger) {
        self.line = line
        self.what = what
        self.logger = logger
        set(false)
    }

    func set(_ on: Bool) {
        do {
            try line.set(on)
            lit = on
            if failing { logger.notice("\(line.name): the \(what) works again") }
            failing = false
        } catch {
            if !failing { logger.error("\(what): \(error.description)") }
            failing = true
        }
    }
}

/// Hearing safety in hushd's loop (policy R29): the tap measures while the route in use is private; once a second
/// each measured second becomes dB(A) at the ear by the route's calibration (or the assumption), the week's dose
/// grows, and the policy hears of it (`.exposure`), which may warn and lower the volume.
final class HearingParticipant: LoopParticipant {
    let tap: HearingTap
    unowned let daemon: Daemon
    /// Where the dose is kept between runs (with the volumes, at most once a minute; at a clean stop).
    let store: StateStore?
    /// The week's dose (1 = 100 %), per wall-clock hour.
    private(set) var dose = SoundDose()
    /// The latest second measured: the route and its level at the listener.
    private(set) var latest: (route: Route, decibelsA: Double)?
    private var next: Instant?

    /// The hour of the wall clock the dose is kept by (hours since 1970).
    static var hour: Int64 { Int64(time(nil) / 3600) }

    /// The week's dose now, in percent.
    var dosePercent: Double { dose.fraction(at: Self.hour) * 100 }

    /// What status (the socket's and the console's) says of hearing safety under `policy`.
    func status(_ policy: AudioPolicy) -> ControlStatus.Hearing {
        let configuration = policy.configuration.hearing
        return ControlStatus.Hearing(
            privateRoutes: configuration.privateRoutes.map(\.name).sorted(),
            measuring: tap.isActive,
            decibelsA: latest?.decibelsA,
            route: latest?.route.name,
            dosePercent: dosePercent,
            calibrated: configuration.fullScale[policy.route] != nil
        )
    }

    init(tap: HearingTap, daemon: Daemon, store: StateStore?) {
        self.tap = tap
        self.daemon = daemon
        self.store = store
        if let text = store?.soundDose, !text.isEmpty {
            do {
                dose = try SoundDose(encoded: text)
                let percent = Int(dosePercent.rounded())
                daemon.logger.info("hearing: the week's sound dose restored from \(store!.path): \(percent) %")
            } catch {
                daemon.logger.warning(
                    "hearing: the sound dose in \(store!.path) is not readable (\(error)); it starts at 0"
                )
            }
        }
        daemon.decisionSinks.append { [unowned self] _ in follow() }
        follow()
    }

    /// Measures while a private route is in use (and, from the next decision on, again after the output slept).
    private func follow() {
        let policy = daemon.audio.policy
        let wanted = policy.configuration.hearing.privateRoutes.contains(policy.route)
        tap.setActive(wanted)
        if wanted, next == nil { next = daemon.clock.now() + .seconds(1) }
        if !wanted { next = nil }
    }

    var pollRequests: [pollfd] { [] }
    var nextDeadline: Instant? { next }

    func service(_ ready: [pollfd], now: Instant) {
        guard next.map({ $0 <= now }) ?? false else { return }
        next = now + .seconds(1)
        let levels = tap.takeLevels()
        if levels.isEmpty && daemon.outputCounters.idle {
            // Nothing plays and the audio thread sleeps: so do the tap and this. The next decision (a sound
            // starting is one) wakes them again.
            tap.setActive(false)
            next = nil
            return
        }
        let policy = daemon.audio.policy
        let route = policy.route
        guard let fullScale = policy.configuration.hearing.fullScale(on: route) else { return }
        let hour = Self.hour
        for level in levels {
            let decibelsA = fullScale + level
            dose.add(decibelsA: decibelsA, seconds: 1, hour: hour)
            latest = (route, decibelsA)
            daemon.handle(
                .exposure(Exposure(route: route, decibelsA: decibelsA, dose: dose.fraction(at: hour))),
                cause: "hearing: \(Int(decibelsA.rounded())) dB(A) at the ear on \(route) over the last second"
            )
        }
        if !levels.isEmpty {
            store?.saveSoundDose(dose.encoded, volumes: daemon.audio.policy.persistedVolumes, now: now)
        }
    }
}
