/// Any JSON value, as a request arrives before it is checked.
///
/// Requests are read into this first and then checked field by field, so an error reply can name the field and
/// what was expected ("field 'bus': expected one of effect, music, ringer, got \"radio\"") instead of passing on a
/// decoder's generic complaint.
public enum JSONValue: Hashable, Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// What a person calls this kind of value, for error messages.
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }

    /// The value as a whole number, if it is one that a Double holds exactly.
    public var integer: Int64? {
        guard case .number(let value) = self, value.rounded() == value, abs(value) <= 9_007_199_254_740_992 else {
            return nil
        }
        return Int64(value)
    }

    /// A short rendering for error messages: strings quoted, long values cut.
    public var preview: String {
        let text: String
        switch self {
        case .null: text = "null"
        case .bool(let value): text = value ? "true" : "false"
        case .number(let value): text = integer.map { "\($0)" } ?? "\(value)"
        case .string(let value): text = "\"\(value)\""
        case .array(let values): text = "[" + values.map(\.preview).joined(separator: ", ") + "]"
        case .object: text = "{…}"
        }
        return text.count > 40 ? String(text.prefix(39)) + "…" : text
    }
}

extension JSONValue: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value):
            // Whole numbers as integers: "3", not "3.0", so ids and steps read as they were written.
            if let whole = integer { try container.encode(whole) } else { try container.encode(value) }
        case .string(let value): try container.encode(value)
        case .array(let values): try container.encode(values)
        case .object(let members): try container.encode(members)
        }
    }
}
