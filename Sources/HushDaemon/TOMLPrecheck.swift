/// Finds the kinds of TOML error that TOMLKit 0.6.0's parser (toml++ 3, built with assertions) does not report
/// but aborts the process on:
/// - a table header whose name does not start right after the bracket, as in `[  ` at the end of a line (toml++
///   asserts "is_bare_key_character(*cp) || is_string_delimiter(*cp)" in parse_key). Found by Fuzz/ (fuzz-state,
///   fuzz-config): four bytes of a corrupt state file stopped hushd at every start.
/// - a `}` where an array expects a value, as in `i=[}` or `i=[1,}` (toml++ asserts "!is_value_terminator(*cp)"
///   in parse_value). Found by fuzz-config once it had both coverage and AddressSanitizer; any bracket that closes
///   what it did not open is reported, since none is valid TOML.
///
/// A small scanner, not a parser: it follows strings, comments and the brackets of values closely enough to tell
/// a header (a `[` where a line's statement starts) from an array, and leaves every other error to TOMLKit.
enum TOMLPrecheck {
    /// The line and column (1-based) of a table header toml++ would abort on, and what is wrong there.
    static func problem(in text: String) -> (line: Int, column: Int, message: String)? {
        let bytes = Array(text.utf8)
        // toml++ skips a UTF-8 byte order mark; a header right after one is still where a statement starts.
        var index = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        var line = 1
        var lineStart = index
        var open: [(bracket: UInt8, line: Int, column: Int)] = []  // brackets and braces open in the current value
        var statementStart = true  // nothing but spaces since the line began, outside any value

        func at(_ offset: Int) -> UInt8? { index + offset < bytes.count ? bytes[index + offset] : nil }
        func skipString(quote: UInt8) {
            let multiline = at(1) == quote && at(2) == quote
            index += multiline ? 3 : 1
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\\") && quote == UInt8(ascii: "\"") {
                    index += 2
                    continue
                }
                if byte == UInt8(ascii: "\n") {
                    guard multiline else { return }  // toml++ reports the unterminated string
                    line += 1
                    lineStart = index + 1
                }
                if byte == quote && (!multiline || (at(1) == quote && at(2) == quote)) {
                    index += multiline ? 3 : 1
                    // A multi-line string may end with up to two more quotes of its own.
                    while multiline && at(0) == quote { index += 1 }
                    return
                }
                index += 1
            }
        }

        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\n"):
                line += 1
                lineStart = index + 1
                index += 1
                if open.isEmpty { statementStart = true }
            case UInt8(ascii: " "), UInt8(ascii: "\t"):
                index += 1
            case UInt8(ascii: "#"):
                while index < bytes.count && bytes[index] != UInt8(ascii: "\n") { index += 1 }
            case UInt8(ascii: "\""), UInt8(ascii: "'"):
                statementStart = false
                skipString(quote: byte)
            case UInt8(ascii: "[") where statementStart:
                // A table header: [name] or [[name]]; the name must start after spaces with a key character.
                let column = index - lineStart + 1
                index += 1
                var spaced = false
                while at(0) == UInt8(ascii: " ") || at(0) == UInt8(ascii: "\t") {
                    index += 1
                    spaced = true
                }
                var second = false
                if !spaced && at(0) == UInt8(ascii: "[") {
                    index += 1
                    second = true
                    while at(0) == UInt8(ascii: " ") || at(0) == UInt8(ascii: "\t") { index += 1 }
                }
                if let next = at(0), !startsKey(next) || (second && next == UInt8(ascii: "[")) {
                    return (line, column, "a table header needs a name after '[', such as [output]")
                }
                // The rest of the header line holds no value; let TOMLKit judge it.
                while index < bytes.count && bytes[index] != UInt8(ascii: "\n") { index += 1 }
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                statementStart = false
                open.append((byte, line, index - lineStart + 1))
                index += 1
            case UInt8(ascii: "]"), UInt8(ascii: "}"):
                let opener = byte == UInt8(ascii: "]") ? UInt8(ascii: "[") : UInt8(ascii: "{")
                if let innermost = open.last, innermost.bracket != opener {
                    let closes = byte == UInt8(ascii: "]") ? "an array" : "an inline table"
                    let opened = innermost.bracket == UInt8(ascii: "[") ? "an array" : "an inline table"
                    return (
                        line, index - lineStart + 1,
                        "'\(Character(Unicode.Scalar(byte)))' would close \(closes), but the innermost one open is "
                            + "\(opened) ('\(Character(Unicode.Scalar(innermost.bracket)))' on line \(innermost.line), "
                            + "column \(innermost.column))"
                    )
                }
                if !open.isEmpty { open.removeLast() }
                index += 1
            default:
                statementStart = false
                index += 1
            }
        }
        return nil
    }

    /// What toml++ accepts where a header's name starts: a bare key character, a quote, or the ']' and '['
    /// it reports as errors itself.
    private static func startsKey(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "-"),
            UInt8(ascii: "\""), UInt8(ascii: "'"), UInt8(ascii: "]"), UInt8(ascii: "["):
            true
        default: false
        }
    }
}
