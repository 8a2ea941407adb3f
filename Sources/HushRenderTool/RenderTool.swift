import ArgumentParser
import HushConfiguration
import HushCore
import HushRender
import HushSystem

/// `hush-render`: the offline tools, kept out of the `hushd` a board runs. Its options are checked where they are
/// parsed: a bad value is a usage error (exit 64) before anything is read or rendered.
package struct RenderTool: ParsableCommand {
    package static let configuration = CommandConfiguration(
        commandName: "hush-render",
        abstract: "Render a scenario through hush's real policy and mixer, offline and deterministically.",
        discussion: """
            Runs the policy and the mixer over a scenario (docs/render.md) on a manual clock and writes the mixed \
            output as 16-bit WAV (--out); --events writes every decision with its rule and reason as JSON lines; \
            --plot draws each bus's level, the switch, headphones and route, and the events with their rules as SVG. \
            At least one of --out and --plot is needed. The same inputs always give the same bytes.

            --soak renders without keeping the output and prints, every SECONDS of scenario time, the process's \
            resident memory, malloc heap and open descriptors to standard error (docs/reliability.md#soak).
            """
    )

    /// `--channels`: what a render may be.
    enum Channels: Int, CaseIterable, ExpressibleByArgument {
        case mono = 1
        case stereo = 2
    }

    @Option(help: ArgumentHelp("The scenario to render (docs/render.md).", valueName: "file"))
    var scenario: String

    @Option(help: ArgumentHelp("Write the mixed output here, as 16-bit WAV.", valueName: "out.wav"))
    var out: String?

    @Option(help: ArgumentHelp("Draw the timeline picture here.", valueName: "out.svg"))
    var plot: String?

    @Option(help: ArgumentHelp("Write every decision here, one JSON object a line.", valueName: "events.jsonl"))
    var events: String?

    @Option(help: ArgumentHelp("Take rate, channels and period from a board profile.", valueName: "profile"))
    var board: String?

    @Option(
        help: ArgumentHelp("The output rate, 8000 to 384000 (default 48000).", valueName: "hz"),
        transform: { try OutputArgument.whole($0, in: 8000...384_000, "a rate in Hz") }
    )
    var rate: Int?

    @Option(help: ArgumentHelp("The output's channels (default 2).", valueName: "channels"))
    var channels: Channels?

    @Option(
        help: ArgumentHelp("Frames per period, 16 to 8192 (default 64).", valueName: "frames"),
        transform: OutputArgument.periodFrames
    )
    var period: Int?

    @Option(
        help: ArgumentHelp("Keep no output; report the footprint every SECONDS.", valueName: "seconds"),
        transform: RenderTool.soakInterval
    )
    var soak: Duration?

    package init() {}

    package func validate() throws {
        if soak != nil {
            guard out == nil, plot == nil, events == nil else {
                throw ValidationError("--soak keeps no output: leave out --out, --plot, --events")
            }
            return
        }
        guard out != nil || plot != nil else {
            throw ValidationError("--out is required (--plot may stand in for --out)")
        }
        // Before a long render, not after it.
        if let plot {
            do throws(TimelinePlot.PlotError) {
                try TimelinePlot.check(plot)
            } catch {
                throw ValidationError(error.description)
            }
        }
    }

    package func run() throws {
        do {
            if let soak { try runSoak(every: soak) } else { try render() }
        } catch {
            FileHandleOutput.standardError("hush-render: \(error)")
            throw ExitCode.failure
        }
    }

    /// The output format: the defaults, a board profile's `[output]`, then --rate, --channels, --period.
    func outputFormat() throws -> HushdConfiguration.Output {
        var output = HushdConfiguration.Output()
        if let board { output = try HushdConfiguration.board(board).output }
        if let rate { output.sampleRate = rate }
        if let channels { output.channels = channels.rawValue }
        if let period { output.periodFrames = period }
        return output
    }

    private func renderer() throws -> (ScenarioRenderer, HushdConfiguration.Output) {
        let output = try outputFormat()
        let renderer = ScenarioRenderer(
            scenario: try Scenario.load(scenario),
            sampleRate: output.sampleRate,
            channels: output.channels,
            periodFrames: output.periodFrames
        )
        return (renderer, output)
    }

    private func render() throws {
        let (renderer, output) = try renderer()
        if let out { try renderer.render(to: out) } else { _ = try renderer.render() }
        if let plot { try TimelinePlot.write(renderer.timeline, scenarioPath: scenario, to: plot) }
        if let events {
            do throws(TextFile.Failure) {
                try TextFile.write(renderer.eventLines(), to: events)
            } catch {
                throw Failure("cannot write events to '\(events)': \(error)")
            }
        }
        let seconds = Double(renderer.scenario.end.nanoseconds) / 1e9
        let written = [out, plot].compactMap { $0 }.joined(separator: " and ")
        print(
            "rendered \(DecimalText.fixed(seconds, places: 3)) s at \(output.sampleRate) Hz, \(output.channels) ch, "
                + "\(output.periodFrames)-frame periods to \(written) (\(renderer.decisions.count) decisions)"
        )
    }

    /// `--soak SECONDS`: the scenario through the policy and mixer, keeping nothing, with a line on standard error
    /// every SECONDS of scenario time — `soak: t=… s sessions=… rss=… KiB heap=… B fds=…` — and a summary on
    /// standard output. Tests/soak/render-soak.sh reads the lines and judges the growth.
    private func runSoak(every interval: Duration) throws {
        let (renderer, output) = try renderer()
        var samples = 0
        try renderer.soak(every: interval) { time, sessions in
            let footprint = ProcessFootprint.current()
            let at = DecimalText.fixed(Double(time.nanoseconds) / 1e9, places: 3)
            FileHandleOutput.standardError(
                "soak: t=\(at) s sessions=\(sessions) rss=\(footprint.residentKiB) KiB "
                    + "heap=\(footprint.heapBytes) B fds=\(footprint.descriptors)"
            )
            samples += 1
        }
        let scenario = renderer.scenario
        print(
            "soaked \(DecimalText.fixed(Double(scenario.end.nanoseconds) / 1e9, places: 3)) s of scenario time at "
                + "\(output.sampleRate) Hz, \(output.channels) ch, \(output.periodFrames)-frame periods: "
                + "\(scenario.steps.count) lines, \(samples) samples"
        )
    }

    /// `--soak`'s value: seconds of scenario time, 0.01 or more (and less than a day).
    static func soakInterval(_ text: String) throws -> Duration {
        guard let seconds = Double(text), seconds >= 0.01, seconds < 86_400 else {
            throw ValidationError("must be seconds of scenario time, 0.01 or more (and less than a day)")
        }
        return .nanoseconds(Int64((seconds * 1e9).rounded()))
    }

    /// A render that could not be finished, in words.
    struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }
}
