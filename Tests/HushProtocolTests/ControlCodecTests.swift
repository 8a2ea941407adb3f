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
    ]

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
            message: "field 'command' is missing: name one of hello, version, activate, play, pause, resume, stop, "
                + "deactivate, volume, route, status, subscribe, unsubscribe",
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
                + "play, pause, resume, stop, deactivate, volume, route, status, subscribe, unsubscribe",
            id: .number(9)
        ),
        Refusal(
            line: #"{"command":"launch"}"#,
            code: .unknownCommand,
            field: "command",
            message: "unknown command \"launch\"; commands: hello, version, activate, play, pause, resume, stop, "
                + "deactivate, volume, route, status, subscribe, unsubscribe"
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
                + "'command', 'id', 'name', 'options', 'transient'"
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
                + "buttons-control, remote-command, session-finished, decision (did you mean \"route-changed\"?)"
        ),
        Refusal(
            line: #"{"command":"subscribe","events":[1]}"#,
            code: .wrongType,
            field: "events",
            message: "field 'events': expected an array of strings, got an array [1]"
        ),
    ]

    @Test("every malformed request gets the error reply that names its problem", arguments: refusals)
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
        .interruptionBegan(SessionID(3), by: SessionID(4)),
        .interruptionEnded(SessionID(3), shouldResume: true),
        .routeChanged(RouteChange(previous: .speaker, current: .headphones, reason: .newDeviceAvailable)),
        .volumeChanged(.system, VolumeStep(clamping: 9), route: .speaker),
        .volumeChanged(.ringer, VolumeStep(clamping: 5), route: nil),
        .silenceChanged(.silent),
        .secondaryAudioHint(shouldBeSilenced: true),
        .buttonsControl(.ringer),
        .remoteCommand(SessionID(3), .next),
        .sessionFinished(SessionID(3)),
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

    @Test("events on the wire look as documented")
    func eventBytes() {
        let expected = [
            #"{"by":4,"event":"interruption-began","session":3}"#,
            #"{"event":"interruption-ended","session":3,"shouldResume":true}"#,
            #"{"event":"route-changed","previous":"speaker","reason":"newDeviceAvailable","route":"headphones"}"#,
            #"{"event":"volume-changed","kind":"system","route":"speaker","step":9}"#,
            #"{"event":"volume-changed","kind":"ringer","step":5}"#,
            #"{"event":"silence-changed","position":"silent"}"#,
            #"{"event":"secondary-audio-hint","shouldBeSilenced":true}"#,
            #"{"event":"buttons-control","kind":"ringer"}"#,
            #"{"event":"remote-command","key":"next","session":3}"#,
            #"{"event":"session-finished","session":3}"#,
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
            (.interruptionBegan(SessionID(1), by: SessionID(2)), .interruptionBegan(SessionID(1), by: SessionID(2))),
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
        ]
        for reply in replies {
            #expect(try codec.decodeMessage(codec.encode(reply).dropLast()) == .reply(reply))
        }
        #expect(
            text(codec.encode(replies[2]))
                == #"{"id":3,"ok":true,"volume":{"kind":"system","step":0}}"# + "\n"
        )
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
