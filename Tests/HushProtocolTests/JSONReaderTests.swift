import Foundation
import Testing

@testable import HushProtocol

/// hushd's JSON reader: what it reads, what it refuses and where it says the problem is, and that it agrees with
/// Foundation's reader on every text both accept.
@Suite("JSON reader")
struct JSONReaderTests {
    static let readable: [(text: String, value: JSONValue)] = [
        (#"{"command":"status"}"#, .object(["command": .string("status")])),
        (
            " \t\r\n{ \"a\" : [ 1 , -2.5e3 , true , false , null ] }\n",
            .object([
                "a": .array([.number(1), .number(-2500), .bool(true), .bool(false), .null])
            ])
        ),
        ("{}", .object([:])),
        ("[]", .array([])),
        ("[[[]]]", .array([.array([.array([])])])),
        ("0", .number(0)),
        ("-0", .number(-0.0)),
        ("0.125", .number(0.125)),
        ("1E2", .number(100)),
        ("1e-2", .number(0.01)),
        ("1e+2", .number(100)),
        ("9007199254740993", .number(9_007_199_254_740_992)),
        (#""""#, .string("")),
        (#""a\"b\\c\/d\b\f\n\r\t""#, .string("a\"b\\c/d\u{8}\u{C}\n\r\t")),
        (#""\u00e9\u00E9é""#, .string("ééé")),
        (#""\u0000""#, .string("\u{0}")),
        (#""\ud83d\udd14 bell""#, .string("🔔 bell")),
        (#""\uFFFF""#, .string("\u{FFFF}")),
    ]

    @Test("reads every kind of value", arguments: readable)
    func reads(text: String, value: JSONValue) throws {
        #expect(try JSONReader.read(Array(text.utf8)) == value)
    }

    static let refused: [(text: String, column: Int, reason: String)] = [
        ("", 1, "expected a value, got the end of the line"),
        ("status", 1, "expected a value, got 's'"),
        ("{", 2, "expected a field name in double quotes, got the end of the line"),
        (#"{"a":1,}"#, 8, "expected a field name in double quotes after field 'a', got '}'"),
        (#"{"a" 1}"#, 6, "expected ':' after field name \"a\", got '1'"),
        (#"{"a":}"#, 6, "expected a value for field 'a', got '}'"),
        (#"{"a":1 "b":2}"#, 8, "expected ',' or '}' after field 'a', got '\"'"),
        (#"{"bus":"music","bus":"ringer"}"#, 16, "field 'bus' appears twice in one object"),
        (#"{"a":[1,2}"#, 10, "expected ',' or ']' in an array for field 'a', got '}'"),
        ("{'a':1}", 2, "expected a field name in double quotes, got '''"),
        ("{} {}", 4, "expected the end of the line after the value, got '{'"),
        ("tru", 1, "expected true, got 'tru'"),
        ("nul", 1, "expected null, got 'nul'"),
        ("01", 1, "a number may not start with 0 unless it is 0 (such as 0.5); got a leading zero"),
        ("-", 2, "expected a digit after '-', got the end of the line"),
        ("1.", 3, "expected a digit after '.', got the end of the line"),
        ("1e", 3, "expected a digit in the exponent, got the end of the line"),
        (".5", 1, "expected a value, got '.'"),
        ("+1", 1, "expected a value, got '+'"),
        (#"{"step":1e400}"#, 9, "the number 1e400 for field 'step' is too large"),
        (#""abc"#, 1, "a string that is not closed: a '\"' is missing"),
        ("\"a\u{1}b\"", 3, "a control character (byte 1) inside a string; write it as \\u0001"),
        ("\"a\tb\"", 3, "a control character (byte 9) inside a string; write it as \\u0009"),
        (#""\x""#, 2, "'\\x' is no escape; the escapes are \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX"),
        (#""\u12""#, 2, "\\u needs four hex digits, such as \\u00e9"),
        (#""\ud83d""#, 2, "\\uD83D is the first half of a surrogate pair with no second half"),
        (#""\ud83d\u0041""#, 2, "\\uD83D is the first half of a surrogate pair with no second half"),
        (#""\udd14""#, 2, "\\uDD14 is the second half of a surrogate pair with no first half"),
        ("\"é\" x", 5, "expected the end of the line after the value, got 'x'"),
        ("é", 1, "expected a value, got 'é'"),
        ("NaN", 1, "expected a value, got 'N'"),
    ]

    @Test("refuses what is not JSON, naming the column and what it expected", arguments: refused)
    func refuses(text: String, column: Int, reason: String) {
        #expect(throws: JSONReader.Failure.self) { try JSONReader.read(Array(text.utf8)) }
        do {
            _ = try JSONReader.read(Array(text.utf8))
        } catch {
            #expect(error.reason == reason)
            #expect(error.column == column)
        }
    }

    @Test("bytes that are not UTF-8 inside a string are refused at the string")
    func invalidUTF8() {
        do {
            _ = try JSONReader.read([0x5B, 0x22, 0xFF, 0x22, 0x5D])  // ["\xFF"]
            Issue.record("accepted invalid UTF-8")
        } catch {
            #expect(error.reason == "a string that is not valid UTF-8")
            #expect(error.offset == 1)
        }
        do {
            _ = try JSONReader.read([0x5B, 0xFF, 0x5D])
            Issue.record("accepted invalid UTF-8")
        } catch {
            #expect(error.reason == "expected a value, got byte 0xFF")
        }
    }

    @Test("nesting is refused past the limit and read up to it")
    func depth() throws {
        let deepest =
            String(repeating: "[", count: JSONReader.maxDepth) + String(repeating: "]", count: JSONReader.maxDepth)
        var value = try JSONReader.read(Array(deepest.utf8))
        var levels = 0
        while case .array(let inner) = value {
            levels += 1
            value = inner.first ?? .null
        }
        #expect(levels == JSONReader.maxDepth)
        for text in [
            "[" + deepest + "]",
            String(repeating: #"{"a":"#, count: JSONReader.maxDepth + 1),
            String(repeating: "[", count: 100_000),
        ] {
            do {
                _ = try JSONReader.read(Array(text.utf8))
                Issue.record("accepted \(text.count) bytes nested past the limit")
            } catch {
                #expect(error.reason == "arrays and objects nested deeper than \(JSONReader.maxDepth)")
                #expect(error.offset == JSONReader.maxDepth * (text.hasPrefix("{") ? 5 : 1))
            }
        }
    }

    /// Random JSON texts, written the ways a client might (spacing, escapes, number forms), each read by this
    /// reader and by Foundation's: both give the same value.
    @Test("agrees with Foundation's reader on 5000 random texts")
    func agreesWithFoundation() throws {
        var generator = Generator(seed: 0x4A53_4F4E)
        for _ in 0..<5000 {
            let text = generator.value(depth: 0)
            let ours = try JSONReader.read(Array(text.utf8))
            let foundation = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
            #expect(ours == foundation, "\(text)")
            if ours != foundation { return }
        }
    }

    /// Writes random JSON texts from a seed (a linear congruential generator, so a failure can be replayed).
    struct Generator {
        var state: UInt64

        init(seed: UInt64) { state = seed }

        mutating func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }

        mutating func space() -> String { ["", "", " ", "\n", "\t ", "\r\n"][next(6)] }

        mutating func value(depth: Int) -> String {
            switch next(depth > 3 ? 4 : 6) {
            case 0: return ["true", "false", "null"][next(3)]
            case 1: return number()
            case 2, 3: return string()
            case 4:
                let count = next(4)
                let elements = (0..<count).map { _ in space() + value(depth: depth + 1) + space() }
                return "[" + elements.joined(separator: ",") + "]"
            default:
                var names = Set<String>()
                var members: [String] = []
                for _ in 0..<next(4) {
                    let name = string()
                    let key = try? JSONReader.read(Array(name.utf8))
                    guard case .string(let decoded)? = key, names.insert(decoded).inserted else { continue }
                    members.append(space() + name + space() + ":" + space() + value(depth: depth + 1) + space())
                }
                return "{" + members.joined(separator: ",") + "}"
            }
        }

        mutating func number() -> String {
            var text = next(3) == 0 ? "-" : ""
            text += next(4) == 0 ? "0" : String(1 + next(9)) + String(repeating: "7", count: next(17))
            if next(2) == 0 { text += "." + String(next(100_000)) }
            if next(3) == 0 { text += ["e", "E"][next(2)] + ["", "+", "-"][next(3)] + String(next(280)) }
            return text
        }

        mutating func string() -> String {
            var text = "\""
            for _ in 0..<next(8) {
                switch next(9) {
                case 0: text += ["\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t"][next(8)]
                case 1: text += String(format: "\\u%04x", next(0xD800))
                case 2: text += "\\uD83D\\uDE00"
                case 3: text += ["é", "音", "🔔"][next(3)]
                default:
                    // Printable ASCII, the quote and the backslash (which need escapes) left out.
                    let byte = UInt8(0x20 + next(0x5F))
                    text += byte == 0x22 || byte == 0x5C ? "x" : String(UnicodeScalar(byte))
                }
            }
            return text + "\""
        }
    }
}
