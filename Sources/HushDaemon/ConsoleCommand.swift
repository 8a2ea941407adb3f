import HushCore
import HushPolicy

/// One line typed at the console (or read from a script), parsed.
///
/// The same words drive `make run`, and later the serial console and `hushd render` scenarios.
public enum ConsoleCommand: Hashable, Sendable {
    /// Something for the policy.
    case event(PolicyEvent)
    /// Press and release a volume button in one go.
    case tap(VolumeButton)
    /// Let go of whichever volume button is held.
    case releaseHeld
    /// Let time pass.
    case wait(Duration)
    case status
    case help
    case quit

    /// Why a line could not be understood, with what to type instead.
    public struct SyntaxError: Error, Hashable, Sendable, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    /// The help text listing every command.
    public static let helpText = """
        Controls:
          silence on|off                 the silence switch
          up | down                      tap a volume button
          hold up|down, release          hold a volume button (repeats after 500 ms), let go
          key play|pause|playpause|next|previous
                                         a media key
          plug [SOURCE] | unplug [SOURCE]
                                         headphones; SOURCE is alsa, evdev, gpio or console
        Sessions:
          activate [ID] BUS CATEGORY [mix] [duck] [transient] [client=N]
                                         BUS: effect, music, ringer
                                         CATEGORY: ambient, soloAmbient, playback, record, playAndRecord
          play ID | pause ID | stop ID | finished ID
          deactivate ID [notify]         end a session; with notify, others may resume
          gone CLIENT                    a client disconnects
        Settings:
          volume N | ringer N            set the system or ringer volume, 0-16
          route NAME | route auto        override the route, or go back to automatic
        Other:
          wait MS                        let MS milliseconds pass
          status | help | quit
        """

    /// Parses one line. `nextSession` supplies an id when `activate` is given none.
    public static func parse(_ line: String, nextSession: () -> SessionID) throws(SyntaxError) -> ConsoleCommand? {
        let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        guard let verb = words.first?.lowercased(), !verb.hasPrefix("#") else { return nil }
        let args = Array(words.dropFirst())
        switch verb {
        case "silence":
            switch try one(args, "silence", "on|off") {
            case "on": return .event(.input(.silenceSwitch(.silent)))
            case "off": return .event(.input(.silenceSwitch(.ring)))
            case let other: throw SyntaxError(message: "silence takes on or off, not '\(other)'")
            }
        case "up", "down":
            try none(args, verb)
            return .tap(verb == "up" ? .up : .down)
        case "hold":
            return .event(.input(.volumeButton(try button(one(args, "hold", "up|down")), .press)))
        case "release":
            if args.isEmpty { return .releaseHeld }
            return .event(.input(.volumeButton(try button(one(args, "release", "up|down")), .release)))
        case "key":
            let name = try one(args, "key", "play|pause|playpause|next|previous").lowercased()
            guard let key = MediaKey.allCases.first(where: { $0.rawValue.lowercased() == name }) else {
                throw SyntaxError(message: "unknown media key '\(name)': use play, pause, playpause, next or previous")
            }
            return .event(.input(.mediaKey(key)))
        case "plug", "unplug":
            let source = args.isEmpty ? JackSource.console : try jackSource(one(args, verb, "[SOURCE]"))
            return .event(.input(.headphones(verb == "plug" ? .plugged : .unplugged, source: source)))
        case "activate":
            return try activate(args, nextSession: nextSession)
        case "play", "pause", "stop", "finished":
            let id = try session(one(args, verb, "ID"))
            switch verb {
            case "play": return .event(.play(id))
            case "pause": return .event(.pause(id))
            case "stop": return .event(.stop(id))
            default: return .event(.finished(id))
            }
        case "deactivate":
            guard let first = args.first, args.count <= 2 else {
                throw SyntaxError(message: "usage: deactivate ID [notify]")
            }
            if args.count == 2 && args[1] != "notify" {
                throw SyntaxError(message: "deactivate takes 'notify' after the id, not '\(args[1])'")
            }
            return .event(.deactivate(try session(first), notifyOthers: args.count == 2))
        case "gone":
            return .event(.clientGone(ClientID(try number(one(args, "gone", "CLIENT"), "client"))))
        case "volume", "ringer":
            let value = try number(one(args, verb, "N"), "volume")
            guard let step = VolumeStep(rawValue: Int(clamping: value)) else {
                throw SyntaxError(message: "\(verb) must be between 0 and \(VolumeStep.count), not \(value)")
            }
            return .event(.setVolume(verb == "volume" ? .system : .ringer, step))
        case "route":
            let name = try one(args, "route", "NAME|auto")
            return .event(.setRouteOverride(name == "auto" ? nil : Route(name)))
        case "wait":
            return .wait(.milliseconds(try number(one(args, "wait", "MS"), "milliseconds")))
        case "status":
            return .status
        case "help", "?":
            return .help
        case "quit", "exit":
            return .quit
        default:
            throw SyntaxError(message: "unknown command '\(verb)': type help for the list")
        }
    }

    private static func activate(_ args: [String], nextSession: () -> SessionID) throws(SyntaxError) -> ConsoleCommand {
        var rest = args[...]
        var id: SessionID?
        if let first = rest.first, first.allSatisfy(\.isNumber) {
            id = try session(first)
            rest = rest.dropFirst()
        }
        guard rest.count >= 2 else {
            throw SyntaxError(message: "usage: activate [ID] BUS CATEGORY [mix] [duck] [transient] [client=N]")
        }
        guard let bus = Bus(rawValue: rest.removeFirst().lowercased()) else {
            throw SyntaxError(
                message: "unknown bus '\(args[args.count - rest.count - 1])': use effect, music or ringer"
            )
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
                client = ClientID(try number(String(option.dropFirst("client=".count)), "client"))
            default:
                throw SyntaxError(message: "unknown option '\(word)': use mix, duck, transient or client=N")
            }
        }
        let session = id ?? nextSession()
        return .event(.activate(session, client: client ?? ClientID(session.rawValue), configuration))
    }

    private static func one(_ args: [String], _ verb: String, _ what: String) throws(SyntaxError) -> String {
        guard args.count == 1 else { throw SyntaxError(message: "usage: \(verb) \(what)") }
        return args[0]
    }

    private static func none(_ args: [String], _ verb: String) throws(SyntaxError) {
        guard args.isEmpty else { throw SyntaxError(message: "\(verb) takes no arguments") }
    }

    private static func button(_ word: String) throws(SyntaxError) -> VolumeButton {
        guard let button = VolumeButton(rawValue: word.lowercased()) else {
            throw SyntaxError(message: "unknown button '\(word)': use up or down")
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

    private static func session(_ word: String) throws(SyntaxError) -> SessionID {
        SessionID(try number(word, "session id"))
    }

    private static func number(_ word: String, _ what: String) throws(SyntaxError) -> UInt64 {
        guard let value = UInt64(word) else {
            throw SyntaxError(message: "\(what) must be a whole number, not '\(word)'")
        }
        return value
    }
}
