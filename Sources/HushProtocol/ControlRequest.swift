import HushCore

/// The `id` a request may carry; its reply echoes it. A number or a string, as the client chose.
public enum RequestID: Hashable, Sendable, Codable, CustomStringConvertible {
    case number(Int64)
    case string(String)

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let number = try? container.decode(Int64.self) {
            self = .number(number)
        } else {
            self = .string(try container.decode(String.self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        }
    }

    var json: JSONValue {
        switch self {
        case .number(let value): .number(Double(value))
        case .string(let value): .string(value)
        }
    }

    public var description: String {
        switch self {
        case .number(let value): "\(value)"
        case .string(let value): "\"\(value)\""
        }
    }
}

/// What a session plays: a sound file (a path on hushd's machine) or a sine tone.
public enum SoundSource: Hashable, Sendable, CustomStringConvertible {
    case file(String)
    /// A sine tone at this frequency in Hz (test tones; a ringtone when nothing else is at hand).
    case tone(Double)

    /// The frequencies a tone may have.
    public static let toneRange: ClosedRange<Double> = 1...20_000

    public var description: String {
        switch self {
        case .file(let path): path
        case .tone(let hertz): "a \(hertz.compactText) Hz tone"
        }
    }
}

/// A volume request's change: to a step, or by a number of steps.
public enum VolumeChange: Hashable, Sendable {
    case step(VolumeStep)
    case delta(Int)
}

/// Which events a subscriber wants.
public enum ControlEventKind: String, Hashable, Sendable, CaseIterable, Codable, Comparable {
    case interruptionBegan = "interruption-began"
    case interruptionEnded = "interruption-ended"
    case routeChanged = "route-changed"
    case volumeChanged = "volume-changed"
    case silenceChanged = "silence-changed"
    case secondaryAudioHint = "secondary-audio-hint"
    case buttonsControl = "buttons-control"
    case remoteCommand = "remote-command"
    case sessionFinished = "session-finished"
    case hearingWarning = "hearing-warning"
    case decision

    public static func < (a: Self, b: Self) -> Bool {
        allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
    }
}

/// One thing a client asks hushd to do.
public enum ControlCommand: Hashable, Sendable {
    /// Says hello; the reply carries hushd's version, the protocol version and the client's id. `name` appears in
    /// hushd's log beside the connection.
    case hello(name: String?)
    /// Same reply as `hello`.
    case version
    /// Activates a session; the reply carries its id. `name` is for logs and status.
    case activate(SessionConfiguration, name: String?)
    /// Attaches a sound to a session and plays it.
    case play(SessionID, SoundSource, loop: Bool)
    /// Sets a session's own level, relative to its bus (policy R26).
    case setLevel(SessionID, SessionLevel)
    case pause(SessionID)
    case resume(SessionID)
    case stop(SessionID)
    case deactivate(SessionID, notifyOthers: Bool)
    /// Reads a volume; the reply carries it.
    case getVolume(VolumeKind)
    /// Sets a volume, or moves it by steps; the reply carries the new value.
    case setVolume(VolumeKind, VolumeChange)
    /// Reads the route; the reply carries it.
    case getRoute
    /// Picks a route, or with nil goes back to automatic routing (policy R13).
    case setRoute(Route?)
    case status
    /// Subscribes to events of these kinds (all of them when nil); the reply lists them.
    case subscribe(Set<ControlEventKind>?)
    case unsubscribe
    /// Opens a stream of the `hush` ALSA device on this connection; the reply carries `stream` and, in the same
    /// sendmsg, the stream's memfd and eventfd (docs/protocol.md, "Streams").
    case openStream(StreamRequest)
    /// Starts, pauses, resumes, stops or re-prepares a stream this connection opened.
    case stream(StreamID, StreamAction)
    /// Ends a stream this connection opened (closing the connection does too).
    case closeStream(StreamID)

    /// The command's name on the wire.
    public var name: String {
        switch self {
        case .hello: "hello"
        case .version: "version"
        case .activate: "activate"
        case .play: "play"
        case .setLevel: "level"
        case .pause: "pause"
        case .resume: "resume"
        case .stop: "stop"
        case .deactivate: "deactivate"
        case .getVolume, .setVolume: "volume"
        case .getRoute, .setRoute: "route"
        case .status: "status"
        case .subscribe: "subscribe"
        case .unsubscribe: "unsubscribe"
        case .openStream: "open-stream"
        case .stream: "stream"
        case .closeStream: "close-stream"
        }
    }

    /// Every command name the protocol knows, for error messages and docs.
    public static let names = [
        "hello", "version", "activate", "play", "level", "pause", "resume", "stop", "deactivate", "volume", "route",
        "status",
        "subscribe", "unsubscribe", "open-stream", "stream", "close-stream",
    ]
}

/// A request: a command and the id its reply will echo.
public struct ControlRequest: Hashable, Sendable {
    public var id: RequestID?
    public var command: ControlCommand

    public init(id: RequestID? = nil, _ command: ControlCommand) {
        self.id = id
        self.command = command
    }

    /// The request as the JSON object sent on the wire.
    public var json: JSONValue {
        var members: [String: JSONValue] = ["command": .string(command.name)]
        if let id { members["id"] = id.json }
        switch command {
        case .hello(let name):
            if let name { members["name"] = .string(name) }
        case .version, .status, .unsubscribe, .getRoute:
            break
        case .activate(let configuration, let name):
            members["bus"] = .string(configuration.bus.rawValue)
            members["category"] = .string(configuration.category.rawValue)
            members["options"] = .array(configuration.options.names.map { .string($0) })
            if configuration.transient { members["transient"] = .bool(true) }
            if configuration.mode != .default { members["mode"] = .string(configuration.mode.rawValue) }
            if configuration.level != .unity { members["gain"] = configuration.level.json }
            if let name { members["name"] = .string(name) }
        case .play(let session, let sound, let loop):
            members["session"] = .number(Double(session.rawValue))
            switch sound {
            case .file(let path): members["sound"] = .string(path)
            case .tone(let hertz): members["tone"] = .number(hertz)
            }
            members["loop"] = .bool(loop)
        case .setLevel(let session, let level):
            members["session"] = .number(Double(session.rawValue))
            members["gain"] = level.json
        case .pause(let session), .resume(let session), .stop(let session):
            members["session"] = .number(Double(session.rawValue))
        case .deactivate(let session, let notifyOthers):
            members["session"] = .number(Double(session.rawValue))
            members["notifyOthers"] = .bool(notifyOthers)
        case .getVolume(let kind):
            members["kind"] = .string(kind.rawValue)
        case .setVolume(let kind, let change):
            members["kind"] = .string(kind.rawValue)
            switch change {
            case .step(let step): members["step"] = .number(Double(step.rawValue))
            case .delta(let delta): members["delta"] = .number(Double(delta))
            }
        case .setRoute(let route):
            members["override"] = .string(route?.name ?? "auto")
        case .subscribe(let kinds):
            if let kinds { members["events"] = .array(kinds.sorted().map { .string($0.rawValue) }) }
        case .openStream(let stream):
            members["direction"] = .string(stream.direction.rawValue)
            members["category"] = .string(stream.category.rawValue)
            if let bus = stream.bus { members["bus"] = .string(bus.rawValue) }
            if !stream.options.isEmpty { members["options"] = .array(stream.options.names.map { .string($0) }) }
            if stream.transient { members["transient"] = .bool(true) }
            if stream.mode != .default { members["mode"] = .string(stream.mode.rawValue) }
            if stream.level != .unity { members["gain"] = stream.level.json }
            if let name = stream.name { members["name"] = .string(name) }
            if let session = stream.session { members["session"] = .number(Double(session.rawValue)) }
            members["rate"] = .number(Double(stream.rate))
            members["channels"] = .number(Double(stream.channels))
            members["format"] = .string(stream.format.rawValue)
            members["bufferFrames"] = .number(Double(stream.bufferFrames))
            if let period = stream.periodFrames { members["periodFrames"] = .number(Double(period)) }
        case .stream(let stream, let action):
            members["stream"] = .number(Double(stream.rawValue))
            members["action"] = .string(action.rawValue)
        case .closeStream(let stream):
            members["stream"] = .number(Double(stream.rawValue))
        }
        return .object(members)
    }
}

extension CategoryOptions {
    /// The options' names on the wire, in a fixed order.
    public var names: [String] {
        var names: [String] = []
        if contains(.mixWithOthers) { names.append("mixWithOthers") }
        if contains(.duckOthers) { names.append("duckOthers") }
        return names
    }

    /// Every option by its wire name.
    public static let byName: [(String, CategoryOptions)] = [
        ("mixWithOthers", .mixWithOthers), ("duckOthers", .duckOthers),
    ]
}

extension Double {
    /// "440" for whole numbers, "440.5" otherwise.
    var compactText: String {
        rounded() == self && abs(self) < 1e15 ? "\(Int64(self))" : "\(self)"
    }
}

extension SessionLevel {
    /// The level in dB as a JSON number with the digits a person wrote (-0.1, not -0.10000000149).
    public var json: JSONValue { .number(Double("\(decibels)") ?? Double(decibels)) }
}
