import Foundation
import HushCore
import Testing

@testable import HushDaemon

/// `hushd check-config` says what hushd does, byte for byte: what it prints about an output or a route's PCM that
/// does not open must be what Daemon.start and the route retry do (start without sound, wait), not a failure.
@Suite("check-config's words")
struct CheckConfigTests {
    /// The `output` and `routes` lines of check-config's summary for `text`.
    static func outputAndRoutes(_ text: String) throws -> [String] {
        let directory = try ScratchDirectory(prefix: "check-config-words")
        let path = directory.path + "/hushd.toml"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        let outcome = CheckConfigCommand.check(["--config", path])
        #expect(outcome.status == 0 && outcome.errors.isEmpty, "\(outcome.errors)")
        let lines = outcome.output.split(separator: "\n").map(String.init)
        guard let start = lines.firstIndex(where: { $0.hasPrefix("output ") }),
            let end = lines.firstIndex(where: { $0.hasPrefix("inputs ") })
        else {
            Issue.record("no output or inputs line in \(outcome.output)")
            return []
        }
        return Array(lines[start..<end])
    }

    @Test("a PCM that does not open: hushd starts without sound and opens it when it appears; routes wait")
    func missingPCMIsWaitedFor() throws {
        let text = """
            [output]
            pcm = "hw:Loopback,0,0"
            period_frames = 512
            [routes.speaker]
            pcm = "hw:Loopback,0,0"
            [routes.headphones]
            pcm = "hw:Loopback,0,1"
            """
        #expect(
            try Self.outputAndRoutes(text) == [
                "output    hw:Loopback,0,0: 48000 Hz, 2 ch, S16_LE, 512-frame periods × 3",
                "          real-time priority 70",
                "          if the PCM does not open at start, hushd starts without sound and opens it when it appears",
                "          (tried every 250 ms); it must then grant 48000 Hz, 2 ch and 512-frame periods, or it stays "
                    + "closed and the log says what it offers",
                "routes    speaker     hw:Loopback,0,0",
                "          headphones  hw:Loopback,0,1",
                "          a route's PCM that does not open (busy, card missing) is waited for: the sound stays "
                    + "where it",
                "          plays and hushd tries the PCM again after 250 ms, then at most every 2 s",
            ]
        )
    }

    @Test("with fallback_wav the sound goes to the file; routes on the output's PCM have nothing to wait for")
    func fallbackFile() throws {
        let text = """
            [output]
            pcm = "default"
            realtime_priority = 0
            fallback_wav = "/tmp/hushd-output.wav"
            """
        #expect(
            try Self.outputAndRoutes(text) == [
                "output    default: 48000 Hz, 2 ch, S16_LE, 64-frame periods × 3",
                "          real-time priority none (normal scheduling)",
                "          if the PCM does not open at start, sound goes to the WAV file /tmp/hushd-output.wav",
                "routes    speaker     default",
            ]
        )
    }
}

