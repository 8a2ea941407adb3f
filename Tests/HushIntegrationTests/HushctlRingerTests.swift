import Foundation
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
        try runToEnd(HushctlTests.hushctl, arguments)
    }

    @Test("silence on: `ringtone --tone` is silent and `alarm --tone` is heard; silence off: the ringtone rings")
    func ringtoneSilencedAlarmHeard() throws {
        // No card: the output falls back to the WAV file, paced like a device. The terminal is the switch.
        let hushd = try ConsoleHushd()
        let socket = hushd.socket
        func silenceSwitch() -> String? { (try? hushd.status())?["silenceSwitch"] as? String }
        hushd.type("silence on")
        try hushd.wait("silence on") { silenceSwitch() == "silent" }

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
        hushd.type("silence off")
        try hushd.wait("silence off") { silenceSwitch() == "ring" }
        let ringing = try Self.hushctl(["--socket", socket, "ringtone", "--tone", "700", "--for", "0.6"])
        #expect(ringing.status == 0, "\(ringing.output)")
        let left = try hushd.finish()
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
