import HushCore
import Testing

@testable import HushProtocol

/// The bytes hushd writes, held to what Foundation's `JSONEncoder` wrote before hush had a writer of its own (and
/// what that writer was held to until FoundationEssentials' `JSONEncoder` took its place again): clients and the
/// documented examples depend on them. Then what hushctl makes of lines it cannot read.
@Suite("control codec: the bytes on the wire")
struct ControlCodecWireTests {
    let codec = ControlCodec()

    func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    static let statusText =
        #"{"buttonsControl":"system","clients":3,"jack":"plugged","microphone":[],"microphoneSwitch":"live","#
        + #""output":{"channels":2,"latencyMilliseconds":4,"#
        + #""losses":1,"open":true,"pcm":"hw:CARD=Headphones,DEV=0","periodFrames":64,"periods":3,"#
        + #""sampleRate":48000,"xruns":2},"ringerVolume":0,"route":"headphones","routeOverridden":false,"#
        + #""secondaryAudioShouldBeSilenced":true,"sessions":["#
        + #"{"bus":"music","category":"playback","client":1001,"gid":1000,"id":1,"interruptedBy":[3],"options":[],"#
        + #""pausedBy":"interruption","pid":4001,"state":"paused","transient":false,"uid":1000},"#
        + #"{"bus":"effect","category":"ambient","client":1002,"gain":-10,"gid":1000,"id":2,"interruptedBy":[],"#
        + #""options":["mixWithOthers"],"pid":4002,"state":"playing","transient":false,"uid":1000},"#
        + #"{"bus":"ringer","category":"playback","client":1003,"gid":1000,"id":3,"interruptedBy":[],"options":[],"#
        + #""pid":4003,"state":"playing","transient":true,"uid":1000},"#
        + #"{"bus":"effect","category":"playAndRecord","client":1004,"gid":1000,"id":4,"interruptedBy":[],"#
        + #""options":["mixWithOthers","duckOthers"],"pausedBy":"user","pid":4004,"state":"paused","#
        + #""transient":false,"uid":1000},"#
        + #"{"bus":"music","category":"soloAmbient","client":0,"id":5,"interruptedBy":[],"options":[],"#
        + #""state":"idle","transient":false}],"#
        + #""silenceSwitch":"ring","streams":[],"systemGainDecibels":-24,"systemVolume":8,"uptimeSeconds":3725.4,"#
        + #""version":"0.1.0"}"#

    static let pendingText =
        #""pending":{"attempts":4,"error":"the device is busy: another program uses it ('fuser -v /dev/snd/*' "#
        + #"names it; stop it, or share the card through a dmix PCM)","pcm":"hw:Loopback,0,1","route":"headphones","#
        + #""seconds":3.2},"#

    /// Replies with every payload, and the lines `JSONEncoder` wrote for them.
    static let replies: [(reply: ControlReply, line: String)] = [
        (
            ControlReply(id: .number(1), hello: HelloReport(version: "0.1.0", client: ClientID(1000))),
            #"{"hello":{"client":1000,"protocol":1,"version":"0.1.0"},"id":1,"ok":true}"#
        ),
        (
            ControlReply(id: .string("a/b \"c\"\n"), session: SessionID(5)),
            #"{"id":"a/b \"c\"\n","ok":true,"session":5}"#
        ),
        (
            ControlReply(id: .number(3), volume: VolumeReport(kind: .system, step: .minimum, gainDecibels: -.infinity)),
            #"{"id":3,"ok":true,"volume":{"kind":"system","step":0}}"#
        ),
        (
            ControlReply(id: .number(4), volume: VolumeReport(kind: .ringer, step: .maximum, gainDecibels: -3.25)),
            #"{"id":4,"ok":true,"volume":{"gainDecibels":-3.3,"kind":"ringer","step":16}}"#
        ),
        (
            ControlReply(id: .number(5), route: RouteReport(current: .headphones, overridden: true)),
            #"{"id":5,"ok":true,"route":{"current":"headphones","overridden":true}}"#
        ),
        (
            ControlReply(id: .number(6), status: ControlTextTests.status),
            #"{"id":6,"ok":true,"status":"# + statusText + "}"
        ),
        (
            ControlReply(id: .number(8), status: ControlTextTests.waiting),
            #"{"id":8,"ok":true,"status":"#
                + statusText.replacing(#""pcm":"hw:CARD=Headphones,DEV=0","#, with: #""pcm":"hw:Loopback,0,0","#)
                .replacing(#""periodFrames""#, with: pendingText + #""periodFrames""#) + "}"
        ),
        (
            ControlReply(id: .number(7), events: [.decision, .routeChanged]),
            #"{"events":["decision","route-changed"],"id":7,"ok":true}"#
        ),
        (ControlReply(events: []), #"{"events":[],"ok":true}"#),
        (
            ControlReply(
                id: .number(9),
                stream: StreamReport(id: StreamID(4), session: SessionID(6), ringFrames: 22_050, periodFrames: 60)
            ),
            #"{"id":9,"ok":true,"stream":{"id":4,"periodFrames":60,"ringFrames":22050,"session":6}}"#
        ),
        (ControlReply(id: .number(10), position: 96_000), #"{"id":10,"ok":true,"position":96000}"#),
        (
            ControlReply.failure(ControlError(.interrupted, "session 2 is interrupted"), id: .string("z")),
            #"{"error":{"code":"interrupted","message":"session 2 is interrupted"},"id":"z","ok":false}"#
        ),
        (
            ControlReply.failure(ControlError(.malformedJSON, "the line is not valid UTF-8")),
            #"{"error":{"code":"malformed-json","message":"the line is not valid UTF-8"},"ok":false}"#
        ),
    ]

    @Test("replies and the status are the bytes JSONEncoder wrote, and read back")
    func replies() throws {
        for (reply, line) in Self.replies {
            #expect(text(codec.encode(reply)) == line + "\n")
            #expect(try codec.decodeMessage(Array(line.utf8)) == .reply(reply))
        }
        #expect(text(codec.encode(ControlTextTests.status)) == Self.statusText + "\n")
    }

    /// The streams, the microphone and its device, as status carries them.
    @Test("a status with streams: each stream's fields, the microphone's streams and the capture device")
    func streamingStatus() throws {
        let line = text(codec.encode(ControlTextTests.streaming))
        #expect(line.contains(#""capture":{"open":true,"pcm":"hw:CARD=Mic,DEV=0"},"clients":3,"#))
        #expect(line.contains(#""microphone":[5],"microphoneSwitch":"live","output":"#))
        let streams: String =
            #""streams":[{"bus":"music","category":"playback","channels":2,"client":1005,"direction":"playback","#
            + #""format":"S16_LE","id":4,"microphone":false,"name":"aplay","overrunFrames":0,"overruns":0,"#
            + #""pid":123,"#
            + #""rate":44100,"ringFrames":22050,"session":6,"state":"running","underrunFrames":0,"#
            + #""underruns":0,"violations":0},"#
            + #"{"bus":"music","category":"record","channels":1,"client":1006,"direction":"capture","#
            + #""format":"S16_LE","id":5,"microphone":true,"name":"arecord","overrunFrames":480,"overruns":1,"#
            + #""pid":77,"#
            + #""rate":16000,"ringFrames":8000,"session":7,"state":"running","underrunFrames":0,"#
            + #""underruns":0,"violations":0},"#
        #expect(line.contains(streams))
        let reply = ControlReply(id: .number(1), status: ControlTextTests.streaming)
        #expect(try codec.decodeMessage(codec.encode(reply).dropLast()) == .reply(reply))
    }

    /// Every request, also those the documented examples leave out (ControlCodecTests has those).
    @Test("requests are the bytes JSONEncoder wrote")
    func requests() {
        let expected = [
            #"{"command":"hello","id":1,"name":"test"}"#,
            #"{"command":"hello","id":"a"}"#,
            #"{"command":"version"}"#,
            #"{"bus":"music","category":"playback","command":"activate","id":2,"options":[]}"#,
            #"{"bus":"effect","category":"ambient","command":"activate","id":3,"name":"prompt","#
                + #""options":["mixWithOthers","duckOthers"],"transient":true}"#,
            #"{"command":"play","id":4,"loop":true,"session":3,"sound":"/usr/share/sounds/ring.wav"}"#,
            #"{"command":"play","id":5,"loop":false,"session":3,"tone":440}"#,
            #"{"command":"play","id":6,"loop":false,"session":3,"tone":1234.5}"#,
            #"{"command":"pause","id":7,"session":3}"#,
            #"{"command":"resume","id":8,"session":3}"#,
            #"{"command":"stop","id":9,"session":3}"#,
            #"{"command":"deactivate","id":10,"notifyOthers":true,"session":3}"#,
            #"{"command":"deactivate","id":11,"notifyOthers":false,"session":3}"#,
            #"{"command":"volume","id":12,"kind":"ringer"}"#,
            #"{"command":"volume","id":13,"kind":"system","step":9}"#,
            #"{"command":"volume","delta":-2,"id":14,"kind":"ringer"}"#,
            #"{"command":"route","id":15}"#,
            #"{"command":"route","id":16,"override":"headphones"}"#,
            #"{"command":"route","id":17,"override":"auto"}"#,
            #"{"command":"status","id":18}"#,
            #"{"command":"subscribe","id":19}"#,
            #"{"command":"subscribe","events":["route-changed","decision"],"id":20}"#,
            #"{"command":"unsubscribe","id":21}"#,
            #"{"bufferFrames":22050,"category":"playback","channels":2,"command":"open-stream","direction":"playback","#
                + #""format":"S16_LE","id":22,"rate":44100}"#,
            #"{"bufferFrames":4096,"bus":"music","category":"playAndRecord","channels":1,"command":"open-stream","#
                + #""direction":"capture","format":"FLOAT_LE","id":23,"name":"voip","options":["mixWithOthers"],"#
                + #""periodFrames":256,"rate":16000,"transient":true}"#,
            #"{"bufferFrames":262144,"category":"playAndRecord","channels":2,"command":"open-stream","#
                + #""direction":"playback","format":"S32_LE","id":24,"name":"voip","periodFrames":131072,"#
                + #""rate":192000,"session":3}"#,
            #"{"action":"start","command":"stream","id":25,"stream":4}"#,
            #"{"action":"pause","command":"stream","id":26,"stream":4}"#,
            #"{"action":"resume","command":"stream","id":27,"stream":4}"#,
            #"{"action":"stop","command":"stream","id":28,"stream":4}"#,
            #"{"action":"prepare","command":"stream","id":29,"stream":4}"#,
            #"{"command":"close-stream","id":30,"stream":4}"#,
            #"{"command":"level","gain":-10,"id":31,"session":3}"#,
            #"{"command":"level","gain":-0.1,"id":32,"session":3}"#,
            #"{"bus":"effect","category":"ambient","command":"activate","gain":-96,"id":33,"name":"clicks","#
                + #""options":[]}"#,
            #"{"bufferFrames":4096,"category":"ambient","channels":2,"command":"open-stream","direction":"playback","#
                + #""format":"S16_LE","gain":-12.5,"id":34,"rate":48000}"#,
        ]
        #expect(ControlCodecTests.requests.map { text(codec.encode($0)) } == expected.map { $0 + "\n" })
    }

    /// Every control character, quotes, backslashes, slashes and characters outside ASCII, in an error message
    /// and a string id: only `"`, `\` and the control characters are escaped, everything else is UTF-8.
    @Test("strings: the escapes JSONEncoder wrote")
    func strings() throws {
        var unusual = (0..<0x20).map { String(UnicodeScalar(UInt8($0))) }.joined()
        unusual += "\"\\/a/b\u{7F}é日本🎵\u{2028}\u{FEFF}tab\there"
        let escaped =
            #"\u0000\u0001\u0002\u0003\u0004\u0005\u0006\u0007\b\t\n\u000b\f\r\u000e\u000f"#
            + #"\u0010\u0011\u0012\u0013\u0014\u0015\u0016\u0017\u0018\u0019\u001a\u001b\u001c\u001d\u001e\u001f"#
            + #"\"\\/a/b"# + "\u{7F}é日本🎵\u{2028}\u{FEFF}" + #"tab\there"#
        let reply = ControlReply.failure(ControlError(.malformedJSON, unusual), id: .string(unusual))
        let line =
            #"{"error":{"code":"malformed-json","message":""# + escaped + #""},"id":""# + escaped
            + #"","ok":false}"#
        #expect(text(codec.encode(reply)) == line + "\n")
        #expect(try codec.decodeMessage(Array(line.utf8)) == .reply(reply))
    }

    /// Whole numbers without a fraction (also the Double 3.0), others in the shortest form that reads back to the
    /// same number, exponents with a sign and two digits at least.
    @Test("numbers: the forms JSONEncoder wrote")
    func numbers() throws {
        let doubles: [Double] = [
            0, -0.0, 1, -1, 0.5, 0.1, 0.1 + 0.2, 12.346, -24, 3725.4, 1e-5, 1e-7, 123_456_789.125, 1e15, 1e16, 1e17,
            9_007_199_254_740_992, 1e21, 1e300, -1e-300, .leastNonzeroMagnitude, .greatestFiniteMagnitude, .pi,
        ]
        #expect(
            text([UInt8](try ControlCodec.json(doubles)))
                == "[0,-0,1,-1,0.5,0.1,0.30000000000000004,12.346,-24,3725.4,1e-05,1e-07,123456789.125,"
                + "1000000000000000,1e+16,1e+17,9007199254740992,1e+21,1e+300,-1e-300,5e-324,"
                + "1.7976931348623157e+308,3.141592653589793]"
        )
        let floats: [Float] = [0, 0.1, -2.5, 1e-3, 3e38, 16_777_216]
        #expect(text([UInt8](try ControlCodec.json(floats))) == "[0,0.1,-2.5,0.001,3e+38,16777216]")
        let integers: [Int64] = [0, -1, .max, .min, 9_007_199_254_740_993]
        #expect(
            text([UInt8](try ControlCodec.json(integers)))
                == "[0,-1,9223372036854775807,-9223372036854775808,9007199254740993]"
        )
        #expect(text([UInt8](try ControlCodec.json(UInt64.max))) == "18446744073709551615")
        #expect(throws: EncodingError.self) { try ControlCodec.json([Double.nan]) }
    }

    /// Random values (JSONReaderTests' generator), written as the codec writes: hushd's own strict reader reads
    /// every one back to the same value, so what one side of the socket writes the other side accepts.
    @Test("random values written by the codec read back through JSONReader")
    func randomValuesReadBack() throws {
        var generator = JSONReaderTests.Generator(seed: 0x5752_4954)
        for _ in 0..<3000 {
            let value = try JSONReader.read(Array(generator.value(depth: 0).utf8))
            let bytes = [UInt8](try ControlCodec.json(value))
            let again = try JSONReader.read(bytes)
            #expect(again == value, "\(text(bytes))")
            if again != value { return }
        }
    }

    /// Lines hushctl might get from a broken or foreign server: each refused with the field's path and what was
    /// wrong.
    static let refusals: [(line: String, detail: String)] = [
        (#"{"ok":true,"volume":{"kind":"system"}}"#, "field 'volume.step' is missing"),
        (#"{"ok":"yes"}"#, "field 'ok': Expected to decode Bool but found a string instead."),
        (#"{"ok":true,"session":1.5}"#, "a number does not fit its field"),
        (#"{"ok":true,"session":-1}"#, "a number does not fit its field"),
        (#"{"ok":true,"session":18446744073709551616}"#, "a number does not fit its field"),
        (
            #"{"event":"session-finished","session":null}"#,
            "field 'session': Cannot get value of type UInt64 -- found null value instead"
        ),
        (
            #"{"ok":true,"events":"decision"}"#,
            "field 'events': Expected to decode Array<Any> but found a string instead."
        ),
        (
            #"{"ok":true,"events":["decision",3]}"#,
            "field 'events.1': Expected to decode String but found number instead."
        ),
        (
            #"{"ok":true,"hello":[]}"#,
            "field 'hello': Expected to decode Dictionary<String, Any> but found an array instead."
        ),
        (
            #"{"event":"volume-changed","kind":"system","step":"9"}"#,
            "field 'step': Expected to decode Int but found a string instead."
        ),
        (#"{"event":"volume-changed","kind":"system","step":99}"#, "field 'step': volume step 99 is outside 0…16"),
        (#"{"event":"session-finished"}"#, "field 'session' is missing"),
    ]

    @Test("a line with a missing or mistyped field is refused naming the field", arguments: refusals)
    func refusal(_ line: String, _ detail: String) {
        #expect {
            try ControlCodec().decodeMessage(Array(line.utf8))
        } throws: { error in
            guard let error = error as? ControlError else { return false }
            #expect(error.code == .malformedJSON)
            let kind = line.hasPrefix(#"{"event""#) ? "an event" : "a reply"
            #expect(
                error.message.hasPrefix("hushd sent \(kind) this hushctl cannot read (\(detail)): "),
                "\(error.message)"
            )
            #expect(error.message.hasSuffix("; are hushd and hushctl from the same build?"))
            return true
        }
    }
}
