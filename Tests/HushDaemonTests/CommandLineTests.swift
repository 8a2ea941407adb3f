import ArgumentParser
import Foundation
import Testing

@testable import HushDaemon
@testable import HushRender
@testable import HushRenderTool

/// The command lines check their options where they are parsed: typed values, ranges and choices, every bad value a
/// usage error (exit 64) that names the option and what it takes, before anything is read or played.
@Suite("command lines: typed, checked options")
struct CommandLineTests {
    /// The message and exit status `arguments` give `command`, or nil when they parse.
    static func refusal<Command: ParsableCommand>(_ command: Command.Type, _ arguments: [String]) -> (String, Int32)? {
        do {
            _ = try command.parseAsRoot(arguments)
            return nil
        } catch {
            return (command.message(for: error), command.exitCode(for: error).rawValue)
        }
    }

    @Test("hush-render's options arrive typed: a board profile, then --rate, --channels, --period over it")
    func renderTyped() throws {
        let root = String(#filePath.dropLast("Tests/HushDaemonTests/CommandLineTests.swift".count))
        let render = try RenderTool.parse([
            "--scenario", "s.txt", "--out", "o.wav", "--board", root + "board/profiles/virtual.toml", "--channels",
            "1", "--rate", "44100",
        ])
        #expect(render.channels == .mono && render.rate == 44100 && render.period == nil && render.soak == nil)
        let output = try render.outputFormat()
        #expect((output.sampleRate, output.channels, output.periodFrames) == (44100, 1, 512))
        let soak = try RenderTool.parse(["--scenario", "s.txt", "--soak", "0.25"])
        #expect(soak.soak == .milliseconds(250))
        let defaults = try RenderTool.parse(["--scenario", "s.txt", "--plot", "p.SVG"]).outputFormat()
        #expect((defaults.sampleRate, defaults.channels, defaults.periodFrames) == (48000, 2, 64))
    }

    @Test(
        "hush-render refuses a bad value or combination with what the option takes, exit 64",
        arguments: [
            (
                ["--rate", "fast"],
                "The value 'fast' is invalid for '--rate <hz>': must be a rate in Hz from 8000 to 384000"
            ),
            (
                ["--rate", "7999"],
                "The value '7999' is invalid for '--rate <hz>': must be a rate in Hz from 8000 to 384000"
            ),
            (
                ["--channels", "3"],
                "The value '3' is invalid for '--channels <channels>'. Please provide one of '1' and '2'."
            ),
            (
                ["--period", "8193"],
                "The value '8193' is invalid for '--period <frames>': must be a number of frames from 16 to 8192"
            ),
            (["--plot", "p.png"], "--plot writes SVG: name the file '….svg', not 'p.png'"),
            (["--soak", "1", "--events", "e.jsonl"], "--soak keeps no output: leave out --out, --plot, --events"),
            (
                ["--soak", "0.001"],
                "The value '0.001' is invalid for '--soak <seconds>': must be seconds of scenario time, 0.01 or more "
                    + "(and less than a day)"
            ),
            ([], "--out is required (--plot may stand in for --out)"),
        ]
    )
    func renderRefuses(arguments: [String], message: String) throws {
        let out =
            arguments.isEmpty || arguments.contains("--soak") || arguments.contains("--plot") ? [] : ["--out", "o.wav"]
        let refusal = try #require(Self.refusal(RenderTool.self, ["--scenario", "s.txt"] + out + arguments))
        #expect(refusal.0 == message)
        #expect(refusal.1 == 64)
    }

    @Test("hushd play: --priority is a SCHED_FIFO priority (70 unless given), --period a period, checked at once")
    func play() throws {
        #expect(try HushdPlay.parse(["--scenario", "s.txt"]).priority == 70)
        let given = try HushdPlay.parse(["--scenario", "s.txt", "--priority", "0", "--period", "256", "--pcm", "hw:0"])
        #expect(given.priority == 0 && given.period == 256 && given.pcm == "hw:0")
        let priority = try #require(Self.refusal(Hushd.self, ["play", "--scenario", "s.txt", "--priority", "high"]))
        #expect(
            priority.0 == "The value 'high' is invalid for '--priority <n>': must be a priority from 0 to 99"
                && priority.1 == 64
        )
        let period = try #require(Self.refusal(Hushd.self, ["play", "--scenario", "s.txt", "--period", "8"]))
        #expect(period.0.hasPrefix("The value '8' is invalid for '--period <frames>'") && period.1 == 64)
    }

    @Test("hushd run: --console is a serial device, stdio or none; --config and --board exclude each other")
    func run() throws {
        let consoles = try ["none", "stdio", "/dev/ttyS0"].map { try HushdRun.parse(["--console", $0]).console }
        #expect(consoles == [.off, .standardIO, .serial("/dev/ttyS0")])
        #expect(try HushdRun.parse([]).console == nil)
        let both = try #require(Self.refusal(Hushd.self, ["run", "--config", "a.toml", "--board", "b"]))
        #expect(both.0 == "give --config or --board, not both" && both.1 == 64)
        let check = HushdCheckConfig.check(["--config", "a.toml", "--board", "b"])
        #expect(check.status == 64 && check.errors.hasPrefix("Error: give --config or --board, not both\n"))
    }
}

/// The board's hushd carries no plotter and no hush-render command line: they are HushRenderTool's, which only
/// hush-render links (docs/architecture.md). The release binary is checked by .ci/check-hushd-links.sh; this checks
/// the debug binaries the tests run, where nothing is dead-stripped: a dependency would show whole.
@Suite("what hushd links")
struct HushdLinksTests {
    /// The symbols of a built executable of the package, as nm lists them.
    static func symbols(_ program: String) throws -> [Substring] {
        let bundle = Bundle.main.bundleURL
        let path = try #require(
            [bundle, bundle.deletingLastPathComponent()].map { $0.appendingPathComponent(program).path }
                .first { FileManager.default.isExecutableFile(atPath: $0) },
            "\(program) is not built beside the tests"
        )
        let nm = Process()
        nm.executableURL = URL(fileURLWithPath: "/usr/bin/nm")
        nm.arguments = [path]
        let pipe = Pipe()
        nm.standardOutput = pipe
        try nm.run()
        let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        nm.waitUntilExit()
        #expect(nm.terminationStatus == 0, "nm \(path)")
        return text.split(separator: "\n")
    }

    static func plotter(_ symbol: Substring) -> Bool {
        symbol.contains("TimelinePlot") || symbol.contains("SVGWriter") || symbol.contains("14HushRenderTool")
    }

    @Test("hushd has the renderer (hushd play) and no symbol of the plotter; hush-render has both")
    func noPlotter() throws {
        let hushd = try Self.symbols("hushd")
        #expect(hushd.contains { $0.contains("16ScenarioRenderer") }, "nm read no renderer symbol: is hushd stripped?")
        let plotter = hushd.filter(Self.plotter)
        #expect(plotter.isEmpty, "hushd links the plotter: \(plotter.prefix(5))")
        #expect(try Self.symbols("hush-render").contains { $0.contains("12TimelinePlot") })
    }
}
