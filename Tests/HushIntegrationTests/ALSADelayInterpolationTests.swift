import Foundation
import HushTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// What an application's snd_pcm_delay says between hushd's periods: hushd publishes its position once a period,
/// and the plugin interpolates the delay from the time of that snapshot (hush_wire.h, pcm_hush.c's hush_delay),
/// so the figure moves with the clock instead of standing still and jumping by a period.
@Suite("snd_pcm_delay between hushd's periods", .serialized)
struct ALSADelayInterpolationTests {
    /// Written by `make alsa-plugin` (Tests/alsa-plugin/delay_probe.c).
    static let windows = 40
    /// Each window writes nothing for this long; the 200 ms buffer keeps playing.
    static let windowMilliseconds = 40
    static let probe = ALSADeviceTests.root.appendingPathComponent(".build/alsa-plugin/hush-delay-probe").path

    /// One stretch between two changes of the position (hushd published a period): the delays seen in it, and how
    /// the probe watched it.
    struct Period {
        var delays: [Int] = []
        /// When the probe first and last looked in the stretch, and how often.
        var first: Int64 = 0
        var last: Int64 = 0
        var looks = 0
        var distinct: Int { Set(delays).count }
        /// Times the delay went up, and down, within the stretch.
        var rises: Int { zip(delays, delays.dropFirst()).filter { $1 > $0 }.count }
        var falls: Int { zip(delays, delays.dropFirst()).filter { $1 < $0 }.count }
    }

    /// The probe's whole stretches (`stretch WINDOW 1 FIRST LAST LOOKS`, each after its `sample` lines); a window's
    /// first stretch began before it (`stretch WINDOW 0 …`), and its last is cut off by its end: both are left out.
    static func periods(_ text: String) -> [Period] {
        var periods: [Period] = []
        var current = Period()
        for line in text.split(separator: "\n") {
            let words = line.split(separator: " ")
            switch words.first {
            case "sample":
                if words.count == 5, let delay = Int(words[4]) { current.delays.append(delay) }
            case "stretch":
                // Printed when the position moved, before that look's sample: what came before is the stretch's.
                guard words.count == 6, let first = Int64(words[3]), let last = Int64(words[4]),
                    let looks = Int(words[5])
                else { continue }
                if words[2] == "1" {
                    current.first = first
                    current.last = last
                    current.looks = looks
                    periods.append(current)
                }
                current = Period()
            case "loops":
                current = Period()
            default:
                continue
            }
        }
        return periods
    }

    /// Playback: what was written and not yet heard shrinks as the device plays, so the delay only falls while
    /// nothing is written. Capture: what was captured and not yet read grows, so it only rises while nothing is read.
    @Test(
        "snd_pcm_delay takes many values within each of hushd's periods, moving one way while no frames move",
        arguments: ["playback", "capture"]
    )
    func delayIsInterpolated(direction: String) throws {
        let capture = direction == "capture"
        guard FileManager.default.fileExists(atPath: Self.probe) else {
            throw HushdTestFailure("\(Self.probe) is missing: run `make alsa-plugin` (make test does) first")
        }
        // Six takes, not three: beside `stress-ng --cpu 2` about one take in two watches enough periods.
        try ALSADeviceTests.retaking("\(direction): snd_pcm_delay between hushd's periods", attempts: 6) {
            let hushd = try HushdProcess()
            let output = (try? hushd.status())?["output"] as? [String: Any]
            let hushdPeriod = output?["periodFrames"] as? Int ?? 0
            // Thousands of lines: to a file, not a pipe nobody reads until the probe ends.
            let scratch = try ScratchDirectory(prefix: "hush-delay")
            let samples = scratch.path + "/samples.txt"
            FileManager.default.createFile(atPath: samples, contents: nil)
            let probe = Process()
            // The probe watches by looking as often as it can. As root it runs at nice −10, so that a machine busy
            // with other work (stress-ng, the other tests) still lets it watch; it only looks, so hushd's timing
            // is not helped by it.
            let arguments =
                [
                    Self.probe, capture ? "hush_raw:CATEGORY=record" : "hush_raw:music", "\(Self.windows)",
                    "\(Self.windowMilliseconds)",
                ]
                + (capture ? ["capture"] : [])
            probe.executableURL = URL(fileURLWithPath: geteuid() == 0 ? "/usr/bin/nice" : Self.probe)
            probe.arguments = geteuid() == 0 ? ["-n", "-10"] + arguments : Array(arguments.dropFirst())
            var environment = ProcessInfo.processInfo.environment
            environment["ALSA_CONFIG_PATH"] = ALSADeviceTests.alsaConfig
            environment["HUSH_SOCKET"] = hushd.socket
            probe.environment = environment
            probe.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: samples))
            probe.standardError = probe.standardOutput
            try probe.run()
            let deadline = Date().addingTimeInterval(30)
            while probe.isRunning && Date() < deadline { usleep(10_000) }
            if probe.isRunning {
                kill(probe.processIdentifier, SIGKILL)
                probe.waitUntilExit()
            }
            probe.waitUntilExit()
            _ = hushd.stop()
            let text = try String(contentsOfFile: samples, encoding: .utf8)
            #expect(probe.terminationStatus == 0, "the probe: \(text.suffix(2000))")
            // Only the periods the probe watched: it looked at least 8 times, over at least half of hushd's period.
            // On a busy machine the probe runs in slices, and a period it glimpsed once shows one value whatever the
            // plugin does.
            let periodNanoseconds = Int64(hushdPeriod) * 1_000_000_000 / 48_000
            let all = Self.periods(text)
            let periods = all.filter { $0.looks >= 8 && 2 * ($0.last - $0.first) >= periodNanoseconds }
            let distinct = periods.map(\.distinct).sorted()
            let median = distinct.isEmpty ? 0 : distinct[distinct.count / 2]
            // The wrong way: up for playback, down for capture.
            let backwards = all.map { capture ? $0.falls : $0.rises }.reduce(0, +)
            let looks = periods.map(\.looks).sorted()
            print(
                "\(direction) snd_pcm_delay: hushd's period \(hushdPeriod) frames; \(all.count) whole periods seen, \(periods.count) "
                    + "watched (median \(looks.isEmpty ? 0 : looks[looks.count / 2]) looks); distinct delays per watched "
                    + "period: median \(median), least \(distinct.first ?? 0), most \(distinct.last ?? 0); "
                    + "\(periods.filter { $0.distinct > 2 }.count) with more than 2; "
                    + "\(capture ? "falls" : "rises") within a period: \(backwards)"
            )
            // Too few periods watched: the probe (or hushd) hardly ran — a busy machine, not a wrong hush.
            guard periods.count >= 20 else { return "only \(periods.count) periods were watched" }
            return ALSADeviceTests.judge(
                late: nil,
                [
                    (median > 2, "the median period showed \(median) distinct delays (a stepped delay shows 1)"),
                    (
                        backwards == 0,
                        "the delay went \(capture ? "down" : "up") \(backwards) times between hushd's periods while no "
                            + "frames moved"
                    ),
                ]
            )
        }
    }
}
