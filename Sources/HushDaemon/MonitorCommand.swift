import HushCore
import Logging

/// A command typed at the serial-console monitor, parsed.
///
/// The monitor is for the person at the board: it shows and changes volumes and the route, lists and stops
/// sessions, plays sounds, changes the log level, and — on the built-in default board, where terminal keys stand
/// in for the hardware — flips the silence switch, presses the volume buttons and plugs the headphones.
public enum MonitorCommand: Hashable, Sendable {
    case help
    /// The one-line status.
    case status
    /// Show the system volume (nil) or change it.
    case volume(VolumeSetting?)
    /// Show the ringer volume (nil) or change it.
    case ringer(VolumeSetting?)
    /// Show the route (nil), override it or return to automatic.
    case route(RouteChoice?)
    /// Every session with its state.
    case sessions
    /// Play a sound on a bus (nil: the music bus), looping or not.
    case play(Sound, bus: Bus?, loop: Bool)
    case stop(StopTarget)
    /// Show the log level (nil) or change it.
    case logLevel(Logger.Level?)
    case version
    /// The silence switch (stand-in for the board's switch).
    case silence(SwitchPosition)
    /// Press and hold a volume button (it repeats until `release`).
    case press(VolumeButton)
    /// Let go of the held volume button.
    case release
    /// Press and release a volume button.
    case tap(VolumeButton)
    /// The headphone jack (stand-in for the board's jack sense).
    case jack(JackChange)

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

    public enum SwitchPosition: Hashable, Sendable {
        /// Silenced.
        case on
        case off
        case toggle
    }

    public enum JackChange: Hashable, Sendable {
        case plug, unplug, toggle
    }

    /// Why a line could not be understood, naming the word and saying what to type instead.
    public struct SyntaxError: Error, Hashable, Sendable, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    /// Every command word, in the order help lists them.
    public static let words = [
        "help", "status", "volume", "ringer", "route", "sessions", "play", "stop", "log", "version",
        "silence", "press", "release", "tap", "plug", "unplug", "jack",
    ]

    /// Keys that act at once on an empty line, with the command each stands for. None can begin a command word.
    public static let hotKeys: [Character: String] = [
        "+": "tap up", "=": "tap up", "-": "tap down", "!": "silence toggle", "*": "jack toggle", "?": "help",
        ".": "status",
    ]

    static let levels: [(String, Logger.Level)] = [
        ("trace", .trace), ("debug", .debug), ("info", .info), ("notice", .notice), ("warning", .warning),
        ("error", .error),
    ]

    /// The help text; every line fits an 80-column terminal.
    public static let helpText = """
        Commands (Tab completes a word, up and down arrows recall earlier lines):
          status                       switch, jack, route and volumes on one line
          sessions                     every session with its bus, category and state
          volume [up|down|N]           show or set the system volume (N: 0-16)
          ringer [up|down|N]           show or set the ringer volume (N: 0-16)
          route [speaker|headphones|auto]
                                       show the route, override it, or follow the jack
          play FILE [BUS] [loop]       play a sound file; BUS: effect, music (default),
                                       ringer; "quote" a name with spaces
          play tone HZ [BUS]           play a sine tone (20-20000 Hz)
          stop [SESSION|all]           stop a session, every session, or (no argument)
                                       the sound last played from here
          log level [LEVEL]            show or set: trace, debug, info, notice,
                                       warning, error
          version                      hushd and its libraries
        Stand-ins for the board's controls:
          silence on|off|toggle        the silence switch
          press up|down, release       hold a volume button (it repeats), let go
          tap up|down                  press and release a volume button
          plug, unplug, jack toggle    the headphones
        Keys on an empty line: + or = volume up, - volume down, ! silence switch,
          * headphones, ? help, . status. ^C drops the line, ^L prints it again.
        """

    /// Parses one line; nil for a blank line or a comment (#).
    public static func parse(_ line: String) throws(SyntaxError) -> MonitorCommand? {
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
        case "volume", "ringer":
            let setting = try args.isEmpty ? nil : volume(one(args, verb, "[up|down|N]"), verb)
            return verb == "volume" ? .volume(setting) : .ringer(setting)
        case "route":
            guard !args.isEmpty else { return .route(nil) }
            let name = try one(args, verb, "[speaker|headphones|auto]")
            return .route(name.lowercased() == "auto" ? .automatic : .route(Route(name)))
        case "play":
            return try play(args)
        case "stop":
            guard !args.isEmpty else { return .stop(.lastPlayed) }
            let target = try one(args, verb, "[SESSION|all]")
            if target.lowercased() == "all" { return .stop(.all) }
            guard let id = UInt64(target) else {
                throw SyntaxError(message: "stop takes a session number or 'all', not '\(target)'")
            }
            return .stop(.session(SessionID(id)))
        case "log":
            guard args.first?.lowercased() == "level", args.count <= 2 else {
                throw SyntaxError(message: "usage: log level [trace|debug|info|notice|warning|error]")
            }
            guard args.count == 2 else { return .logLevel(nil) }
            guard let level = levels.first(where: { $0.0 == args[1].lowercased() })?.1 else {
                throw SyntaxError(
                    message: "unknown log level '\(args[1])': use "
                        + levels.map(\.0).joined(separator: ", ")
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
        case "press", "tap":
            let button = try self.button(one(args, verb, "up|down"), verb)
            return verb == "press" ? .press(button) : .tap(button)
        case "release":
            try none(args, verb)
            return .release
        case "plug", "unplug":
            try none(args, verb)
            return .jack(verb == "plug" ? .plug : .unplug)
        case "jack":
            switch try one(args, verb, "plug|unplug|toggle").lowercased() {
            case "plug": return .jack(.plug)
            case "unplug": return .jack(.unplug)
            case "toggle": return .jack(.toggle)
            default: throw SyntaxError(message: "jack takes plug, unplug or toggle, not '\(args[0])'")
            }
        default:
            var message = "unknown command '\(words[0])'"
            message += suggestion(for: verb).map { "; did you mean '\($0)'?" } ?? "."
            throw SyntaxError(message: message + " Commands: " + MonitorCommand.words.joined(separator: ", "))
        }
    }

    /// The words that may come next after `line` (the line typed so far), for Tab.
    public static func completions(for line: String) -> [String] {
        let words = line.split(separator: " ").map { $0.lowercased() }
        // The word being completed: the last one, unless the line ends with a space.
        let position = line.hasSuffix(" ") || line.isEmpty ? words.count : words.count - 1
        let buses = Bus.allCases.map(\.rawValue)
        switch position {
        case 0:
            return MonitorCommand.words
        case 1:
            switch words[0] {
            case "volume", "ringer", "press", "tap": return ["up", "down"]
            case "route": return ["speaker", "headphones", "auto"]
            case "silence": return ["on", "off", "toggle"]
            case "jack": return ["plug", "unplug", "toggle"]
            case "stop": return ["all"]
            case "log": return ["level"]
            case "play": return ["tone"]
            default: return []
            }
        case 2:
            switch words[0] {
            case "log" where words[1] == "level": return levels.map(\.0)
            case "play" where words[1] != "tone": return buses + ["loop"]
            default: return []
            }
        default:
            return words[0] == "play" ? buses + ["loop"] : []
        }
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

    private static func play(_ args: [String]) throws(SyntaxError) -> MonitorCommand {
        let usage = "usage: play FILE [effect|music|ringer] [loop], or play tone HZ [BUS]"
        guard let first = args.first else { throw SyntaxError(message: usage) }
        var bus: Bus?
        var loop = false
        let sound: Sound
        var rest = args.dropFirst()
        if first.lowercased() == "tone" {
            guard let text = rest.popFirst() else { throw SyntaxError(message: "usage: play tone HZ [BUS]") }
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
        return .play(sound, bus: bus, loop: loop)
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
        let prefixed = MonitorCommand.words.filter { $0.hasPrefix(word) }
        if prefixed.count == 1 { return prefixed[0] }
        let scored = MonitorCommand.words.map { ($0, editDistance(word, $0)) }.filter { $0.1 <= 2 }
        return scored.min(by: { $0.1 < $1.1 })?.0
    }

    private static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a)
        let b = Array(b)
        var previous = Array(0...b.count)
        for i in 1...max(a.count, 1) where !a.isEmpty {
            var current = [i] + [Int](repeating: 0, count: b.count)
            for j in 1...max(b.count, 1) where !b.isEmpty {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return a.isEmpty ? b.count : previous[b.count]
    }
}
