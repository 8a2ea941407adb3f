import Foundation
import HushCore
import Testing

@testable import HushProtocol

/// hushd's JSON writer and the decoder over `JSONValue`: the bytes are Foundation's, byte for byte, for every kind
/// of message and for random values; what is written reads back the same; a mistyped line is refused naming the
/// field.
@Suite("JSON writer and decoder")
struct JSONWriterTests {
    /// What `JSONEncoder` wrote for the protocol before `JSONWriter` replaced it.
    static func foundation(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    static func ours(_ value: some Encodable) throws -> String {
        String(decoding: try JSONWriter.bytes(value), as: UTF8.self)
    }

    static let replies: [ControlReply] = [
        ControlReply(id: .number(1), hello: HelloReport(version: "0.1.0", client: ClientID(1000))),
        ControlReply(id: .string("a/b \"c\"\n"), session: SessionID(5)),
        ControlReply(id: .number(3), volume: VolumeReport(kind: .system, step: .minimum, gainDecibels: -.infinity)),
        ControlReply(id: .number(4), volume: VolumeReport(kind: .ringer, step: .maximum, gainDecibels: -3.25)),
        ControlReply(id: .number(5), route: RouteReport(current: .headphones, overridden: true)),
        ControlReply(id: .number(6), status: ControlTextTests.status),
        ControlReply(id: .number(8), status: ControlTextTests.waiting),
        ControlReply(id: .number(7), events: [.decision, .routeChanged]),
        ControlReply(events: []),
        ControlReply.failure(ControlError(.interrupted, "session 2 is interrupted"), id: .string("z")),
        ControlReply.failure(ControlError(.malformedJSON, "the line is not valid UTF-8")),
    ]

    @Test("replies, events, the status and requests are written as JSONEncoder wrote them")
    func messagesMatchFoundation() throws {
        for reply in Self.replies { #expect(try Self.ours(reply) == Self.foundation(reply)) }
        for event in ControlCodecTests.events { #expect(try Self.ours(event) == Self.foundation(event)) }
        #expect(try Self.ours(ControlTextTests.status) == Self.foundation(ControlTextTests.status))
        for request in ControlCodecTests.requests {
            #expect(try Self.ours(request.json) == Self.foundation(request.json))
            #expect(
                try String(decoding: JSONWriter.bytes(request.json), as: UTF8.self) == Self.foundation(request.json)
            )
        }
    }

    /// Strings with every control character, quotes, backslashes, slashes and characters outside ASCII; numbers
    /// from tiny to huge, whole and not, negative zero; the same as Foundation wrote them.
    @Test("strings and numbers are written as JSONEncoder wrote them")
    func leavesMatchFoundation() throws {
        var strings = (0..<0x20).map { String(UnicodeScalar(UInt8($0))) }
        strings += ["", "\"", "\\", "/", "a/b", "\u{7F}", "é", "日本", "🎵", "\u{2028}", "\u{FEFF}", "tab\there"]
        for text in strings { #expect(try Self.ours(text) == Self.foundation(text), "\(Array(text.unicodeScalars))") }
        let doubles: [Double] = [
            0, -0.0, 1, -1, 0.5, 0.1, 0.1 + 0.2, 12.346, -24, 3725.4, 1e-5, 1e-7, 123_456_789.125, 1e15, 1e16, 1e17,
            9_007_199_254_740_992, 1e21, 1e300, -1e-300, .leastNonzeroMagnitude, .greatestFiniteMagnitude, .pi,
        ]
        for number in doubles { #expect(try Self.ours(number) == Self.foundation(number), "\(number)") }
        let floats: [Float] = [0, 0.1, -2.5, 1e-3, 3e38, 16_777_216]
        for number in floats { #expect(try Self.ours(number) == Self.foundation(number), "\(number)") }
        let integers: [Int64] = [0, -1, .max, .min, 9_007_199_254_740_993]
        for number in integers { #expect(try Self.ours(number) == Self.foundation(number)) }
        #expect(try Self.ours(UInt64.max) == Self.foundation(UInt64.max))
    }

    /// Random values (JSONReaderTests' generator, read into `JSONValue`), written by both: the same bytes, and
    /// the bytes read back to the same value.
    @Test("random values: the same bytes as JSONEncoder, and they read back")
    func randomValuesMatchFoundation() throws {
        var generator = JSONReaderTests.Generator(seed: 0x5752_4954)
        for _ in 0..<3000 {
            let value = try JSONReader.read(Array(generator.value(depth: 0).utf8))
            let bytes = try JSONWriter.bytes(value)
            let text = String(decoding: bytes, as: UTF8.self)
            #expect(text == (try Self.foundation(value)))
            #expect(try JSONReader.read(bytes) == value, "\(text)")
            if text != (try Self.foundation(value)) { return }
        }
    }

    @Test("every reply and event reads back through the decoder as Foundation reads it")
    func decoderMatchesFoundation() throws {
        for reply in Self.replies {
            let bytes = try JSONWriter.bytes(reply)
            let value = try JSONReader.read(bytes)
            let ours = try JSONValueDecoder.decode(ControlReply.self, from: value)
            #expect(ours == reply)
            #expect(ours == (try JSONDecoder().decode(ControlReply.self, from: Data(bytes))))
        }
        for event in ControlCodecTests.events {
            let value = try JSONReader.read(try JSONWriter.bytes(event))
            #expect(try JSONValueDecoder.decode(ControlEvent.self, from: value) == event)
        }
    }

    /// A type that uses every kind of container, nested and super encoders included, and optionals both
    /// present and absent.
    struct Everything: Codable, Equatable {
        var flag: Bool
        var small: Int8
        var unsigned: UInt32
        var single: Float
        var names: [String]
        var nested: [String: [Int]]
        var maybe: Double?
        var absent: String?
        var pair: (Int, String) = (0, "")

        enum Key: String, CodingKey { case flag, small, unsigned, single, names, nested, maybe, absent, pair, inner }
        enum Inner: String, CodingKey { case depth }

        init(flag: Bool, small: Int8, unsigned: UInt32, single: Float, names: [String], nested: [String: [Int]]) {
            self.flag = flag
            self.small = small
            self.unsigned = unsigned
            self.single = single
            self.names = names
            self.nested = nested
        }

        static func == (left: Everything, right: Everything) -> Bool {
            left.flag == right.flag && left.small == right.small && left.unsigned == right.unsigned
                && left.single == right.single && left.names == right.names && left.nested == right.nested
                && left.maybe == right.maybe && left.absent == right.absent && left.pair == right.pair
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Key.self)
            try container.encode(flag, forKey: .flag)
            try container.encode(small, forKey: .small)
            try container.encode(unsigned, forKey: .unsigned)
            try container.encode(single, forKey: .single)
            var list = container.nestedUnkeyedContainer(forKey: .names)
            for name in names { try list.encode(name) }
            try container.encode(nested, forKey: .nested)
            try container.encodeIfPresent(maybe, forKey: .maybe)
            try container.encodeIfPresent(absent, forKey: .absent)
            var pairList = container.nestedUnkeyedContainer(forKey: .pair)
            try pairList.encode(pair.0)
            try pairList.encode(pair.1)
            var inner = container.nestedContainer(keyedBy: Inner.self, forKey: .inner)
            try inner.encode(2, forKey: .depth)
            try names.encode(to: container.superEncoder())
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Key.self)
            flag = try container.decode(Bool.self, forKey: .flag)
            small = try container.decode(Int8.self, forKey: .small)
            unsigned = try container.decode(UInt32.self, forKey: .unsigned)
            single = try container.decode(Float.self, forKey: .single)
            var list = try container.nestedUnkeyedContainer(forKey: .names)
            names = []
            while !list.isAtEnd { names.append(try list.decode(String.self)) }
            nested = try container.decode([String: [Int]].self, forKey: .nested)
            maybe = try container.decodeIfPresent(Double.self, forKey: .maybe)
            absent = try container.decodeIfPresent(String.self, forKey: .absent)
            var pairList = try container.nestedUnkeyedContainer(forKey: .pair)
            pair = (try pairList.decode(Int.self), try pairList.decode(String.self))
            let inner = try container.nestedContainer(keyedBy: Inner.self, forKey: .inner)
            guard try inner.decode(Int.self, forKey: .depth) == 2 else { throw CocoaError(.coderInvalidValue) }
            guard try [String](from: container.superDecoder()) == names else { throw CocoaError(.coderInvalidValue) }
        }
    }

    @Test("keyed, unkeyed, nested and super containers write what JSONEncoder wrote and read back")
    func containers() throws {
        var value = Everything(
            flag: true,
            small: -8,
            unsigned: 4_000_000_000,
            single: 0.25,
            names: ["a", "b/c"],
            nested: ["x": [1, 2], "y": []]
        )
        value.maybe = 1.5
        value.pair = (7, "seven")
        let text = try Self.ours(value)
        #expect(text == (try Self.foundation(value)))
        #expect(
            text == #"{"flag":true,"inner":{"depth":2},"maybe":1.5,"names":["a","b/c"],"nested":{"x":[1,2],"y":[]},"#
                + #""pair":[7,"seven"],"single":0.25,"small":-8,"super":["a","b/c"],"unsigned":4000000000}"#
        )
        let decoded = try JSONValueDecoder.decode(Everything.self, from: JSONReader.read(Array(text.utf8)))
        #expect(decoded == value)
    }

    @Test("a number with no JSON form is refused, naming the field")
    func notFinite() {
        var value = Everything(flag: false, small: 0, unsigned: 0, single: .nan, names: [], nested: [:])
        #expect {
            try JSONWriter.bytes(value)
        } throws: { error in
            guard case EncodingError.invalidValue(_, let context) = error else { return false }
            return context.codingPath.map(\.stringValue) == ["single"]
                && context.debugDescription == "nan has no JSON form"
        }
        value.single = 0
        value.nested = [:]
        value.maybe = -.infinity
        #expect(throws: EncodingError.self) { try JSONWriter.bytes(value) }
    }

    /// Lines hushctl might get from a broken or foreign server: each refused with the field's path and what was
    /// wrong, exactly.
    static let refusals: [(line: String, detail: String)] = [
        (#"{"ok":true,"volume":{"kind":"system"}}"#, "field 'volume.step' is missing"),
        (#"{"ok":"yes"}"#, #"field 'ok': expected true or false, got a string ("yes")"#),
        (#"{"ok":true,"session":1.5}"#, "field 'session': expected a whole number, got 1.5"),
        (#"{"ok":true,"session":-1}"#, "field 'session': the number -1 is outside 0…18446744073709551615"),
        (
            #"{"ok":true,"session":18446744073709551615}"#,
            "field 'session': the number 1.8446744073709552e+19 is too large to be read exactly"
        ),
        (#"{"event":"session-finished","session":null}"#, "field 'session': expected a whole number, got null"),
        (#"{"ok":true,"events":"decision"}"#, #"field 'events': expected an array, got a string ("decision")"#),
        (#"{"ok":true,"events":["decision",3]}"#, "field 'events.1': expected a string, got a number (3)"),
        (#"{"ok":true,"hello":[]}"#, "field 'hello': expected an object, got an array ([])"),
        (
            #"{"event":"volume-changed","kind":"system","step":"9"}"#,
            #"field 'step': expected a whole number, got a string ("9")"#
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
