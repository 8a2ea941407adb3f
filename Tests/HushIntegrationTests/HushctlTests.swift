import Foundation
import HushCore
import HushTesting
import Testing

/// hushctl against the server with the fake handler: what a person reads, byte for byte.
@Suite("hushctl against the control server", .serialized)
struct HushctlTests {
    static var hushctl: URL { HushdTranscriptTests.executable("hushctl") }

    /// Runs hushctl while the test's loop serves the socket; returns its status, output and errors.
    static func run(
        _ arguments: [String],
        input: String = "",
        fixture: ControlFixture?,
        environment: [String: String]? = nil
    ) throws -> (status: Int32, output: String, error: String) {
        let process = Process()
        process.executableURL = hushctl
        process.arguments = arguments
        if let environment { process.environment = environment }
        let stdin = Pipe()
        let stdout = Pipe()
        let stderr = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        stdin.fileHandleForWriting.write(Data(input.utf8))
        try stdin.fileHandleForWriting.close()
        if let fixture {
            fixture.pump(until: { !process.isRunning }, milliseconds: 10_000)
        }
        process.waitUntilExit()
        return (
            process.terminationStatus,
            String(decoding: stdout.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self),
            String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        )
    }

    @Test("hushctl status prints the status for an 80x24 terminal")
    func status() throws {
        let fixture = try ControlFixture()
        let result = try Self.run(["--socket", fixture.path, "status"], fixture: fixture)
        #expect(result.status == 0)
        #expect(result.error == "")
        #expect(
            result.output == """
                hushd 0.1.0, up 1 min 15 s, 1 client
                silence switch   silent
                headphones       unplugged
                route            speaker (automatic)
                system volume    8/16 (-24.0 dB)
                ringer volume    10/16 (-17.5 dB)
                buttons control  the system volume
                secondary audio  may play
                output           default (open)
                                 48000 Hz, 2 ch, 3 x 64 frames (4 ms), 0 xruns, 0 losses
                microphone       none ([capture] pcm is not set): capture streams get silence
                sessions         1
                  ID CLIENT    PID   UID  BUS    CATEGORY      OPTIONS  STATE
                   1   1000    321  1000  music  playback      -        playing
                streams          none

                """
        )
    }

    @Test("hushctl --json status prints the status object; the socket may come from $HUSH_SOCKET")
    func jsonStatus() throws {
        let fixture = try ControlFixture()
        let result = try Self.run(["--json", "status"], fixture: fixture, environment: ["HUSH_SOCKET": fixture.path])
        #expect(result.status == 0)
        let object = try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any]
        #expect(object?["systemVolume"] as? Int == 8)
        #expect(object?["ringerVolume"] as? Int == 10)
        #expect(object?["route"] as? String == "speaker")
        #expect(result.output.hasSuffix("}\n") && !result.output.dropLast().contains("\n"))
    }

    @Test("hushctl volume, ringer and route send the right requests and print the replies")
    func volumeAndRoute() throws {
        let fixture = try ControlFixture()
        var result = try Self.run(["--socket", fixture.path, "volume", "9"], fixture: fixture)
        #expect(result.output == "system volume 9/16 (-20.8 dB)\n")
        result = try Self.run(["--socket", fixture.path, "volume"], fixture: fixture)
        #expect(result.output == "system volume 8/16 (-24.0 dB)\n")
        result = try Self.run(["ringer", "up", "--socket", fixture.path], fixture: fixture)
        #expect(result.output == "ringer volume 9/16 (-20.8 dB)\n")
        result = try Self.run(["--socket", fixture.path, "route", "auto"], fixture: fixture)
        #expect(result.output == "route speaker (automatic)\n")
        result = try Self.run(["--socket", fixture.path, "--json", "route", "headphones"], fixture: fixture)
        #expect(result.output == #"{"id":1,"ok":true,"route":{"current":"headphones","overridden":true}}"# + "\n")
        #expect(
            fixture.handler.requests.map(\.request.command) == [
                .setVolume(.system, .step(VolumeStep(clamping: 9))), .getVolume(.system),
                .setVolume(.ringer, .delta(1)),
                .setRoute(nil), .setRoute(.headphones),
            ]
        )
    }

    @Test("hushctl play holds its session: hello, activate, play, then deactivate with notifyOthers when time is up")
    func play() throws {
        let fixture = try ControlFixture()
        let result = try Self.run(
            ["--socket", fixture.path, "play", "--tone", "440", "--bus", "ringer", "--duck-others", "--for", "0.3"],
            fixture: fixture
        )
        #expect(result.status == 0)
        #expect(result.error == "")
        let commands = fixture.handler.requests.map(\.request.command)
        #expect(
            commands == [
                .hello(name: "hushctl play"),
                // No --category: the ringer bus's own, a ringtone's soloAmbient (hushctl alarm is playback).
                .activate(
                    SessionConfiguration(bus: .ringer, category: .soloAmbient, options: [.duckOthers]),
                    name: nil
                ),
                .play(SessionID(1), .tone(440), loop: false), .deactivate(SessionID(1), notifyOthers: true),
            ]
        )
        #expect(
            result.output
                == "session 1: playing a 440 Hz tone (ringer soloAmbient [duckOthers]); ^C stops\n"
                + "session 1: time is up, deactivated\n"
        )
    }

    @Test("hushctl play ends when its sound finishes and prints interruptions as they come")
    func playUntilFinished() throws {
        let fixture = try ControlFixture()
        let process = Process()
        process.executableURL = Self.hushctl
        process.arguments = ["--socket", fixture.path, "play", "/tmp/chime.wav"]
        let stdout = Pipe()
        process.standardOutput = stdout
        try process.run()
        fixture.pump(until: { fixture.handler.requests.count == 3 }, milliseconds: 10_000)
        let owner = try #require(fixture.handler.requests.last?.client.id)
        fixture.server.send(.interruptionBegan(SessionID(1), cause: .session(SessionID(2))), toSubscribersAnd: owner)
        fixture.server.send(.interruptionEnded(SessionID(1), shouldResume: true), toSubscribersAnd: owner)
        fixture.server.send(.sessionFinished(SessionID(1)), toSubscribersAnd: owner)
        fixture.pump(until: { !process.isRunning }, milliseconds: 10_000)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(
            String(decoding: stdout.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self) == """
                session 1: playing /tmp/chime.wav (music playback); ^C stops
                interruption began: session 1, by session 2
                interruption ended: session 1, should resume
                session 1 finished
                session 1: finished, deactivated

                """
        )
        #expect(fixture.handler.requests.last?.request.command == .deactivate(SessionID(1), notifyOthers: true))
    }

    @Test("hushctl shell sends typed commands on one connection and prints replies and errors")
    func shell() throws {
        let fixture = try ControlFixture()
        let script = """
            activate music playback name=radio
            tone 1 440 loop
            pause 7
            volume 9
            bogus
            {"command":"stop","session":1}
            deactivate 1 notify
            """
        let result = try Self.run(["--socket", fixture.path, "shell"], input: script + "\n", fixture: fixture)
        #expect(result.status == 1)
        #expect(
            result.output == """
                session 1
                ok
                error [unknown-session]: there is no session 7
                event: system volume: 9/16 on speaker
                system volume 9/16 (-20.8 dB)
                ok
                ok

                """
        )
        #expect(result.error == "hushctl: unknown command 'bogus'; type help for the commands\n")
        // One connection for everything.
        #expect(Set(fixture.handler.requests.map(\.client.id)).count == 1)
        #expect(fixture.handler.disconnected.count == 1)
    }

    @Test("hushctl says clearly when hushd is not there")
    func notRunning() throws {
        let result = try Self.run(["--socket", "/tmp/hush-nonexistent/control.sock", "status"], fixture: nil)
        #expect(result.status == 1)
        #expect(result.output == "")
        #expect(
            result.error
                == "hushctl: cannot connect to /tmp/hush-nonexistent/control.sock: no such file (is hushd running?)\n"
        )
    }
}
