import FoundationEssentials
import HushConfiguration
import HushConsole
import HushCore
import HushOutput
import HushSystem

#if canImport(Glibc)
import Glibc
#endif

/// `hush-render`: a scenario through the real policy and mixer into a WAV file, an SVG picture, or a soak.
package enum RenderCommand {
    /// Renders; `options` are the command line's, by flag.
    package static func run(_ options: [String: String]) -> Int32 {
        let out = options["--out"]
        if let interval = options["--soak"], let scenarioPath = options["--scenario"] {
            guard options["--out"] == nil, options["--plot"] == nil, options["--events"] == nil else {
                FileHandleOutput.standardError(
                    "hush-render: --soak keeps no output: leave out --out, --plot, --events"
                )
                return 64
            }
            return soak(scenarioPath, interval: interval, options: options)
        }
        guard let scenarioPath = options["--scenario"], out != nil || options["--plot"] != nil else {
            FileHandleOutput.standardError("hush-render: --out is required (--plot may stand in for --out)")
            return 64
        }
        do {
            let output = try outputFormat(options)
            if let plot = options["--plot"] { try TimelinePlot.check(plot) }
            let scenario = try Scenario.load(scenarioPath)
            let renderer = ScenarioRenderer(
                scenario: scenario,
                sampleRate: output.sampleRate,
                channels: output.channels,
                periodFrames: output.periodFrames
            )
            if let out { try renderer.render(to: out) } else { _ = try renderer.render() }
            if let plot = options["--plot"] {
                try TimelinePlot.write(renderer.timeline, scenarioPath: scenarioPath, to: plot)
            }
            if let events = options["--events"] {
                do throws(TextFile.Failure) {
                    try TextFile.write(renderer.eventLines(), to: events)
                } catch {
                    throw CommandError("cannot write events to '\(events)': \(error)")
                }
            }
            let seconds = Double(scenario.end.nanoseconds) / 1e9
            let written = [out, options["--plot"]].compactMap { $0 }.joined(separator: " and ")
            print(
                "rendered \(DecimalText.fixed(seconds, places: 3)) s at \(output.sampleRate) Hz, \(output.channels) ch, "
                    + "\(output.periodFrames)-frame periods to \(written) (\(renderer.decisions.count) decisions)"
            )
            return 0
        } catch {
            FileHandleOutput.standardError("hush-render: \(error)")
            return 1
        }
    }
}

extension RenderCommand {
    /// The output format: the defaults, a board profile's `[output]`, then --rate, --channels, --period.
    static func outputFormat(_ options: [String: String]) throws -> HushdConfiguration.Output {
        var output = HushdConfiguration.Output()
        if let board = options["--board"] { output = try HushdConfiguration.board(board).output }
        if let rate = options["--rate"] {
            guard let value = Int(rate), (8000...384_000).contains(value) else {
                throw CommandError("--rate must be a rate in Hz between 8000 and 384000, not '\(rate)'")
            }
            output.sampleRate = value
        }
        if let channels = options["--channels"] {
            guard let value = Int(channels), value == 1 || value == 2 else {
                throw CommandError("--channels must be 1 or 2, not '\(channels)'")
            }
            output.channels = value
        }
        if let period = options["--period"] { output.periodFrames = try CommandError.periodFrames(period) }
        return output
    }

    /// `--soak SECONDS`: the scenario through the policy and mixer, keeping nothing, with a line on standard error
    /// every SECONDS of scenario time — `soak: t=… s sessions=… rss=… KiB heap=… B fds=…` — and a summary on
    /// standard output. Tests/soak/render-soak.sh reads the lines and judges the growth.
    static func soak(_ scenarioPath: String, interval text: String, options: [String: String]) -> Int32 {
        guard let seconds = Double(text), seconds >= 0.01, seconds < 86_400 else {
            FileHandleOutput.standardError(
                "hush-render: --soak takes seconds of scenario time (0.01 or more), not '\(text)'"
            )
            return 64
        }
        do {
            let output = try outputFormat(options)
            let scenario = try Scenario.load(scenarioPath)
            let renderer = ScenarioRenderer(
                scenario: scenario,
                sampleRate: output.sampleRate,
                channels: output.channels,
                periodFrames: output.periodFrames
            )
            var samples = 0
            try renderer.soak(every: .nanoseconds(Int64((seconds * 1e9).rounded()))) { time, sessions in
                let footprint = ProcessFootprint.current()
                let at = DecimalText.fixed(Double(time.nanoseconds) / 1e9, places: 3)
                FileHandleOutput.standardError(
                    "soak: t=\(at) s sessions=\(sessions) rss=\(footprint.residentKiB) KiB "
                        + "heap=\(footprint.heapBytes) B fds=\(footprint.descriptors)"
                )
                samples += 1
            }
            print(
                "soaked \(DecimalText.fixed(Double(scenario.end.nanoseconds) / 1e9, places: 3)) s of scenario time at "
                    + "\(output.sampleRate) Hz, \(output.channels) ch, \(output.periodFrames)-frame periods: "
                    + "\(scenario.steps.count) lines, \(samples) samples"
            )
            return 0
        } catch {
            FileHandleOutput.standardError("hush-render: \(error)")
            return 1
        }
    }
}

/// A command-line error with its message.
struct CommandError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }

    /// `--period`'s value, checked.
    static func periodFrames(_ text: String) throws(CommandError) -> Int {
        guard let value = Int(text), (16...8192).contains(value) else {
            throw CommandError("--period must be between 16 and 8192 frames, not '\(text)'")
        }
        return value
    }
}

extension Scenario {
    /// Reads and parses the scenario file at `path`.
    static func load(_ path: String) throws -> Scenario {
        let text: String
        do throws(TextFile.Failure) {
            text = try TextFile.read(path, limit: 16 << 20, tooLarge: "larger than 16 MiB: is this a scenario?")
        } catch {
            throw CommandError("cannot read scenario '\(path)': \(error)")
        }
        return try Scenario.parse(text, file: path)
    }
}
