import Foundation
import HushConfiguration
import HushConsole
import Testing

/// Every console command the README and docs/console.md show is one the console takes: the README's are typed into
/// a real hushd started as `make run` starts it (built-in board, this terminal's lines), and must answer no error.
@Suite("commands the docs show", .serialized)
struct DocumentedCommandsTests {
    static let root = String(#filePath.dropLast("Tests/HushIntegrationTests/DocumentedCommandsTests.swift".count))

    static func read(_ path: String) throws -> String { try String(contentsOfFile: root + path, encoding: .utf8) }

    /// The `code spans` of `text`.
    static func spans(_ text: Substring) -> [String] {
        text.split(separator: "`", omittingEmptySubsequences: false).enumerated().filter { $0.offset % 2 == 1 }
            .map { String($0.element).replacing("\n", with: " ") }
    }

    /// The README's `make run` lines: the example session's `> ` lines, then the commands suggested after it,
    /// and the commands it says `hushd console` adds.
    static func readmeCommands() throws -> (monitor: [String], policy: [String]) {
        let readme = try read("README.md")
        let example = readme.split(separator: "\n").filter { $0.hasPrefix("> ") }.map { String($0.dropFirst(2)) }
        let start = try #require(readme.range(of: "Type `help` for every command."))
        let paragraph = readme[start.lowerBound...].prefix { _ in true }
        let end = paragraph.range(of: "\n\n")?.lowerBound ?? paragraph.endIndex
        let text = paragraph[..<end]
        let console = try #require(text.range(of: "`hushd console` runs"))
        let plus = try #require(text[console.upperBound...].range(of: "plus "))
        let policyEnd = try #require(text[plus.upperBound...].firstIndex(of: ";"))
        return (
            example + spans(text[..<console.lowerBound]).filter { !$0.contains("/") },
            spans(text[plus.upperBound..<policyEnd])
        )
    }

    @Test("the README's commands parse and each means something where the README says to type it")
    func readmeParses() throws {
        let (monitor, policy) = try Self.readmeCommands()
        #expect(monitor.count >= 14, "\(monitor)")
        #expect(policy == ["wait 500", "finished 1", "gone 1"])
        for line in monitor {
            let command = try #require(try ConsoleRequest.parse(line), "\(line)")
            #expect(command.unavailability(in: .monitor) == nil, "\(line)")
        }
        for line in policy {
            let command = try #require(try ConsoleRequest.parse(line), "\(line)")
            #expect(command.unavailability(in: .policy) == nil, "\(line)")
        }
    }

    @Test("console.md's examples and hot keys parse, and the console takes each")
    func consoleDocParses() throws {
        let doc = try Self.read("docs/console.md")
        let start = try #require(doc.range(of: "## Commands\n"))
        let rows = doc[start.upperBound...].split(separator: "\n").prefix { !$0.hasPrefix("## ") }
            .filter { $0.hasPrefix("| `") }
        #expect(rows.count >= 20)
        var examples: [String] = []
        for row in rows {
            let columns = row.split(separator: "|", omittingEmptySubsequences: false)
            // | command | example | does |: with escaped pipes inside the first column, the example is the
            // last column but one.
            examples += Self.spans(columns[columns.count - 3])
        }
        let keys = try #require(doc.range(of: "## Keys on an empty line"))
        for row in doc[keys.upperBound...].split(separator: "\n").prefix(while: { !$0.hasPrefix("## ") })
        where row.hasPrefix("| `") {
            examples.append(Self.spans(row.split(separator: "|")[1])[0])
        }
        #expect(examples.count >= 30, "\(examples)")
        for line in examples {
            let command = try #require(try ConsoleRequest.parse(line), "\(line)")
            #expect(command.unavailability(in: .monitor) == nil, "\(line)")
        }
    }

    @Test("the README's configuration example is a configuration hushd accepts, read as it says")
    func readmeConfiguration() throws {
        let readme = try Self.read("README.md")
        let start = try #require(readme.range(of: "```toml\n"))
        let end = try #require(readme[start.upperBound...].range(of: "```"))
        let configuration = try HushdConfiguration.parse(
            String(readme[start.upperBound..<end.lowerBound]),
            file: "README"
        )
        #expect(configuration.output.pcm == "hw:CARD=sndrpihifiberry,DEV=0")
        #expect(configuration.output.periodFrames == 64)
        #expect(configuration.routes[.headphones]?.pcm == "hw:CARD=sndrpihifiberry,DEV=0")
        #expect(configuration.inputs.count == 3, "silence switch, volume up, headphone jack")
    }

    @Test("typed into hushd as make run starts it, every README command is carried out without an error")
    func readmeRunsOnTheBuiltInBoard() throws {
        let (monitor, policy) = try Self.readmeCommands()
        #expect(monitor.last == "quit")

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hush-readme-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var environment = ProcessInfo.processInfo.environment
        environment["HOME"] = directory.path
        environment["XDG_RUNTIME_DIR"] = directory.path
        environment.removeValue(forKey: "HUSH_SOCKET")

        let daemon = try Self.run(HushdTranscriptTests.hushd, [], monitor, environment, in: directory)
        #expect(daemon.status == 0, "hushd exited \(daemon.status)")
        let errors = daemon.output.split(separator: "\n").filter { $0.contains("error:") || $0.contains("refused:") }
        #expect(errors.isEmpty, "\(errors)\n\(daemon.output)")
        // What the README says the commands do, seen in what hushd printed.
        for needle in [
            "[R15 session-requests]", "[R1 silence-switch]", "[R5 headphones-unplugged]", "[R11 media-keys]",
            "[R6 non-mixable-interrupts]", "[R4 headphones-plugged]", "hushd stops",
        ] {
            #expect(daemon.output.contains(needle), "no \(needle) in:\n\(daemon.output)")
        }

        let script = ["activate music playback", "play 1"] + policy + ["quit"]
        let console = try Self.run(
            HushdTranscriptTests.hushd,
            ["console", "--manual-clock"],
            script,
            environment,
            in: directory
        )
        #expect(console.status == 0)
        #expect(!console.output.contains("error:"), "\(console.output)")
        #expect(console.output.contains("[R10 client-gone]"))
    }

    /// Runs `executable` with `lines` on its standard input (a pipe, as a script would); at most 60 s.
    static func run(
        _ executable: URL,
        _ arguments: [String],
        _ lines: [String],
        _ environment: [String: String],
        in directory: URL
    ) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.environment = environment
        process.currentDirectoryURL = directory
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = output
        try process.run()
        // A line at a time, as a person types: each is carried out before the next arrives.
        for line in lines {
            input.fileHandleForWriting.write(Data((line + "\n").utf8))
            usleep(50_000)
        }
        let deadline = Date().addingTimeInterval(60)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning { process.terminate() }
        try input.fileHandleForWriting.close()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, text)
    }
}

/// The manual pages (docs/man, installed as `man hushd` and `man hushctl`) name every subcommand and option the
/// programs' own --help lists, so that neither can gain one the other does not know.
@Suite("the manual pages cover the command lines")
struct ManualPageTests {
    /// The subcommands and --options a program's help lists, from `PROGRAM [SUBCOMMAND] --help`.
    static func help(_ program: String, _ arguments: [String] = []) throws -> String {
        let process = Process()
        process.executableURL = HushdTranscriptTests.executable(program)
        process.arguments = arguments + ["--help"]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return text
    }

    static func subcommands(_ help: String) -> [String] {
        guard let start = help.range(of: "SUBCOMMANDS:\n") else { return [] }
        let listing = help[start.upperBound...].split(separator: "\n", omittingEmptySubsequences: false)
        return listing.prefix { !$0.isEmpty }.compactMap { line in
            guard line.hasPrefix("  "), !line.hasPrefix("   ") else { return nil }
            return line.split(separator: " ").first.map(String.init)
        }
    }

    static func options(_ help: String) -> Set<String> {
        Set(
            help.split(whereSeparator: { !($0.isLetter || $0.isNumber || $0 == "-") })
                .filter { $0.hasPrefix("--") && $0.count > 2 }.map { String($0).replacing("-", with: "\\-") }
        ).subtracting(["\\-\\-help"])
    }

    @Test(
        "hushd.8 and hushctl.1 name every subcommand and option",
        arguments: [("hushd", "hushd.8"), ("hushctl", "hushctl.1")]
    )
    func covered(program: String, page: String) throws {
        let text = try DocumentedCommandsTests.read("docs/man/" + page)
        let commands = Self.subcommands(try Self.help(program))
        #expect(commands.count >= 4, "\(program) --help lists no subcommands")
        for command in commands {
            let name = command.replacing("-", with: "\\-")
            #expect(text.contains(".B \(name)") || text.contains(".BR \(name)"), "\(page) does not describe \(command)")
            for option in Self.options(try Self.help(program, [command])).subtracting(["\\-\\-version"]) {
                #expect(text.contains(option), "\(page) does not name \(program) \(command) \(option)")
            }
        }
    }
}
