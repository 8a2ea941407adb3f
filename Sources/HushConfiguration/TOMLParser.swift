import CTOMLShim

/// The one way into toml++ (through CTOMLShim's C API): parses a text into a ``ConfigurationNode`` tree whose
/// every node carries the line (and column) toml++ read it from, or a syntax error with its position.
///
/// toml++ is a maintained, complete TOML 1.0 parser; it replaced TOMLKit, whose Swift API hid node positions (a
/// hand-written scanner had to find each key's line again) and whose build of toml++ aborted the process on some
/// malformed input (another scanner stood in front of it). The shim turns toml++'s failed checks into errors
/// (Sources/CTOMLShim/CTOMLShim.cpp says how and why), so any text gives a tree or an error, never an abort.
enum TOMLParser {
    /// A syntax error: 1-based line and column, and toml++'s description of what is wrong.
    struct SyntaxError: Error, Equatable {
        var line: Int
        var column: Int
        var description: String
    }

    /// The tree of `text`, every node's `file` set to `file`.
    static func parse(_ text: String, file: String) throws(SyntaxError) -> ConfigurationNode {
        var bytes = Array(text.utf8)
        let count = bytes.count
        // SAFETY: toml++ reads `count` bytes of the buffer only during the call; the array outlives it.
        var result = bytes.withUnsafeMutableBufferPointer { buffer in
            buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: max(count, 1)) {
                hush_toml_parse($0, count)
            }
        }
        defer { hush_toml_result_free(&result) }
        guard result.ok != 0 else {
            let description = result.error_description.map { String(cString: $0) } ?? "the TOML parser failed"
            guard result.error_line > 0 else {
                // toml++ knew no position: the text ended where more was expected. Point at its end.
                let lines = text.tomlLines
                throw SyntaxError(
                    line: lines.count,
                    column: (lines.last?.utf8.count ?? 0) + 1,
                    description: description
                )
            }
            throw SyntaxError(
                line: Int(result.error_line),
                column: Int(result.error_column),
                description: description
            )
        }
        // SAFETY: the shim's result owns `node_count` nodes and `strings_length` bytes until the deferred free
        // above; both buffers are only read, and every offset and length in a node lies within `strings`.
        let nodes = UnsafeBufferPointer(start: result.nodes, count: result.node_count)
        let strings = UnsafeRawBufferPointer(start: result.strings, count: result.strings_length)
        return build(nodes, 0, strings: strings, file: file)
    }

    private static func text(_ strings: UnsafeRawBufferPointer, _ offset: Int, _ length: Int) -> String {
        guard length > 0 else { return "" }
        return String(decoding: strings[offset..<offset + length], as: UTF8.self)
    }

    private static func build(
        _ nodes: UnsafeBufferPointer<hush_toml_node>,
        _ index: Int,
        strings: UnsafeRawBufferPointer,
        file: String
    ) -> ConfigurationNode {
        let node = nodes[index]
        let line = node.line > 0 ? Int(node.line) : nil
        let children = node.first_child..<node.first_child + node.child_count
        let value: ConfigurationNode.Value
        switch node.kind {
        case HUSH_TOML_TABLE:
            var entries: [String: ConfigurationNode] = [:]
            for child in children {
                let key = text(strings, nodes[child].key_offset, nodes[child].key_length)
                entries[key] = build(nodes, child, strings: strings, file: file)
            }
            value = .table(entries)
        case HUSH_TOML_ARRAY:
            value = .array(
                children.map { child in
                    var item = build(nodes, child, strings: strings, file: file)
                    item.line = item.line ?? line
                    return item
                }
            )
        case HUSH_TOML_STRING: value = .string(text(strings, node.text_offset, node.text_length))
        case HUSH_TOML_INTEGER: value = .integer(Int(node.integer))
        case HUSH_TOML_FLOAT: value = .float(node.floating)
        case HUSH_TOML_BOOLEAN: value = .boolean(node.boolean != 0)
        default: value = .other(text(strings, node.text_offset, node.text_length))
        }
        return ConfigurationNode(value: value, file: file, line: line)
    }
}
