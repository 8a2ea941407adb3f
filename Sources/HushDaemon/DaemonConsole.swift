import HushCore
import HushPolicy
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// The serial-console monitor of a running hushd: a banner and the status when the terminal connects, every
/// decision with its rule and reason as it happens, warnings and errors from the log, a one-line status when it
/// changes, and the monitor's commands (`MonitorCommand`).
///
/// Sessions started here (`play`) belong to the console, client 0. On boards whose inputs are terminal stand-ins
/// (the built-in default), `silence`, `press`, `tap`, `plug` and the hot keys act as the hardware.
public final class DaemonConsole: LoopParticipant {
    /// The console's own client id: sessions it plays belong to it.
    public static let client = ClientID(0)

    public let console: SerialConsole
    unowned let daemon: Daemon
    /// Whether the terminal stands in for the switch, buttons and jack.
    public let standIns: Bool
    let banner: [String]
    let logLevel: LogLevelBox
    private var lastStatusLine = ""
    private var lastPlayed: SessionID?

    public init(console: SerialConsole, daemon: Daemon, standIns: Bool, banner: [String], logLevel: LogLevelBox) {
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

    public var pollRequests: [pollfd] {
        console.pollDescriptor.map { [pollfd(fd: $0, events: console.pollEvents, revents: 0)] } ?? []
    }

    public var nextDeadline: Instant? { console.nextDeadline }

    public func service(_ ready: [pollfd], now: Instant) {
        for line in console.service(now: now) { perform(line) }
        if console.inputEnded, case .standardIO = console.endpoint {
            // `make run` and pipes: end of input (^D) stops hushd, as quitting a program should.
            daemon.stopRequested = true
        }
    }

    /// Carries out one typed line and prints the answer.
    public func perform(_ line: String) {
        let command: MonitorCommand?
        do {
            command = try MonitorCommand.parse(line)
        } catch {
            console.print("error: \(error.message)")
            return
        }
        guard let command else { return }
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

    // swift-format-ignore: NoBlockComments
    private func answer(_ command: MonitorCommand) -> [String] {
        let policy = daemon.audio.policy
        switch command {
        case .help:
            return MonitorCommand.helpText.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        case .status:
            return MonitorText.status(of: daemon, version: HushdCommand.version)
        case .sessions:
            let sessions = MonitorText.status(of: daemon, version: HushdCommand.version).filter {
                $0.hasPrefix("session ") || $0 == "no sessions" || $0.hasPrefix("… and")
            }
            return sessions
        case .volume(nil):
            return ["system volume \(policy.systemVolume) on the \(policy.route)"]
        case .ringer(nil):
            return ["ringer volume \(policy.ringerVolume)"]
        case .volume(let setting?):
            return change(.system, setting)
        case .ringer(let setting?):
            return change(.ringer, setting)
        case .route(nil):
            return ["route \(policy.route)" + (policy.routeOverride == nil ? " (automatic)" : " (override)")]
        case .route(.automatic?):
            return rejections(daemon.handle(.setRouteOverride(nil), cause: "console: route auto"))
        case .route(.route(let route)?):
            return rejections(daemon.handle(.setRouteOverride(route), cause: "console: route \(route)"))
        case .play(let sound, let bus, let loop):
            return play(sound, bus: bus ?? .music, loop: loop)
        case .stop(let target):
            return stop(target)
        case .logLevel(nil):
            return ["log level \(logLevel.level)"]
        case .logLevel(let level?):
            logLevel.level = level
            return ["log level \(level)"]
        case .version:
            return HushdCommand.versionText.split(separator: "\n").map(String.init)
        case .silence(let position):
            guard standIns else { return [notStandIn("the silence switch")] }
            let silent: Bool
            switch position {
            case .on: silent = true
            case .off: silent = false
            case .toggle: silent = policy.silenceSwitch != .silent
            }
            daemon.handle(.input(.silenceSwitch(silent ? .silent : .ring)), cause: "console: silence switch")
            return []
        case .press(let button):
            guard standIns else { return [notStandIn("the volume buttons")] }
            daemon.handle(.input(.volumeButton(button, .press)), cause: "console: \(button) pressed")
            return []
        case .release:
            guard standIns else { return [notStandIn("the volume buttons")] }
            guard let button = policy.heldButton else { return ["no volume button is held"] }
            daemon.handle(.input(.volumeButton(button, .release)), cause: "console: \(button) released")
            return []
        case .tap(let button):
            guard standIns else { return [notStandIn("the volume buttons")] }
            daemon.handle(.input(.volumeButton(button, .press)), cause: "console: \(button) pressed")
            daemon.handle(.input(.volumeButton(button, .release)), cause: "console: \(button) released")
            return []
        case .jack(let change):
            guard standIns else { return [notStandIn("the headphone jack")] }
            let plugged: Bool
            switch change {
            case .plug: plugged = true
            case .unplug: plugged = false
            case .toggle: plugged = policy.jack != .plugged
            }
            daemon.handle(
                .input(.headphones(plugged ? .plugged : .unplugged, source: .console)),
                cause: "console: headphones \(plugged ? "plugged" : "unplugged")"
            )
            return []
        }
    }

    private func notStandIn(_ what: String) -> String {
        "\(what) is wired to this board; the console stands in for it only on boards whose inputs are "
            + "kind = \"terminal\" (the built-in default)"
    }

    private func change(_ kind: VolumeKind, _ setting: MonitorCommand.VolumeSetting) -> [String] {
        let policy = daemon.audio.policy
        let current = kind == .system ? policy.systemVolume : policy.ringerVolume
        let target: VolumeStep
        switch setting {
        case .up: target = current.moved(by: 1)
        case .down: target = current.moved(by: -1)
        case .step(let step): target = step
        }
        return rejections(daemon.handle(.setVolume(kind, target), cause: "console: \(kind) volume \(target)"))
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

    private func play(_ sound: MonitorCommand.Sound, bus: Bus, loop: Bool) -> [String] {
        let session = daemon.newSessionID()
        // The category a person means: music is media (playback), effects are ambient, the ringer rings.
        let category: HushCore.Category = bus == .effect ? .ambient : .playback
        let configuration = SessionConfiguration(bus: bus, category: category)
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

    private func stop(_ target: MonitorCommand.StopTarget) -> [String] {
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
public final class LogLevelBox: @unchecked Sendable {
    public var level: Logger.Level
    public init(_ level: Logger.Level) { self.level = level }
}
