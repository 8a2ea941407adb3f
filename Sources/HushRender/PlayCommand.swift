import FoundationEssentials
import HushALSA
import HushConfiguration
import HushConsole
import HushCore
import HushOutput
import HushSystem
import Logging

/// `hushd play`: a scenario played in real time on an ALSA device, through the audio thread the daemon uses.
package enum PlayCommand {
    /// Plays the scenario; `options` are the command line's, by flag (`--scenario` is always there).
    package static func run(_ options: [String: String]) -> Int32 {
        let scenarioPath = options["--scenario"] ?? ""
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
