import HushCore
import HushPolicy

/// The interactive policy console: a person types events, sees every decision with its rule and reason.
///
/// Time comes from `clock`. With a real clock, `wait` sleeps through `sleep`; with a manual clock (tests, scripts
/// that must be reproducible) `wait` just moves the clock. Held-button repeats fire at the policy's deadlines.
package final class PolicyConsole {
    package private(set) var policy: AudioPolicy
    private let clock: any MonotonicClock
    /// What `version` prints: hushd's version and its libraries'.
    private let versionText: String
    private let sleep: (Instant) -> Void
    private let write: (String) -> Void
    private var nextSessionNumber: UInt64 = 1
    /// The session `play FILE` made last, for `stop` with no argument.
    private var lastPlayed: SessionID?
    /// When the console started: times are shown from here, not from boot.
    private let origin: Instant

    /// - Parameters:
    ///   - sleep: waits until the given instant has passed on `clock` (for a manual clock: advances it).
    ///   - write: prints one line.
    package init(
        configuration: PolicyConfiguration = PolicyConfiguration(),
        persisted: PersistedVolumes? = nil,
        clock: any MonotonicClock,
        versionText: String = "",
        sleep: @escaping (Instant) -> Void,
        write: @escaping (String) -> Void
    ) {
        policy = AudioPolicy(configuration: configuration, persisted: persisted)
        self.clock = clock
        self.versionText = versionText
        self.sleep = sleep
        self.write = write
        origin = clock.now()
        let startup = policy.start(at: origin)
        print(startup, because: "start-up")
    }

    /// When `tick()` must next run even if nothing is typed (a held button's repeat).
    package var nextDeadline: Instant? { policy.nextDeadline }

    /// Lets time pass: delivers what is due (held-button repeats).
    package func tick() {
        let decisions = policy.handle(.timePassed, at: clock.now())
        if !decisions.isEmpty { print(decisions, because: "time passed") }
    }

    /// Carries out one typed line. Returns false when the person asked to quit.
    @discardableResult
    package func perform(_ line: String) -> Bool {
        let parsed: ConsoleRequest?
        do {
            parsed = try ConsoleRequest.parse(line)
        } catch {
            write("error: \(error.message)")
            return true
        }
        guard let command = parsed else { return true }
        if let reason = command.unavailability(in: .policy) {
            write("error: \(reason)")
            return true
        }
        switch command {
        case .activate(nil, let client, let configuration):
            let id = nextSession()
            handle(.activate(id, client: client ?? ClientID(id.rawValue), configuration))
        case .playSound(_, let bus, _):
            // No sound here: a session as a running hushd's console would make for it, so its decisions show.
            let bus = bus ?? .music
            let id = nextSession()
            handle(.activate(id, client: ConsoleRequest.consoleClient, ConsoleRequest.defaultConfiguration(for: bus)))
            guard policy.session(id) != nil else { return true }
            handle(.play(id))
            lastPlayed = id
            write("\(id) plays on the \(bus) bus (no sound: hushd console runs the policy alone)")
        case .stop(.all):
            for session in policy.sessions { handle(.stop(session.id)) }
        case .stop(.lastPlayed):
            guard let lastPlayed, policy.session(lastPlayed) != nil else {
                write("nothing played from this console is still active")
                return true
            }
            handle(.stop(lastPlayed))
        case .release(nil) where policy.heldButton == nil:
            write("no volume button is held")
        case .volume(let kind, nil):
            write(kind == .system ? "system volume \(policy.systemVolume)" : "ringer volume \(policy.ringerVolume)")
        case .route(nil):
            write("route \(policy.route)" + (policy.routeOverride == nil ? " (automatic)" : " (override)"))
        case .wait(let duration):
            wait(until: clock.now() + duration)
        case .status:
            status().forEach(write)
        case .sessions:
            status().dropFirst(2).forEach(write)
        case .version:
            versionText.split(separator: "\n").forEach { write(String($0)) }
        case .help:
            ConsoleRequest.helpText(for: .policy).split(separator: "\n", omittingEmptySubsequences: false).forEach {
                write(String($0))
            }
        case .quit:
            return false
        default:
            for event in command.policyEvents(policy) ?? [] { handle(event) }
        }
        return true
    }

    /// The next session id no session has.
    private func nextSession() -> SessionID {
        while policy.session(SessionID(nextSessionNumber)) != nil { nextSessionNumber += 1 }
        defer { nextSessionNumber += 1 }
        return SessionID(nextSessionNumber)
    }

    private func handle(_ event: PolicyEvent) {
        print(policy.handle(event, at: clock.now()), because: "\(event)")
    }

    /// Waits until `end`, firing the policy's deadlines on the way.
    private func wait(until end: Instant) {
        while let deadline = policy.nextDeadline, deadline <= end {
            sleep(deadline)
            tick()
        }
        sleep(end)
    }

    private func print(_ decisions: [Decision], because event: String) {
        write("\(Instant(nanoseconds: clock.now().nanoseconds - origin.nanoseconds)) \(event)")
        for decision in decisions { write("  \(decision)") }
    }

    /// The state in lines that fit an 80-column terminal.
    package func status() -> [String] {
        let route = policy.routeOverride == nil ? "\(policy.route) (automatic)" : "\(policy.route) (override)"
        let curve = policy.configuration.curve
        var lines = [
            "silence switch \(policy.silenceSwitch), headphones \(policy.jack), route \(route)"
                + (policy.microphoneSwitch == .muted ? ", microphone MUTED" : ""),
            "system volume \(policy.systemVolume) (\(curve.gain(at: policy.systemVolume))), "
                + "ringer \(policy.ringerVolume) (\(curve.gain(at: policy.ringerVolume))), "
                + "buttons control \(policy.buttonTarget)",
        ]
        if policy.sessions.isEmpty {
            lines.append("no sessions")
        }
        for session in policy.sessions {
            var line = "\(session.id) (\(session.client)): \(session.configuration), \(session.state)"
            if session.isInterrupted {
                line += ", interrupted by " + session.interrupters.map { "\($0.rawValue)" }.joined(separator: ", ")
            }
            if let block = session.microphoneBlock { line += ", microphone off: \(block)" }
            lines.append(line)
        }
        return lines
    }
}
