/// Reads a `Decodable` value out of a `JSONValue` that `JSONReader` has already read.
///
/// hushctl reads hushd's replies and events with this; Foundation's `JSONDecoder` did it before, parsing each line
/// a second time. Errors are `DecodingError`s with the field's path and a reason a person can act on ("expected a
/// string, got a number (3)"); `ControlCodec` turns them into a message naming the field.
///
/// Numbers are Doubles in a `JSONValue`, so an integer is read only when a Double holds it exactly (up to 2^53):
/// a larger one is refused rather than read as a neighbour. hushd's ids and counters stay far below.
public struct JSONValueDecoder: Decoder {
    public let codingPath: [any CodingKey]
    public var userInfo: [CodingUserInfoKey: Any] { [:] }
    let value: JSONValue

    public init(_ value: JSONValue) {
        self.init(value, at: [])
    }

    init(_ value: JSONValue, at codingPath: [any CodingKey]) {
        self.value = value
        self.codingPath = codingPath
    }

    /// Reads `T` from `value`.
    public static func decode<T: Decodable>(_ type: T.Type, from value: JSONValue) throws -> T {
        try read(type, from: value, at: [])
    }

    public func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let members) = value else {
            throw Self.mismatch([String: JSONValue].self, "an object", value, at: codingPath)
        }
        return KeyedDecodingContainer(KeyedContainer<Key>(members: members, codingPath: codingPath))
    }

    public func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let values) = value else {
            throw Self.mismatch([JSONValue].self, "an array", value, at: codingPath)
        }
        return UnkeyedContainer(values: values, codingPath: codingPath)
    }

    public func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleContainer(value: value, codingPath: codingPath)
    }

    // MARK: Reading values

    static func read<T: Decodable>(_ type: T.Type, from value: JSONValue, at path: [any CodingKey]) throws -> T {
        // JSONValue and the common leaf types skip the `Decoder` round.
        if type == JSONValue.self, let value = value as? T { return value }
        if type == String.self, let text = try string(value, at: path) as? T { return text }
        if type == Bool.self, let flag = try bool(value, at: path) as? T { return flag }
        if type == Double.self, let number = try double(value, at: path) as? T { return number }
        return try T(from: JSONValueDecoder(value, at: path))
    }

    static func string(_ value: JSONValue, at path: [any CodingKey]) throws -> String {
        guard case .string(let text) = value else { throw mismatch(String.self, "a string", value, at: path) }
        return text
    }

    static func bool(_ value: JSONValue, at path: [any CodingKey]) throws -> Bool {
        guard case .bool(let flag) = value else { throw mismatch(Bool.self, "true or false", value, at: path) }
        return flag
    }

    static func double(_ value: JSONValue, at path: [any CodingKey]) throws -> Double {
        guard case .number(let number) = value else { throw mismatch(Double.self, "a number", value, at: path) }
        return number
    }

    static func float(_ value: JSONValue, at path: [any CodingKey]) throws -> Float {
        let number = try double(value, at: path)
        let single = Float(number)
        guard single.isFinite else {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(codingPath: path, debugDescription: "the number \(number) is too large here")
            )
        }
        return single
    }

    static func integer<T: FixedWidthInteger>(_ type: T.Type, _ value: JSONValue, at path: [any CodingKey]) throws -> T {
        guard case .number(let number) = value else { throw mismatch(T.self, "a whole number", value, at: path) }
        guard let whole = value.integer else {
            let reason =
                number.rounded() == number
                ? "the number \(value.preview) is too large to be read exactly"
                : "expected a whole number, got \(value.preview)"
            throw DecodingError.dataCorrupted(DecodingError.Context(codingPath: path, debugDescription: reason))
        }
        guard let exact = T(exactly: whole) else {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: path,
                    debugDescription: "the number \(whole) is outside \(T.min)…\(T.max)"
                )
            )
        }
        return exact
    }

    static func mismatch(_ type: Any.Type, _ expected: String, _ value: JSONValue, at path: [any CodingKey])
        -> DecodingError
    {
        let found = value == .null ? "null" : "\(value.typeName) (\(value.preview))"
        let context = DecodingError.Context(codingPath: path, debugDescription: "expected \(expected), got \(found)")
        return value == .null ? .valueNotFound(type, context) : .typeMismatch(type, context)
    }
}

private struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    typealias Reader = JSONValueDecoder

    let members: [String: JSONValue]
    let codingPath: [any CodingKey]

    var allKeys: [Key] { members.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { members[key.stringValue] != nil }

    private func member(_ key: Key) throws -> JSONValue {
        guard let value = members[key.stringValue] else {
            throw DecodingError.keyNotFound(
                key,
                DecodingError.Context(codingPath: codingPath, debugDescription: "field '\(key.stringValue)' is missing")
            )
        }
        return value
    }

    private func path(_ key: Key) -> [any CodingKey] { codingPath + [key] }

    func decodeNil(forKey key: Key) throws -> Bool { try member(key) == .null }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try Reader.bool(member(key), at: path(key)) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String {
        try Reader.string(member(key), at: path(key))
    }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
        try Reader.double(member(key), at: path(key))
    }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try Reader.float(member(key), at: path(key)) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try Reader.integer(type, member(key), at: path(key)) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 {
        try Reader.integer(type, member(key), at: path(key))
    }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 {
        try Reader.integer(type, member(key), at: path(key))
    }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 {
        try Reader.integer(type, member(key), at: path(key))
    }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 {
        try Reader.integer(type, member(key), at: path(key))
    }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt {
        try Reader.integer(type, member(key), at: path(key))
    }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 {
        try Reader.integer(type, member(key), at: path(key))
    }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 {
        try Reader.integer(type, member(key), at: path(key))
    }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 {
        try Reader.integer(type, member(key), at: path(key))
    }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 {
        try Reader.integer(type, member(key), at: path(key))
    }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try Reader.read(type, from: member(key), at: path(key))
    }

    func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type,
        forKey key: Key
    ) throws -> KeyedDecodingContainer<NestedKey> {
        try JSONValueDecoder(member(key), at: path(key)).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try JSONValueDecoder(member(key), at: path(key)).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        JSONValueDecoder(members["super"] ?? .null, at: codingPath + [IndexKey.superKey])
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        JSONValueDecoder(members[key.stringValue] ?? .null, at: path(key))
    }
}

private struct UnkeyedContainer: UnkeyedDecodingContainer {
    typealias Reader = JSONValueDecoder

    let values: [JSONValue]
    let codingPath: [any CodingKey]
    private(set) var currentIndex = 0

    init(values: [JSONValue], codingPath: [any CodingKey]) {
        self.values = values
        self.codingPath = codingPath
    }

    var count: Int? { values.count }
    var isAtEnd: Bool { currentIndex >= values.count }

    /// The next item and its path; the index moves on only once the item has been read.
    private func peek(_ type: Any.Type) throws -> (JSONValue, [any CodingKey]) {
        let path = codingPath + [IndexKey(currentIndex)]
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                type,
                DecodingError.Context(codingPath: path, debugDescription: "the array has only \(values.count) items")
            )
        }
        return (values[currentIndex], path)
    }

    private mutating func next<T>(_ type: T.Type, _ read: (JSONValue, [any CodingKey]) throws -> T) throws -> T {
        let (value, path) = try peek(type)
        let result = try read(value, path)
        currentIndex += 1
        return result
    }

    mutating func decodeNil() throws -> Bool {
        guard try peek(Never.self).0 == .null else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try next(type, Reader.bool) }
    mutating func decode(_ type: String.Type) throws -> String { try next(type, Reader.string) }
    mutating func decode(_ type: Double.Type) throws -> Double { try next(type, Reader.double) }
    mutating func decode(_ type: Float.Type) throws -> Float { try next(type, Reader.float) }
    mutating func decode(_ type: Int.Type) throws -> Int { try next(type) { try Reader.integer(type, $0, at: $1) } }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try next(type) { try Reader.integer(type, $0, at: $1) } }
    mutating func decode(_ type: Int16.Type) throws -> Int16 {
        try next(type) { try Reader.integer(type, $0, at: $1) }
    }
    mutating func decode(_ type: Int32.Type) throws -> Int32 {
        try next(type) { try Reader.integer(type, $0, at: $1) }
    }
    mutating func decode(_ type: Int64.Type) throws -> Int64 {
        try next(type) { try Reader.integer(type, $0, at: $1) }
    }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try next(type) { try Reader.integer(type, $0, at: $1) } }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 {
        try next(type) { try Reader.integer(type, $0, at: $1) }
    }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 {
        try next(type) { try Reader.integer(type, $0, at: $1) }
    }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 {
        try next(type) { try Reader.integer(type, $0, at: $1) }
    }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 {
        try next(type) { try Reader.integer(type, $0, at: $1) }
    }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try next(type) { try Reader.read(type, from: $0, at: $1) }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type
    ) throws -> KeyedDecodingContainer<NestedKey> {
        try next(KeyedDecodingContainer<NestedKey>.self) { try JSONValueDecoder($0, at: $1).container(keyedBy: type) }
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try next((any UnkeyedDecodingContainer).self) { try JSONValueDecoder($0, at: $1).unkeyedContainer() }
    }

    mutating func superDecoder() throws -> any Decoder {
        try next((any Decoder).self) { JSONValueDecoder($0, at: $1) }
    }
}

private struct SingleContainer: SingleValueDecodingContainer {
    typealias Reader = JSONValueDecoder

    let value: JSONValue
    let codingPath: [any CodingKey]

    func decodeNil() -> Bool { value == .null }
    func decode(_ type: Bool.Type) throws -> Bool { try Reader.bool(value, at: codingPath) }
    func decode(_ type: String.Type) throws -> String { try Reader.string(value, at: codingPath) }
    func decode(_ type: Double.Type) throws -> Double { try Reader.double(value, at: codingPath) }
    func decode(_ type: Float.Type) throws -> Float { try Reader.float(value, at: codingPath) }
    func decode(_ type: Int.Type) throws -> Int { try Reader.integer(type, value, at: codingPath) }
    func decode(_ type: Int8.Type) throws -> Int8 { try Reader.integer(type, value, at: codingPath) }
    func decode(_ type: Int16.Type) throws -> Int16 { try Reader.integer(type, value, at: codingPath) }
    func decode(_ type: Int32.Type) throws -> Int32 { try Reader.integer(type, value, at: codingPath) }
    func decode(_ type: Int64.Type) throws -> Int64 { try Reader.integer(type, value, at: codingPath) }
    func decode(_ type: UInt.Type) throws -> UInt { try Reader.integer(type, value, at: codingPath) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try Reader.integer(type, value, at: codingPath) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try Reader.integer(type, value, at: codingPath) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try Reader.integer(type, value, at: codingPath) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try Reader.integer(type, value, at: codingPath) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try Reader.read(type, from: value, at: codingPath) }
}
