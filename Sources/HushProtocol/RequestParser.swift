import HushCore

/// A request that could not be understood: the error to reply with, and the id to echo when one was readable.
public struct RequestFailure: Error, Hashable, Sendable {
    public var id: RequestID?
    public var error: ControlError

    public init(id: RequestID?, error: ControlError) {
        self.id = id
        self.error = error
    }
}

/// Checks a request object field by field. Every problem becomes an error that names the field, what was expected
/// and what arrived.
struct RequestParser {
    private var members: [String: JSONValue]
    private var used: Set<String> = ["command", "id"]
    private let command: String

    /// Reads the request in `value`.
    static func parse(_ value: JSONValue) -> Result<ControlRequest, RequestFailure> {
        guard case .object(let members) = value else {
            return .failure(
                RequestFailure(
                    id: nil,
                    error: ControlError(
                        .notAnObject,
                        "a request is a JSON object such as {\"command\":\"status\"}, not \(value.typeName)"
                    )
                )
            )
        }
        var id: RequestID?
        switch members["id"] {
        case nil, .null?: break
        case .string(let text)?: id = .string(text)
        case let number? where number.integer != nil: id = .number(number.integer!)
        case let other?:
            return .failure(
                RequestFailure(
                    id: nil,
                    error: ControlError(
                        .wrongType,
                        "field 'id': expected a whole number or a string, got \(other.typeName) \(other.preview)",
                        field: "id"
                    )
                )
            )
        }
        guard let commandValue = members["command"] else {
            return .failure(
                RequestFailure(
                    id: id,
                    error: ControlError(
                        .missingField,
                        "field 'command' is missing: name one of \(ControlCommand.names.joined(separator: ", "))",
                        field: "command"
                    )
                )
            )
        }
        guard case .string(let name) = commandValue else {
            return .failure(
                RequestFailure(
                    id: id,
                    error: ControlError(
                        .wrongType,
                        "field 'command': expected a string, got \(commandValue.typeName) \(commandValue.preview)",
                        field: "command"
                    )
                )
            )
        }
        var parser = RequestParser(members: members, command: name)
        do throws(ControlError) {
            let command = try parser.command(named: name)
            try parser.rejectUnusedFields()
            return .success(ControlRequest(id: id, command))
        } catch {
            return .failure(RequestFailure(id: id, error: error))
        }
    }

    private init(members: [String: JSONValue], command: String) {
        self.members = members
        self.command = command
    }

    private mutating func command(named name: String) throws(ControlError) -> ControlCommand {
        switch name {
        case "hello": return .hello(name: try optionalString("name"))
        case "version": return .version
        case "status": return .status
        case "unsubscribe": return .unsubscribe
        case "activate":
            let bus: Bus = try required("bus", names: Bus.allCases.map(\.rawValue), Bus.init(rawValue:))
            let category: HushCore.Category = try required(
                "category",
                names: HushCore.Category.allCases.map(\.rawValue),
                HushCore.Category.init(rawValue:)
            )
            let options = try options() ?? []
            let transient = try optionalBool("transient") ?? false
            let mode = try mode() ?? .default
            let level = try level() ?? .unity
            let configuration = SessionConfiguration(
                bus: bus,
                category: category,
                options: options,
                transient: transient,
                mode: mode,
                level: level
            )
            return .activate(configuration, name: try optionalString("name"))
        case "play":
            let session = try session()
            let sound = try optionalString("sound")
            let tone = try optionalNumber("tone")
            let loop = try optionalBool("loop") ?? false
            switch (sound, tone) {
            case (let path?, nil):
                guard !path.isEmpty else {
                    throw ControlError(.invalidValue, "field 'sound': expected a file path, got \"\"", field: "sound")
                }
                return .play(session, .file(path), loop: loop)
            case (nil, let hertz?):
                guard SoundSource.toneRange.contains(hertz) else {
                    throw ControlError(
                        .invalidValue,
                        "field 'tone': expected a frequency in Hz from 1 to 20000, got \(hertz.compactText)",
                        field: "tone"
                    )
                }
                return .play(session, .tone(hertz), loop: loop)
            case (nil, nil):
                throw ControlError(
                    .missingField,
                    "play needs 'sound' (a file path) or 'tone' (a frequency in Hz)",
                    field: "sound"
                )
            case (_?, _?):
                throw ControlError(
                    .conflictingFields,
                    "play takes 'sound' or 'tone', not both",
                    field: "tone"
                )
            }
        case "level":
            let session = try session()
            guard let level = try level() else {
                throw ControlError(
                    .missingField,
                    "level needs field 'gain': the session's own level in dB, from \(Self.levelRange)",
                    field: "gain"
                )
            }
            return .setLevel(session, level)
        case "pause": return .pause(try session())
        case "resume": return .resume(try session())
        case "stop": return .stop(try session())
        case "deactivate":
            return .deactivate(try session(), notifyOthers: try optionalBool("notifyOthers") ?? false)
        case "volume":
            let kind: VolumeKind =
                try optional("kind", names: VolumeKind.allCases.map(\.rawValue), VolumeKind.init(rawValue:))
                ?? .system
            let step = try optionalInteger("step")
            let delta = try optionalInteger("delta")
            switch (step, delta) {
            case (nil, nil): return .getVolume(kind)
            case (let step?, nil):
                guard let value = VolumeStep(rawValue: Int(clamping: step)) else {
                    throw ControlError(
                        .invalidValue,
                        "field 'step': expected a volume step from 0 to \(VolumeStep.count), got \(step)",
                        field: "step"
                    )
                }
                return .setVolume(kind, .step(value))
            case (nil, let delta?):
                guard abs(delta) <= Int64(VolumeStep.count) else {
                    throw ControlError(
                        .invalidValue,
                        "field 'delta': expected a number of steps from -\(VolumeStep.count) to "
                            + "\(VolumeStep.count), got \(delta)",
                        field: "delta"
                    )
                }
                return .setVolume(kind, .delta(Int(delta)))
            case (_?, _?):
                throw ControlError(
                    .conflictingFields,
                    "volume takes 'step' (set) or 'delta' (move), not both",
                    field: "delta"
                )
            }
        case "route":
            guard let name = try optionalString("override") else { return .getRoute }
            guard !name.isEmpty else {
                throw ControlError(
                    .invalidValue,
                    "field 'override': expected a route name (speaker, headphones, …) or \"auto\", got \"\"",
                    field: "override"
                )
            }
            return .setRoute(name == "auto" ? nil : Route(name))
        case "open-stream": return .openStream(try streamRequest())
        case "stream":
            let stream = try stream()
            let action: StreamAction = try required(
                "action",
                names: StreamAction.allCases.map(\.rawValue),
                StreamAction.init(rawValue:)
            )
            return .stream(stream, action)
        case "close-stream": return .closeStream(try stream())
        case "subscribe":
            guard let names = try optionalStrings("events") else { return .subscribe(nil) }
            var kinds: Set<ControlEventKind> = []
            for name in names {
                guard let kind = ControlEventKind(rawValue: name) else {
                    let known = ControlEventKind.allCases.map(\.rawValue)
                    throw ControlError(
                        .invalidValue,
                        "field 'events': \"\(name)\" is not an event; expected some of \(known.joined(separator: ", "))"
                            + Self.suggestion(for: name, among: known),
                        field: "events"
                    )
                }
                kinds.insert(kind)
            }
            return .subscribe(kinds)
        default:
            throw ControlError(
                .unknownCommand,
                "unknown command \"\(name)\"" + Self.suggestion(for: name, among: ControlCommand.names)
                    + "; commands: \(ControlCommand.names.joined(separator: ", "))",
                field: "command"
            )
        }
    }

    /// `open-stream`'s fields, checked in the order a person reads them.
    private mutating func streamRequest() throws(ControlError) -> StreamRequest {
        let direction: StreamDirection = try required(
            "direction",
            names: StreamDirection.allCases.map(\.rawValue),
            StreamDirection.init(rawValue:)
        )
        let category: HushCore.Category = try required(
            "category",
            names: HushCore.Category.allCases.map(\.rawValue),
            HushCore.Category.init(rawValue:)
        )
        // A stream's direction and its session's category must agree: a capture stream hears the microphone only
        // in a session that records, and `record` is capture only (as a bus's category may not be record).
        switch direction {
        case .capture where !category.records:
            throw ControlError(
                .invalidValue,
                "field 'category': a capture stream records: expected record or playAndRecord, got \"\(category)\"",
                field: "category"
            )
        case .playback where category == .record:
            throw ControlError(
                .invalidValue,
                "field 'category': a playback stream plays, and record is capture only; expected one of "
                    + HushCore.Category.allCases.filter { $0 != .record }.map(\.rawValue).joined(separator: ", "),
                field: "category"
            )
        default: break
        }
        let bus: Bus? = try optional("bus", names: Bus.allCases.map(\.rawValue), Bus.init(rawValue:))
        let options = try options()
        let transient = try optionalBool("transient")
        let mode = try mode()
        let level = try level()
        let name = try optionalString("name")
        let session = try optionalSession()
        if session != nil {
            // Joining a session takes it as it is; these describe a session to activate.
            let given = [
                ("bus", bus != nil), ("options", options != nil), ("transient", transient != nil),
                ("mode", mode != nil), ("gain", level != nil),
            ]
            for (field, given) in given where given {
                throw ControlError(
                    .conflictingFields,
                    "open-stream with 'session' joins that session as it is; '\(field)' is for a session it "
                        + "activates, so give one or the other",
                    field: field
                )
            }
        }
        let rate = try requiredInteger(
            "rate",
            StreamRequest.rates,
            "a rate in Hz from \(StreamRequest.rates.lowerBound) to \(StreamRequest.rates.upperBound)"
        )
        let channels = try requiredInteger("channels", StreamRequest.channelCounts, "1 (mono) or 2 (stereo)")
        let format: StreamSampleFormat = try required(
            "format",
            names: StreamSampleFormat.allCases.map(\.rawValue),
            StreamSampleFormat.init(rawValue:)
        )
        let buffers = StreamRequest.bufferFrameCounts
        let bufferFrames = try requiredInteger(
            "bufferFrames",
            buffers,
            "a number of frames from \(buffers.lowerBound) to \(buffers.upperBound)"
        )
        let periods = StreamRequest.periodFrameCounts(bufferFrames: bufferFrames)
        var periodFrames: Int?
        if let period = try optionalInteger("periodFrames") {
            guard periods.contains(Int(period)) else {
                throw ControlError(
                    .invalidValue,
                    "field 'periodFrames': expected a number of frames from \(periods.lowerBound) to "
                        + "\(periods.upperBound) (half of bufferFrames \(bufferFrames)), got \(period)",
                    field: "periodFrames"
                )
            }
            periodFrames = Int(period)
        }
        return StreamRequest(
            direction: direction,
            category: category,
            bus: bus,
            options: options ?? [],
            transient: transient ?? false,
            mode: mode ?? .default,
            level: level ?? .unity,
            name: name,
            session: session,
            rate: rate,
            channels: channels,
            format: format,
            bufferFrames: bufferFrames,
            periodFrames: periodFrames
        )
    }

    // MARK: Fields

    /// `mode`: a session mode (R22), if given.
    private mutating func mode() throws(ControlError) -> SessionMode? {
        try optional("mode", names: SessionMode.allCases.map(\.rawValue), SessionMode.init(rawValue:))
    }

    /// "-96 dB to 0 dB", for messages.
    static let levelRange =
        "\(DecimalText.trimmed(SessionLevel.range.lowerBound, places: 0)) dB to "
        + "\(DecimalText.trimmed(SessionLevel.range.upperBound, places: 0)) dB"

    /// `gain`: a session's own level in decibels (R26), if given.
    private mutating func level() throws(ControlError) -> SessionLevel? {
        guard let decibels = try optionalNumber("gain") else { return nil }
        guard let level = SessionLevel(decibels: Float(decibels)) else {
            throw ControlError(
                .invalidValue,
                "field 'gain': expected the session's own level in dB, from \(Self.levelRange) (a session is never "
                    + "louder than its bus), got \(decibels.compactText)",
                field: "gain"
            )
        }
        return level
    }

    private mutating func take(_ field: String) -> JSONValue? {
        used.insert(field)
        guard let value = members[field], value != .null else { return nil }
        return value
    }

    private func wrongType(_ field: String, _ expected: String, _ value: JSONValue) -> ControlError {
        ControlError(
            .wrongType,
            "field '\(field)': expected \(expected), got \(value.typeName) \(value.preview)",
            field: field
        )
    }

    private mutating func optionalString(_ field: String) throws(ControlError) -> String? {
        guard let value = take(field) else { return nil }
        guard case .string(let text) = value else { throw wrongType(field, "a string", value) }
        return text
    }

    private mutating func optionalBool(_ field: String) throws(ControlError) -> Bool? {
        guard let value = take(field) else { return nil }
        guard case .bool(let flag) = value else { throw wrongType(field, "true or false", value) }
        return flag
    }

    private mutating func optionalNumber(_ field: String) throws(ControlError) -> Double? {
        guard let value = take(field) else { return nil }
        guard case .number(let number) = value else { throw wrongType(field, "a number", value) }
        return number
    }

    private mutating func optionalInteger(_ field: String) throws(ControlError) -> Int64? {
        guard let value = take(field) else { return nil }
        guard let number = value.integer else { throw wrongType(field, "a whole number", value) }
        return number
    }

    /// A whole number `field` must have, within `range`; `expected` says what it is ("a rate in Hz from 8000 to
    /// 192000").
    private mutating func requiredInteger(
        _ field: String,
        _ range: ClosedRange<Int>,
        _ expected: String
    ) throws(ControlError) -> Int {
        guard let value = try optionalInteger(field) else {
            throw ControlError(.missingField, "\(command) needs field '\(field)': \(expected)", field: field)
        }
        guard value >= Int64(range.lowerBound), value <= Int64(range.upperBound) else {
            throw ControlError(.invalidValue, "field '\(field)': expected \(expected), got \(value)", field: field)
        }
        return Int(value)
    }

    /// `options`: names of category options.
    private mutating func options() throws(ControlError) -> CategoryOptions? {
        guard let names = try optionalStrings("options") else { return nil }
        var options: CategoryOptions = []
        for option in names {
            guard let known = CategoryOptions.byName.first(where: { $0.0 == option }) else {
                throw ControlError(
                    .invalidValue,
                    "field 'options': \"\(option)\" is not an option; expected "
                        + CategoryOptions.byName.map(\.0).joined(separator: " or ")
                        + Self.suggestion(for: option, among: CategoryOptions.byName.map(\.0)),
                    field: "options"
                )
            }
            options.insert(known.1)
        }
        return options
    }

    private mutating func optionalStrings(_ field: String) throws(ControlError) -> [String]? {
        guard let value = take(field) else { return nil }
        guard case .array(let items) = value else { throw wrongType(field, "an array of strings", value) }
        var strings: [String] = []
        for item in items {
            guard case .string(let text) = item else { throw wrongType(field, "an array of strings", value) }
            strings.append(text)
        }
        return strings
    }

    private mutating func optional<T>(
        _ field: String,
        names: [String],
        _ make: (String) -> T?
    ) throws(ControlError) -> T? {
        guard let value = take(field) else { return nil }
        guard case .string(let text) = value else {
            throw wrongType(field, "one of \(names.joined(separator: ", "))", value)
        }
        guard let result = make(text) else {
            throw ControlError(
                .invalidValue,
                "field '\(field)': expected one of \(names.joined(separator: ", ")), got \"\(text)\""
                    + Self.suggestion(for: text, among: names),
                field: field
            )
        }
        return result
    }

    private mutating func required<T>(
        _ field: String,
        names: [String],
        _ make: (String) -> T?
    ) throws(ControlError) -> T {
        guard let result = try optional(field, names: names, make) else {
            throw ControlError(
                .missingField,
                "\(command) needs field '\(field)': one of \(names.joined(separator: ", "))",
                field: field
            )
        }
        return result
    }

    private mutating func session() throws(ControlError) -> SessionID {
        guard let session = try optionalSession() else {
            throw ControlError(
                .missingField,
                "\(command) needs field 'session': the id activate replied with",
                field: "session"
            )
        }
        return session
    }

    private mutating func optionalSession() throws(ControlError) -> SessionID? {
        guard let value = take("session") else { return nil }
        guard let number = value.integer, number > 0 else {
            throw wrongType("session", "a session id (a whole number above 0)", value)
        }
        return SessionID(UInt64(number))
    }

    private mutating func stream() throws(ControlError) -> StreamID {
        guard let value = take("stream") else {
            throw ControlError(
                .missingField,
                "\(command) needs field 'stream': the id open-stream replied with",
                field: "stream"
            )
        }
        guard let number = value.integer, number > 0 else {
            throw wrongType("stream", "a stream id (a whole number above 0)", value)
        }
        return StreamID(UInt64(number))
    }

    private func rejectUnusedFields() throws(ControlError) {
        let unknown = members.keys.filter { !used.contains($0) }.sorted()
        guard let first = unknown.first else { return }
        throw ControlError(
            .unknownField,
            "\(command) takes no field '\(first)'"
                + Self.suggestion(for: first, among: used.sorted().filter { $0 != "command" && $0 != "id" })
                + (used.count > 2
                    ? "; it takes " + used.sorted().map { "'\($0)'" }.joined(separator: ", ")
                    : "; it takes only 'command' and 'id'"),
            field: first
        )
    }

    /// " (did you mean \"music\"?)" when one of `names` is a likely typo of `word`.
    static func suggestion(for word: String, among names: [String]) -> String {
        let lowered = word.lowercased()
        let scored = names.map { ($0, Suggestion.editDistance(lowered, $0.lowercased())) }.min { $0.1 < $1.1 }
        guard let (best, distance) = scored, distance <= max(1, best.count / 3) else { return "" }
        return " (did you mean \"\(best)\"?)"
    }
}
