import Foundation
import HushCore
import Testing

@testable import HushProtocol

/// The protocol's lines: requests, replies and events round-trip, and every malformed request gets an error reply
/// that names the problem.
@Suite("control codec")
struct ControlCodecTests {
    let codec = ControlCodec()

    func decode(_ text: String) -> Result<ControlRequest, RequestFailure> { codec.decodeRequest(Array(text.utf8)) }

    func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    static let requests: [ControlRequest] = [
        ControlRequest(id: .number(1), .hello(name: "test")),
        ControlRequest(id: .string("a"), .hello(name: nil)),
        ControlRequest(.version),
        ControlRequest(id: .number(2), .activate(SessionConfiguration(bus: .music, category: .playback), name: nil)),
        ControlRequest(
            id: .number(3),
            .activate(
                SessionConfiguration(
                    bus: .effect,
                    category: .ambient,
                    options: [.mixWithOthers, .duckOthers],
                    transient: true
                ),
                name: "prompt"
            )
        ),
        ControlRequest(id: .number(4), .play(SessionID(3), .file("/usr/share/sounds/ring.wav"), loop: true)),
        ControlRequest(id: .number(5), .play(SessionID(3), .tone(440), loop: false)),
        ControlRequest(id: .number(6), .play(SessionID(3), .tone(1234.5), loop: false)),
        ControlRequest(id: .number(7), .pause(SessionID(3))),
        ControlRequest(id: .number(8), .resume(SessionID(3))),
        ControlRequest(id: .number(9), .stop(SessionID(3))),
        ControlRequest(id: .number(10), .deactivate(SessionID(3), notifyOthers: true)),
        ControlRequest(id: .number(11), .deactivate(SessionID(3), notifyOthers: false)),
        ControlRequest(id: .number(12), .getVolume(.ringer)),
        ControlRequest(id: .number(13), .setVolume(.system, .step(VolumeStep(clamping: 9)))),
        ControlRequest(id: .number(14), .setVolume(.ringer, .delta(-2))),
        ControlRequest(id: .number(15), .getRoute),
        ControlRequest(id: .number(16), .setRoute(.headphones)),
        ControlRequest(id: .number(17), .setRoute(nil)),
        ControlRequest(id: .number(18), .status),
        ControlRequest(id: .number(19), .subscribe(nil)),
        ControlRequest(id: .number(20), .subscribe([.decision, .routeChanged])),
        ControlRequest(id: .number(21), .unsubscribe),
        ControlRequest(
            id: .number(22),
            .openStream(
                StreamRequest(
                    direction: .playback,
                    category: .playback,
                    rate: 44_100,
                    channels: 2,
                    format: .s16LE,
                    bufferFrames: 22_050
                )
            )
        ),
        ControlRequest(
            id: .number(23),
            .openStream(
                StreamRequest(
                    direction: .capture,
                    category: .playAndRecord,
                    bus: .music,
                    options: [.mixWithOthers],
                    transient: true,
                    name: "voip",
                    rate: 16_000,
                    channels: 1,
                    format: .floatLE,
                    bufferFrames: 4096,
                    periodFrames: 256
                )
            )
        ),
        ControlRequest(
            id: .number(24),
            .openStream(
                StreamRequest(
                    direction: .playback,
                    category: .playAndRecord,
                    name: "voip",
                    session: SessionID(3),
                    rate: 192_000,
                    channels: 2,
                    format: .s32LE,
                    bufferFrames: 262_144,
                    periodFrames: 131_072
                )
            )
        ),
        ControlRequest(id: .number(25), .stream(StreamID(4), .start)),
        ControlRequest(id: .number(26), .stream(StreamID(4), .pause)),
        ControlRequest(id: .number(27), .stream(StreamID(4), .resume)),
        ControlRequest(id: .number(28), .stream(StreamID(4), .stop)),
        ControlRequest(id: .number(29), .stream(StreamID(4), .prepare)),
        ControlRequest(id: .number(30), .closeStream(StreamID(4))),
        ControlRequest(id: .number(31), .setLevel(SessionID(3), SessionLevel(decibels: -10)!)),
        ControlRequest(id: .number(32), .setLevel(SessionID(3), SessionLevel(decibels: -0.1)!)),
        ControlRequest(
            id: .number(33),
            .activate(
                SessionConfiguration(bus: .effect, category: .ambient, level: SessionLevel(decibels: -96)!),
                name: "clicks"
            )
        ),
        ControlRequest(
            id: .number(34),
            .openStream(
                StreamRequest(
                    direction: .playback,
                    category: .ambient,
                    level: SessionLevel(decibels: -12.5)!,
                    rate: 48_000,
                    channels: 2,
                    format: .s16LE,
                    bufferFrames: 4096
                )
            )
        ),
    ]

    @Test("a session's level on the wire: gain in dB with the digits written (R26)")
    func levelBytes() {
        #expect(text(codec.encode(Self.requests[32])) == #"{"command":"level","gain":-10,"id":31,"session":3}"# + "\n")
        #expect(text(codec.encode(Self.requests[33])) == #"{"command":"level","gain":-0.1,"id":32,"session":3}"# + "\n")
        #expect(String(decoding: codec.encode(Self.requests[34]), as: UTF8.self).contains(#""gain":-96"#))
        let plain = ControlRequest(.activate(SessionConfiguration(bus: .music, category: .playback), name: nil))
        #expect(!text(codec.encode(plain)).contains("gain"), "0 dB is the default and is not written")
    }

    @Test("every request survives encode then decode", arguments: requests)
    func requestRoundTrip(_ request: ControlRequest) throws {
        let line = codec.encode(request)
        #expect(line.last == 0x0A)
        #expect(!line.dropLast().contains(0x0A))
        #expect(try decode(text(Array(line.dropLast()))).get() == request)
    }

    @Test("requests on the wire look as documented")
    func requestBytes() {
        #expect(
            text(codec.encode(Self.requests[4]))
                == #"{"bus":"effect","category":"ambient","command":"activate","id":3,"name":"prompt","#
                + #""options":["mixWithOthers","duckOthers"],"transient":true}"# + "\n"
        )
        #expect(
            text(codec.encode(Self.requests[5]))
                == #"{"command":"play","id":4,"loop":true,"session":3,"sound":"/usr/share/sounds/ring.wav"}"# + "\n"
        )
        #expect(text(codec.encode(Self.requests[17])) == #"{"command":"route","id":16,"override":"headphones"}"# + "\n")
        #expect(text(codec.encode(Self.requests[18])) == #"{"command":"route","id":17,"override":"auto"}"# + "\n")
    }

    @Test("hand-written requests: defaults, null fields and spacing")
    func handWritten() throws {
        #expect(try decode(#"  { "command" : "status" }  "#).get() == ControlRequest(.status))
        #expect(try decode(#"{"command":"volume"}"#).get() == ControlRequest(.getVolume(.system)))
        #expect(try decode(#"{"command":"volume","step":0}"#).get().command == .setVolume(.system, .step(.minimum)))
        #expect(try decode(#"{"command":"volume","delta":16}"#).get().command == .setVolume(.system, .delta(16)))
        #expect(
            try decode(#"{"command":"deactivate","session":2}"#).get().command
                == .deactivate(SessionID(2), notifyOthers: false)
        )
        #expect(
            try decode(#"{"command":"play","session":1,"tone":440.0,"loop":null}"#).get().command
                == .play(SessionID(1), .tone(440), loop: false)
        )
        #expect(try decode(#"{"command":"hello","id":null}"#).get() == ControlRequest(.hello(name: nil)))
        #expect(try decode(#"{"command":"status","id":-5}"#).get().id == .number(-5))
        #expect(
            try decode(
                #"{"command":"open-stream","direction":"playback","category":"ambient","bus":null,"options":[],"#
                    + #""transient":false,"rate":8000,"channels":1,"format":"S16_LE","bufferFrames":256,"#
                    + #""periodFrames":null}"#
            ).get().command
                == .openStream(
                    StreamRequest(
                        direction: .playback,
                        category: .ambient,
                        rate: 8000,
                        channels: 1,
                        format: .s16LE,
                        bufferFrames: 256
                    )
                )
        )
        #expect(
            try decode(#"{"command":"stream","stream":9,"action":"prepare","id":"p"}"#).get()
                == ControlRequest(id: .string("p"), .stream(StreamID(9), .prepare))
        )
    }

    @Test("open-stream's bus is hushd's pick when absent; its periods are 16 frames up to half the buffer")
    func streamRequestDefaults() {
        let request = StreamRequest(
            direction: .playback,
            category: .ambient,
            rate: 48_000,
            channels: 2,
            format: .s16LE,
            bufferFrames: 4096
        )
        #expect(request.sessionConfiguration == SessionConfiguration(bus: .effect, category: .ambient))
        var named = request
        named.bus = .ringer
        named.options = [.duckOthers]
        named.transient = true
        #expect(
            named.sessionConfiguration
                == SessionConfiguration(bus: .ringer, category: .ambient, options: [.duckOthers], transient: true)
        )
        #expect(StreamRequest.periodFrameCounts(bufferFrames: 4096) == 16...2048)
        #expect(StreamRequest.periodFrameCounts(bufferFrames: 256) == 16...128)
        #expect("\(request)" == "playback 48000 Hz 2 ch S16_LE, 4096 frames")
        #expect(ControlCommand.openStream(request).name == "open-stream")
        #expect(ControlCommand.stream(StreamID(1), .stop).name == "stream")
        #expect(ControlCommand.closeStream(StreamID(1)).name == "close-stream")
    }

    /// A request that must fail: the code, the field, the message, and the id the reply echoes.
    struct Refusal: CustomTestStringConvertible, Sendable {
        var line: String
        var code: ControlError.Code
        var field: String?
        var message: String
        var id: RequestID? = nil
        var testDescription: String { line }
    }

    static let refusals: [Refusal] = [
        Refusal(
            line: "status",
            code: .malformedJSON,
            message: "the line is not a JSON object (column 1: expected a value, got 's'): status; send one "
                + "object per line, such as {\"command\":\"status\"}"
        ),
        Refusal(
            line: #"{"command":"status""#,
            code: .malformedJSON,
            message: "the line is not a JSON object (column 20: expected ',' or '}' after field 'command', got the "
                + "end of the line): {\"command\":\"status\"; send one object per line, such as {\"command\":\"status\"}"
        ),
        Refusal(
            line: "[1,2]",
            code: .notAnObject,
            message: "a request is a JSON object such as {\"command\":\"status\"}, not an array"
        ),
        Refusal(
            line: #"{"id":4}"#,
            code: .missingField,
            field: "command",
            message:
                "field 'command' is missing: name one of hello, version, activate, play, level, pause, resume, stop, "
                + "deactivate, volume, route, status, subscribe, unsubscribe, open-stream, stream, close-stream",
            id: .number(4)
        ),
        Refusal(
            line: #"{"id":"x","command":7}"#,
            code: .wrongType,
            field: "command",
            message: "field 'command': expected a string, got a number 7",
            id: .string("x")
        ),
        Refusal(
            line: #"{"id":[1],"command":"status"}"#,
            code: .wrongType,
            field: "id",
            message: "field 'id': expected a whole number or a string, got an array [1]"
        ),
        Refusal(
            line: #"{"id":1.5,"command":"status"}"#,
            code: .wrongType,
            field: "id",
            message: "field 'id': expected a whole number or a string, got a number 1.5"
        ),
        Refusal(
            line: #"{"id":9,"command":"stauts"}"#,
            code: .unknownCommand,
            field: "command",
            message: "unknown command \"stauts\" (did you mean \"status\"?); commands: hello, version, activate, "
                + "play, level, pause, resume, stop, deactivate, volume, route, status, subscribe, unsubscribe, "
                + "open-stream, stream, close-stream",
            id: .number(9)
        ),
        Refusal(
            line: #"{"command":"launch"}"#,
            code: .unknownCommand,
            field: "command",
            message:
                "unknown command \"launch\"; commands: hello, version, activate, play, level, pause, resume, stop, "
                + "deactivate, volume, route, status, subscribe, unsubscribe, open-stream, stream, close-stream"
        ),
        Refusal(
            line: #"{"command":"activate","category":"playback"}"#,
            code: .missingField,
            field: "bus",
            message: "activate needs field 'bus': one of effect, music, ringer"
        ),
        Refusal(
            line: #"{"command":"activate","bus":"musik","category":"playback"}"#,
            code: .invalidValue,
            field: "bus",
            message: "field 'bus': expected one of effect, music, ringer, got \"musik\" (did you mean \"music\"?)"
        ),
        Refusal(
            line: #"{"command":"activate","bus":1,"category":"playback"}"#,
            code: .wrongType,
            field: "bus",
            message: "field 'bus': expected one of effect, music, ringer, got a number 1"
        ),
        Refusal(
            line: #"{"command":"activate","bus":"music"}"#,
            code: .missingField,
            field: "category",
            message: "activate needs field 'category': one of ambient, soloAmbient, playback, record, playAndRecord"
        ),
        Refusal(
            line: #"{"command":"activate","bus":"music","category":"playback","options":["duck"]}"#,
            code: .invalidValue,
            field: "options",
            message: "field 'options': \"duck\" is not an option; expected mixWithOthers or duckOthers"
        ),
        Refusal(
            line: #"{"command":"activate","bus":"music","category":"playback","options":"duckOthers"}"#,
            code: .wrongType,
            field: "options",
            message: "field 'options': expected an array of strings, got a string \"duckOthers\""
        ),
        Refusal(
            line: #"{"command":"activate","bus":"music","category":"playback","transient":"yes"}"#,
            code: .wrongType,
            field: "transient",
            message: "field 'transient': expected true or false, got a string \"yes\""
        ),
        Refusal(
            line: #"{"command":"activate","bus":"music","category":"playback","buss":"music"}"#,
            code: .unknownField,
            field: "buss",
            message: "activate takes no field 'buss' (did you mean \"bus\"?); it takes 'bus', 'category', "
                + "'command', 'gain', 'id', 'mode', 'name', 'options', 'transient'"
        ),
        Refusal(
            line: #"{"command":"status","verbose":true}"#,
            code: .unknownField,
            field: "verbose",
            message: "status takes no field 'verbose'; it takes only 'command' and 'id'"
        ),
        Refusal(
            line: #"{"command":"play","sound":"a.wav"}"#,
            code: .missingField,
            field: "session",
            message: "play needs field 'session': the id activate replied with"
        ),
        Refusal(
            line: #"{"command":"play","session":0,"sound":"a.wav"}"#,
            code: .wrongType,
            field: "session",
            message: "field 'session': expected a session id (a whole number above 0), got a number 0"
        ),
        Refusal(
            line: #"{"command":"pause","session":"3"}"#,
            code: .wrongType,
            field: "session",
            message: "field 'session': expected a session id (a whole number above 0), got a string \"3\""
        ),
        Refusal(
            line: #"{"command":"play","session":3}"#,
            code: .missingField,
            field: "sound",
            message: "play needs 'sound' (a file path) or 'tone' (a frequency in Hz)"
        ),
        Refusal(
            line: #"{"command":"play","session":3,"sound":"a.wav","tone":440}"#,
            code: .conflictingFields,
            field: "tone",
            message: "play takes 'sound' or 'tone', not both"
        ),
        Refusal(
            line: #"{"command":"play","session":3,"tone":40000}"#,
            code: .invalidValue,
            field: "tone",
            message: "field 'tone': expected a frequency in Hz from 1 to 20000, got 40000"
        ),
        Refusal(
            line: #"{"command":"play","session":3,"sound":""}"#,
            code: .invalidValue,
            field: "sound",
            message: "field 'sound': expected a file path, got \"\""
        ),
        Refusal(
            line: #"{"command":"play","session":3,"sound":"a.wav","loop":1}"#,
            code: .wrongType,
            field: "loop",
            message: "field 'loop': expected true or false, got a number 1"
        ),
        Refusal(
            line: #"{"command":"deactivate","session":3,"notifyOthers":"true"}"#,
            code: .wrongType,
            field: "notifyOthers",
            message: "field 'notifyOthers': expected true or false, got a string \"true\""
        ),
        Refusal(
            line: #"{"command":"volume","kind":"media"}"#,
            code: .invalidValue,
            field: "kind",
            message: "field 'kind': expected one of system, ringer, got \"media\""
        ),
        Refusal(
            line: #"{"command":"volume","step":17}"#,
            code: .invalidValue,
            field: "step",
            message: "field 'step': expected a volume step from 0 to 16, got 17"
        ),
        Refusal(
            line: #"{"command":"volume","step":8.5}"#,
            code: .wrongType,
            field: "step",
            message: "field 'step': expected a whole number, got a number 8.5"
        ),
        Refusal(
            line: #"{"command":"volume","delta":-20}"#,
            code: .invalidValue,
            field: "delta",
            message: "field 'delta': expected a number of steps from -16 to 16, got -20"
        ),
        Refusal(
            line: #"{"command":"volume","step":3,"delta":1}"#,
            code: .conflictingFields,
            field: "delta",
            message: "volume takes 'step' (set) or 'delta' (move), not both"
        ),
        Refusal(
            line: #"{"command":"route","override":""}"#,
            code: .invalidValue,
            field: "override",
            message: "field 'override': expected a route name (speaker, headphones, …) or \"auto\", got \"\""
        ),
        Refusal(
            line: #"{"command":"route","override":true}"#,
            code: .wrongType,
            field: "override",
            message: "field 'override': expected a string, got a boolean true"
        ),
        Refusal(
            line: #"{"command":"subscribe","events":["route-change"]}"#,
            code: .invalidValue,
            field: "events",
            message: "field 'events': \"route-change\" is not an event; expected some of interruption-began, "
                + "interruption-ended, route-changed, volume-changed, silence-changed, secondary-audio-hint, "
                + "buttons-control, remote-command, session-finished, hearing-warning, decision (did you mean \"route-changed\"?)"
        ),
        Refusal(
            line: #"{"command":"subscribe","events":[1]}"#,
            code: .wrongType,
            field: "events",
            message: "field 'events': expected an array of strings, got an array [1]"
        ),
    ]

    /// A well-formed open-stream, to spoil one field at a time: `{}` is where more fields go.
    static func openStream(_ fields: String, replacing: [String: String] = [:]) -> String {
        var base = [
            ("direction", #""playback""#), ("category", #""playback""#), ("rate", "48000"), ("channels", "2"),
            ("format", #""S16_LE""#), ("bufferFrames", "4096"),
        ]
        base = base.compactMap { key, value in
            guard let replaced = replacing[key] else { return (key, value) }
            return replaced.isEmpty ? nil : (key, replaced)
        }
        let members = base.map { "\"\($0.0)\":\($0.1)" } + (fields.isEmpty ? [] : [fields])
        return #"{"command":"open-stream","# + members.joined(separator: ",") + "}"
    }

    static let streamRefusals: [Refusal] = [
        Refusal(
            line: openStream("", replacing: ["direction": ""]),
            code: .missingField,
            field: "direction",
            message: "open-stream needs field 'direction': one of playback, capture"
        ),
        Refusal(
            line: openStream("", replacing: ["direction": #""playbak""#]),
            code: .invalidValue,
            field: "direction",
            message:
                "field 'direction': expected one of playback, capture, got \"playbak\" (did you mean \"playback\"?)"
        ),
        Refusal(
            line: openStream("", replacing: ["category": ""]),
            code: .missingField,
            field: "category",
            message: "open-stream needs field 'category': one of ambient, soloAmbient, playback, record, playAndRecord"
        ),
        Refusal(
            line: openStream("", replacing: ["direction": #""capture""#]),
            code: .invalidValue,
            field: "category",
            message: "field 'category': a capture stream records: expected record or playAndRecord, got \"playback\""
        ),
        Refusal(
            line: openStream("", replacing: ["category": #""record""#]),
            code: .invalidValue,
            field: "category",
            message: "field 'category': a playback stream plays, and record is capture only; expected one of "
                + "ambient, soloAmbient, playback, playAndRecord"
        ),
        Refusal(
            line: openStream(#""bus":"musik""#),
            code: .invalidValue,
            field: "bus",
            message: "field 'bus': expected one of effect, music, ringer, got \"musik\" (did you mean \"music\"?)"
        ),
        Refusal(
            line: openStream(#""options":["duck"]"#),
            code: .invalidValue,
            field: "options",
            message: "field 'options': \"duck\" is not an option; expected mixWithOthers or duckOthers"
        ),
        Refusal(
            line: openStream(#""name":7"#),
            code: .wrongType,
            field: "name",
            message: "field 'name': expected a string, got a number 7"
        ),
        Refusal(
            line: openStream(#""session":0"#),
            code: .wrongType,
            field: "session",
            message: "field 'session': expected a session id (a whole number above 0), got a number 0"
        ),
        Refusal(
            line: openStream(#""session":3,"bus":"music""#),
            code: .conflictingFields,
            field: "bus",
            message: "open-stream with 'session' joins that session as it is; 'bus' is for a session it activates, "
                + "so give one or the other"
        ),
        Refusal(
            line: openStream(#""session":3,"options":[]"#),
            code: .conflictingFields,
            field: "options",
            message: "open-stream with 'session' joins that session as it is; 'options' is for a session it "
                + "activates, so give one or the other"
        ),
        Refusal(
            line: openStream(#""session":3,"transient":false"#),
            code: .conflictingFields,
            field: "transient",
            message: "open-stream with 'session' joins that session as it is; 'transient' is for a session it "
                + "activates, so give one or the other"
        ),
        Refusal(
            line: openStream("", replacing: ["rate": ""]),
            code: .missingField,
            field: "rate",
            message: "open-stream needs field 'rate': a rate in Hz from 8000 to 192000"
        ),
        Refusal(
            line: openStream("", replacing: ["rate": "7999"]),
            code: .invalidValue,
            field: "rate",
            message: "field 'rate': expected a rate in Hz from 8000 to 192000, got 7999"
        ),
        Refusal(
            line: openStream("", replacing: ["rate": "192001"]),
            code: .invalidValue,
            field: "rate",
            message: "field 'rate': expected a rate in Hz from 8000 to 192000, got 192001"
        ),
        Refusal(
            line: openStream("", replacing: ["rate": #""48000""#]),
            code: .wrongType,
            field: "rate",
            message: "field 'rate': expected a whole number, got a string \"48000\""
        ),
        Refusal(
            line: openStream("", replacing: ["rate": "44100.5"]),
            code: .wrongType,
            field: "rate",
            message: "field 'rate': expected a whole number, got a number 44100.5"
        ),
        Refusal(
            line: openStream("", replacing: ["channels": "0"]),
            code: .invalidValue,
            field: "channels",
            message: "field 'channels': expected 1 (mono) or 2 (stereo), got 0"
        ),
        Refusal(
            line: openStream("", replacing: ["channels": "6"]),
            code: .invalidValue,
            field: "channels",
            message: "field 'channels': expected 1 (mono) or 2 (stereo), got 6"
        ),
        Refusal(
            line: openStream("", replacing: ["format": #""s16le""#]),
            code: .invalidValue,
            field: "format",
            message:
                "field 'format': expected one of S16_LE, S32_LE, FLOAT_LE, got \"s16le\" (did you mean \"S16_LE\"?)"
        ),
        Refusal(
            line: openStream("", replacing: ["format": "16"]),
            code: .wrongType,
            field: "format",
            message: "field 'format': expected one of S16_LE, S32_LE, FLOAT_LE, got a number 16"
        ),
        Refusal(
            line: openStream("", replacing: ["bufferFrames": ""]),
            code: .missingField,
            field: "bufferFrames",
            message: "open-stream needs field 'bufferFrames': a number of frames from 256 to 262144"
        ),
        Refusal(
            line: openStream("", replacing: ["bufferFrames": "255"]),
            code: .invalidValue,
            field: "bufferFrames",
            message: "field 'bufferFrames': expected a number of frames from 256 to 262144, got 255"
        ),
        Refusal(
            line: openStream("", replacing: ["bufferFrames": "262145"]),
            code: .invalidValue,
            field: "bufferFrames",
            message: "field 'bufferFrames': expected a number of frames from 256 to 262144, got 262145"
        ),
        Refusal(
            line: openStream(#""periodFrames":2049"#),
            code: .invalidValue,
            field: "periodFrames",
            message: "field 'periodFrames': expected a number of frames from 16 to 2048 (half of bufferFrames 4096), "
                + "got 2049"
        ),
        Refusal(
            line: openStream(#""periodFrames":15"#),
            code: .invalidValue,
            field: "periodFrames",
            message: "field 'periodFrames': expected a number of frames from 16 to 2048 (half of bufferFrames 4096), "
                + "got 15"
        ),
        Refusal(
            line: openStream(#""periodframes":256"#),
            code: .unknownField,
            field: "periodframes",
            message: "open-stream takes no field 'periodframes' (did you mean \"periodFrames\"?); it takes "
                + "'bufferFrames', 'bus', 'category', 'channels', 'command', 'direction', 'format', 'gain', 'id', "
                + "'mode', 'name', 'options', 'periodFrames', 'rate', 'session', 'transient'"
        ),
        Refusal(
            line: openStream(#""gain":3"#),
            code: .invalidValue,
            field: "gain",
            message: "field 'gain': expected the session's own level in dB, from -96 dB to 0 dB (a session is never "
                + "louder than its bus), got 3"
        ),
        Refusal(
            line: #"{"command":"open-stream","direction":"playback","category":"playback","session":3,"gain":-6,"#
                + #""rate":48000,"channels":2,"format":"S16_LE","bufferFrames":4096}"#,
            code: .conflictingFields,
            field: "gain",
            message: "open-stream with 'session' joins that session as it is; 'gain' is for a session it activates, "
                + "so give one or the other"
        ),
        Refusal(
            line: #"{"command":"level","session":3}"#,
            code: .missingField,
            field: "gain",
            message: "level needs field 'gain': the session's own level in dB, from -96 dB to 0 dB"
        ),
        Refusal(
            line: #"{"command":"level","session":3,"gain":"-10"}"#,
            code: .wrongType,
            field: "gain",
            message: "field 'gain': expected a number, got a string \"-10\""
        ),
        Refusal(
            line: #"{"command":"level","session":3,"gain":-120}"#,
            code: .invalidValue,
            field: "gain",
            message: "field 'gain': expected the session's own level in dB, from -96 dB to 0 dB (a session is never "
                + "louder than its bus), got -120"
        ),
        Refusal(
            line: #"{"command":"activate","bus":"music","category":"playback","gain":0.5}"#,
            code: .invalidValue,
            field: "gain",
            message: "field 'gain': expected the session's own level in dB, from -96 dB to 0 dB (a session is never "
                + "louder than its bus), got 0.5"
        ),
        Refusal(
            line: #"{"command":"stream","action":"start","id":5}"#,
            code: .missingField,
            field: "stream",
            message: "stream needs field 'stream': the id open-stream replied with",
            id: .number(5)
        ),
        Refusal(
            line: #"{"command":"stream","stream":4}"#,
            code: .missingField,
            field: "action",
            message: "stream needs field 'action': one of start, pause, resume, stop, prepare"
        ),
        Refusal(
            line: #"{"command":"stream","stream":4,"action":"stat"}"#,
            code: .invalidValue,
            field: "action",
            message: "field 'action': expected one of start, pause, resume, stop, prepare, got \"stat\" "
                + "(did you mean \"start\"?)"
        ),
        Refusal(
            line: #"{"command":"stream","stream":-4,"action":"stop"}"#,
            code: .wrongType,
            field: "stream",
            message: "field 'stream': expected a stream id (a whole number above 0), got a number -4"
        ),
        Refusal(
            line: #"{"command":"close-stream","stream":"4"}"#,
            code: .wrongType,
            field: "stream",
            message: "field 'stream': expected a stream id (a whole number above 0), got a string \"4\""
        ),
        Refusal(
            line: #"{"command":"close-stream","stream":4,"action":"stop"}"#,
            code: .unknownField,
            field: "action",
            message: "close-stream takes no field 'action'; it takes 'command', 'id', 'stream'"
        ),
    ]

    @Test(
        "every malformed request gets the error reply that names its problem",
        arguments: refusals + streamRefusals
    )
    func refused(_ refusal: Refusal) {
        guard case .failure(let failure) = decode(refusal.line) else {
            Issue.record("accepted: \(refusal.line)")
            return
        }
        #expect(failure.error.code == refusal.code)
        #expect(failure.error.field == refusal.field)
        #expect(failure.error.message == refusal.message)
        #expect(failure.id == refusal.id)
    }

    @Test("invalid UTF-8 and an over-long line are refused before parsing")
    func rawRefusals() {
        let invalid = codec.decodeRequest([0x7B, 0xFF, 0xFE, 0x7D])
        #expect(
            invalid
                == .failure(RequestFailure(id: nil, error: ControlError(.malformedJSON, "the line is not valid UTF-8")))
        )
        let small = ControlCodec(maxLineBytes: 10)
        guard case .failure(let failure) = small.decodeRequest(Array(#"{"command":"status"}"#.utf8)) else {
            Issue.record("an over-long line was accepted")
            return
        }
        #expect(failure.error.code == .lineTooLong)
        #expect(failure.error.message == "the line is 20 bytes long, over the limit of 10 bytes; it was discarded")
    }

    @Test("error replies echo the id and encode as documented")
    func errorReplyBytes() {
        let reply = ControlReply.failure(
            ControlError(.unknownCommand, "unknown command \"x\"", field: "command"),
            id: .number(7)
        )
        #expect(
            text(codec.encode(reply))
                == #"{"error":{"code":"unknown-command","field":"command","message":"unknown command \"x\""},"#
                + #""id":7,"ok":false}"# + "\n"
        )
        #expect(text(codec.encode(ControlReply.ok(id: .string("a")))) == #"{"id":"a","ok":true}"# + "\n")
        #expect(text(codec.encode(ControlReply(session: SessionID(3)))) == #"{"ok":true,"session":3}"# + "\n")
    }

    @Test("policy rejections become error replies with kebab-case codes")
    func rejections() {
        let cases: [(Rejection.Code, ControlError.Code)] = [
            (.unknownSession, "unknown-session"), (.duplicateSession, "duplicate-session"),
            (.interrupted, "interrupted"), (.unknownRoute, "unknown-route"), (.notPermitted, "not-permitted"),
        ]
        for (code, expected) in cases {
            let error = ControlError(Rejection(code, session: SessionID(2), "session 2: no"))
            #expect(error.code == expected)
            #expect(error.message == "session 2: no")
        }
    }

    static let events: [ControlEvent] = [
        .interruptionBegan(SessionID(3), cause: .session(SessionID(4))),
        .interruptionBegan(SessionID(3), cause: .microphoneMuted),
        .interruptionEnded(SessionID(3), shouldResume: true),
        .routeChanged(RouteChange(previous: .speaker, current: .headphones, reason: .newDeviceAvailable)),
        .volumeChanged(.system, VolumeStep(clamping: 9), route: .speaker),
        .volumeChanged(.ringer, VolumeStep(clamping: 5), route: nil),
        .silenceChanged(.silent),
        .secondaryAudioHint(shouldBeSilenced: true),
        .buttonsControl(.ringer),
        .remoteCommand(SessionID(3), .next),
        .sessionFinished(SessionID(3)),
        .hearingWarning(
            HearingWarning(kind: .loud, route: .headphones, decibelsA: 101.2, dosePercent: 20, enforced: false)
        ),
        .hearingWarning(HearingWarning(kind: .dose, route: "handset", decibelsA: 88, dosePercent: 500, enforced: true)),
        .decision(
            DecisionReport(
                Decision(.pause(SessionID(3)), rule: .r5, reason: "headphones unplugged: playback pauses"),
                cause: "headphones unplugged (reported by gpio)",
                time: 12.3456
            )
        ),
    ]

    @Test("every event survives encode then decode", arguments: events)
    func eventRoundTrip(_ event: ControlEvent) throws {
        let line = codec.encode(event)
        #expect(try codec.decodeMessage(line.dropLast()) == .event(event))
    }

    @Test("an interruption without a reason is a session's (hushd before R21 sent none); an unknown one is refused")
    func interruptionReasons() throws {
        #expect(
            try codec.decodeMessage(Array(#"{"by":4,"event":"interruption-began","session":3}"#.utf8))
                == .event(.interruptionBegan(SessionID(3), cause: .session(SessionID(4))))
        )
        #expect(throws: (any Error).self) {
            try codec.decodeMessage(Array(#"{"event":"interruption-began","reason":"lunch","session":3}"#.utf8))
        }
        #expect(throws: (any Error).self) {
            try codec.decodeMessage(
                Array(
                    #"{"decibelsA":90,"dosePercent":1,"enforced":false,"event":"hearing-warning","kind":"nice","route":"x"}"#
                        .utf8
                )
            )
        }
    }

    @Test("events on the wire look as documented")
    func eventBytes() {
        let expected = [
            #"{"by":4,"event":"interruption-began","reason":"session","session":3}"#,
            #"{"event":"interruption-began","reason":"microphoneMuted","session":3}"#,
            #"{"event":"interruption-ended","session":3,"shouldResume":true}"#,
            #"{"event":"route-changed","previous":"speaker","reason":"newDeviceAvailable","route":"headphones"}"#,
            #"{"event":"volume-changed","kind":"system","route":"speaker","step":9}"#,
            #"{"event":"volume-changed","kind":"ringer","step":5}"#,
            #"{"event":"silence-changed","position":"silent"}"#,
            #"{"event":"secondary-audio-hint","shouldBeSilenced":true}"#,
            #"{"event":"buttons-control","kind":"ringer"}"#,
            #"{"event":"remote-command","key":"next","session":3}"#,
            #"{"event":"session-finished","session":3}"#,
            #"{"decibelsA":101.2,"dosePercent":20,"enforced":false,"event":"hearing-warning","kind":"loud","#
                + #""route":"headphones"}"#,
            #"{"decibelsA":88,"dosePercent":500,"enforced":true,"event":"hearing-warning","kind":"dose","#
                + #""route":"handset"}"#,
            #"{"cause":"headphones unplugged (reported by gpio)","command":"pause session 3","event":"decision","#
                + #""reason":"headphones unplugged: playback pauses","rule":"R5","time":12.346,"#
                + #""title":"headphones-unplugged"}"#,
        ]
        #expect(Self.events.map { text(codec.encode($0)) } == expected.map { $0 + "\n" })
    }

    @Test("policy notifications map onto events one for one")
    func fromClientEvents() {
        let change = RouteChange(previous: .headphones, current: .speaker, reason: .oldDeviceUnavailable)
        let pairs: [(ClientEvent, ControlEvent)] = [
            (
                .interruptionBegan(SessionID(1), cause: .session(SessionID(2))),
                .interruptionBegan(SessionID(1), cause: .session(SessionID(2)))
            ),
            (
                .interruptionEnded(SessionID(1), shouldResume: false),
                .interruptionEnded(SessionID(1), shouldResume: false)
            ),
            (.routeChanged(change), .routeChanged(change)),
            (.volumeChanged(.ringer, .maximum, route: nil), .volumeChanged(.ringer, .maximum, route: nil)),
            (.silenceChanged(.ring), .silenceChanged(.ring)),
            (.secondaryAudioShouldBeSilenced(false), .secondaryAudioHint(shouldBeSilenced: false)),
            (.buttonsControl(.system), .buttonsControl(.system)),
            (.remoteCommand(SessionID(1), .previous), .remoteCommand(SessionID(1), .previous)),
            (
                .hearingWarning(
                    HearingWarning(kind: .dose, route: .headphones, decibelsA: 90, dosePercent: 100, enforced: false)
                ),
                .hearingWarning(
                    HearingWarning(kind: .dose, route: .headphones, decibelsA: 90, dosePercent: 100, enforced: false)
                )
            ),
        ]
        for (client, control) in pairs { #expect(ControlEvent(client) == control) }
        #expect(ControlEvent(.remoteCommand(SessionID(4), .next)).session == SessionID(4))
        #expect(ControlEvent(.silenceChanged(.ring)).session == nil)
    }

    @Test("replies with every payload survive encode then decode")
    func replyRoundTrip() throws {
        let replies = [
            ControlReply(id: .number(1), hello: HelloReport(version: "0.1.0", client: ClientID(1000))),
            ControlReply(id: .number(2), session: SessionID(5)),
            ControlReply(id: .number(3), volume: VolumeReport(kind: .system, step: .minimum, gainDecibels: -.infinity)),
            ControlReply(id: .number(4), route: RouteReport(current: .headphones, overridden: true)),
            ControlReply(id: .number(5), status: ControlTextTests.status),
            ControlReply(id: .number(5), status: ControlTextTests.waiting),
            ControlReply(id: .number(6), events: [.decision, .routeChanged]),
            ControlReply.failure(ControlError(.interrupted, "session 2 is interrupted"), id: .string("z")),
            ControlReply(
                id: .number(7),
                stream: StreamReport(id: StreamID(4), session: SessionID(6), ringFrames: 22_050, periodFrames: 60)
            ),
            ControlReply(id: .number(8), position: 96_000),
            ControlReply(id: .number(9), status: ControlTextTests.streaming),
        ]
        for reply in replies {
            #expect(try codec.decodeMessage(codec.encode(reply).dropLast()) == .reply(reply))
        }
        #expect(
            text(codec.encode(replies[2]))
                == #"{"id":3,"ok":true,"volume":{"kind":"system","step":0}}"# + "\n"
        )
    }

    @Test("a reply's descriptors travel beside its line, never in it")
    func descriptorsAreNotJSON() throws {
        let reply = ControlReply(
            id: .number(7),
            stream: StreamReport(id: StreamID(4), session: SessionID(6), ringFrames: 22_050, periodFrames: 60),
            descriptors: [5, 6]
        )
        let line = codec.encode(reply)
        #expect(
            text(line) == #"{"id":7,"ok":true,"stream":{"id":4,"periodFrames":60,"ringFrames":22050,"session":6}}"#
                + "\n"
        )
        guard case .reply(let decoded) = try codec.decodeMessage(line.dropLast()) else {
            Issue.record("not a reply")
            return
        }
        #expect(decoded.descriptors == [])
        var withoutDescriptors = reply
        withoutDescriptors.descriptors = []
        #expect(decoded == withoutDescriptors)
    }

    @Test("a line from hushd that is neither reply nor event is an error, not a crash")
    func strangeServerLines() {
        for line in [#"{"x":1}"#, "[]", "nonsense", #"{"event":"meteor"}"#] {
            #expect(throws: ControlError.self) { try codec.decodeMessage(Array(line.utf8)) }
        }
    }
}

@Suite("line buffer")
struct LineBufferTests {
    @Test("lines split at newlines, whatever the pieces they arrive in")
    func pieces() {
        var buffer = LineBuffer(maxLineBytes: 100)
        #expect(buffer.append(Array(#"{"comm"#.utf8)) == [])
        #expect(buffer.pendingCount == 6)
        #expect(buffer.append(Array("and\":1}\n{\"a\"".utf8)) == [.line(Array(#"{"command":1}"#.utf8))])
        #expect(buffer.append(Array(":2}\r\n\n".utf8)) == [.line(Array(#"{"a":2}"#.utf8)), .line([])])
        #expect(buffer.pendingCount == 0)
    }

    @Test("an over-long line is dropped as it arrives and reported at its newline; the next line is whole")
    func overLong() {
        var buffer = LineBuffer(maxLineBytes: 8)
        #expect(buffer.append(Array("12345".utf8)) == [])
        #expect(buffer.append(Array("6789".utf8)) == [])
        #expect(buffer.pendingCount == 0)
        #expect(buffer.append(Array(String(repeating: "x", count: 1000).utf8)) == [])
        #expect(buffer.pendingCount == 0)
        #expect(
            buffer.append(Array("y\nok\n12345678\n".utf8)) == [
                .tooLong(1010), .line(Array("ok".utf8)), .line(Array("12345678".utf8)),
            ]
        )
    }
}
