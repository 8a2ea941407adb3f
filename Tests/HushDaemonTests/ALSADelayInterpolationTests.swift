import Foundation
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
    static let windows = 20
    /// Each window writes nothing for this long; the 200 ms buffer keeps playing.
    static let windowMilliseconds = 40
    static let probe = ALSADeviceTests.root.appendingPathComponent(".build/alsa-plugin/hush-delay-probe").path

    /// One stretch between two changes of the position (hushd published a period): the delays seen in it.
    struct Period {
        var delays: [Int] = []
        var nanoseconds: [Int64] = []
        var distinct: Int { Set(delays).count }
        /// Times the delay went up while nothing was written.
        var rises: Int { zip(delays, delays.dropFirst()).filter { $1 > $0 }.count }
    }

    /// The probe's samples (`sample WINDOW NANOSECONDS AVAIL DELAY`), cut into periods at each change of AVAIL;
    /// a window's first and last stretch are partial and left out.
    static func periods(_ text: String) -> [Period] {
        var byWindow: [Int: [(ns: Int64, avail: Int, delay: Int)]] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("sample ") {
            let words = line.split(separator: " ")
            guard words.count == 5, let window = Int(words[1]), let ns = Int64(words[2]), let avail = Int(words[3]),
                let delay = Int(words[4])
            else { continue }
            byWindow[window, default: []].append((ns, avail, delay))
        }
        var periods: [Period] = []
        for window in byWindow.keys.sorted() {
            var current: Period?
            var lastAvail: Int?
            for sample in byWindow[window]! {
                if sample.avail != lastAvail {
                    if let done = current { periods.append(done) }
                    // The window's first stretch began before the window did.
                    current = lastAvail == nil ? nil : Period()
                    lastAvail = sample.avail
                }
                current?.delays.append(sample.delay)
                current?.nanoseconds.append(sample.ns)
            }
        }
        return periods
    }

    @Test("snd_pcm_delay takes many values within each of hushd's periods, only falling while nothing is written")
    func delayIsInterpolated() throws {
        guard FileManager.default.fileExists(atPath: Self.probe) else {
            throw HushdTestFailure("\(Self.probe) is missing: run `make alsa-plugin` (make test does) first")
        }
        try ALSADeviceTests.retaking("snd_pcm_delay between hushd's periods") {
            let hushd = try HushdProcess()
            let output = (try? hushd.status())?["output"] as? [String: Any]
            let hushdPeriod = output?["periodFrames"] as? Int ?? 0
            // Thousands of lines: to a file, not a pipe nobody reads until the probe ends.
            let scratch = try ScratchDirectory(prefix: "hush-delay")
            let samples = scratch.path + "/samples.txt"
            FileManager.default.createFile(atPath: samples, contents: nil)
            let probe = Process()
            probe.executableURL = URL(fileURLWithPath: Self.probe)
            probe.arguments = ["hush_raw:music", "\(Self.windows)", "\(Self.windowMilliseconds)"]
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
            let periods = Self.periods(text)
            let distinct = periods.map(\.distinct).sorted()
            let median = distinct.isEmpty ? 0 : distinct[distinct.count / 2]
            let rises = periods.map(\.rises).reduce(0, +)
            let lengths = periods.compactMap { p in p.nanoseconds.last.map { $0 - p.nanoseconds[0] } }.sorted()
            let medianLength = lengths.isEmpty ? 0 : Double(lengths[lengths.count / 2]) / 1e6
            print(
                "snd_pcm_delay: hushd's period \(hushdPeriod) frames; \(periods.count) whole periods seen; "
                    + "distinct delays per period: median \(median), least \(distinct.first ?? 0), most "
                    + "\(distinct.last ?? 0); \(periods.filter { $0.distinct > 2 }.count) periods with more than 2; "
                    + "rises within a period: \(rises); a period's samples span \(medianLength) ms (median)"
            )
            // How often the probe looked per period of hushd: a probe the machine hardly ran sees one value per
            // period whatever the plugin does.
            let loops = text.split(separator: "\n").filter { $0.hasPrefix("loops ") }
                .compactMap { $0.split(separator: " ").last.flatMap { Int($0) } }.reduce(0, +)
            let periodsRun = Double(Self.windows * Self.windowMilliseconds * 48) / Double(max(hushdPeriod, 1))
            let looks = Int(Double(loops) / periodsRun)
            print("snd_pcm_delay: the probe looked \(loops) times, \(looks) times per period of hushd")
            // Too few periods seen, or too few looks: the probe (or hushd) hardly ran — a busy machine, not a wrong
            // hush.
            guard periods.count >= 50 else { return "only \(periods.count) whole periods were seen" }
            guard looks >= 4 else { return "the probe looked only \(looks) times per period" }
            return ALSADeviceTests.judge(
                late: nil,
                [
                    (median > 2, "the median period showed \(median) distinct delays (a stepped delay shows 1)"),
                    (rises == 0, "the delay rose \(rises) times between periods while nothing was written"),
                ]
            )
        }
    }
}
