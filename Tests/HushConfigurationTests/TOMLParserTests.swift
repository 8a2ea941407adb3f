import HushCore
import Testing

@testable import HushConfiguration

#if canImport(Glibc)
import Glibc
#endif

/// toml++ 3.3.0 aborts (a failed assert) on these inputs, found by Fuzz/ (fuzz-state, fuzz-config) when TOMLKit's
/// build of it stopped hushd; CTOMLShim turns the failed check into a syntax error at the parser's position. Each
/// of these aborted hushd before a scanner (TOMLPrecheck, now gone) stood in front of the parser, and each aborts a plain debug build of
/// toml++ (Sources/CTOMLShim/CTOMLShim.cpp).
@Suite("TOML that aborted the parser")
struct TOMLParserTests {
    static let expectedKey =
        "expected a key here (a name such as rate, or one in quotes), as in [output] or rate = 48000"
    static let expectedValue = "expected a value here (a number, \"text\", true, [array] or { table })"

    /// A table header with no name after its bracket: toml++'s check in parse_key.
    static let headers: [(text: String, line: Int, column: Int)] = [
        ("[  \n", 1, 4),
        ("[\n", 1, 2),
        ("schema = 1\n  [ \r\n", 2, 5),
        ("ringer = 1\n[[ \n", 2, 4),
        ("[[[x]]]\n", 1, 3),
        ("[ = 1\n", 1, 3),
        ("a = \"\"\"\n[x\n\"\"\"\n[ #\n", 4, 3),
        // A byte order mark before the header (found by a longer fuzz-state run).
        ("\u{FEFF}[  \n", 1, 4),
    ]

    /// A bracket where a value must start: toml++'s check in parse_value.
    static let values: [(text: String, line: Int, column: Int)] = [
        ("i=[}", 1, 4),
        ("i=[1,}\n", 1, 6),
        ("i = [ # c\n }", 2, 2),
        ("i={a=[}]}", 1, 7),
    ]

    @Test("the configuration: a header without a name is a syntax error with line and column", arguments: headers)
    func header(text: String, line: Int, column: Int) {
        #expect(Self.configurationError(text) == "hushd.toml:\(line):\(column): TOML syntax: \(Self.expectedKey)")
    }

    @Test("the configuration: a bracket where a value starts is a syntax error with line and column", arguments: values)
    func value(text: String, line: Int, column: Int) {
        #expect(Self.configurationError(text) == "hushd.toml:\(line):\(column): TOML syntax: \(Self.expectedValue)")
    }

    @Test("toml++'s own description when it has one: ']' inside an inline table")
    func ownDescription() {
        #expect(
            Self.configurationError("i=[{]\n")
                == "hushd.toml:1:5: TOML syntax: Error while parsing inline table: expected key or closing '}', saw ']'"
        )
    }

    @Test("the state file: refused as corrupt, with the damaged line or an earlier one", arguments: headers + values)
    func stateFile(text: String, line: Int, column: Int) {
        #expect {
            _ = try StateStore.decode(text, path: "/var/lib/hush/state")
        } throws: { error in
            guard let error = error as? StateFileCorruption, let at = error.line else { return false }
            return (1...line).contains(at) && error.problem.hasPrefix("bad syntax: ")
        }
    }

    /// Found by fuzz-state: with CRLF line ends the old shape check saw one line (Swift keeps "\r\n" as one
    /// Character), so what followed a comment line passed unchecked and reached toml++'s assertion.
    @Test("CRLF state files: every line is read; a good one loads")
    func crlfStateFile() throws {
        #expect {
            _ = try StateStore.decode("#et\r\n2 =[[[[}\r\n", path: "/var/lib/hush/state")
        } throws: { error in
            (error as? StateFileCorruption)?.line == 2
        }
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

    /// Every input kept in Fuzz/Regressions for the configuration and the state file: an error, never an abort.
    @Test("every fuzz regression of the configuration and the state file gives a clean error")
    func fuzzRegressions() throws {
        let root = String(#filePath.split(separator: "/").dropLast(3).joined(separator: "/"))
        var checked = 0
        for harness in ["fuzz-config", "fuzz-state"] {
            let directory = "/\(root)/Fuzz/Regressions/\(harness)"
            guard let stream = opendir(directory) else {
                Issue.record("cannot open \(directory)")
                continue
            }
            defer { closedir(stream) }
            while let entry = readdir(stream) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) {
                    String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
                }
                guard !name.hasPrefix(".") else { continue }
                let text = try String(contentsOfFile: "\(directory)/\(name)", encoding: .utf8)
                let description = Self.configurationError(text)
                #expect(
                    description?.hasPrefix("hushd.toml:") == true && description?.contains("TOML syntax") == true,
                    "\(harness)/\(name): \(description ?? "accepted")"
                )
                #expect(throws: StateFileCorruption.self, "\(harness)/\(name)") {
                    try StateStore.decode(text, path: "/var/lib/hush/state")
                }
                checked += 1
            }
        }
        #expect(checked == 7)
    }

    @Test("dates stay text, arrays of tables and inline tables keep their own lines")
    func treeShape() throws {
        let text =
            "when = 1979-05-27T07:32:00Z\n\n[[points]]\nx = 1\n\n[[points]]\nx = 2\ninline = { a = [1.5, true] }\n"
        let document = try ConfigurationNode.parse(text, file: "f.toml")
        #expect(document.table?["when"]?.written == "1979-05-27T07:32:00Z")
        guard case .array(let points)? = document.table?["points"]?.value else {
            Issue.record("points is not an array")
            return
        }
        #expect(points.map(\.line) == [3, 6])
        #expect(points.map { $0.table?["x"]?.line } == [4, 7])
        #expect(points[1].table?["inline"]?.written == "{ a = [1.5, true] }")
    }

    static func configurationError(_ text: String) -> String? {
        do {
            _ = try HushdConfiguration.parse(text, file: "hushd.toml")
            return nil
        } catch {
            return error.description
        }
    }
}
