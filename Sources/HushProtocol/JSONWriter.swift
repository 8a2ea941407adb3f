/// Writes an `Encodable` value as one line of JSON: keys sorted, no whitespace, "/" not escaped.
///
/// hushd writes every reply and event with this, and hushctl every request. Foundation's `JSONEncoder` did the
/// job before, through the same `Encodable` conformances; this writer is somewhat faster (docs/performance.md) and
/// lets the protocol do without Foundation. It gives the bytes `JSONEncoder` gave with
/// `[.sortedKeys, .withoutEscapingSlashes]` (a differential test holds it to that), so the wire format, the
/// documented examples and every client stay as they were:
/// - object keys in ascending order of their Unicode scalars (every key of the protocol is ASCII);
/// - whole numbers without a fraction ("3", also for the Double 3.0), others in Swift's shortest form that reads
///   back to the same Double ("0.1", "1e-05");
/// - strings with `"`, `\` and the control characters escaped, everything else as UTF-8.
///
/// A Double or Float that is not finite has no JSON form: encoding one throws `EncodingError.invalidValue`
/// naming the field, as `JSONEncoder` does.
public enum JSONWriter {
    /// `value` as JSON bytes, without a newline.
    public static func bytes(_ value: some Encodable) throws(EncodingError) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(256)
        write(try node(for: value, at: []), into: &output)
        return output
    }

    // MARK: The tree

    /// A value being encoded. Objects and arrays are boxes, so that a container handed out earlier, and still held
    /// by an `encode(to:)`, adds to the same object.
    enum Node {
        case null
        case bool(Bool)
        /// The number as it is written.
        case number(String)
        case string(String)
        case array(ArrayBox)
        case object(ObjectBox)
    }

    final class ArrayBox {
        var items: [Node] = []
    }

    /// Members in the order they were encoded, sorted when written: a handful per object, so a list beats a
    /// dictionary's hashing. Encoding a key again replaces its value, as with JSONEncoder.
    final class ObjectBox {
        var members: [(key: String, value: Node)] = []

        func put(_ key: String, _ value: Node) {
            if let index = members.firstIndex(where: { $0.key == key }) {
                members[index].value = value
            } else {
                members.append((key, value))
            }
        }
    }

    /// Encodes `value`, found at `key` below `parent` (the path is put together only for an error). The common
    /// leaf types skip the `Encoder` round; a `JSONValue` goes through its own `encode(to:)`, which holds the rule
    /// for whole numbers.
    static func node<T: Encodable>(
        for value: T,
        at parent: [any CodingKey],
        _ key: (any CodingKey)? = nil
    ) throws(EncodingError) -> Node {
        if T.self == String.self { return .string(unsafeBitCast(value, to: String.self)) }
        if T.self == Bool.self { return .bool(unsafeBitCast(value, to: Bool.self)) }
        if T.self == Int.self { return .number(String(unsafeBitCast(value, to: Int.self))) }
        if T.self == UInt64.self { return .number(String(unsafeBitCast(value, to: UInt64.self))) }
        if T.self == Double.self { return try number(unsafeBitCast(value, to: Double.self), at: parent, key) }
        let encoder = TreeEncoder(parent: parent, key: key)
        do {
            try value.encode(to: encoder)
        } catch let error as EncodingError {
            throw error
        } catch {
            throw EncodingError.invalidValue(
                value,
                EncodingError.Context(
                    codingPath: encoder.codingPath,
                    debugDescription: "\(error)",
                    underlyingError: error
                )
            )
        }
        // A value that encodes nothing is an empty object, as with JSONEncoder.
        return encoder.node ?? .object(ObjectBox())
    }

    /// A Double or Float as JSON; one that is not finite has no JSON form.
    static func number<F: BinaryFloatingPoint & LosslessStringConvertible>(
        _ value: F,
        at parent: [any CodingKey],
        _ key: (any CodingKey)? = nil
    ) throws(EncodingError) -> Node {
        guard value.isFinite else {
            throw EncodingError.invalidValue(
                value,
                EncodingError.Context(
                    codingPath: parent + (key.map { [$0] } ?? []),
                    debugDescription: "\(value) has no JSON form"
                )
            )
        }
        return .number(text(of: value))
    }

    /// Swift's shortest text that reads back as `value`, without the ".0" of a whole number.
    private static func text(of value: some BinaryFloatingPoint & LosslessStringConvertible) -> String {
        let text = value.description
        return text.hasSuffix(".0") ? String(text.dropLast(2)) : text
    }

    // MARK: Bytes

    private static func write(_ node: Node, into output: inout [UInt8]) {
        switch node {
        case .null: output.append(contentsOf: "null".utf8)
        case .bool(let value): output.append(contentsOf: (value ? "true" : "false").utf8)
        case .number(let text): output.append(contentsOf: text.utf8)
        case .string(let text): write(text, into: &output)
        case .array(let box):
            output.append(UInt8(ascii: "["))
            for (index, item) in box.items.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                write(item, into: &output)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let box):
            output.append(UInt8(ascii: "{"))
            for (index, member) in box.members.sorted(by: { $0.key < $1.key }).enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                write(member.key, into: &output)
                output.append(UInt8(ascii: ":"))
                write(member.value, into: &output)
            }
            output.append(UInt8(ascii: "}"))
        }
    }

    private static func write(_ text: String, into output: inout [UInt8]) {
        output.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): output.append(contentsOf: #"\""#.utf8)
            case UInt8(ascii: "\\"): output.append(contentsOf: #"\\"#.utf8)
            case 0x08: output.append(contentsOf: #"\b"#.utf8)
            case 0x0C: output.append(contentsOf: #"\f"#.utf8)
            case 0x0A: output.append(contentsOf: #"\n"#.utf8)
            case 0x0D: output.append(contentsOf: #"\r"#.utf8)
            case 0x09: output.append(contentsOf: #"\t"#.utf8)
            case 0x00..<0x20:
                output.append(contentsOf: #"\u00"#.utf8)
                output.append(hexDigits[Int(byte >> 4)])
                output.append(hexDigits[Int(byte & 0x0F)])
            default: output.append(byte)
            }
        }
        output.append(UInt8(ascii: "\""))
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)
}

// MARK: - The Encoder

/// Builds a `JSONWriter.Node` from an `Encodable` value's `encode(to:)`. Whatever it stores goes to `store`, so
/// that a nested or super encoder puts its value where its parent wants it.
private final class TreeEncoder: Encoder {
    typealias Node = JSONWriter.Node

    /// The path is kept in two parts and joined only when asked for (by an error, or by a container for an
    /// object or array): most values are leaves, and a joined path costs an array.
    let parent: [any CodingKey]
    let key: (any CodingKey)?
    var codingPath: [any CodingKey] { key.map { parent + [$0] } ?? parent }
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    private(set) var node: Node?
    private let store: ((Node) -> Void)?

    init(parent: [any CodingKey], key: (any CodingKey)? = nil, store: ((Node) -> Void)? = nil) {
        self.parent = parent
        self.key = key
        self.store = store
    }

    func set(_ node: Node) {
        self.node = node
        store?(node)
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        // A second request for a keyed container adds to the same object, as JSONEncoder allows.
        if case .object(let box) = node {
            return KeyedEncodingContainer(KeyedContainer<Key>(box: box, codingPath: codingPath))
        }
        let box = JSONWriter.ObjectBox()
        set(.object(box))
        return KeyedEncodingContainer(KeyedContainer<Key>(box: box, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        if case .array(let box) = node { return UnkeyedContainer(box: box, codingPath: codingPath) }
        let box = JSONWriter.ArrayBox()
        set(.array(box))
        return UnkeyedContainer(box: box, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { SingleContainer(encoder: self) }
}

/// A key for a position in an array, and for `super`.
struct IndexKey: CodingKey {
    let stringValue: String
    let intValue: Int?

    init(_ index: Int) {
        stringValue = String(index)
        intValue = index
    }

    init(stringValue: String) {
        self.stringValue = stringValue
        intValue = nil
    }

    init(intValue: Int) { self.init(intValue) }

    static let superKey = IndexKey(stringValue: "super")
}

private struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    typealias Node = JSONWriter.Node

    let box: JSONWriter.ObjectBox
    let codingPath: [any CodingKey]

    private func put(_ node: Node, _ key: Key) { box.put(key.stringValue, node) }
    private func path(_ key: Key) -> [any CodingKey] { codingPath + [key] }

    mutating func encodeNil(forKey key: Key) throws { put(.null, key) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { put(.bool(value), key) }
    mutating func encode(_ value: String, forKey key: Key) throws { put(.string(value), key) }
    mutating func encode(_ value: Double, forKey key: Key) throws {
        put(try JSONWriter.number(value, at: codingPath, key), key)
    }
    mutating func encode(_ value: Float, forKey key: Key) throws {
        put(try JSONWriter.number(value, at: codingPath, key), key)
    }
    mutating func encode(_ value: Int, forKey key: Key) throws { put(.number(String(value)), key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { put(.number(String(value)), key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { put(.number(String(value)), key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { put(.number(String(value)), key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { put(.number(String(value)), key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { put(.number(String(value)), key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { put(.number(String(value)), key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { put(.number(String(value)), key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { put(.number(String(value)), key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { put(.number(String(value)), key) }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        put(try JSONWriter.node(for: value, at: codingPath, key), key)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type,
        forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        let nested = JSONWriter.ObjectBox()
        put(.object(nested), key)
        return KeyedEncodingContainer(KeyedContainer<NestedKey>(box: nested, codingPath: path(key)))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let nested = JSONWriter.ArrayBox()
        put(.array(nested), key)
        return UnkeyedContainer(box: nested, codingPath: path(key))
    }

    mutating func superEncoder() -> any Encoder {
        let box = box
        return TreeEncoder(parent: codingPath, key: IndexKey.superKey) { box.put("super", $0) }
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        let box = box
        let name = key.stringValue
        return TreeEncoder(parent: codingPath, key: key) { box.put(name, $0) }
    }
}

private struct UnkeyedContainer: UnkeyedEncodingContainer {
    typealias Node = JSONWriter.Node

    let box: JSONWriter.ArrayBox
    let codingPath: [any CodingKey]
    var count: Int { box.items.count }

    private func add(_ node: Node) { box.items.append(node) }
    private var next: [any CodingKey] { codingPath + [IndexKey(count)] }

    mutating func encodeNil() throws { add(.null) }
    mutating func encode(_ value: Bool) throws { add(.bool(value)) }
    mutating func encode(_ value: String) throws { add(.string(value)) }
    mutating func encode(_ value: Double) throws { add(try JSONWriter.number(value, at: codingPath, IndexKey(count))) }
    mutating func encode(_ value: Float) throws { add(try JSONWriter.number(value, at: codingPath, IndexKey(count))) }
    mutating func encode(_ value: Int) throws { add(.number(String(value))) }
    mutating func encode(_ value: Int8) throws { add(.number(String(value))) }
    mutating func encode(_ value: Int16) throws { add(.number(String(value))) }
    mutating func encode(_ value: Int32) throws { add(.number(String(value))) }
    mutating func encode(_ value: Int64) throws { add(.number(String(value))) }
    mutating func encode(_ value: UInt) throws { add(.number(String(value))) }
    mutating func encode(_ value: UInt8) throws { add(.number(String(value))) }
    mutating func encode(_ value: UInt16) throws { add(.number(String(value))) }
    mutating func encode(_ value: UInt32) throws { add(.number(String(value))) }
    mutating func encode(_ value: UInt64) throws { add(.number(String(value))) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        add(try JSONWriter.node(for: value, at: codingPath, IndexKey(count)))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type
    ) -> KeyedEncodingContainer<NestedKey> {
        let nested = JSONWriter.ObjectBox()
        let path = next
        add(.object(nested))
        return KeyedEncodingContainer(KeyedContainer<NestedKey>(box: nested, codingPath: path))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let nested = JSONWriter.ArrayBox()
        let path = next
        add(.array(nested))
        return UnkeyedContainer(box: nested, codingPath: path)
    }

    mutating func superEncoder() -> any Encoder {
        let box = box
        let index = count
        let path = next
        add(.null)
        return TreeEncoder(parent: path) { box.items[index] = $0 }
    }
}

private struct SingleContainer: SingleValueEncodingContainer {
    typealias Node = JSONWriter.Node

    let encoder: TreeEncoder
    var codingPath: [any CodingKey] { encoder.codingPath }

    private func set(_ node: Node) { encoder.set(node) }

    mutating func encodeNil() throws { set(.null) }
    mutating func encode(_ value: Bool) throws { set(.bool(value)) }
    mutating func encode(_ value: String) throws { set(.string(value)) }
    mutating func encode(_ value: Double) throws { set(try JSONWriter.number(value, at: encoder.parent, encoder.key)) }
    mutating func encode(_ value: Float) throws { set(try JSONWriter.number(value, at: encoder.parent, encoder.key)) }
    mutating func encode(_ value: Int) throws { set(.number(String(value))) }
    mutating func encode(_ value: Int8) throws { set(.number(String(value))) }
    mutating func encode(_ value: Int16) throws { set(.number(String(value))) }
    mutating func encode(_ value: Int32) throws { set(.number(String(value))) }
    mutating func encode(_ value: Int64) throws { set(.number(String(value))) }
    mutating func encode(_ value: UInt) throws { set(.number(String(value))) }
    mutating func encode(_ value: UInt8) throws { set(.number(String(value))) }
    mutating func encode(_ value: UInt16) throws { set(.number(String(value))) }
    mutating func encode(_ value: UInt32) throws { set(.number(String(value))) }
    mutating func encode(_ value: UInt64) throws { set(.number(String(value))) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        set(try JSONWriter.node(for: value, at: encoder.parent, encoder.key))
    }
}
