/// A parsed TOML configuration file as a tree whose every node knows the file and line it came from.
///
/// toml++ (through ``TOMLParser``) parses the text and says where each key and value was written, so every later
/// message can name the line a person has to edit. Trees from several files (a board profile and the file that
/// starts from it) merge with ``ConfigurationNode/merged(over:)`` and keep each value's own file and line.
package struct ConfigurationNode: Sendable {
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
    package var line: Int?

    /// The entries when this is a table.
    package var table: [String: ConfigurationNode]? {
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

    /// Parses `text` (with toml++, ``TOMLParser``), or throws the syntax error with its line and column.
    package static func parse(_ text: String, file: String) throws(ConfigurationError) -> ConfigurationNode {
        do {
            return try TOMLParser.parse(text, file: file)
        } catch {
            throw ConfigurationError(
                ConfigurationProblem(
                    file: file,
                    line: error.line,
                    column: error.column,
                    message: "TOML syntax: \(error.description)"
                )
            )
        }
    }
}
