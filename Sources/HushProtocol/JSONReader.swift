/// Reads one JSON text (RFC 8259) into a `JSONValue`, strictly, and says where it stopped when it cannot.
///
/// hushd reads every request line with this. Foundation's `JSONDecoder` did the job before, through
/// `JSONValue`'s `Decodable` conformance, which tries each kind of value in turn and throws (allocating an error
/// with its coding path) for every kind a value is not: an object cost four thrown errors before it was read,
/// and a malformed line was answered "The given data was not valid JSON." with no place. This reader makes one pass
/// over the bytes, allocates only what the value holds, and names the column, what it expected and what it found
/// ("column 20: expected ',' or '}' after field 'command', got the end of the line").
///
/// Stricter than Foundation where a request is better refused than guessed at:
/// - a field that appears twice in one object is refused (which one counts would be up to the reader);
/// - nesting deeper than `maxDepth` is refused before the stack is at risk;
/// - a number too large for a Double (`1e400`) is refused, not read as infinity;
/// - an unpaired UTF-16 surrogate escape (`"\uD800"`) is refused, since it is no character.
public struct JSONReader: Sendable {
    /// Arrays and objects nested deeper than this are refused. Requests nest two levels; 64 leaves room for any
    /// client and keeps the recursion a few kilobytes of stack.
    public static let maxDepth = 64

    /// Where and why reading stopped.
    public struct Failure: Error, Hashable, Sendable {
        /// The byte offset of the problem, from 0.
        public var offset: Int
        /// The column a person counts: characters before the problem, plus one.
        public var column: Int
        /// What was wrong, such as "expected ':' after field name \"bus\", got '='".
        public var reason: String

        /// "column 12: expected …".
        public var description: String { "column \(column): \(reason)" }
    }

    /// Reads `bytes` as exactly one JSON value with optional whitespace around it.
    public static func read(_ bytes: some Collection<UInt8>) throws(Failure) -> JSONValue {
        let array = Array(bytes)
        var reader = JSONReader(array)
        reader.skipWhitespace()
        let value = try reader.value(depth: 0, field: nil)
        reader.skipWhitespace()
        guard reader.position == array.count else {
            throw reader.failure("expected the end of the line after the value, got \(reader.describeNext())")
        }
        return value
    }

    private let bytes: [UInt8]
    private var position = 0

    private init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    private mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x09, 0x0A, 0x0D: position += 1
            default: return
            }
        }
    }

    /// `field` names the object member being read, for messages ("after field 'bus'").
    private mutating func value(depth: Int, field: String?) throws(Failure) -> JSONValue {
        guard position < bytes.count else {
            throw failure("expected a value\(Self.inField(field)), got the end of the line")
        }
        switch bytes[position] {
        case UInt8(ascii: "{"): return try object(depth: depth + 1)
        case UInt8(ascii: "["): return try array(depth: depth + 1, field: field)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"):
            try literal("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try literal("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try literal("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number(field: field))
        default:
            throw failure("expected a value\(Self.inField(field)), got \(describeNext())")
        }
    }

    private mutating func object(depth: Int) throws(Failure) -> JSONValue {
        guard depth <= Self.maxDepth else { throw failure("arrays and objects nested deeper than \(Self.maxDepth)") }
        position += 1  // {
        var members: [String: JSONValue] = [:]
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
            position += 1
            return .object(members)
        }
        var previous: String?
        while true {
            guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else {
                let after = previous.map { " after field '\($0)'" } ?? ""
                throw failure("expected a field name in double quotes\(after), got \(describeNext())")
            }
            let nameStart = position
            let name = try string()
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else {
                throw failure("expected ':' after field name \"\(name)\", got \(describeNext())")
            }
            position += 1
            skipWhitespace()
            let member = try value(depth: depth, field: name)
            guard members.updateValue(member, forKey: name) == nil else {
                position = nameStart
                throw failure("field '\(name)' appears twice in one object")
            }
            if try closes(UInt8(ascii: "}"), else: "expected ',' or '}' after field '\(name)'") {
                return .object(members)
            }
            previous = name
        }
    }

    private mutating func array(depth: Int, field: String?) throws(Failure) -> JSONValue {
        guard depth <= Self.maxDepth else { throw failure("arrays and objects nested deeper than \(Self.maxDepth)") }
        position += 1  // [
        var elements: [JSONValue] = []
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
            position += 1
            return .array(elements)
        }
        while true {
            elements.append(try value(depth: depth, field: field))
            if try closes(UInt8(ascii: "]"), else: "expected ',' or ']' in an array\(Self.inField(field))") {
                return .array(elements)
            }
        }
    }

    /// After a member or an element: takes the `closing` bracket (true) or a comma (false); anything else fails
    /// with `expected`, followed by what came instead.
    private mutating func closes(_ closing: UInt8, else expected: String) throws(Failure) -> Bool {
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: ",") {
            position += 1
            skipWhitespace()
            return false
        }
        guard position < bytes.count, bytes[position] == closing else {
            throw failure("\(expected), got \(describeNext())")
        }
        position += 1
        return true
    }

    private mutating func literal(_ word: StaticString) throws(Failure) {
        let count = word.utf8CodeUnitCount
        let matches = word.withUTF8Buffer { expected in
            position + count <= bytes.count && bytes[position..<position + count].elementsEqual(expected)
        }
        guard matches else {
            let found = String(decoding: bytes[position..<min(bytes.count, position + count)], as: UTF8.self)
            throw failure("expected \(word), got '\(found)'")
        }
        position += count
    }

    /// A string's contents, its escapes resolved. `position` is at the opening quote.
    private mutating func string() throws(Failure) -> String {
        let opening = position
        position += 1
        // Most strings have no escape: their bytes are the string's UTF-8 as they stand.
        var run = position
        var decoded: [UInt8] = []
        while true {
            guard position < bytes.count else {
                position = opening
                throw failure("a string that is not closed: a '\"' is missing")
            }
            let byte = bytes[position]
            switch byte {
            case UInt8(ascii: "\""):
                let text: String?
                if decoded.isEmpty && run == opening + 1 {
                    text = String(validating: bytes[run..<position], as: UTF8.self)
                } else {
                    decoded.append(contentsOf: bytes[run..<position])
                    text = String(validating: decoded, as: UTF8.self)
                }
                position += 1
                guard let text else {
                    position = opening
                    throw failure("a string that is not valid UTF-8")
                }
                return text
            case UInt8(ascii: "\\"):
                decoded.append(contentsOf: bytes[run..<position])
                try escape(into: &decoded)
                run = position
            case 0x00..<0x20:
                throw failure(
                    "a control character (byte \(byte)) inside a string; write it as \\u00"
                        + (byte < 0x10 ? "0" : "") + String(byte, radix: 16)
                )
            default:
                position += 1
            }
        }
    }

    /// One escape sequence, `position` at its backslash, appended as UTF-8.
    private mutating func escape(into decoded: inout [UInt8]) throws(Failure) {
        guard position + 1 < bytes.count else {
            throw failure("a '\\' at the end of the line, in a string that is not closed")
        }
        let letter = bytes[position + 1]
        let simple: UInt8? =
            switch letter {
            case UInt8(ascii: "\""): 0x22
            case UInt8(ascii: "\\"): 0x5C
            case UInt8(ascii: "/"): 0x2F
            case UInt8(ascii: "b"): 0x08
            case UInt8(ascii: "f"): 0x0C
            case UInt8(ascii: "n"): 0x0A
            case UInt8(ascii: "r"): 0x0D
            case UInt8(ascii: "t"): 0x09
            default: nil
            }
        if let simple {
            decoded.append(simple)
            position += 2
            return
        }
        guard letter == UInt8(ascii: "u") else {
            throw failure(
                "'\\\(Self.describe(letter))' is no escape; the escapes are \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX"
            )
        }
        let escapeStart = position
        var unit = try hexUnit()
        if (0xDC00...0xDFFF).contains(unit) {
            position = escapeStart
            throw failure("\\u\(Self.hex(unit)) is the second half of a surrogate pair with no first half")
        }
        if (0xD800...0xDBFF).contains(unit) {
            let high = unit
            guard position + 1 < bytes.count, bytes[position] == UInt8(ascii: "\\"),
                bytes[position + 1] == UInt8(ascii: "u")
            else {
                position = escapeStart
                throw failure("\\u\(Self.hex(high)) is the first half of a surrogate pair with no second half")
            }
            let low = try hexUnit()
            guard (0xDC00...0xDFFF).contains(low) else {
                position = escapeStart
                throw failure("\\u\(Self.hex(high)) is the first half of a surrogate pair with no second half")
            }
            unit = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)
        }
        // Not a surrogate: every other value up to 0x10FFFF is a scalar.
        decoded.append(contentsOf: String(Unicode.Scalar(unit)!).utf8)
    }

    /// The four hex digits of a `\uXXXX` escape, `position` at its backslash; leaves `position` after them.
    private mutating func hexUnit() throws(Failure) -> UInt32 {
        var unit: UInt32 = 0
        for index in position + 2..<position + 6 {
            guard index < bytes.count, let digit = Self.hexDigit(bytes[index]) else {
                throw failure("\\u needs four hex digits, such as \\u00e9")
            }
            unit = unit << 4 | digit
        }
        position += 6
        return unit
    }

    private static func hexDigit(_ byte: UInt8) -> UInt32? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(byte - UInt8(ascii: "A") + 10)
        default: nil
        }
    }

    private static func hex(_ unit: UInt32) -> String {
        let digits = String(unit, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    /// A number as JSON writes it: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
    private mutating func number(field: String?) throws(Failure) -> Double {
        let start = position
        func digits() -> Int {
            let first = position
            while position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) {
                position += 1
            }
            return position - first
        }
        if bytes[position] == UInt8(ascii: "-") { position += 1 }
        let integerStart = position
        let integerDigits = digits()
        guard integerDigits > 0 else { throw failure("expected a digit after '-', got \(describeNext())") }
        if integerDigits > 1, bytes[integerStart] == UInt8(ascii: "0") {
            position = integerStart
            throw failure("a number may not start with 0 unless it is 0 (such as 0.5); got a leading zero")
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
            position += 1
            guard digits() > 0 else { throw failure("expected a digit after '.', got \(describeNext())") }
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E") {
            position += 1
            if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") {
                position += 1
            }
            guard digits() > 0 else { throw failure("expected a digit in the exponent, got \(describeNext())") }
        }
        let text = String(decoding: bytes[start..<position], as: UTF8.self)
        guard let value = Double(text), value.isFinite else {
            position = start
            throw failure("the number \(text)\(Self.inField(field)) is too large")
        }
        return value
    }

    private static func inField(_ field: String?) -> String {
        field.map { " for field '\($0)'" } ?? ""
    }

    /// The next character for a message: "'x'", "'é'", "the end of the line", or "byte 0xFF".
    private func describeNext() -> String {
        guard position < bytes.count else { return "the end of the line" }
        let byte = bytes[position]
        if byte >= 0x80 {
            let next = bytes[position..<min(bytes.count, position + 4)]
            if let scalar = String(decoding: next, as: UTF8.self).unicodeScalars.first, scalar != "\u{FFFD}" {
                return "'\(scalar)'"
            }
            return "byte 0x" + String(byte, radix: 16, uppercase: true)
        }
        return "'\(Self.describe(byte))'"
    }

    private static func describe(_ byte: UInt8) -> String {
        switch byte {
        case 0x20..<0x7F: String(UnicodeScalar(byte))
        default: "\\u{" + String(byte, radix: 16) + "}"
        }
    }

    private func failure(_ reason: String) -> Failure {
        // Characters, not bytes: a person counts "é" as one column.
        let column = String(decoding: bytes[..<min(position, bytes.count)], as: UTF8.self).unicodeScalars.count + 1
        return Failure(offset: position, column: column, reason: reason)
    }
}
