import ArgumentParser
import HushALSA
import HushConfiguration
import HushCore
import HushSystem
import Logging

/// `hushd play`: a scenario played live on an ALSA device, through the audio thread the daemon uses (a board tool:
/// it is how a scenario is heard on the board's own speaker).
package struct HushdPlay: ParsableCommand {
    package static let configuration = CommandConfiguration(
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

    @Option(
        help: ArgumentHelp("Frames per period, 16 to 8192.", valueName: "frames"),
        transform: OutputArgument.periodFrames
    )
    var period: Int?

    @Option(
        help: ArgumentHelp(
            "The audio thread's SCHED_FIFO priority, 1 to 99, or 0 for normal scheduling (default 70).",
            valueName: "n"
        ),
        transform: { Int32(try OutputArgument.whole($0, in: 0...99, "a priority")) }
    )
    var priority: Int32 = 70

    package init() {}

    package func run() throws {
        LoggingSystem.bootstrap { StreamLogHandler.standardError(label: $0) }
        // A card unbound under `play` is retried every 250 ms: alsa-lib's own line for each try says nothing more.
        ALSALibrary.printsOwnErrors(false)
        do {
            try play(logger: Logger(label: "hushd"))
        } catch {
            FileHandleOutput.standardError("hushd play: \(error)")
            throw ExitCode.failure
        }
    }

    private func play(logger: Logger) throws {
        var output = HushdConfiguration.Output()
        if let board { output = try HushdConfiguration.board(board).output }
        if let period { output.periodFrames = period }
        let pcm = pcm ?? output.pcm
        let scenario = try Scenario.load(scenario)
        let playback = try ALSAPlayback(
            PlaybackConfiguration(
                pcm: pcm,
                sampleRate: output.sampleRate,
                channels: output.channels,
                format: output.format,
                periodFrames: output.periodFrames,
                periods: 3
            )
        )
        print("\(pcm): \(playback.describeGrant)")
        let renderer = ScenarioRenderer(
            scenario: scenario,
            sampleRate: playback.granted.sampleRate,
            channels: playback.granted.channels,
            periodFrames: playback.granted.periodFrames
        )
        let counters = try renderer.play(on: playback, priority: priority, logger: logger)
        print(
            "played \(DecimalText.fixed(Double(scenario.end.nanoseconds) / 1e9, places: 3)) s: "
                + "\(counters.periods.load(ordering: .relaxed)) periods, "
                + "\(counters.underruns.load(ordering: .relaxed)) underruns, "
                + "\(counters.deviceLosses.load(ordering: .relaxed)) device losses, "
                + "\(counters.reopenings.load(ordering: .relaxed)) reopenings"
        )
    }
}

/// What `hush-render` and `hushd play` take on their command lines, checked as it is parsed: a value out of its
/// range is a usage error (exit 64) that says what the option takes.
package enum OutputArgument {
    /// A whole number in `range`; `what` names it in the error.
    package static func whole(_ text: String, in range: ClosedRange<Int>, _ what: String) throws -> Int {
        guard let value = Int(text), range.contains(value) else {
            throw ValidationError("must be \(what) from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }

    /// `--period FRAMES`.
    package static func periodFrames(_ text: String) throws -> Int {
        try whole(text, in: 16...8192, "a number of frames")
    }
}
