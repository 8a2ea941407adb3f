import HushCore
import HushPolicy
import Logging

/// One line typed at a console or read from a scenario, parsed: the one command grammar of hush.
///
/// Three places read it, with one parser: hushd's own console (`make run`'s terminal and the serial-console
/// monitor, ``Context/monitor``), `hushd console`, the policy alone on a terminal (``Context/policy``), and the
/// scenarios of `hush-render` and `hushd play` (``Context/scenario``). A command means the same everywhere; a few
/// have no meaning in one of them (`wait` in a running hushd, `log level` where there is no log), and
/// ``unavailability(in:)`` says so with what to do instead. ``helpText(for:)`` lists what a context takes.
public enum ConsoleRequest: Hashable, Sendable {
    // MARK: Stand-ins for the board's controls
    /// The silence switch.
    case silence(SwitchPosition)
    /// Press and hold a volume button (it repeats until released).
    case press(VolumeButton)
    /// Let go of a volume button; nil: whichever is held.
    case release(VolumeButton?)
    /// Press and release a volume button.
    case tap(VolumeButton)
    /// The headphone jack, as the given source would report it.
    case jack(JackChange, source: JackSource)
    /// A media key.
    case key(MediaKey)
    /// The microphone privacy switch's stand-in: on closes the microphone; off lifts only the console's own
    /// closing, never the board's switch (policy R21).
    case privacy(SwitchPosition)

    // MARK: Settings
    /// Show (nil) or change the system or ringer volume.
    case volume(VolumeKind, VolumeSetting?)
    /// Show the route (nil), override it or follow the jack again.
    case route(RouteChoice?)

    // MARK: Sessions
    /// Activate a session; nil id: the next free one; nil client: a client of its own (hushd's console: the console).
    case activate(SessionID?, client: ClientID?, SessionConfiguration)
    /// Play a sound in a new session on a bus (nil: music), looping or not.
    case playSound(Sound, bus: Bus?, loop: Bool)
    /// A session's application plays (or the person plays it again, R15).
    case play(SessionID)
    case pause(SessionID)
    /// A session's own level, relative to its bus (R26).
    case level(SessionID, SessionLevel)
    case stop(StopTarget)
    /// A session's sound came to its end.
    case finished(SessionID)
    /// End a session; with `notifyOthers`, interrupted sessions may resume.
    case deactivate(SessionID, notifyOthers: Bool)
    /// A client disconnects.
    case clientGone(ClientID)

    // MARK: Information and the rest
    /// Every session with its state.
    case sessions
    case status
    case help
    case version
    /// Show (nil) or change the log level.
    case logLevel(Logger.Level?)
    /// Let time pass.
    case wait(Duration)
    case quit

    /// Where a line is read.
    package enum Context: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
        /// A running hushd's console: `make run`'s terminal, the serial console.
        case monitor
        /// `hushd console`: the policy alone, no sound.
        case policy
        /// A scenario for `hush-render` or `hushd play`.
        case scenario

        package var description: String {
            switch self {
            case .monitor: "hushd's console"
            case .policy: "hushd console (the policy alone)"
            case .scenario: "a scenario"
            }
        }
    }

    public enum SwitchPosition: Hashable, Sendable {
        /// Silenced.
        case on
        case off
        case toggle
    }

    public enum JackChange: Hashable, Sendable {
        case plug, unplug, toggle
    }

    public enum VolumeSetting: Hashable, Sendable {
        case up, down
        case step(VolumeStep)
    }

    public enum RouteChoice: Hashable, Sendable {
        /// Follow the jack again.
        case automatic
        case route(Route)
    }

    public enum Sound: Hashable, Sendable {
        /// A file in one of the configured sound directories, as typed.
        case file(String)
        /// A sine tone.
        case tone(hertz: Int)
    }

    public enum StopTarget: Hashable, Sendable {
        case session(SessionID)
        case all
        /// The sound last started at this console.
        case lastPlayed
    }

    /// Why a line could not be understood, naming the word and saying what to type instead.
    package struct SyntaxError: Error, Hashable, Sendable, CustomStringConvertible {
        package var message: String
        package var description: String { message }
        package init(message: String) { self.message = message }
    }

    // MARK: The grammar, once

    /// One form of a command: how it is written, what it does, and where it has a meaning. Help and completion are
    /// made from this table, so they cannot list a command the parser does not take.
    struct Form {
        enum Section: CaseIterable {
            case commands, sessionsByHand, controls
        }
        var usage: String
        var summary: String
        var section: Section
        var contexts: Set<Context>
    }

    static let everywhere: Set<Context> = [.monitor, .policy, .scenario]
    static let interactive: Set<Context> = [.monitor, .policy]

    static let forms: [Form] = [
        Form(
            usage: "status, sessions, version",
            summary: "the state; every session; the version",
            section: .commands,
            contexts: interactive
        ),
        Form(
            usage: "volume|ringer [up|down|N]",
            summary: "show or set the system or ringer volume (0-16)",
            section: .commands,
            contexts: everywhere
        ),
        Form(
            usage: "route [NAME|auto]",
            summary: "show, override (speaker, headphones), or auto",
            section: .commands,
            contexts: everywhere
        ),
        Form(
            usage: "play FILE|tone HZ [BUS] [loop]",
            summary: "a \"file\" or a 20-20000 Hz tone, on music or BUS",
            section: .commands,
            contexts: interactive
        ),
        Form(
            usage: "stop [SESSION|all]",
            summary: "stop one, all, or (alone) what was played here",
            section: .commands,
            contexts: interactive
        ),
        Form(
            usage: "log level [LEVEL]",
            summary: "trace, debug, info, notice, warning, error",
            section: .commands,
            contexts: [.monitor]
        ),
        Form(usage: "help, quit", summary: "this list; leave", section: .commands, contexts: interactive),
        Form(
            usage: "wait MS",
            summary: "let MS milliseconds pass (for scripts)",
            section: .commands,
            contexts: [.policy]
        ),
        Form(
            usage: "activate [ID] BUS CATEGORY [mix] [duck] [transient] [gain=DB]",
            summary: "BUS: effect, music, ringer; CATEGORY: ambient,\nsoloAmbient, playback, record, playAndRecord",
            section: .sessionsByHand,
            contexts: everywhere
        ),
        Form(
            usage: "level ID DB",
            summary: "a session's own level: -96 to 0 dB",
            section: .sessionsByHand,
            contexts: everywhere
        ),
        Form(
            usage: "play ID, pause ID, stop ID",
            summary: "a session plays, pauses, stops",
            section: .sessionsByHand,
            contexts: everywhere
        ),
        Form(
            usage: "deactivate ID [notify]",
            summary: "end a session; with notify, others may resume",
            section: .sessionsByHand,
            contexts: everywhere
        ),
        Form(
            usage: "finished ID, gone CLIENT",
            summary: "a session's sound ended; a client went away",
            section: .sessionsByHand,
            contexts: [.policy, .scenario]
        ),
        Form(
            usage: "silence|privacy on|off|toggle",
            summary: "the silence and the microphone privacy switches",
            section: .controls,
            contexts: everywhere
        ),
        Form(
            usage: "press up|down, release",
            summary: "hold a volume button (it repeats), let go",
            section: .controls,
            contexts: everywhere
        ),
        Form(
            usage: "tap up|down (or up, down)",
            summary: "press and release a volume button",
            section: .controls,
            contexts: everywhere
        ),
        Form(
            usage: "plug, unplug, jack toggle",
            summary: "the headphones",
            section: .controls,
            contexts: everywhere
        ),
        Form(
            usage: "key MEDIAKEY",
            summary: "play, pause, playpause, next, previous",
            section: .controls,
            contexts: everywhere
        ),
    ]

    /// Every command word, in the order help lists them.
    package static let words = [
        "status", "sessions", "volume", "ringer", "route", "log", "version", "play", "stop", "activate", "level",
        "pause", "deactivate", "finished", "gone", "silence", "press", "release", "tap", "up", "down", "plug", "unplug",
        "jack", "key", "privacy", "wait", "help", "quit",
    ]

    /// Keys that act at once on an empty line, with the command each stands for. None can begin a command word.
    package static let hotKeys: [Character: String] = [
        "+": "tap up", "=": "tap up", "-": "tap down", "!": "silence toggle", "*": "jack toggle", "?": "help",
        ".": "status",
    ]

    static let levels: [(String, Logger.Level)] = [
        ("trace", .trace), ("debug", .debug), ("info", .info), ("notice", .notice), ("warning", .warning),
        ("error", .error),
    ]

    /// The help text for `context`: the commands it takes; every line fits an 80-column terminal.
    package static func helpText(for context: Context) -> String {
        var lines: [String] = []
        for section in Form.Section.allCases {
            let forms = forms.filter { $0.section == section && $0.contexts.contains(context) }
            guard !forms.isEmpty else { continue }
            switch section {
            case .commands:
                lines.append(
                    context == .monitor
                        ? "Commands (Tab completes a word, up and down arrows recall lines):" : "Commands:"
                )
            case .sessionsByHand: lines.append("Sessions by hand (as a client of the control socket would):")
            case .controls: lines.append("Stand-ins for the board's controls:")
            }
            for form in forms {
                let summary = form.summary.split(separator: "\n").map(String.init)
                if form.usage.count <= 30 {
                    let padding = String(repeating: " ", count: 31 - form.usage.count)
                    lines.append("  " + form.usage + padding + summary[0])
                } else {
                    lines.append("  " + form.usage)
                    lines.append(String(repeating: " ", count: 33) + summary[0])
                }
                for more in summary.dropFirst() { lines.append(String(repeating: " ", count: 33) + more) }
            }
        }
        if context == .monitor {
            lines.append("Keys on an empty line: + or = volume up, - volume down, ! silence switch,")
            lines.append("  * headphones, ? help, . status. ^C drops the line, ^L prints it again.")
        }
        return lines.joined(separator: "\n")
    }

    /// Parses one line; nil for a blank line or a comment (#). The grammar is the same in every context; whether a
    /// command has a meaning where it was typed is ``unavailability(in:)``'s to say.
    package static func parse(_ line: String) throws(SyntaxError) -> ConsoleRequest? {
        let words = try tokens(line)
        guard let verb = words.first?.lowercased(), !verb.hasPrefix("#") else { return nil }
        let args = Array(words.dropFirst())
        switch verb {
        case "help", "?":
            try none(args, verb)
            return .help
        case "status":
            try none(args, verb)
            return .status
        case "sessions":
            try none(args, verb)
            return .sessions
        case "version":
            try none(args, verb)
            return .version
        case "quit", "exit":
            try none(args, verb)
            return .quit
        case "volume", "ringer":
            let setting = try args.isEmpty ? nil : volume(one(args, verb, "[up|down|N]"), verb)
            return .volume(verb == "volume" ? .system : .ringer, setting)
        case "route":
            guard !args.isEmpty else { return .route(nil) }
            let name = try one(args, verb, "[NAME|auto]")
            return .route(name.lowercased() == "auto" ? .automatic : .route(Route(name)))
        case "play":
            return try play(args)
        case "pause", "finished":
            let id = try session(one(args, verb, "ID"), verb)
            return verb == "pause" ? .pause(id) : .finished(id)
        case "stop":
            guard !args.isEmpty else { return .stop(.lastPlayed) }
            let target = try one(args, verb, "[SESSION|all]")
            if target.lowercased() == "all" { return .stop(.all) }
            guard let id = UInt64(target) else {
                throw SyntaxError(message: "stop takes a session number or 'all', not '\(target)'")
            }
            return .stop(.session(SessionID(id)))
        case "activate":
            return try activate(args)
        case "level":
            guard args.count == 2 else { throw SyntaxError(message: "usage: level ID DB (a level from -96 to 0 dB)") }
            return .level(try session(args[0], verb), try level(args[1]))
        case "deactivate":
            guard let first = args.first, args.count <= 2 else {
                throw SyntaxError(message: "usage: deactivate ID [notify]")
            }
            if args.count == 2 && args[1].lowercased() != "notify" {
                throw SyntaxError(message: "deactivate takes 'notify' after the id, not '\(args[1])'")
            }
            return .deactivate(try session(first, verb), notifyOthers: args.count == 2)
        case "gone":
            return .clientGone(ClientID(try number(one(args, verb, "CLIENT"), "gone takes a client number")))
        case "log":
            guard args.first?.lowercased() == "level", args.count <= 2 else {
                throw SyntaxError(message: "usage: log level [trace|debug|info|notice|warning|error]")
            }
            guard args.count == 2 else { return .logLevel(nil) }
            guard let level = levels.first(where: { $0.0 == args[1].lowercased() })?.1 else {
                throw SyntaxError(
                    message: "unknown log level '\(args[1])': use " + levels.map(\.0).joined(separator: ", ")
                )
            }
            return .logLevel(level)
        case "silence":
            switch try one(args, verb, "on|off|toggle").lowercased() {
            case "on": return .silence(.on)
            case "off": return .silence(.off)
            case "toggle": return .silence(.toggle)
            default: throw SyntaxError(message: "silence takes on, off or toggle, not '\(args[0])'")
            }
        case "privacy":
            switch try one(args, verb, "on|off|toggle").lowercased() {
            case "on": return .privacy(.on)
            case "off": return .privacy(.off)
            case "toggle": return .privacy(.toggle)
            default: throw SyntaxError(message: "privacy takes on, off or toggle, not '\(args[0])'")
            }
        case "press", "tap":
            let button = try self.button(one(args, verb, "up|down"), verb)
            return verb == "press" ? .press(button) : .tap(button)
        case "up", "down":
            try none(args, verb)
            return .tap(verb == "up" ? .up : .down)
        case "release":
            guard !args.isEmpty else { return .release(nil) }
            return .release(try button(one(args, verb, "[up|down]"), verb))
        case "plug", "unplug":
            let source = try args.isEmpty ? JackSource.console : jackSource(one(args, verb, "[SOURCE]"))
            return .jack(verb == "plug" ? .plug : .unplug, source: source)
        case "jack":
            switch try one(args, verb, "plug|unplug|toggle").lowercased() {
            case "plug": return .jack(.plug, source: .console)
            case "unplug": return .jack(.unplug, source: .console)
            case "toggle": return .jack(.toggle, source: .console)
            default: throw SyntaxError(message: "jack takes plug, unplug or toggle, not '\(args[0])'")
            }
        case "key":
            let name = try one(args, verb, "play|pause|playpause|next|previous").lowercased()
            guard let key = MediaKey.allCases.first(where: { $0.rawValue.lowercased() == name }) else {
                throw SyntaxError(message: "unknown media key '\(name)': use play, pause, playpause, next or previous")
            }
            return .key(key)
        case "wait":
            return .wait(.milliseconds(try number(one(args, verb, "MS"), "wait takes milliseconds")))
        default:
            var message = "unknown command '\(words[0])'"
            message += suggestion(for: verb).map { "; did you mean '\($0)'?" } ?? "."
            throw SyntaxError(message: message + " Commands: " + Self.words(for: .monitor).joined(separator: ", "))
        }
    }

    /// Why this command has no meaning in `context`, with what to do instead; nil when it has one.
    package func unavailability(in context: Context) -> String? {
        switch (self, context) {
        case (.status, .scenario), (.sessions, .scenario), (.help, .scenario), (.version, .scenario),
            (.quit, .scenario):
            return "'\(word)' has no meaning in a scenario: a scenario's lines are what happens, at their times"
        case (.volume(_, nil), .scenario), (.route(nil), .scenario):
            return "'\(word)' with no value shows it; in a scenario give the value to set"
        case (.logLevel, .policy), (.logLevel, .scenario):
            return "'log level' is for a running hushd; \(context) prints every decision and has no log"
        case (.playSound, .scenario):
            return "in a scenario a sound goes with its session: activate ID BUS CATEGORY tone=HZ or sound=FILE"
        case (.stop(.all), .scenario), (.stop(.lastPlayed), .scenario):
            return "in a scenario stop takes a session number"
        case (.finished, .monitor):
            return "'finished' stands in for a sound that came to its end; a running hushd sees that itself"
        case (.clientGone, .monitor):
            return "'gone' stands in for a client that disconnects; a running hushd sees that on its socket"
        case (.wait, .monitor), (.wait, .scenario):
            return context == .scenario
                ? "a scenario's lines carry their times: write +0.5 before the next line instead of wait"
                : "'wait' is for scripts of hushd console; a running hushd's time passes by itself"
        case (.activate(_, let client?, _), .monitor) where client != ConsoleRequest.consoleClient:
            return "sessions made here belong to the console (client 0); leave out client=\(client.rawValue)"
        default:
            return nil
        }
    }

    /// The client that owns the sessions a console makes.
    package static let consoleClient = ClientID(0)

    /// The command's word, for messages.
    var word: String {
        switch self {
        case .silence: "silence"
        case .press: "press"
        case .release: "release"
        case .tap: "tap"
        case .jack: "jack"
        case .key: "key"
        case .privacy: "privacy"
        case .volume(.system, _): "volume"
        case .volume: "ringer"
        case .route: "route"
        case .activate: "activate"
        case .playSound, .play: "play"
        case .pause: "pause"
        case .level: "level"
        case .stop: "stop"
        case .finished: "finished"
        case .deactivate: "deactivate"
        case .clientGone: "gone"
        case .sessions: "sessions"
        case .status: "status"
        case .help: "help"
        case .version: "version"
        case .logLevel: "log"
        case .wait: "wait"
        case .quit: "quit"
        }
    }

    /// The command words `context` takes, in help's order.
    package static func words(for context: Context) -> [String] {
        words.filter { word in
            switch word {
            case "log": context == .monitor
            case "finished", "gone": context != .monitor
            case "wait": context == .policy
            case "status", "sessions", "version", "help", "quit": context != .scenario
            default: true
            }
        }
    }

    /// The policy events this command stands for, given the policy's state (a toggle, a step up, the held
    /// button); nil for a command that is not an event (status, help, a sound, ...). `play FILE` and the showing
    /// forms are the front ends' own.
    package func policyEvents(_ policy: AudioPolicy) -> [PolicyEvent]? {
        switch self {
        case .silence(let position):
            let silent =
                switch position {
                case .on: true
                case .off: false
                case .toggle: policy.silenceSwitch != .silent
                }
            return [.input(.silenceSwitch(silent ? .silent : .ring))]
        case .privacy(let position):
            let muted =
                switch position {
                case .on: true
                case .off: false
                case .toggle: policy.microphoneSwitch != .muted
                }
            return [.input(.microphoneSwitch(muted ? .muted : .live, source: .console))]
        case .press(let button):
            return [.input(.volumeButton(button, .press))]
        case .release(let button?):
            return [.input(.volumeButton(button, .release))]
        case .release(nil):
            return policy.heldButton.map { [.input(.volumeButton($0, .release))] } ?? []
        case .tap(let button):
            return [.input(.volumeButton(button, .press)), .input(.volumeButton(button, .release))]
        case .jack(let change, let source):
            let plugged =
                switch change {
                case .plug: true
                case .unplug: false
                case .toggle: policy.jack != .plugged
                }
            return [.input(.headphones(plugged ? .plugged : .unplugged, source: source))]
        case .key(let key):
            return [.input(.mediaKey(key))]
        case .volume(let kind, let setting?):
            let current = kind == .system ? policy.systemVolume : policy.ringerVolume
            let target: VolumeStep
            switch setting {
            case .up: target = current.moved(by: 1)
            case .down: target = current.moved(by: -1)
            case .step(let step): target = step
            }
            return [.setVolume(kind, target)]
        case .route(.automatic?):
            return [.setRouteOverride(nil)]
        case .route(.route(let route)?):
            return [.setRouteOverride(route)]
        case .activate(let id?, let client, let configuration):
            // Without client=, each session is a client of its own, as separate programs would be: `gone N` ends it.
            return [.activate(id, client: client ?? ClientID(id.rawValue), configuration)]
        case .play(let id):
            return [.play(id)]
        case .pause(let id):
            return [.pause(id)]
        case .level(let id, let level):
            return [.setLevel(id, level)]
        case .stop(.session(let id)):
            return [.stop(id)]
        case .finished(let id):
            return [.finished(id)]
        case .deactivate(let id, let notify):
            return [.deactivate(id, notifyOthers: notify)]
        case .clientGone(let client):
            return [.clientGone(client)]
        case .activate(nil, _, _), .playSound, .stop, .volume(_, nil), .route(nil), .sessions, .status, .help,
            .version, .logLevel, .wait, .quit:
            return nil
        }
    }

    /// What a session on `bus` is when the console names no category: a ringtone on the ringer, ambient effects,
    /// media on music — as `[buses.*]` says by default.
    package static func defaultConfiguration(for bus: Bus) -> SessionConfiguration {
        switch bus {
        case .effect: SessionConfiguration(bus: bus, category: .ambient, options: .mixWithOthers)
        case .music: SessionConfiguration(bus: bus, category: .playback)
        case .ringer: SessionConfiguration(bus: bus, category: .soloAmbient)
        }
    }

    /// The words that may come next after `line` (the line typed so far), for Tab at hushd's console.
    package static func completions(for line: String) -> [String] {
        let words = line.split(separator: " ").map { $0.lowercased() }
        // The word being completed: the last one, unless the line ends with a space.
        let position = line.hasSuffix(" ") || line.isEmpty ? words.count : words.count - 1
        let buses = Bus.allCases.map(\.rawValue)
        switch position {
        case 0:
            return Self.words(for: .monitor)
        case 1:
            switch words[0] {
            case "volume", "ringer": return ["up", "down"]
            case "press", "tap", "release": return ["up", "down"]
            case "route": return ["speaker", "headphones", "auto"]
            case "silence", "privacy": return ["on", "off", "toggle"]
            case "jack": return ["plug", "unplug", "toggle"]
            case "stop": return ["all"]
            case "log": return ["level"]
            case "play": return ["tone"]
            case "key": return MediaKey.allCases.map { $0.rawValue.lowercased() }
            case "activate", "plug", "unplug": return activateOrSource(words[0], buses)
            default: return []
            }
        case 2:
            switch words[0] {
            case "log" where words[1] == "level": return levels.map(\.0)
            case "play" where words[1] != "tone": return buses + ["loop"]
            case "activate": return HushCore.Category.allCases.map(\.rawValue)
            default: return []
            }
        default:
            switch words[0] {
            case "play": return buses + ["loop"]
            case "activate": return ["mix", "duck", "transient"]
            default: return []
            }
        }
    }

    private static func activateOrSource(_ verb: String, _ buses: [String]) -> [String] {
        verb == "activate" ? buses : ["alsa", "evdev", "gpio", "console"]
    }

    // MARK: Parsing helpers

    /// Splits on blanks; "double quotes" keep a file name with spaces in one word.
    static func tokens(_ line: String) throws(SyntaxError) -> [String] {
        var words: [String] = []
        var current = ""
        var quoted = false
        var started = false
        for character in line {
            if character == "\"" {
                quoted.toggle()
                started = true
            } else if !quoted && (character == " " || character == "\t") {
                if started { words.append(current) }
                current = ""
                started = false
            } else {
                current.append(character)
                started = true
            }
        }
        guard !quoted else { throw SyntaxError(message: "a quote is not closed: \(line)") }
        if started { words.append(current) }
        return words
    }

    /// `play ID`, `play tone HZ [BUS] [loop]` or `play FILE [BUS] [loop]`. A bare number is a session: a file
    /// whose name is a number is written with its directory (`play ./7`).
    private static func play(_ args: [String]) throws(SyntaxError) -> ConsoleRequest {
        let usage = "usage: play FILE [effect|music|ringer] [loop], play tone HZ [BUS] [loop], or play ID"
        guard let first = args.first else { throw SyntaxError(message: usage) }
        if args.count == 1, let id = UInt64(first) { return .play(SessionID(id)) }
        var bus: Bus?
        var loop = false
        let sound: Sound
        var rest = args.dropFirst()
        if first.lowercased() == "tone" {
            guard let text = rest.popFirst() else { throw SyntaxError(message: "usage: play tone HZ [BUS] [loop]") }
            guard let hertz = Int(text), (20...20000).contains(hertz) else {
                throw SyntaxError(message: "a tone's frequency is a whole number of Hz from 20 to 20000, not '\(text)'")
            }
            sound = .tone(hertz: hertz)
        } else {
            sound = .file(first)
        }
        for word in rest {
            if let named = Bus(rawValue: word.lowercased()), bus == nil {
                bus = named
            } else if word.lowercased() == "loop", !loop {
                loop = true
            } else {
                throw SyntaxError(message: "unexpected '\(word)' after play: \(usage)")
            }
        }
        return .playSound(sound, bus: bus, loop: loop)
    }

    private static func activate(_ args: [String]) throws(SyntaxError) -> ConsoleRequest {
        let usage = "usage: activate [ID] BUS CATEGORY [mix] [duck] [transient] [gain=DB] [client=N]"
        var rest = args[...]
        var id: SessionID?
        if let first = rest.first, first.allSatisfy(\.isNumber) {
            id = try session(first, "activate")
            rest = rest.dropFirst()
        }
        guard rest.count >= 2 else { throw SyntaxError(message: usage) }
        let busName = rest.removeFirst()
        guard let bus = Bus(rawValue: busName.lowercased()) else {
            throw SyntaxError(message: "unknown bus '\(busName)': use effect, music or ringer")
        }
        let categoryName = rest.removeFirst()
        guard let category = Category.allCases.first(where: { $0.rawValue.lowercased() == categoryName.lowercased() })
        else {
            throw SyntaxError(
                message:
                    "unknown category '\(categoryName)': use ambient, soloAmbient, playback, record or playAndRecord"
            )
        }
        var configuration = SessionConfiguration(bus: bus, category: category)
        var client: ClientID?
        for word in rest {
            switch word.lowercased() {
            case "mix", "mixwithothers": configuration.options.insert(.mixWithOthers)
            case "duck", "duckothers": configuration.options.insert(.duckOthers)
            case "transient": configuration.transient = true
            case let option where option.hasPrefix("client="):
                client = ClientID(try number(String(option.dropFirst("client=".count)), "client= takes a number"))
            case let option where option.hasPrefix("gain="):
                configuration.level = try level(String(word.dropFirst("gain=".count)))
            default:
                throw SyntaxError(message: "unknown option '\(word)': use mix, duck, transient, gain=DB or client=N")
            }
        }
        return .activate(id, client: client, configuration)
    }

    /// A session's own level (R26) as a person types it: "-10", "-3.5", "-6dB".
    private static func level(_ word: String) throws(SyntaxError) -> SessionLevel {
        guard let level = SessionLevel(text: word) else {
            throw SyntaxError(
                message: "a level is dB from -96 to 0 (a session is never louder than its bus), not '\(word)'"
            )
        }
        return level
    }

    private static func volume(_ word: String, _ verb: String) throws(SyntaxError) -> VolumeSetting {
        switch word.lowercased() {
        case "up": return .up
        case "down": return .down
        default:
            guard let value = Int(word), let step = VolumeStep(rawValue: value) else {
                throw SyntaxError(
                    message: "\(verb) takes up, down or a step from 0 to \(VolumeStep.count), not '\(word)'"
                )
            }
            return .step(step)
        }
    }

    private static func button(_ word: String, _ verb: String) throws(SyntaxError) -> VolumeButton {
        guard let button = VolumeButton(rawValue: word.lowercased()) else {
            throw SyntaxError(message: "\(verb) takes up or down, not '\(word)'")
        }
        return button
    }

    private static func jackSource(_ word: String) throws(SyntaxError) -> JackSource {
        switch word.lowercased() {
        case "alsa": return .alsaControl
        case "evdev": return .evdev
        case "gpio": return .gpio
        case "console": return .console
        default: throw SyntaxError(message: "unknown jack source '\(word)': use alsa, evdev, gpio or console")
        }
    }

    private static func session(_ word: String, _ verb: String) throws(SyntaxError) -> SessionID {
        SessionID(try number(word, "\(verb) takes a session number"))
    }

    private static func number(_ word: String, _ what: String) throws(SyntaxError) -> UInt64 {
        guard let value = UInt64(word) else { throw SyntaxError(message: "\(what), not '\(word)'") }
        return value
    }

    private static func one(_ args: [String], _ verb: String, _ what: String) throws(SyntaxError) -> String {
        guard args.count == 1 else { throw SyntaxError(message: "usage: \(verb) \(what)") }
        return args[0]
    }

    private static func none(_ args: [String], _ verb: String) throws(SyntaxError) {
        guard args.isEmpty else {
            throw SyntaxError(message: "\(verb) takes no arguments (got '\(args.joined(separator: " "))')")
        }
    }

    /// The command word closest to a mistyped one (at most two edits away, or a unique prefix).
    static func suggestion(for word: String) -> String? {
        let prefixed = words.filter { $0.hasPrefix(word) }
        if prefixed.count == 1 { return prefixed[0] }
        let scored = words.map { ($0, Suggestion.editDistance(word, $0)) }.filter { $0.1 <= 2 }
        return scored.min(by: { $0.1 < $1.1 })?.0
    }
}
