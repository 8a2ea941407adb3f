import ArgumentParser

/// `hush-render`: the offline tools, kept out of the `hushd` a board runs.
public struct HushRenderCommand: ParsableCommand {
    public static let configuration = CommandConfiguration(
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

    @Option(help: ArgumentHelp("The output rate, 8000 to 384000 (default 48000).", valueName: "hz"))
    var rate: String?

    @Option(help: ArgumentHelp("1 or 2 (default 2).", valueName: "channels"))
    var channels: String?

    @Option(help: ArgumentHelp("Frames per period, 16 to 8192 (default 64).", valueName: "frames"))
    var period: String?

    @Option(help: ArgumentHelp("Keep no output; report the footprint every SECONDS.", valueName: "seconds"))
    var soak: String?

    public init() {}

    public func run() throws {
        let status = RenderCommand.run(
            given([
                "--scenario": scenario, "--out": out, "--plot": plot, "--events": events, "--board": board,
                "--rate": rate, "--channels": channels, "--period": period, "--soak": soak,
            ])
        )
        if status != 0 { throw ExitCode(status) }
    }
}

/// `hushd play`: a scenario played live on an ALSA device (a board tool: it is how a scenario is heard on the
/// board's own speaker).
public struct PlayCommandLine: ParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "play",
        abstract: "Play a scenario live on an ALSA device, through the real-time audio thread.",
        discussion: """
            Plays a scenario (docs/render.md) the way hushd plays: the policy, the mixer and the audio thread on an \
            ALSA playback device. Prints what the device granted and, at the end, periods, underruns and device \
            losses.
            """
    )

    @Option(help: ArgumentHelp("The scenario to play (docs/render.md).", valueName: "file"))
    var scenario: String

    @Option(help: ArgumentHelp("Take the output from a board profile.", valueName: "profile"))
    var board: String?

    @Option(help: ArgumentHelp("The ALSA PCM (default: the profile's output, else \"default\").", valueName: "name"))
    var pcm: String?

    @Option(help: ArgumentHelp("Frames per period, 16 to 8192.", valueName: "frames"))
    var period: String?

    @Option(help: ArgumentHelp("The audio thread's SCHED_FIFO priority (default 70).", valueName: "n"))
    var priority: String?

    public init() {}

    public func run() throws {
        let status = PlayCommand.run(
            given([
                "--scenario": scenario, "--board": board, "--pcm": pcm, "--period": period,
                "--priority": priority,
            ])
        )
        if status != 0 { throw ExitCode(status) }
    }
}

/// The options given on the command line, by flag: what RenderCommand and PlayCommand read.
private func given(_ options: KeyValuePairs<String, String?>) -> [String: String] {
    var given: [String: String] = [:]
    for (flag, value) in options { given[flag] = value }
    return given
}
