import Foundation
import HushALSA
import HushCore
import Logging

/// `hushd play`: a scenario played in real time on an ALSA device, through the audio thread the daemon uses.
enum PlayCommand {
    static let usage = """
        usage: hushd play --scenario FILE [--board PROFILE] [--pcm NAME] [--period FRAMES] [--priority N]

        Plays a scenario (docs/render.md) live on an ALSA playback device, through the real-time audio thread:
        the way to hear a scenario on real hardware. --pcm defaults to the profile's output PCM, else "default".
        Prints what the device granted and, at the end, periods, underruns and device losses.
        """

    static func run(_ arguments: [String]) -> Int32 {
        var options: [String: String] = [:]
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if argument == "--help" || argument == "-h" {
                print(usage)
                return 0
            }
            guard ["--scenario", "--board", "--pcm", "--period", "--priority"].contains(argument),
                index + 1 < arguments.count
            else {
                FileHandleOutput.standardError("hushd play: unknown or incomplete argument '\(argument)'\n\(usage)")
                return 64
            }
            options[argument] = arguments[index + 1]
            index += 2
        }
        guard let scenarioPath = options["--scenario"] else {
            FileHandleOutput.standardError("hushd play: --scenario is required\n\(usage)")
            return 64
        }
        LoggingSystem.bootstrap { StreamLogHandler.standardError(label: $0) }
        // A card unbound under `play` is retried every 250 ms: alsa-lib's own line for each try says nothing more.
        ALSALibrary.printsOwnErrors(false)
        let logger = Logger(label: "hushd")
        do {
            var output = HushdConfiguration.Output()
            if let board = options["--board"] { output = try HushdConfiguration.board(board).output }
            var pcm = output.pcm
            if let name = options["--pcm"] { pcm = name }
            if let period = options["--period"] { output.periodFrames = try CommandError.periodFrames(period) }
            let priority = Int32(options["--priority"] ?? "70") ?? 70
            let scenario = try Scenario.load(scenarioPath)
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
            return 0
        } catch {
            FileHandleOutput.standardError("hushd play: \(error)")
            return 1
        }
    }
}
