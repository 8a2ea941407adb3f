import HushCore
import Testing

@testable import HushDaemon

/// Found by Fuzz/ (fuzz-state, fuzz-config): TOMLKit's parser aborted hushd (an assertion in toml++) on a table
/// header with no name after its bracket. Each of these inputs stopped the process before the fix.
@Suite("TOML that aborted the parser")
struct TOMLPrecheckTests {
    static let aborting: [(text: String, line: Int, column: Int)] = [
        ("[  \n", 1, 1),
        ("[\n", 1, 1),
        ("schema = 1\n  [ \r\n", 2, 3),
        ("ringer = 1\n[[ \n", 2, 1),
        ("[[[x]]]\n", 1, 1),
        ("[ = 1\n", 1, 1),
        ("a = \"\"\"\n[x\n\"\"\"\n[ #\n", 4, 1),
        // A byte order mark before the header (found by a longer fuzz-state run after the first fix).
        ("\u{FEFF}[  \n", 1, 1),
    ]

    @Test("the state file: refused as corrupt, with the line", arguments: aborting)
    func stateFile(text: String, line: Int, column: Int) {
        #expect {
            _ = try StateStore.decode(text, path: "/var/lib/hush/state")
        } throws: { error in
            // The state file's shape check (StateFileShapeTests) refuses these before the precheck or toml++ can
            // see them, at the damaged line or an earlier one in a shape hushd never writes.
            guard let error = error as? StateFileCorruption, let at = error.line else { return false }
            return (1...line).contains(at) && error.problem.hasPrefix("bad syntax: ")
        }
    }

    @Test("the configuration: a syntax problem with line and column", arguments: aborting)
    func configuration(text: String, line: Int, column: Int) {
        #expect {
            _ = try HushdConfiguration.parse(text, file: "hushd.toml")
        } throws: { error in
            (error as? ConfigurationError)?.description
                == "hushd.toml:\(line):\(column): TOML syntax: a table header needs a name after '[', such as [output]"
        }
    }

    /// Found by fuzz-config (minimised from a board profile to `i=[}`): a `}` where an array expects a value
    /// failed toml++'s assertion "!is_value_terminator(*cp)" in parse_value. Each of these aborted before the fix.
    static let mismatched: [(text: String, line: Int, column: Int, message: String)] = [
        ("i=[}", 1, 4, braceInArray(line: 1, column: 3)),
        ("i=[1,}\n", 1, 6, braceInArray(line: 1, column: 3)),
        ("i = [ # c\n }", 2, 2, braceInArray(line: 1, column: 5)),
        ("i={a=[}]}", 1, 7, braceInArray(line: 1, column: 6)),
        (
            "i=[{]\n", 1, 5,
            "']' would close an array, but the innermost one open is an inline table ('{' on line 1, column 4)"
        ),
    ]

    static func braceInArray(line: Int, column: Int) -> String {
        "'}' would close an inline table, but the innermost one open is an array ('[' on line \(line), column \(column))"
    }

    @Test("a bracket that closes what it did not open: a syntax problem with line and column", arguments: mismatched)
    func mismatchedBrackets(text: String, line: Int, column: Int, message: String) {
        #expect {
            _ = try HushdConfiguration.parse(text, file: "hushd.toml")
        } throws: { error in
            (error as? ConfigurationError)?.description == "hushd.toml:\(line):\(column): TOML syntax: \(message)"
        }
        #expect {
            _ = try StateStore.decode(text, path: "/var/lib/hush/state")
        } throws: { error in
            (error as? StateFileCorruption)?.problem.hasPrefix("bad syntax: ") == true
        }
    }

    /// Found by fuzz-state: with CRLF line ends the state file's shape check saw one line (Swift keeps "\r\n" as
    /// one Character), so what followed a comment line passed unchecked and reached the toml++ assertion above.
    @Test("CRLF files: the shape check sees every line; a good one loads")
    func crlfStateFile() throws {
        #expect {
            _ = try StateStore.decode("#et\r\n2 =[[[[}\r\n", path: "/var/lib/hush/state")
        } throws: { error in
            (error as? StateFileCorruption)?.line == 2
        }
        // A shape hushd never writes, behind a comment: named by the shape check, on its own line.
        #expect {
            _ = try StateStore.decode("# c\r\nschema = 1\r\nringer = 7\r\nbogus = [1]\r\n", path: "/var/lib/hush/state")
        } throws: { error in
            guard let error = error as? StateFileCorruption else { return false }
            return error.line == 4 && error.problem == "bad syntax: the value is neither a whole number nor \"text\""
        }
        let good = "# hush state\r\nschema = 1\r\nringer = 7\r\n[system]\r\nspeaker = 5\r\n"
        let volumes = try StateStore.decode(good, path: "/var/lib/hush/state")
        #expect(volumes.ringer == VolumeStep(clamping: 7) && volumes.system[.speaker] == VolumeStep(clamping: 5))
    }

    /// Brackets that are not headers, and headers that are fine, stay TOMLKit's to judge.
    @Test(
        "arrays on lines of their own, brackets in strings and comments, and good headers pass",
        arguments: [
            "schema = 1\nringer = 3\n[system]\nspeaker = 4\n",
            "[ system ]\n[ \"quoted key\" ]\n[[ points ]]\n",
            "curve = [\n  [\n    1, -50\n  ],\n  [ 16, 0 ],\n]\n",
            "text = \"\"\"\n[ \n\"\"\"\nother = '''\n[\n'''\n",
            "name = \"[ \" # [ \n[x]\n",
            "inline = { a = [ \n 1 ] }\n",
            "nested = [ { a = [1, 2] }, { b = { c = [] } } ]\n",
            "empty = []\nalso = {}\n",
        ]
    )
    func notHeaders(text: String) {
        #expect(TOMLPrecheck.problem(in: text) == nil)
    }
}
