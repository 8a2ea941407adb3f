/// Reads a `Decodable` value out of a `JSONValue` that `JSONReader` has already read.
///
/// hushctl reads hushd's replies and events with this; Foundation's `JSONDecoder` did it before, parsing each line
/// a second time. Errors are `DecodingError`s with the field's path and a reason a person can act on ("expected a
/// string, got a number (3)"); `ControlCodec` turns them into a message naming the field.
///
/// Numbers are Doubles in a `JSONValue`, so an integer is read only when a Double holds it exactly (up to 2^53):
/// a larger one is refused rather than read as a neighbour. hushd's ids and counters stay far below.
public struct JSONValueDecoder: Decoder {
    /// The path in two parts, joined only when asked for (by an error, or by a container for an object or
    /// array): most values are leaves, and a joined path costs an array.
    let parent: [any CodingKey]
    let key: (any CodingKey)?
    public var codingPath: [any CodingKey] { Self.path(parent, key) }
    public var userInfo: [CodingUserInfoKey: Any] { [:] }
    let value: JSONValue

    public init(_ value: JSONValue) {
        self.init(value, at: [], nil)
    }

    init(_ value: JSONValue, at parent: [any CodingKey], _ key: (any CodingKey)?) {
        self.value = value
        self.parent = parent
        self.key = key
    }

    /// Reads `T` from `value`.
    public static func decode<T: Decodable>(_ type: T.Type, from value: JSONValue) throws -> T {
        try read(type, from: value, at: [], nil)
    }

    static func path(_ parent: [any CodingKey], _ key: (any CodingKey)?) -> [any CodingKey] {
        key.map { parent + [$0] } ?? parent
    }

    public func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let members) = value else {
            throw Self.mismatch([String: JSONValue].self, "an object", value, at: parent, key)
        }
        return KeyedDecodingContainer(KeyedContainer<Key>(members: members, codingPath: codingPath))
    }

    public func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let values) = value else {
            throw Self.mismatch([JSONValue].self, "an array", value, at: parent, key)
        }
        return UnkeyedContainer(values: values, codingPath: codingPath)
    }

    public func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleContainer(value: value, parent: parent, key: key)
    }

    // MARK: Reading values

    static func read<T: Decodable>(
        _ type: T.Type,
        from value: JSONValue,
        at parent: [any CodingKey],
        _ key: (any CodingKey)?
    ) throws -> T {
        // JSONValue and the common leaf types skip the `Decoder` round.
        if type == JSONValue.self { return unsafeBitCast(value, to: T.self) }
        if type == String.self { return unsafeBitCast(try string(value, at: parent, key), to: T.self) }
        if type == Bool.self { return unsafeBitCast(try bool(value, at: parent, key), to: T.self) }
        if type == Double.self { return unsafeBitCast(try double(value, at: parent, key), to: T.self) }
        return try T(from: JSONValueDecoder(value, at: parent, key))
    }

    static func string(_ value: JSONValue, at parent: [any CodingKey], _ key: (any CodingKey)?) throws -> String {
        guard case .string(let text) = value else { throw mismatch(String.self, "a string", value, at: parent, key) }
        return text
    }

    static func bool(_ value: JSONValue, at parent: [any CodingKey], _ key: (any CodingKey)?) throws -> Bool {
        guard case .bool(let flag) = value else { throw mismatch(Bool.self, "true or false", value, at: parent, key) }
        return flag
    }

    static func double(_ value: JSONValue, at parent: [any CodingKey], _ key: (any CodingKey)?) throws -> Double {
        guard case .number(let number) = value else { throw mismatch(Double.self, "a number", value, at: parent, key) }
        return number
    }

    static func float(_ value: JSONValue, at parent: [any CodingKey], _ key: (any CodingKey)?) throws -> Float {
        let number = try double(value, at: parent, key)
        let single = Float(number)
        guard single.isFinite else {
            throw corrupted("the number \(number) is too large here", at: parent, key)
        }
        return single
    }

    static func integer<T: FixedWidthInteger>(
        _ type: T.Type,
        _ value: JSONValue,
        at parent: [any CodingKey],
        _ key: (any CodingKey)?
    ) throws -> T {
        guard case .number(let number) = value else {
            throw mismatch(T.self, "a whole number", value, at: parent, key)
        }
        guard let whole = value.integer else {
            let reason =
                number.rounded() == number
                ? "the number \(value.preview) is too large to be read exactly"
                : "expected a whole number, got \(value.preview)"
            throw corrupted(reason, at: parent, key)
        }
        guard let exact = T(exactly: whole) else {
            throw corrupted("the number \(whole) is outside \(T.min)…\(T.max)", at: parent, key)
        }
        return exact
    }

    static func corrupted(_ reason: String, at parent: [any CodingKey], _ key: (any CodingKey)?) -> DecodingError {
        .dataCorrupted(DecodingError.Context(codingPath: path(parent, key), debugDescription: reason))
    }

    static func mismatch(
        _ type: Any.Type,
        _ expected: String,
        _ value: JSONValue,
        at parent: [any CodingKey],
        _ key: (any CodingKey)?
    ) -> DecodingError {
        let found = value == .null ? "null" : "\(value.typeName) (\(value.preview))"
        let context = DecodingError.Context(
            codingPath: path(parent, key),
            debugDescription: "expected \(expected), got \(found)"
        )
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

    /// The member, or nil when it is absent or null: one look-up, where the protocol's default takes three.
    private func present(_ key: Key) -> JSONValue? {
        guard let value = members[key.stringValue] else { return nil }
        if case .null = value { return nil }
        return value
    }

    func decodeNil(forKey key: Key) throws -> Bool { try member(key) == .null }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try Reader.bool(member(key), at: codingPath, key) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String {
        try Reader.string(member(key), at: codingPath, key)
    }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
        try Reader.double(member(key), at: codingPath, key)
    }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float {
        try Reader.float(member(key), at: codingPath, key)
    }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try integer(type, key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try integer(type, key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try integer(type, key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try integer(type, key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try integer(type, key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try integer(type, key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try integer(type, key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try integer(type, key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try integer(type, key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try integer(type, key) }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try Reader.read(type, from: member(key), at: codingPath, key)
    }

    private func integer<T: FixedWidthInteger>(_ type: T.Type, _ key: Key) throws -> T {
        try Reader.integer(type, member(key), at: codingPath, key)
    }

    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? {
        try present(key).map { try Reader.string($0, at: codingPath, key) }
    }
    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? {
        try present(key).map { try Reader.bool($0, at: codingPath, key) }
    }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? {
        try present(key).map { try Reader.double($0, at: codingPath, key) }
    }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? {
        try present(key).map { try Reader.integer(type, $0, at: codingPath, key) }
    }
    func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? {
        try present(key).map { try Reader.integer(type, $0, at: codingPath, key) }
    }
    func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? {
        try present(key).map { try Reader.integer(type, $0, at: codingPath, key) }
    }
    func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? {
        try present(key).map { try Reader.integer(type, $0, at: codingPath, key) }
    }
    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        try present(key).map { try Reader.read(type, from: $0, at: codingPath, key) }
    }

    func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type,
        forKey key: Key
    ) throws -> KeyedDecodingContainer<NestedKey> {
        try JSONValueDecoder(member(key), at: codingPath, key).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try JSONValueDecoder(member(key), at: codingPath, key).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        JSONValueDecoder(members["super"] ?? .null, at: codingPath, IndexKey.superKey)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        JSONValueDecoder(members[key.stringValue] ?? .null, at: codingPath, key)
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

    /// The next item and its key; the index moves on only once the item has been read.
    private func peek(_ type: Any.Type) throws -> (JSONValue, IndexKey) {
        let key = IndexKey(currentIndex)
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                type,
                DecodingError.Context(
                    codingPath: codingPath + [key],
                    debugDescription: "the array has only \(values.count) items"
                )
            )
        }
        return (values[currentIndex], key)
    }

    /// Reads the next item with `read`, which is given the item, the array's path and the item's key.
    private mutating func next<T>(
        _ type: T.Type,
        _ read: (JSONValue, [any CodingKey], IndexKey) throws -> T
    ) throws -> T {
        let (value, key) = try peek(type)
        let result = try read(value, codingPath, key)
        currentIndex += 1
        return result
    }

    mutating func decodeNil() throws -> Bool {
        guard try peek(Never.self).0 == .null else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try next(type) { try Reader.bool($0, at: $1, $2) } }
    mutating func decode(_ type: String.Type) throws -> String {
        try next(type) { try Reader.string($0, at: $1, $2) }
    }
    mutating func decode(_ type: Double.Type) throws -> Double {
        try next(type) { try Reader.double($0, at: $1, $2) }
    }
    mutating func decode(_ type: Float.Type) throws -> Float {
        try next(type) { try Reader.float($0, at: $1, $2) }
    }
    mutating func decode(_ type: Int.Type) throws -> Int { try integer(type) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try integer(type) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try integer(type) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try integer(type) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try integer(type) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try integer(type) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try integer(type) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try integer(type) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try integer(type) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try integer(type) }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try next(type) { try Reader.read(type, from: $0, at: $1, $2) }
    }

    private mutating func integer<T: FixedWidthInteger>(_ type: T.Type) throws -> T {
        try next(type) { try Reader.integer(type, $0, at: $1, $2) }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type
    ) throws -> KeyedDecodingContainer<NestedKey> {
        try next(KeyedDecodingContainer<NestedKey>.self) {
            try JSONValueDecoder($0, at: $1, $2).container(keyedBy: type)
        }
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try next((any UnkeyedDecodingContainer).self) { try JSONValueDecoder($0, at: $1, $2).unkeyedContainer() }
    }

    mutating func superDecoder() throws -> any Decoder {
        try next((any Decoder).self) { JSONValueDecoder($0, at: $1, $2) }
    }
}

private struct SingleContainer: SingleValueDecodingContainer {
    typealias Reader = JSONValueDecoder

    let value: JSONValue
    let parent: [any CodingKey]
    let key: (any CodingKey)?
    var codingPath: [any CodingKey] { Reader.path(parent, key) }

    func decodeNil() -> Bool { value == .null }
    func decode(_ type: Bool.Type) throws -> Bool { try Reader.bool(value, at: parent, key) }
    func decode(_ type: String.Type) throws -> String { try Reader.string(value, at: parent, key) }
    func decode(_ type: Double.Type) throws -> Double { try Reader.double(value, at: parent, key) }
    func decode(_ type: Float.Type) throws -> Float { try Reader.float(value, at: parent, key) }
    func decode(_ type: Int.Type) throws -> Int { try Reader.integer(type, value, at: parent, key) }
    func decode(_ type: Int8.Type) throws -> Int8 { try Reader.integer(type, value, at: parent, key) }
    func decode(_ type: Int16.Type) throws -> Int16 { try Reader.integer(type, value, at: parent, key) }
    func decode(_ type: Int32.Type) throws -> Int32 { try Reader.integer(type, value, at: parent, key) }
    func decode(_ type: Int64.Type) throws -> Int64 { try Reader.integer(type, value, at: parent, key) }
    func decode(_ type: UInt.Type) throws -> UInt { try Reader.integer(type, value, at: parent, key) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try Reader.integer(type, value, at: parent, key) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try Reader.integer(type, value, at: parent, key) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try Reader.integer(type, value, at: parent, key) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try Reader.integer(type, value, at: parent, key) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try Reader.read(type, from: value, at: parent, key) }
}
