import ArgumentParser
import Foundation
import Testing

@testable import HushRender
@testable import HushRenderTool

/// hush-render checks its options where they are parsed: typed values, ranges and choices, every bad value a usage
/// error (exit 64) that names the option and what it takes, before anything is read or played.
@Suite("hush-render's command line: typed, checked options")
struct RenderToolTests {
    /// The message and exit status `arguments` give hush-render, or nil when they parse.
    static func refusal(_ arguments: [String]) -> (String, Int32)? {
        do {
            _ = try RenderTool.parseAsRoot(arguments)
            return nil
        } catch {
            return (RenderTool.message(for: error), RenderTool.exitCode(for: error).rawValue)
        }
    }

    @Test("hush-render's options arrive typed: a board profile, then --rate, --channels, --period over it")
    func renderTyped() throws {
        let root = String(#filePath.dropLast("Tests/HushRenderTests/RenderToolTests.swift".count))
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
        let refusal = try #require(Self.refusal(["--scenario", "s.txt"] + out + arguments))
        #expect(refusal.0 == message)
        #expect(refusal.1 == 64)
    }
}

/// The package's own sounds — the start-up chime (`[sounds] startup`, policy R25) and the hearing warning
/// (`[sounds] hearing_warning`, R30) — are what their scenarios render, byte for byte: a committed WAV cannot drift
/// from the recipe beside it.
@Suite("board/sounds/*.wav are hush-render's renderings of the scenarios beside them")
struct PackageSoundTests {
    @Test(
        "rendering the scenario again gives the committed bytes",
        arguments: [("startup", 28800), ("hearing-warning", 43200)]
    )
    func soundIsItsRendering(name: String, frames: Int) throws {
        let root = String(#filePath.dropLast("Tests/HushRenderTests/RenderToolTests.swift".count))
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(getpid()).wav").path
        defer { try? FileManager.default.removeItem(atPath: out) }
        let render = try RenderTool.parse([
            "--scenario", root + "board/sounds/\(name).txt", "--channels", "1", "--out", out,
        ])
        try render.run()
        let rendered = try Data(contentsOf: URL(fileURLWithPath: out))
        let committed = try Data(contentsOf: URL(fileURLWithPath: root + "board/sounds/\(name).wav"))
        #expect(rendered.count == 44 + frames * 2, "\(Double(frames) / 48000) s, mono, 16-bit at 48 kHz")
        #expect(
            rendered == committed,
            "run: hush-render --scenario board/sounds/\(name).txt --channels 1 --out board/sounds/\(name).wav"
        )
    }
}
