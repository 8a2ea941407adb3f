import HushConsole
import HushCore
import HushPolicy
import HushSystem
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// The serial-console monitor of a running hushd: a banner and the status when the terminal connects, every
/// decision with its rule and reason as it happens, warnings and errors from the log, a one-line status when it
/// changes, and the console's commands (`ConsoleRequest`, in its `monitor` context).
///
/// Sessions started here (`play`) belong to the console, client 0. On boards whose inputs are terminal stand-ins
/// (the built-in default), `silence`, `press`, `tap`, `plug` and the hot keys act as the hardware.
package final class DaemonConsole: LoopParticipant {
    /// The console's own client id: sessions it plays belong to it.
    package static let client = ConsoleRequest.consoleClient

    package let console: SerialConsole
    unowned let daemon: Daemon
    /// Whether the terminal stands in for the switch, buttons and jack.
    package let standIns: Bool
    let banner: [String]
    let logLevel: LogLevelBox
    private var lastStatusLine = ""
    private var lastPlayed: SessionID?
    /// What `play FILE BUS` makes: the board's `[buses.*]` settings.
    let busDefaults: [Bus: SessionConfiguration]

    package init(
        console: SerialConsole,
        daemon: Daemon,
        standIns: Bool,
        banner: [String],
        logLevel: LogLevelBox,
        busDefaults: [Bus: SessionConfiguration] = [:]
    ) {
        self.busDefaults = busDefaults
        self.console = console
        self.daemon = daemon
        self.standIns = standIns
        self.banner = banner
        self.logLevel = logLevel
        // The closures reach the console and the daemon through `self` (unowned): the parameters of the same names
        // would be captured strongly, and the daemon and the console would keep each other alive.
        console.onConnect = { [unowned self] in
            for line in self.banner { self.console.print(line) }
            lastStatusLine = MonitorText.statusLine(of: self.daemon)
            self.console.print(lastStatusLine)
        }
        daemon.decisionSinks.append { [unowned self] batch in
            self.console.print(MonitorText.lines(for: batch).joined(separator: "\n"))
            printStatusIfChanged()
        }
        daemon.problemSinks.append { [unowned self] problem in self.console.print("problem: \(problem)") }
        daemon.finishedSinks.append { [unowned self] session in
            guard self.daemon.audio.policy.session(session)?.client == Self.client else { return }
            // A sound played from here that ended: its session is done.
            self.daemon.handle(
                .deactivate(session, notifyOthers: true),
                cause: "\(session) (console) finished playing"
            )
        }
    }

    package var pollRequests: [pollfd] {
        console.pollDescriptor.map { [pollfd(fd: $0, events: console.pollEvents, revents: 0)] } ?? []
    }

    package var nextDeadline: Instant? { console.nextDeadline }

    package func service(_ ready: [pollfd], now: Instant) {
        for line in console.service(now: now) { perform(line) }
        if console.inputEnded, case .standardIO = console.endpoint {
            // `make run` and pipes: end of input (^D) stops hushd, as quitting a program should.
            daemon.stopRequested = true
        }
    }

    /// Carries out one typed line and prints the answer.
    package func perform(_ line: String) {
        let command: ConsoleRequest?
        do {
            command = try ConsoleRequest.parse(line)
        } catch {
            console.print("error: \(error.message)")
            return
        }
        guard let command else { return }
        if let reason = command.unavailability(in: .monitor) {
            console.print("error: \(reason)")
            return
        }
        for answer in answer(command) { console.print(answer) }
        printStatusIfChanged()
    }

    private func printStatusIfChanged() {
        let line = MonitorText.statusLine(of: daemon)
        if line != lastStatusLine {
            lastStatusLine = line
            console.print(line)
        }
    }

    private func answer(_ command: ConsoleRequest) -> [String] {
        let policy = daemon.audio.policy
        switch command {
        case .help:
            return ConsoleRequest.helpText(for: .monitor).split(separator: "\n", omittingEmptySubsequences: false)
                .map(String.init)
        case .status:
            return MonitorText.status(of: daemon, version: Hushd.version)
        case .sessions:
            return MonitorText.status(of: daemon, version: Hushd.version).filter {
                $0.hasPrefix("session ") || $0 == "no sessions" || $0.hasPrefix("… and")
            }
        case .volume(.system, nil):
            return ["system volume \(policy.systemVolume) on the \(policy.route)"]
        case .volume(_, nil):
            return ["ringer volume \(policy.ringerVolume)"]
        case .route(nil):
            return ["route \(policy.route)" + (policy.routeOverride == nil ? " (automatic)" : " (override)")]
        case .playSound(let sound, let bus, let loop):
            return play(sound, bus: bus ?? .music, loop: loop)
        case .stop(let target):
            return stop(target)
        case .activate(let id, _, let configuration):
            return activate(id, configuration)
        case .deactivate(let id, let notify):
            guard let session = policy.session(id) else { return ["there is no \(id)"] }
            guard session.client == Self.client else {
                return ["\(id) belongs to \(session.client); stop \(id.rawValue) stops its sound"]
            }
            return rejections(daemon.handle(.deactivate(id, notifyOthers: notify), cause: "console: deactivate \(id)"))
        case .logLevel(nil):
            return ["log level \(logLevel.level)"]
        case .logLevel(let level?):
            logLevel.level = level
            return ["log level \(level)"]
        case .version:
            return Hushd.versionText.split(separator: "\n").map(String.init)
        case .quit:
            if case .standardIO = console.endpoint {
                daemon.stopRequested = true
                return ["hushd stops"]
            }
            return [
                "hushd keeps running: the console is the board's; leave the terminal program instead "
                    + "(picocom: Ctrl-A Ctrl-X, screen: Ctrl-A k)"
            ]
        case .silence, .press, .release, .tap, .jack:
            guard standIns else { return [notStandIn(command)] }
            return events(command, policy)
        case .key, .privacy, .volume, .route, .play, .pause, .level, .finished, .clientGone, .wait:
            // The privacy stand-in works on every board: R21 lets it close the microphone, never open the switch.
            return events(command, policy)
        }
    }

    /// A command that stands for policy events: each handled with the console as its cause.
    private func events(_ command: ConsoleRequest, _ policy: AudioPolicy) -> [String] {
        guard let events = command.policyEvents(policy) else { return [] }
        if events.isEmpty, case .release = command { return ["no volume button is held"] }
        return events.flatMap { rejections(daemon.handle($0, cause: "console: \(cause(of: $0))")) }
    }

    /// How a console event reads in the log: "up pressed", "silence switch", "system volume 9".
    private func cause(of event: PolicyEvent) -> String {
        switch event {
        case .input(.silenceSwitch): "silence switch"
        case .input(.microphoneSwitch(let position, _)): "privacy \(position == .muted ? "on" : "off")"
        case .input(.volumeButton(let button, .press)): "\(button) pressed"
        case .input(.volumeButton(let button, .release)): "\(button) released"
        case .input(.headphones(let state, _)): "headphones \(state == .plugged ? "plugged" : "unplugged")"
        case .setVolume(let kind, let step): "\(kind) volume \(step)"
        case .setRouteOverride(let route?): "route \(route)"
        case .setRouteOverride(nil): "route auto"
        default: "\(event)"
        }
    }

    private func notStandIn(_ command: ConsoleRequest) -> String {
        let what =
            switch command {
            case .silence: "the silence switch"
            case .jack: "the headphone jack"
            default: "the volume buttons"
            }
        return "\(what) is wired to this board; the console stands in for it only on boards whose inputs are "
            + "kind = \"terminal\" (the built-in default)"
    }

    /// The policy's refusals and notes, for the person who asked.
    private func rejections(_ decisions: [Decision]) -> [String] {
        decisions.compactMap {
            switch $0.command {
            case .reject(let rejection): "refused: \(rejection.message)"
            case .note(let text): text
            default: nil
            }
        }
    }

    /// A session of the console's with no sound of its own: to see what the policy does to the others.
    private func activate(_ id: SessionID?, _ configuration: SessionConfiguration) -> [String] {
        let session = id ?? daemon.newSessionID()
        if let existing = daemon.audio.policy.session(session), existing.client != Self.client {
            return ["\(session) belongs to \(existing.client); activate another id, or none for the next free one"]
        }
        var answers = rejections(
            daemon.handle(.activate(session, client: Self.client, configuration), cause: "console: activate \(session)")
        )
        if daemon.audio.policy.session(session) != nil {
            answers.append("\(session) is active with no sound (play \(session.rawValue) to start it)")
        }
        return answers
    }

    private func play(_ sound: ConsoleRequest.Sound, bus: Bus, loop: Bool) -> [String] {
        let session = daemon.newSessionID()
        let configuration = busDefaults[bus] ?? ConsoleRequest.defaultConfiguration(for: bus)
        var answers = rejections(
            daemon.handle(.activate(session, client: Self.client, configuration), cause: "console: play on \(bus)")
        )
        guard daemon.audio.policy.session(session) != nil else { return answers }
        do {
            switch sound {
            case .file(let path): try daemon.audio.attach(.file(path), to: session, loop: loop)
            case .tone(let hertz): try daemon.audio.attach(.tone(Double(hertz)), to: session, loop: true)
            }
        } catch {
            daemon.handle(.deactivate(session, notifyOthers: true), cause: "console: the sound could not be played")
            return answers + ["error: \(error.description)"]
        }
        answers += rejections(daemon.handle(.play(session), cause: "console: play \(session)"))
        lastPlayed = session
        answers.append("\(session) plays on the \(bus) bus (stop \(session.rawValue) to stop it)")
        return answers
    }

    private func stop(_ target: ConsoleRequest.StopTarget) -> [String] {
        let policy = daemon.audio.policy
        let sessions: [SessionID]
        switch target {
        case .all: sessions = policy.sessions.map(\.id)
        case .session(let id): sessions = [id]
        case .lastPlayed:
            guard let lastPlayed, policy.session(lastPlayed) != nil else {
                return ["nothing played from this console is still playing"]
            }
            sessions = [lastPlayed]
        }
        var answers: [String] = []
        for id in sessions {
            guard let session = policy.session(id) else {
                answers.append("there is no \(id)")
                continue
            }
            if session.client == Self.client {
                daemon.handle(.deactivate(id, notifyOthers: true), cause: "console: stop \(id)")
            } else {
                // Another client's session: stop its sound; the session stays its owner's.
                answers += rejections(daemon.handle(.stop(id), cause: "console: stop \(id) of \(session.client)"))
            }
        }
        return answers
    }
}

/// The log level, shared by every logger of the process and changed from the console (`log level debug`).
package final class LogLevelBox: @unchecked Sendable {
    package var level: Logger.Level
    package init(_ level: Logger.Level) { self.level = level }
}
