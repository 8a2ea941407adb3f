import Foundation
import HushALSA
import HushAudioFile
import HushGPIO
import HushRender
import HushRenderTool
import HushTesting
import Testing

/// hushd's console output, compared byte for byte with a reviewed transcript (the way swift-argument-parser
/// checks its commands' output). The script walks through the main behaviours.
@Suite("hushd console transcript")
struct HushdTranscriptTests {
    static var hushd: URL { executable("hushd") }

    /// A built executable of the package: the test bundle lives next to them.
    static func executable(_ name: String) -> URL {
        let bundle = Bundle.main.bundleURL
        for directory in [bundle, bundle.deletingLastPathComponent()] {
            let candidate = directory.appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        return bundle.deletingLastPathComponent().appendingPathComponent(name)
    }

    static func fixture(_ name: String) throws -> String {
        let url = try #require(Bundle.module.url(forResource: "Fixtures/\(name)", withExtension: nil))
        return try String(contentsOf: url, encoding: .utf8)
    }

    static func run(
        _ arguments: [String],
        input: String,
        program: String = "hushd"
    ) throws -> (status: Int32, output: String, error: String) {
        let process = Process()
        process.executableURL = executable(program)
        process.arguments = arguments
        let stdin = Pipe()
        let stdout = Pipe()
        let stderr = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        stdin.fileHandleForWriting.write(Data(input.utf8))
        try stdin.fileHandleForWriting.close()
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        let error = stderr.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (
            process.terminationStatus, String(decoding: output, as: UTF8.self), String(decoding: error, as: UTF8.self)
        )
    }

    @Test("a scripted session prints exactly the reviewed decisions")
    func transcript() throws {
        let script = try Self.fixture("console-script.txt")
        let expected = try Self.fixture("console-transcript.txt")
        let result = try Self.run(["console", "--manual-clock", "--quiet-banner"], input: script)
        #expect(result.status == 0)
        #expect(result.error.isEmpty)
        #expect(result.output == expected)
    }

    @Test("the banner names the libraries hush runs on")
    func banner() throws {
        let result = try Self.run(["console", "--manual-clock"], input: "quit\n")
        let firstLines = result.output.split(separator: "\n").prefix(2).joined(separator: "\n")
        #expect(
            firstLines == """
                hush 0.1.0: policy console. Type help for commands, quit to leave.
                alsa-lib \(ALSALibrary.version), libgpiod \(GPIOLibrary.version), \(AudioFileLibraries.sndfileVersion)
                """
        )
    }

    @Test("an unknown option is refused with usage, exit 64")
    func unknownOption() throws {
        let result = try Self.run(["--bogus"], input: "")
        #expect(result.status == 64)
        #expect(result.error.hasPrefix("Error: Unknown option '--bogus'"), "\(result.error)")
        #expect(result.error.contains("Usage: hushd"), "\(result.error)")
    }
}

@Suite("C libraries behind the adapters")
struct LibraryTests {
    @Test("alsa-lib, libgpiod (1.6 or 2.x), libsndfile and libsamplerate are linked and answer")
    func versions() {
        #expect(ALSALibrary.version.split(separator: ".").count >= 3)
        #expect(
            ALSALibrary.version.hasPrefix(
                ALSALibrary.headerVersion.split(separator: ".").prefix(2).joined(separator: ".")
            )
        )
        #expect(
            GPIOLibrary.version.hasPrefix("\(GPIOLibrary.apiGeneration)."),
            "the library linked (\(GPIOLibrary.version)) is the generation hush was built for"
        )
        #expect(AudioFileLibraries.sndfileVersion.hasPrefix("libsndfile-1."))
        #expect(AudioFileLibraries.samplerateVersion.hasPrefix("libsamplerate-"))
    }

    /// Foundation brings ICU's data (38 MiB mapped) and its own 13 MiB; the board's programs use
    /// FoundationEssentials at most (issue 20). Read from the binaries' dynamic section, as the loader reads it.
    @Test(
        "hushd and hushctl need FoundationEssentials at most, never Foundation or ICU",
        arguments: ["hushd", "hushctl"]
    )
    func noFoundation(program: String) throws {
        let readelf = try runToEnd(
            URL(fileURLWithPath: "/usr/bin/readelf"),
            ["-d", HushdTranscriptTests.executable(program).path]
        )
        let needed = readelf.output.split(separator: "\n").filter { $0.contains("(NEEDED)") }
        #expect(readelf.status == 0 && !needed.isEmpty, "\(readelf.output)")
        let foundation = needed.filter {
            $0.contains("[libFoundation.so") || $0.contains("libFoundationInternationalization") || $0.contains("ICU")
        }
        #expect(foundation.isEmpty, "\(program) needs \(foundation)")
    }
}

@Suite("hush-render command line")
struct RenderCommandTests {
    @Test("renders a scenario with a board profile, writes the WAV and the events, says what it did")
    func render() throws {
        let directory = NSTemporaryDirectory() + "hush-render-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let scenario = directory + "/s.txt"
        try "0 activate 1 music playback tone=440 loop\n0 play 1\n0.5 silence on\n1 end\n"
            .write(toFile: scenario, atomically: true, encoding: .utf8)
        let root = DocumentedCommandsTests.root
        let result = try HushdTranscriptTests.run(
            [
                "--board", root + "board/profiles/virtual.toml", "--scenario", scenario, "--out",
                directory + "/o.wav", "--events", directory + "/e.jsonl",
            ],
            input: "",
            program: "hush-render"
        )
        #expect(result.status == 0, "\(result.error)")
        #expect(
            result.output
                == "rendered 1.000 s at 48000 Hz, 2 ch, 512-frame periods to \(directory)/o.wav (9 decisions)\n"
        )
        let events = try String(contentsOfFile: directory + "/e.jsonl", encoding: .utf8).split(separator: "\n")
        #expect(events.count == 9)
        #expect(events.contains { $0.contains("\"rule\":\"R1\"") })
        let wav = try Data(contentsOf: URL(fileURLWithPath: directory + "/o.wav"))
        #expect(wav.count == 44 + 48000 * 2 * 2)
    }

    @Test("bad arguments and files are named, exit 1 or 64")
    func errors() throws {
        let missing = try HushdTranscriptTests.run(
            ["--scenario", "/nonexistent.txt", "--out", "/tmp/x.wav"],
            input: "",
            program: "hush-render"
        )
        #expect(missing.status == 1)
        #expect(missing.error.hasPrefix("hush-render: cannot read scenario '/nonexistent.txt'"))
        let usage = try HushdTranscriptTests.run(["--out", "/tmp/x.wav"], input: "", program: "hush-render")
        #expect(usage.status == 64 && usage.error.hasPrefix("Error: Missing expected argument '--scenario <file>'"))
        let neither = try HushdTranscriptTests.run(["--scenario", "x"], input: "", program: "hush-render")
        #expect(neither.status == 64 && neither.error.hasPrefix("Error: --out is required"))
        let rate = try HushdTranscriptTests.run(
            ["--scenario", "x", "--out", "y", "--rate", "fast"],
            input: "",
            program: "hush-render"
        )
        #expect(
            rate.status == 64
                && rate.error.hasPrefix(
                    "Error: The value 'fast' is invalid for '--rate <hz>': must be a rate in Hz from 8000 to 384000\n"
                )
        )
    }

    /// The picture of ``TestScenarios/silenceThenUnplug`` as HushRender draws it in this process.
    static func renderInProcess() throws -> String {
        let text = TestScenarios.silenceThenUnplug
        let renderer = ScenarioRenderer(scenario: try Scenario.parse(text, file: "test.txt"))
        _ = try renderer.render()
        return TimelinePlot.svg(renderer.timeline, title: "test.txt", source: text)
    }

    @Test("hush-render --plot without --out draws only the picture; other extensions are refused")
    func commandLine() throws {
        let directory = NSTemporaryDirectory() + "hush-plot-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let scenario = directory + "/s.txt"
        try TestScenarios.silenceThenUnplug.write(toFile: scenario, atomically: true, encoding: .utf8)
        let result = try HushdTranscriptTests.run(
            ["--scenario", scenario, "--plot", directory + "/p.svg"],
            input: "",
            program: "hush-render"
        )
        #expect(result.status == 0, "\(result.error)")
        #expect(result.output.contains("periods to \(directory)/p.svg ("))
        let written = try String(contentsOfFile: directory + "/p.svg", encoding: .utf8)
        let rendered = try Self.renderInProcess()
        #expect(written == rendered.replacingOccurrences(of: "test.txt", with: "s.txt"))
        #expect(!FileManager.default.fileExists(atPath: directory + "/p.wav"))
        let png = try HushdTranscriptTests.run(
            ["--scenario", scenario, "--plot", directory + "/p.png"],
            input: "",
            program: "hush-render"
        )
        #expect(png.status == 64)
        #expect(png.error.contains("--plot writes SVG"))
        let neither = try HushdTranscriptTests.run(["--scenario", scenario], input: "", program: "hush-render")
        #expect(neither.status == 64)
        #expect(neither.error.contains("--plot may stand in for --out"))
    }
}
