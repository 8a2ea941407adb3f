import HushCore

/// The words `hushctl shell` reads, one command a line, turned into requests.
///
/// ```
/// activate music playback mix duck transient name=radio
/// play 3 /usr/share/sounds/ring.wav loop      tone 3 440
/// pause 3 | resume 3 | stop 3 | deactivate 3 notify
/// volume [system|ringer] [N|+N|-N|up|down]    ringer [N|up|down]
/// route [NAME|auto]   status   subscribe [KIND…]   unsubscribe   hello [NAME]   version
/// ```
/// A line starting with `{` is sent as it is (raw JSON).
public enum ShellSyntax {
    /// What a line asks for.
    public enum Line: Hashable, Sendable {
        case request(ControlCommand)
        /// A JSON line to send unchanged.
        case raw(String)
        /// Wait this many milliseconds, printing what arrives.
        case wait(Int)
        case help
        case quit
        /// A blank line or a comment.
        case nothing
    }

    public static let help = """
        activate BUS CATEGORY [mix] [duck] [transient] [mode=MODE] [gain=DB] [name=NAME]
                                 BUS: effect music ringer; CATEGORY: ambient soloAmbient playback record
                                 playAndRecord; gain: its own level, -96 to 0 dB; replies with its id
        play SESSION FILE [loop] play a sound file (a path on hushd's machine) in a session
        tone SESSION HZ [loop]   play a sine tone in a session
        level SESSION DB         set a session's own level, -96 to 0 dB, under its bus's volume
        pause SESSION | resume SESSION | stop SESSION
        deactivate SESSION [notify]
                                 end a session; with notify, what it interrupted may resume
        volume [system|ringer] [N|+N|-N|up|down]
        ringer [N|+N|-N|up|down] show or set a volume (0 to 16)
        route [NAME|auto]        show the route, or pick one
        status                   switch, route, volumes, sessions, output
        subscribe [KIND...]      follow events (all kinds, or these); unsubscribe stops
        hello [NAME] | version   who answers
        {"command":...}          send a JSON request as it is
        wait MS                  wait, printing what arrives
        help | quit
        """

    /// Reads one line; the error says what is wrong and what was expected.
    public static func parse(_ text: String) -> Result<Line, ShellError> {
        let trimmed = text.trimmingSpaces
        if trimmed.isEmpty || trimmed.hasPrefix("#") { return .success(.nothing) }
        if trimmed.hasPrefix("{") { return .success(.raw(trimmed)) }
        let words = trimmed.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        do throws(ShellError) {
            return .success(try line(words))
        } catch {
            return .failure(error)
        }
    }

    /// Why a shell line was not understood.
    public struct ShellError: Error, Hashable, Sendable, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    private static func line(_ words: [String]) throws(ShellError) -> Line {
        let name = words[0]
        let rest = Array(words.dropFirst())
        switch name {
        case "help", "?": return .help
        case "quit", "exit": return .quit
        case "status":
            try count(rest, 0, "status")
            return .request(.status)
        case "version":
            try count(rest, 0, "version")
            return .request(.version)
        case "unsubscribe":
            try count(rest, 0, "unsubscribe")
            return .request(.unsubscribe)
        case "hello": return .request(.hello(name: rest.isEmpty ? nil : rest.joined(separator: " ")))
        case "wait":
            guard rest.count == 1, let milliseconds = Int(rest[0]), milliseconds >= 0 else {
                throw ShellError("wait MS: a number of milliseconds")
            }
            return .wait(milliseconds)
        case "activate":
            guard rest.count >= 2 else {
                throw ShellError("activate BUS CATEGORY [mix] [duck] [transient] [mode=MODE] [gain=DB] [name=NAME]")
            }
            guard let bus = Bus(rawValue: rest[0]) else {
                throw ShellError("'\(rest[0])' is not a bus; buses: effect, music, ringer")
            }
            guard let category = HushCore.Category(rawValue: rest[1]) else {
                throw ShellError(
                    "'\(rest[1])' is not a category; categories: "
                        + HushCore.Category.allCases.map(\.rawValue).joined(separator: ", ")
                )
            }
            var configuration = SessionConfiguration(bus: bus, category: category)
            var sessionName: String?
            for word in rest.dropFirst(2) {
                switch word {
                case "mix", "mixWithOthers": configuration.options.insert(.mixWithOthers)
                case "duck", "duckOthers": configuration.options.insert(.duckOthers)
                case "transient": configuration.transient = true
                case _ where word.hasPrefix("name="): sessionName = String(word.dropFirst(5))
                case _ where word.hasPrefix("mode="):
                    guard let mode = SessionMode(rawValue: String(word.dropFirst(5))) else {
                        throw ShellError(
                            "'\(word.dropFirst(5))' is not a mode; modes: "
                                + SessionMode.allCases.map(\.rawValue).joined(separator: ", ")
                        )
                    }
                    configuration.mode = mode
                case _ where word.hasPrefix("gain="):
                    configuration.level = try level(String(word.dropFirst(5)))
                default:
                    throw ShellError(
                        "'\(word)' is not an option; options: mix, duck, transient, mode=MODE, gain=DB, name=NAME"
                    )
                }
            }
            return .request(.activate(configuration, name: sessionName))
        case "play", "tone":
            guard rest.count == 2 || (rest.count == 3 && rest[2] == "loop") else {
                throw ShellError(name == "play" ? "play SESSION FILE [loop]" : "tone SESSION HZ [loop]")
            }
            let session = try sessionID(rest[0])
            let loop = rest.count == 3
            if name == "play" { return .request(.play(session, .file(rest[1]), loop: loop)) }
            guard let hertz = Double(rest[1]), SoundSource.toneRange.contains(hertz) else {
                throw ShellError("'\(rest[1])' is not a frequency; give Hz from 1 to 20000")
            }
            return .request(.play(session, .tone(hertz), loop: loop))
        case "level":
            guard rest.count == 2 else { throw ShellError("level SESSION DB: a level from -96 to 0 dB") }
            return .request(.setLevel(try sessionID(rest[0]), try level(rest[1])))
        case "pause", "resume", "stop":
            guard rest.count == 1 else { throw ShellError("\(name) SESSION") }
            let session = try sessionID(rest[0])
            return .request(name == "pause" ? .pause(session) : name == "resume" ? .resume(session) : .stop(session))
        case "deactivate":
            guard rest.count == 1 || (rest.count == 2 && rest[1] == "notify") else {
                throw ShellError("deactivate SESSION [notify]")
            }
            return .request(.deactivate(try sessionID(rest[0]), notifyOthers: rest.count == 2))
        case "volume", "ringer":
            var kind: VolumeKind = name == "ringer" ? .ringer : .system
            var arguments = rest
            if name == "volume", let first = arguments.first, let named = VolumeKind(rawValue: first) {
                kind = named
                arguments.removeFirst()
            }
            guard arguments.count <= 1 else { throw ShellError("\(name) [N|+N|-N|up|down]") }
            guard let change = arguments.first else { return .request(.getVolume(kind)) }
            return .request(.setVolume(kind, try volumeChange(change)))
        case "route":
            guard rest.count <= 1 else { throw ShellError("route [NAME|auto]") }
            guard let route = rest.first else { return .request(.getRoute) }
            return .request(.setRoute(route == "auto" ? nil : Route(route)))
        case "subscribe":
            guard !rest.isEmpty else { return .request(.subscribe(nil)) }
            var kinds: Set<ControlEventKind> = []
            for word in rest {
                guard let kind = ControlEventKind(rawValue: word) else {
                    throw ShellError(
                        "'\(word)' is not an event kind; kinds: "
                            + ControlEventKind.allCases.map(\.rawValue).joined(separator: ", ")
                    )
                }
                kinds.insert(kind)
            }
            return .request(.subscribe(kinds))
        default:
            throw ShellError("unknown command '\(name)'; type help for the commands")
        }
    }

    private static func count(_ words: [String], _ expected: Int, _ usage: String) throws(ShellError) {
        guard words.count == expected else { throw ShellError("\(usage) takes no arguments") }
    }

    /// A session's own level (R26) as a person types it: "-10", "-10dB", "-3.5 dB".
    private static func level(_ text: String) throws(ShellError) -> SessionLevel {
        guard let level = SessionLevel(text: text) else {
            throw ShellError("'\(text)' is not a level; give dB from -96 to 0 (a session is never louder than its bus)")
        }
        return level
    }

    private static func sessionID(_ word: String) throws(ShellError) -> SessionID {
        guard let value = UInt64(word), value > 0 else {
            throw ShellError("'\(word)' is not a session id; give the number activate replied with")
        }
        return SessionID(value)
    }

    private static func volumeChange(_ word: String) throws(ShellError) -> VolumeChange {
        switch word {
        case "up": return .delta(1)
        case "down": return .delta(-1)
        default:
            if word.hasPrefix("+") || word.hasPrefix("-"), let delta = Int(word), abs(delta) <= VolumeStep.count {
                return .delta(delta)
            }
            guard let step = Int(word).flatMap(VolumeStep.init(rawValue:)) else {
                throw ShellError("'\(word)' is not a volume; give a step 0 to 16, +N, -N, up or down")
            }
            return .step(step)
        }
    }

    /// How the shell prints a reply to `command` for people.
    public static func describe(_ reply: ControlReply) -> [String] {
        if let error = reply.error, !reply.ok { return ["error [\(error.code)]: \(error.message)"] }
        if let status = reply.status { return ControlText.status(status) }
        if let stream = reply.stream {
            return [
                "stream \(stream.id) in session \(stream.session): \(stream.ringFrames)-frame ring, "
                    + "\(stream.periodFrames)-frame periods"
            ]
        }
        if let session = reply.session { return ["session \(session)"] }
        if let position = reply.position { return ["position \(position)"] }
        if let volume = reply.volume { return [ControlText.volume(volume)] }
        if let route = reply.route { return [ControlText.route(route)] }
        if let hello = reply.hello { return [ControlText.hello(hello)] }
        if let events = reply.events { return ["subscribed: " + events.map(\.rawValue).joined(separator: ", ")] }
        return ["ok"]
    }
}

extension String {
    var trimmingSpaces: String {
        var text = Substring(self)
        while let first = text.first, first == " " || first == "\t" || first == "\r" || first == "\n" {
            text = text.dropFirst()
        }
        while let last = text.last, last == " " || last == "\t" || last == "\r" || last == "\n" {
            text = text.dropLast()
        }
        return String(text)
    }
}
