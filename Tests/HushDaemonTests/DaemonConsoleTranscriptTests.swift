import Foundation
import HushALSA
import HushConsole
import HushCore
import HushTesting
import Logging
import Testing

@testable import HushDaemon

/// The running daemon's console (not the policy console), byte for byte: a real `Daemon` on a manual clock with the
/// WAV fallback, a `DaemonConsole` on pipes (plain lines, as on a dumb terminal without echo), and every line of
/// the script typed into its input, read, parsed and carried out on the real path.
///
/// To review a change: `HUSH_UPDATE_TRANSCRIPTS=1 swift test --filter DaemonConsoleTranscript` rewrites the
/// fixture; `git diff` shows what changed.
@Suite("hushd's daemon console transcript", .serialized)
struct DaemonConsoleTranscriptTests {
    static func fixturePath(_ name: String) -> String {
        String(#filePath.dropLast("DaemonConsoleTranscriptTests.swift".count)) + "Fixtures/" + name
    }

    /// Reads what is waiting in a non-blocking pipe.
    static func drain(_ fd: Int32) -> [UInt8] {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = read(fd, &buffer, buffer.count)
            guard count > 0 else { break }
            bytes += buffer[0..<count]
        }
        return bytes
    }

    @Test("a scripted session on the built-in board prints exactly the reviewed transcript")
    func transcript() throws {
        let script = try String(contentsOfFile: Self.fixturePath("daemon-console-script.txt"), encoding: .utf8)
        let clock = ManualClock(.zero + Duration.seconds(100))
        var setup = Daemon.Setup()
        setup.output = PlaybackConfiguration(pcm: "hush-no-such-device", periodFrames: 480, periods: 2)
        // A fixed path: the status line names it.
        setup.fallbackWAV = "/tmp/hush-console-transcript.wav"
        setup.realtimePriority = 0
        setup.policy.routes = [.speaker, .headphones]
        let daemon = Daemon(setup: setup, inputs: [], clock: clock, logger: Logger(label: "test"))
        try daemon.start()
        defer { daemon.shutDown() }

        var input: [Int32] = [0, 0]
        var output: [Int32] = [0, 0]
        #expect(pipe(&input) == 0 && pipe(&output) == 0)
        defer { for fd in input + output { close(fd) } }
        // The test reads the console's output without waiting: what a turn printed is in the pipe already.
        #expect(fcntl(output[0], F_SETFL, fcntl(output[0], F_GETFL) | O_NONBLOCK) == 0)
        let serial = try SerialConsole.standardIO(input: input[0], output: output[1], logger: Logger(label: "test"))
        defer { serial.close() }
        let console = DaemonConsole(
            console: serial,
            daemon: daemon,
            standIns: true,
            banner: ["hush on board 'default': the transcript test", "type help for commands"],
            logLevel: LogLevelBox(.info)
        )
        var transcript: [UInt8] = []
        func turn() {
            console.service([], now: clock.now())
            transcript += Self.drain(output[0])
        }
        turn()
        for line in script.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("#wait ") {
                clock.advance(by: Duration.milliseconds(Int(line.dropFirst(6)) ?? 0))
                daemon.service()
                turn()
                continue
            }
            guard !line.hasPrefix("#"), !line.isEmpty else { continue }
            clock.advance(by: Duration.milliseconds(100))
            transcript += Array("> \(line)\n".utf8)
            let typed = Array((line + "\n").utf8)
            #expect(write(input[1], typed, typed.count) == typed.count)
            turn()
        }
        let text = String(decoding: transcript, as: UTF8.self)
        let fixture = Self.fixturePath("daemon-console-transcript.txt")
        if ProcessInfo.processInfo.environment["HUSH_UPDATE_TRANSCRIPTS"] == "1" {
            try text.write(toFile: fixture, atomically: true, encoding: .utf8)
        }
        let expected = try String(contentsOfFile: fixture, encoding: .utf8)
        #expect(text == expected)
        // The transcript must show what it is meant to prove, not only match itself.
        for needle in [
            "[R1 silence-switch]", "[R3 volume-buttons]", "[R4 headphones-plugged]", "[R5 headphones-unplugged]",
            "[R13 route-override]", "[R15 session-requests]", "error: ", "Commands (Tab completes a word",
            "[R21 microphone-privacy] close the microphone", "MUTED by the privacy switch", "[R26 session-level]",
        ] {
            #expect(text.contains(needle), "the transcript has no \(needle)")
        }
    }
}
