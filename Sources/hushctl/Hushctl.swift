import ArgumentParser
import HushCore
import HushProtocol

#if canImport(Glibc)
import Glibc
#endif

/// hushctl: talks to hushd over its control socket (docs/protocol.md).
@main
struct Hushctl: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hushctl",
        abstract: "Control hushd: volumes, route, sessions, sounds and the event stream.",
        discussion: """
            The socket is --socket PATH, else $HUSH_SOCKET, else the first that answers of: where hushd with no \
            configuration would listen if you started it here ('make run'), then the others of \
            /run/hush/control.sock, $XDG_RUNTIME_DIR/hush-control.sock and /tmp/hush-UID-control.sock.

            Sessions belong to their connection: 'play' holds its connection until the sound ends; 'shell' sends \
            typed commands on one connection.
            """,
        subcommands: [
            Status.self, Volume.self, Ringer.self, Route.self, Events.self, Play.self, Ringtone.self, Alarm.self,
            Shell.self, Version.self,
        ],
        defaultSubcommand: Status.self
    )

    // Also here, so `hushctl --socket PATH --json status` works as well as `hushctl status --json`.
    @OptionGroup var options: GlobalOptions
}

/// Options every command takes.
struct GlobalOptions: ParsableArguments {
    @Option(
        name: .long,
        help: "The control socket (default $HUSH_SOCKET, else the first of hushd's usual places that answers)."
    )
    var socket: String?

    @Flag(name: .long, help: "Print hushd's JSON instead of text.")
    var json = false

    /// The socket the person named (`--socket`, else `$HUSH_SOCKET`), or nil to look in the usual places.
    var namedSocket: String? {
        if let socket { return socket }
        if let environment = getenv("HUSH_SOCKET"), environment.pointee != 0 { return String(cString: environment) }
        return nil
    }

    /// Connects to the named socket, or else to the first of ``ControlSocketLocation/clientCandidates`` that
    /// answers: a hushd's socket without a configuration depends on who started it and where (root or the system
    /// hushd: /run/hush; `make run` as a person: their runtime directory), and hushctl follows the same rule.
    /// A named socket is the only one tried: the person asked for that hushd.
    ///
    /// - Throws: ``Failure`` naming every path tried and why each did not answer.
    func connect() throws -> ControlConnection {
        if let path = namedSocket {
            do {
                return try ControlConnection(path: path)
            } catch {
                throw Failure(error.description)
            }
        }
        let candidates = ControlSocketLocation().clientCandidates
        var reasons: [String] = []
        for path in candidates {
            do {
                return try ControlConnection(path: path)
            } catch {
                reasons.append("  \(path): " + (error.code == ENOENT ? "no such file" : error.reason))
            }
        }
        throw Failure(
            (["hushctl: cannot reach hushd; no --socket or $HUSH_SOCKET, so hushctl tried:"] + reasons + [
                "Is hushd running? For a hushd whose [control] socket is elsewhere, give --socket PATH or set "
                    + "HUSH_SOCKET."
            ]).joined(separator: "\n")
        )
    }
}

/// A message for stderr and exit status 1, without ArgumentParser's usage text.
struct Failure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Runs `body`, turning connection failures into a one-line message and exit status 1.
func reporting(_ body: () throws -> Void) throws {
    do {
        try body()
    } catch let failure as Failure {
        printError(failure.description)
        throw ExitCode.failure
    } catch let failure as ClientFailure {
        printError(failure.description)
        throw ExitCode.failure
    }
}

func printError(_ text: String) { writeAll(2, text + "\n") }

/// Prints a line straight to the descriptor (no stdio buffer), so a log file or pipe sees events as they happen.
func say(_ text: String) { writeAll(1, text + "\n") }

func writeAll(_ fd: Int32, _ text: String) {
    let bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
        let count = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        if count < 0 && errno == EINTR { continue }
        guard count > 0 else { return }
        offset += count
    }
}

func sayJSON(_ line: [UInt8]) {
    say(String(decoding: line, as: UTF8.self))
}

struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show switch, route, volumes, sessions and output.")
    @OptionGroup var options: GlobalOptions

    func run() throws {
        try reporting {
            let connection = try options.connect()
            let reply = try connection.expectOK(.status)
            guard let status = reply.status else { throw Failure("hushctl: hushd's status reply has no status") }
            if options.json {
                say(String(decoding: ControlCodec().encode(status).dropLast(), as: UTF8.self))
            } else {
                for line in ControlText.status(status) { say(line) }
            }
        }
    }
}

/// `up`, `down` or a step, as `volume` and `ringer` take it.
enum VolumeArgument: ExpressibleByArgument {
    case up, down
    case step(Int)

    init?(argument: String) {
        switch argument {
        case "up", "+": self = .up
        case "down", "-": self = .down
        default:
            guard let step = Int(argument), VolumeStep(rawValue: step) != nil else { return nil }
            self = .step(step)
        }
    }

    var command: (VolumeKind) -> ControlCommand {
        switch self {
        case .up: { .setVolume($0, .delta(1)) }
        case .down: { .setVolume($0, .delta(-1)) }
        case .step(let step): { .setVolume($0, .step(VolumeStep(clamping: step))) }
        }
    }
}

func volume(_ kind: VolumeKind, _ change: VolumeArgument?, _ options: GlobalOptions) throws {
    try reporting {
        let connection = try options.connect()
        if options.json { connection.onLine = sayJSON }
        let reply = try connection.expectOK(change.map { $0.command(kind) } ?? .getVolume(kind))
        guard !options.json else { return }
        guard let report = reply.volume else { throw Failure("hushctl: hushd's volume reply has no volume") }
        say(ControlText.volume(report))
    }
}

struct Volume: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the system volume, or move it: up, down, or a step 0-16."
    )
    @OptionGroup var options: GlobalOptions
    @Argument(help: "up, down, or a step from 0 to 16.") var change: VolumeArgument?

    func run() throws { try volume(.system, change, options) }
}

struct Ringer: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the ringer volume, or move it: up, down, or a step 0-16."
    )
    @OptionGroup var options: GlobalOptions
    @Argument(help: "up, down, or a step from 0 to 16.") var change: VolumeArgument?

    func run() throws { try volume(.ringer, change, options) }
}

struct Route: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the route, or pick one: speaker, headphones, another configured route, or auto."
    )
    @OptionGroup var options: GlobalOptions
    @Argument(help: "speaker, headphones, another configured route, or auto.") var name: String?

    func run() throws {
        try reporting {
            let connection = try options.connect()
            if options.json { connection.onLine = sayJSON }
            let reply = try connection.expectOK(
                name.map { .setRoute($0 == "auto" ? nil : HushCore.Route($0)) } ?? .getRoute
            )
            guard !options.json else { return }
            guard let report = reply.route else { throw Failure("hushctl: hushd's route reply has no route") }
            say(ControlText.route(report))
        }
    }
}

struct Events: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Follow hushd's events until ^C, one line each.",
        discussion: "Kinds: " + ControlEventKind.allCases.map(\.rawValue).joined(separator: ", ")
    )
    @OptionGroup var options: GlobalOptions
    @Option(name: .customLong("only"), parsing: .upToNextOption, help: "Only these kinds of event.")
    var kinds: [String] = []

    func run() throws {
        try reporting {
            var filter: Set<ControlEventKind>?
            if !kinds.isEmpty {
                filter = []
                for name in kinds.flatMap({ $0.split(separator: ",").map(String.init) }) {
                    guard let kind = ControlEventKind(rawValue: name) else {
                        throw Failure(
                            "hushctl: '\(name)' is not an event kind; kinds: "
                                + ControlEventKind.allCases.map(\.rawValue).joined(separator: ", ")
                        )
                    }
                    filter?.insert(kind)
                }
            }
            let stop = StopSignal.install()
            let connection = try options.connect()
            _ = try connection.expectOK(.subscribe(filter))
            try follow(connection, stop: stop, until: nil) { message, line in
                guard case .event(let event) = message else { return false }
                say(options.json ? String(decoding: line, as: UTF8.self) : ControlText.event(event))
                return false
            }
        }
    }
}

/// Waits for lines from hushd until `handle` returns true, a stop signal arrives or `deadline` (milliseconds on
/// CLOCK_MONOTONIC) passes. Returns why it stopped.
enum FollowEnd { case handled, stopped, timeUp }

@discardableResult
func follow(
    _ connection: ControlConnection,
    stop: Int32,
    until deadline: Int64?,
    _ handle: (ServerMessage, [UInt8]) throws -> Bool
) throws -> FollowEnd {
    var last: [UInt8] = []
    connection.onLine = { last = $0 }
    defer { connection.onLine = nil }
    while true {
        while connection.hasBufferedLine {
            if let message = try connection.nextMessage(timeout: 0), try handle(message, last) { return .handled }
        }
        var timeout: Int32 = -1
        if let deadline {
            let left = deadline - monotonicMilliseconds()
            if left <= 0 { return .timeUp }
            timeout = Int32(clamping: left)
        }
        var requests = [
            pollfd(fd: connection.fd, events: Int16(POLLIN), revents: 0),
            pollfd(fd: stop, events: Int16(POLLIN), revents: 0),
        ]
        let ready = poll(&requests, 2, timeout)
        if ready < 0 { continue }  // EINTR: the signal's byte is in the pipe
        if requests[1].revents != 0 { return .stopped }
        if requests[0].revents != 0 { try connection.readAvailable() }
    }
}

func monotonicMilliseconds() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
}

extension Bus: ExpressibleByArgument {}
extension HushCore.Category: ExpressibleByArgument {}

/// `--gain -10`, `--gain -3.5dB`: a session's own level (policy R26).
extension SessionLevel: ExpressibleByArgument {
    public init?(argument: String) { self.init(text: argument) }

    public var defaultValueDescription: String { description }
}

struct Play: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Activate a session, play a file or a tone into it, and hold it until the sound ends.",
        discussion: """
            Stays connected until the sound finishes, --for SECONDS pass, or ^C; then deactivates the session \
            with notifyOthers, so what it interrupted may resume. Interruptions are printed as they happen.
            """
    )
    @OptionGroup var options: GlobalOptions
    @Argument(help: "A sound file on hushd's machine (not needed with --tone).") var file: String?
    @Option(help: "effect, music or ringer.") var bus: Bus = .music
    @Option(
        help: """
            ambient, soloAmbient, playback, record or playAndRecord (default: ambient on effect, playback on \
            music, soloAmbient on ringer: a ringtone, silenced by the switch; for an alarm, 'hushctl alarm').
            """
    )
    var category: HushCore.Category?
    @Flag(name: .customLong("mix-with-others"), help: "Play alongside other sessions.") var mixWithOthers = false
    @Flag(name: .customLong("duck-others"), help: "Lower other sessions while this one plays.") var duckOthers = false
    @Flag(help: "Declare the session short-lived: what it interrupts may resume after it.") var transient = false
    @Flag(help: "Loop the file.") var loop = false
    @Option(help: "Play a sine tone of this frequency in Hz instead of a file.") var tone: Double?
    @Option(name: .customLong("for"), help: "Stop after this many seconds.") var seconds: Double?
    @Option(help: "A name for the session in hushd's log and status.") var name: String?
    @Option(
        parsing: .unconditional,
        help: """
            The session's own level in dB, -96 to 0 (e.g. --gain -10): how loud it is against other sounds. The \
            system or ringer volume still scales it; it is never louder than its bus allows.
            """
    )
    var gain: SessionLevel = .unity

    func validate() throws {
        if file == nil && tone == nil { throw ValidationError("name a FILE or give --tone HZ") }
        if file != nil && tone != nil { throw ValidationError("give a FILE or --tone, not both") }
        if let tone, !SoundSource.toneRange.contains(tone) { throw ValidationError("--tone must be 1 to 20000 Hz") }
        if let seconds, !(seconds > 0) { throw ValidationError("--for must be more than 0 seconds") }
    }

    func run() throws {
        var options: CategoryOptions = []
        if mixWithOthers { options.insert(.mixWithOthers) }
        if duckOthers { options.insert(.duckOthers) }
        let configuration = SessionConfiguration(
            bus: bus,
            category: category ?? Self.category(on: bus),
            options: options,
            transient: transient,
            level: gain
        )
        let sound: SoundSource = tone.map { .tone($0) } ?? .file(file ?? "")
        try hold(configuration, sound: sound, loop: loop, seconds: seconds, name: name, options: self.options)
    }

    /// The category a session on `bus` gets when the person names none: hushd's own `[buses]` defaults, so
    /// `play --bus ringer` rings as a ringtone would (docs/policy.md, "Buses").
    static func category(on bus: Bus) -> HushCore.Category {
        switch bus {
        case .effect: .ambient
        case .music: .playback
        case .ringer: .soloAmbient
        }
    }
}

/// What `ringtone` and `alarm` play: a file or a tone, looping on the ringer bus, scaled by the ringer volume.
struct RingerSound: ParsableArguments {
    @Argument(help: "A sound file on hushd's machine (not needed with --tone).") var file: String?
    @Option(help: "Play a sine tone of this frequency in Hz instead of a file.") var tone: Double?
    @Option(help: "ambient, soloAmbient, playback or playAndRecord instead of the command's own category.")
    var category: HushCore.Category?
    @Option(name: .customLong("for"), help: "Stop after this many seconds.") var seconds: Double?

    func validate() throws {
        if file == nil && tone == nil { throw ValidationError("name a FILE or give --tone HZ") }
        if file != nil && tone != nil { throw ValidationError("give a FILE or --tone, not both") }
        if let tone, !SoundSource.toneRange.contains(tone) { throw ValidationError("--tone must be 1 to 20000 Hz") }
        if let seconds, !(seconds > 0) { throw ValidationError("--for must be more than 0 seconds") }
    }

    /// Rings until the time is up or ^C: a session on the ringer bus in `category` unless the person named one.
    func ring(_ category: HushCore.Category, name: String, options: GlobalOptions) throws {
        try hold(
            SessionConfiguration(bus: .ringer, category: self.category ?? category),
            sound: tone.map { .tone($0) } ?? .file(file ?? ""),
            loop: true,
            seconds: seconds,
            name: name,
            options: options
        )
    }
}

struct Ringtone: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Ring: loop FILE or --tone HZ as a ringtone, which the silence switch silences.",
        discussion: """
            A soloAmbient session on the ringer bus (docs/policy.md): with the switch on silent it plays muted and \
            the alert light shows it (R1, R16); it interrupts what plays, which may resume after it (R6, R8). \
            Rings until --for SECONDS pass or ^C. For a sound the switch must not silence, use 'hushctl alarm'.
            """
    )
    @OptionGroup var options: GlobalOptions
    @OptionGroup var sound: RingerSound

    func run() throws { try sound.ring(.soloAmbient, name: "ringtone", options: options) }
}

struct Alarm: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Sound an alarm: loop FILE or --tone HZ on the ringer bus, heard even with the switch on silent.",
        discussion: """
            A playback session on the ringer bus (docs/policy.md): the silence switch does not mute it (R1), the \
            ringer volume scales it. Sounds until --for SECONDS pass or ^C.
            """
    )
    @OptionGroup var options: GlobalOptions
    @OptionGroup var sound: RingerSound

    func run() throws { try sound.ring(.playback, name: "alarm", options: options) }
}

/// Activates a session, plays `sound`, and holds the connection until the sound ends, the time is up or a stop
/// signal comes; then deactivates with notifyOthers.
func hold(
    _ configuration: SessionConfiguration,
    sound: SoundSource,
    loop: Bool,
    seconds: Double?,
    name: String?,
    options: GlobalOptions
) throws {
    try reporting {
        let stop = StopSignal.install()
        let connection = try options.connect()
        let show: (ControlEvent) -> Void = { event in
            guard !options.json else { return }
            switch event {
            case .interruptionBegan, .interruptionEnded, .remoteCommand, .sessionFinished: say(ControlText.event(event))
            default: break
            }
        }
        if options.json { connection.onLine = sayJSON }
        connection.onEvent = show
        _ = try connection.expectOK(.hello(name: "hushctl play" + (name.map { " \($0)" } ?? "")))
        let activated = try connection.expectOK(.activate(configuration, name: name))
        guard let raw = activated.session else { throw Failure("hushctl: hushd's activate reply has no session") }
        let session = SessionID(raw)
        let deactivate = { () throws(ClientFailure) in
            _ = try connection.expectOK(.deactivate(session, notifyOthers: true))
        }
        do {
            _ = try connection.expectOK(.play(session, sound, loop: loop))
        } catch {
            try? deactivate()
            throw error
        }
        if !options.json { say("session \(raw): playing \(sound) (\(configuration)); ^C stops") }
        let deadline = seconds.map { monotonicMilliseconds() + Int64($0 * 1000) }
        let end = try follow(connection, stop: stop, until: deadline) { message, line in
            guard case .event(let event) = message else { return false }
            if options.json { sayJSON(line) } else { show(event) }
            if case .sessionFinished(let finished) = event, finished == session { return true }
            return false
        }
        connection.onLine = nil
        connection.onEvent = nil
        try deactivate()
        if !options.json {
            switch end {
            case .handled: say("session \(raw): finished, deactivated")
            case .stopped: say("session \(raw): stopped, deactivated")
            case .timeUp: say("session \(raw): time is up, deactivated")
            }
        }
    }
}

struct Version: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show hushd's version and the protocol's.")
    @OptionGroup var options: GlobalOptions

    func run() throws {
        try reporting {
            let connection = try options.connect()
            if options.json { connection.onLine = sayJSON }
            let reply = try connection.expectOK(.version)
            guard !options.json, let hello = reply.hello else { return }
            say(ControlText.hello(hello))
        }
    }
}
