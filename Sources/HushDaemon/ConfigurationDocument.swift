import TOMLKit

/// A parsed TOML configuration file as a tree whose every node knows the file and line it came from.
///
/// TOMLKit (toml++ underneath) parses and checks the syntax but does not expose where a key was written: only its
/// parse errors carry a position. ``ConfigurationKeyLocator`` finds each key's line in the text, and this tree
/// joins the two, so every later message can name the line a person has to edit. Trees from several files (a
/// board profile and the file that starts from it) merge with ``ConfigurationNode/merged(over:)`` and keep each
/// value's own file and line.
struct ConfigurationNode: Sendable {
    enum Value: Sendable {
        case table([String: ConfigurationNode])
        case array([ConfigurationNode])
        case string(String)
        case integer(Int)
        case float(Double)
        case boolean(Bool)
        /// A date or time: TOML has them, hush's configuration has no use for them.
        case other(String)
    }

    var value: Value
    var file: String
    /// 1-based; nil only for a table no line mentions (the document itself).
    var line: Int?

    /// The entries when this is a table.
    var table: [String: ConfigurationNode]? {
        if case .table(let entries) = value { return entries }
        return nil
    }

    /// "a string", "a whole number", …: what a person sees when a value has the wrong type.
    var typeName: String {
        switch value {
        case .table: "a table"
        case .array: "an array"
        case .string: "a string"
        case .integer: "a whole number"
        case .float: "a decimal number"
        case .boolean: "true or false"
        case .other: "a date or time"
        }
    }

    /// The value as TOML would spell it, for messages: `"S23_LE"`, `7`, `[1, 2]`, `{ on = true }`.
    var written: String {
        switch value {
        case .string(let text): Self.quoted(text)
        case .integer(let number): String(number)
        case .float(let number): number == number.rounded() && abs(number) < 1e15 ? "\(Int(number)).0" : "\(number)"
        case .boolean(let flag): flag ? "true" : "false"
        case .other(let text): text
        case .array(let items): "[" + items.map(\.written).joined(separator: ", ") + "]"
        case .table(let entries):
            entries.isEmpty
                ? "{}"
                : "{ "
                    + entries.sorted { $0.key < $1.key }.map { "\($0.key) = \($0.value.written)" }
                    .joined(separator: ", ") + " }"
        }
    }

    /// A TOML basic string with `text` in it.
    static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            case "\r": out += "\\r"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    let hex = String(scalar.value, radix: 16, uppercase: true)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }

    /// This tree laid over `base`: tables merge key by key, anything else in `self` replaces what `base` had.
    ///
    /// - Parameter replacesWhole: says, for a table path, whether a table here replaces the base's table instead
    ///   of merging into it (an input that changes its `kind` starts afresh: the old kind's keys would not fit).
    func merged(
        over base: ConfigurationNode,
        path: [String] = [],
        replacesWhole: ([String], ConfigurationNode, ConfigurationNode) -> Bool
    )
        -> ConfigurationNode
    {
        guard case .table(let mine) = value, case .table(var theirs) = base.value,
            !replacesWhole(path, self, base)
        else { return self }
        for (key, node) in mine {
            if let existing = theirs[key] {
                theirs[key] = node.merged(over: existing, path: path + [key], replacesWhole: replacesWhole)
            } else {
                theirs[key] = node
            }
        }
        return ConfigurationNode(value: .table(theirs), file: file, line: line ?? base.line)
    }

    /// Parses `text`, or throws the syntax error with its line and column.
    static func parse(_ text: String, file: String) throws(ConfigurationError) -> ConfigurationNode {
        if let problem = TOMLPrecheck.problem(in: text) {
            throw ConfigurationError(
                ConfigurationProblem(
                    file: file,
                    line: problem.line,
                    column: problem.column,
                    message: "TOML syntax: \(problem.message)"
                )
            )
        }
        let table: TOMLTable
        do {
            table = try TOMLTable(string: text)
        } catch let error as TOMLParseError {
            throw ConfigurationError(
                ConfigurationProblem(
                    file: file,
                    line: error.source.begin.line,
                    column: error.source.begin.column,
                    message: "TOML syntax: \(error.description)"
                )
            )
        } catch {
            throw ConfigurationError(ConfigurationProblem(file: file, message: "TOML syntax: \(error)"))
        }
        let locator = ConfigurationKeyLocator(text: text)
        return build(table, path: [], file: file, locator: locator)
    }

    private static func build(
        _ value: TOMLValueConvertible,
        path: [String],
        file: String,
        locator: ConfigurationKeyLocator
    ) -> ConfigurationNode {
        let line = locator.line(of: path)
        switch value.type {
        case .table:
            var entries: [String: ConfigurationNode] = [:]
            if let table = value.table {
                for key in table.keys {
                    guard let child = table[key] else { continue }
                    entries[key] = build(child, path: path + [key], file: file, locator: locator)
                }
            }
            return ConfigurationNode(value: .table(entries), file: file, line: line)
        case .array:
            var items: [ConfigurationNode] = []
            if let array = value.array {
                for (index, item) in array.enumerated() {
                    var node = build(item, path: path + ["[\(index)]"], file: file, locator: locator)
                    node.line = node.line ?? line
                    items.append(node)
                }
            }
            return ConfigurationNode(value: .array(items), file: file, line: line)
        case .string: return ConfigurationNode(value: .string(value.string ?? ""), file: file, line: line)
        case .int: return ConfigurationNode(value: .integer(value.int ?? 0), file: file, line: line)
        case .double: return ConfigurationNode(value: .float(value.double ?? 0), file: file, line: line)
        case .bool: return ConfigurationNode(value: .boolean(value.bool ?? false), file: file, line: line)
        default: return ConfigurationNode(value: .other(value.debugDescription), file: file, line: line)
        }
    }
}

/// Finds the line of every key, table header and array element in a TOML text that has already parsed.
///
/// It walks the text once the way a TOML parser does — table headers, dotted and quoted keys, strings of all
/// four kinds (so a `#` or a `[` inside one is not mistaken for anything), arrays and inline tables across lines —
/// and records, for each key path, the line where the key is written. An array element's path ends in "[N]".
/// A table that is only implied (`routes` in `[routes.speaker]`) gets the first line that mentions it.
struct ConfigurationKeyLocator {
    private var lines: [[String]: Int] = [:]
    private let bytes: [UInt8]
    private var position = 0
    private var line = 1

    init(text: String) {
        bytes = Array(text.utf8)
        scanDocument()
    }

    /// The 1-based line of `path`, or nil when the text does not mention it.
    func line(of path: [String]) -> Int? { lines[path] }

    /// Records `path` at `line`, and any table on the way that no earlier line mentioned.
    private mutating func record(_ path: [String], at line: Int) {
        guard !path.isEmpty else { return }
        for length in 1..<path.count where lines[Array(path.prefix(length))] == nil {
            lines[Array(path.prefix(length))] = line
        }
        lines[path] = line
    }

    private var current: UInt8? { position < bytes.count ? bytes[position] : nil }

    private func peek(_ offset: Int) -> UInt8? {
        position + offset < bytes.count ? bytes[position + offset] : nil
    }

    private mutating func advance() {
        if current == UInt8(ascii: "\n") { line += 1 }
        position += 1
    }

    /// Skips spaces and tabs, and with `newlines` also line ends and comments.
    private mutating func skipBlank(newlines: Bool) {
        while let byte = current {
            if byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\r") {
                advance()
            } else if byte == UInt8(ascii: "#") {
                while let next = current, next != UInt8(ascii: "\n") {
                    _ = next
                    advance()
                }
            } else if newlines && byte == UInt8(ascii: "\n") {
                advance()
            } else {
                return
            }
        }
    }

    private mutating func skipToLineEnd() {
        while let byte = current, byte != UInt8(ascii: "\n") {
            _ = byte
            advance()
        }
    }

    private mutating func scanDocument() {
        var table: [String] = []
        var arrayTableCounts: [[String]: Int] = [:]
        while current != nil {
            skipBlank(newlines: true)
            guard let byte = current else { return }
            if byte == UInt8(ascii: "[") {
                let headerLine = line
                let isArrayTable = peek(1) == UInt8(ascii: "[")
                advance()
                if isArrayTable { advance() }
                skipBlank(newlines: false)
                var path = scanKeyPath()
                if isArrayTable {
                    let index = arrayTableCounts[path, default: 0]
                    arrayTableCounts[path] = index + 1
                    record(path, at: headerLine)
                    path.append("[\(index)]")
                }
                record(path, at: headerLine)
                table = path
                skipToLineEnd()
                continue
            }
            let keyLine = line
            let key = scanKeyPath()
            guard !key.isEmpty else {
                // Not a key: cannot happen in a text that parsed; step over the line rather than loop.
                skipToLineEnd()
                continue
            }
            record(table + key, at: keyLine)
            skipBlank(newlines: false)
            if current == UInt8(ascii: "=") { advance() }
            skipBlank(newlines: false)
            scanValue(path: table + key)
            skipToLineEnd()
        }
    }

    /// A dotted key of bare and quoted parts: `a`, `a.b`, `"line out"`, `routes . 'x'`.
    private mutating func scanKeyPath() -> [String] {
        var parts: [String] = []
        while let byte = current {
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
                parts.append(scanQuotedKey(quote: byte))
            } else if Self.isBare(byte) {
                let start = position
                while let next = current, Self.isBare(next) { advance() }
                parts.append(String(decoding: bytes[start..<position], as: UTF8.self))
            } else {
                break
            }
            skipBlank(newlines: false)
            guard current == UInt8(ascii: ".") else { break }
            advance()
            skipBlank(newlines: false)
        }
        return parts
    }

    private static func isBare(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
            || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
            || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "_")
            || byte == UInt8(ascii: "-")
    }

    private mutating func scanQuotedKey(quote: UInt8) -> String {
        advance()
        var scalars: [UInt8] = []
        while let byte = current, byte != quote, byte != UInt8(ascii: "\n") {
            if quote == UInt8(ascii: "\""), byte == UInt8(ascii: "\\") {
                advance()
                guard let escaped = current else { break }
                switch escaped {
                case UInt8(ascii: "n"): scalars.append(UInt8(ascii: "\n"))
                case UInt8(ascii: "t"): scalars.append(UInt8(ascii: "\t"))
                case UInt8(ascii: "u"), UInt8(ascii: "U"):
                    let digits = escaped == UInt8(ascii: "u") ? 4 : 8
                    advance()
                    let start = position
                    for _ in 0..<digits where current != nil { advance() }
                    let hex = String(decoding: bytes[start..<position], as: UTF8.self)
                    if let value = UInt32(hex, radix: 16), let scalar = Unicode.Scalar(value) {
                        scalars.append(contentsOf: Array(String(Character(scalar)).utf8))
                    }
                    continue
                default: scalars.append(escaped)
                }
                advance()
                continue
            }
            scalars.append(byte)
            advance()
        }
        if current == quote { advance() }
        return String(decoding: scalars, as: UTF8.self)
    }

    private mutating func scanValue(path: [String]) {
        guard let byte = current else { return }
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "'"):
            scanString(quote: byte)
        case UInt8(ascii: "["):
            advance()
            var index = 0
            while true {
                skipBlank(newlines: true)
                guard let next = current else { return }
                if next == UInt8(ascii: "]") {
                    advance()
                    return
                }
                if next == UInt8(ascii: ",") {
                    advance()
                    continue
                }
                record(path + ["[\(index)]"], at: line)
                let before = position
                scanValue(path: path + ["[\(index)]"])
                if position == before { advance() }
                index += 1
            }
        case UInt8(ascii: "{"):
            advance()
            while true {
                skipBlank(newlines: true)
                guard let next = current else { return }
                if next == UInt8(ascii: "}") {
                    advance()
                    return
                }
                if next == UInt8(ascii: ",") {
                    advance()
                    continue
                }
                let keyLine = line
                let key = scanKeyPath()
                guard !key.isEmpty else {
                    advance()
                    continue
                }
                record(path + key, at: keyLine)
                skipBlank(newlines: false)
                if current == UInt8(ascii: "=") { advance() }
                skipBlank(newlines: false)
                scanValue(path: path + key)
            }
        default:
            // A number, boolean or date: runs until a separator. Dates may hold one space ("1979-05-27 07:32:00").
            while let next = current, ![",", "]", "}", "#", "\n"].contains(Character(Unicode.Scalar(next))) {
                advance()
            }
        }
    }

    private mutating func scanString(quote: UInt8) {
        let isMultiLine = peek(1) == quote && peek(2) == quote
        advance()
        if isMultiLine {
            advance()
            advance()
        }
        while let byte = current {
            if quote == UInt8(ascii: "\""), byte == UInt8(ascii: "\\") {
                advance()
                advance()
                continue
            }
            if byte == quote {
                if !isMultiLine {
                    advance()
                    return
                }
                if peek(1) == quote && peek(2) == quote {
                    // Up to two more quotes may belong to the string ("""a""""" ends with two quotes inside).
                    advance()
                    advance()
                    advance()
                    while current == quote { advance() }
                    return
                }
            }
            if !isMultiLine && byte == UInt8(ascii: "\n") { return }
            advance()
        }
    }
}
