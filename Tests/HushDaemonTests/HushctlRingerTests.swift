import Foundation
import HushAudioFile
import HushConfiguration
import HushConsole
import HushControlServer
import HushOutput
import HushRender
import HushSystem
import HushTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// hushctl's ringer verbs heard through a real hushd: the built hushd and hushctl, hushd's sound in its WAV
/// fallback, its console on a pipe standing in for the silence switch. What counts is what came out of the mixer.
@Suite("hushctl ringtone and alarm, heard through hushd", .serialized)
struct HushctlRingerTests {
    static let rate = 48000

    /// Runs the built hushctl to its end; returns its status and what it printed.
    static func hushctl(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = HushctlTests.hushctl
        process.arguments = arguments
        let stdout = Pipe()
        process.standardOutput = stdout
        process.standardError = stdout
        try process.run()
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self))
    }

    /// Polls `condition` every 10 ms for up to 10 s.
    static func wait(_ what: String, log: String, _ condition: () -> Bool) throws {
        let deadline = Date().addingTimeInterval(10)
        while !condition() {
            guard Date() < deadline else {
                let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
                throw HushdTestFailure("hushd: \(what) did not happen within 10 s; its log:\n\(text)")
            }
            usleep(10_000)
        }
    }

    @Test("silence on: `ringtone --tone` is silent and `alarm --tone` is heard; silence off: the ringtone rings")
    func ringtoneSilencedAlarmHeard() throws {
        let scratch = try ScratchDirectory(prefix: "hush-ringer")
        let socket = scratch.path + "/control.sock"
        let wav = scratch.path + "/output.wav"
        let log = scratch.path + "/hushd.log"
        let config = scratch.path + "/hushd.toml"
        // No card: the output falls back to the WAV file, paced like a device. The terminal is the switch.
        try """
        [output]
        pcm = "hw:CARD=HushNoSuchCard,DEV=0"
        fallback_wav = "\(wav)"
        realtime_priority = 0

        [inputs.silence_switch]
        kind = "terminal"

        [control]
        socket = "\(socket)"
        group = ""

        [state]
        file = ""

        [sounds]
        directories = ["\(scratch.path)"]

        [alsa_controls]
        enabled = false
        """.write(toFile: config, atomically: true, encoding: .utf8)
        #expect(FileManager.default.createFile(atPath: log, contents: nil))
        let logHandle = try #require(FileHandle(forWritingAtPath: log))
        let hushd = Process()
        // setpriv: a test that crashes cannot leave hushd running.
        hushd.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        hushd.arguments = [
            "--pdeathsig", "KILL", HushdTranscriptTests.hushd.path, "--config", config, "--console", "stdio",
        ]
        let console = Pipe()
        hushd.standardInput = console
        hushd.standardOutput = logHandle
        hushd.standardError = logHandle
        try hushd.run()
        defer {
            if hushd.isRunning {
                kill(hushd.processIdentifier, SIGKILL)
                hushd.waitUntilExit()
            }
        }
        func silenceSwitch() -> String? {
            guard let connection = try? HushdConnection(path: socket) else { return nil }
            defer { connection.close() }
            return (try? connection.status())?["silenceSwitch"] as? String
        }
        try Self.wait("the socket answering", log: log) { silenceSwitch() != nil }
        console.fileHandleForWriting.write(Data("silence on\n".utf8))
        try Self.wait("silence on", log: log) { silenceSwitch() == "silent" }

        let silenced = try Self.hushctl(["--socket", socket, "ringtone", "--tone", "1000", "--for", "0.6"])
        #expect(silenced.status == 0, "\(silenced.output)")
        #expect(silenced.output.contains("playing a 1000 Hz tone (ringer soloAmbient)"), "\(silenced.output)")
        let alarm = try Self.hushctl(["--socket", socket, "alarm", "--tone", "1500", "--for", "0.6"])
        #expect(alarm.status == 0, "\(alarm.output)")
        #expect(alarm.output.contains("playing a 1500 Hz tone (ringer playback)"), "\(alarm.output)")
        // The category on the command line wins over the verb's: this ringtone is heard through the switch.
        let chosen = try Self.hushctl(
            ["--socket", socket, "ringtone", "--tone", "2000", "--category", "playback", "--for", "0.6"]
        )
        #expect(chosen.status == 0, "\(chosen.output)")
        console.fileHandleForWriting.write(Data("silence off\n".utf8))
        try Self.wait("silence off", log: log) { silenceSwitch() == "ring" }
        let ringing = try Self.hushctl(["--socket", socket, "ringtone", "--tone", "700", "--for", "0.6"])
        #expect(ringing.status == 0, "\(ringing.output)")
        hushd.terminate()
        hushd.waitUntilExit()

        let (samples, channels, rate) = try SoundFile.readPCM16(wav)
        #expect(rate == Self.rate)
        let left = ToneAnalysis.channel(0, of: samples.map { Float($0) / 32767 }, channels: channels)
        #expect(left.count > Self.rate * 2, "hushd wrote \(left.count) frames")
        // 100-ms windows every 50 ms, each tone's level in each.
        let window = Self.rate / 10
        let levels = stride(from: 0, to: max(0, left.count - window), by: Self.rate / 20).map { start in
            [1000.0, 1500, 2000, 700].map {
                ToneAnalysis.level(of: $0, in: left[start..<(start + window)], sampleRate: Self.rate)
            }
        }
        func loudest(_ tone: Int) -> Double { levels.map { $0[tone] }.max() ?? -240 }
        // The silenced ringtone rang alone just before the alarm: the windows before the alarm's first where no
        // other tone is present (a tone's start splatters a little over the spectrum: those windows are left out).
        let alarmStart = levels.firstIndex { $0[1] > -50 } ?? levels.count
        let alone = levels[..<alarmStart].filter { $0[1...].allSatisfy { $0 < -90 } }
        let ringtoneUnderSilence = alone.map { $0[0] }.max() ?? -240
        print(
            "ringtone under silence \(ringtoneUnderSilence) dBFS (\(alone.count) windows), alarm \(loudest(1)), "
                + "ringtone as playback \(loudest(2)), ringtone with silence off \(loudest(3)) dBFS"
        )
        #expect(alone.count >= 10, "the silenced ringtone's 0.6 s before the alarm")
        let before = levels[..<alarmStart].map { $0.map { String(Int($0)) }.joined(separator: "/") }
        #expect(
            ringtoneUnderSilence < -90,
            "the switch silences a ringtone (R1); windows before the alarm: \(before.joined(separator: " "))"
        )
        #expect(loudest(1) > -50, "the switch does not silence an alarm (R1)")
        #expect(loudest(2) > -50, "--category playback wins over ringtone's soloAmbient")
        #expect(loudest(3) > -50, "a ringtone rings with the switch off")
    }
}
