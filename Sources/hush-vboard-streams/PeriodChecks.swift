import Foundation
import HushTesting

#if canImport(Glibc)
import Glibc
#endif

// R24 output-period on the real path: aplay's music alone is mixed in the virtual profile's longest period (the
// audio thread blocks a quarter as often, counted by the kernel), an effect's aplay brings the shortest back before
// its first frame is mixed and nothing is heard of either change, an aplay with a small buffer gets a period of a
// quarter of it, and the long period comes back when the last of them ends.

/// The output's period as `status` gives it (R24): frames mixed now, what the rule asks, the floor and ceiling, the
/// reason.
struct PeriodStatus {
    var frames: Int
    var ruled: Int
    var floor: Int
    var ceiling: Int
    var reason: String

    static func now() -> PeriodStatus? {
        guard let output = (try? hushdStatus.status())?["output"] as? [String: Any],
            let period = output["period"] as? [String: Any],
            let frames = period["frames"] as? Int, let ruled = period["ruled"] as? Int,
            let floor = period["floor"] as? Int, let ceiling = period["ceiling"] as? Int
        else { return nil }
        return PeriodStatus(
            frames: frames,
            ruled: ruled,
            floor: floor,
            ceiling: ceiling,
            reason: period["reason"] as? String ?? ""
        )
    }
}

/// How many times hushd's audio thread (hush-audio) blocked so far: its voluntary context switches, as the kernel
/// counts them. One per period while it plays (it waits for the device once a period), whatever the machine's load.
func audioThreadBlocks() throws -> Int {
    let pid = try hushdPID()
    for task in globPaths("/proc/\(pid)/task/*") {
        guard readFile(task + "/comm")?.trimmingCharacters(in: .whitespacesAndNewlines) == "hush-audio",
            let status = readWholeFile(task + "/status"),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("voluntary_ctxt_switches:") }),
            let count = Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces))
        else { continue }
        return count
    }
    throw CheckFailure("hushd \(pid) has no hush-audio thread")
}

/// The audio thread's blocks per second over `duration` seconds.
func audioThreadBlocksPerSecond(over duration: Double) throws -> Double {
    let before = try audioThreadBlocks()
    let start = monotonicNow()
    sleep(.milliseconds(Int64(duration * 1000)))
    let after = try audioThreadBlocks()
    return Double(after - before) / seconds(from: start, to: monotonicNow())
}

let periodChecks: [Check] = [
    Check(name: "streams-period-follows-the-work") { try periodFollowsTheWork() }
]

func periodFollowsTheWork() throws {
    var applications: [Application?] = []
    defer { endAll(applications) }
    endAll(applications)
    guard let idle = PeriodStatus.now() else { throw CheckFailure("hushd's status has no output.period (R24)") }
    try require(idle.ceiling > idle.floor, "the virtual profile's period can grow: \(idle.floor)…\(idle.ceiling)")
    let musicFile = try ToneFile.make(music, 40)
    let player = try aplay("hush:music", musicFile)
    applications.append(player)
    try waitForStream(player, "running")
    try waitUntil("music alone is mixed in the longest period", seconds: 5) {
        PeriodStatus.now().map { $0.frames == idle.ceiling && $0.ruled == idle.ceiling } ?? false
    }
    let alone = try audioThreadBlocksPerSecond(over: 2)
    let longRate = 48000 / Double(idle.ceiling)
    print(
        "  music alone: \(idle.ceiling)-frame periods, the audio thread blocked \(twoDecimals(alone)) times a "
            + "second (\(twoDecimals(longRate)) periods a second)"
    )
    // One block a period, never more: a thread woken every 512 frames would block 94 times a second.
    try require(
        alone < longRate * 1.5,
        "R24: music alone wakes the audio thread \(twoDecimals(alone)) times a second, for \(twoDecimals(longRate)) periods"
    )

    // An effect over it: the period is the floor before the effect's first frame is mixed, the music goes on
    // untouched through both changes.
    let effectFile = try ToneFile.make(effect, 1)
    try judge("an effect over music mixed in long periods") {
        let before = try outputXruns()
        let musicDry = streamUnderruns(player)
        let logBefore = (readWholeFile("/tmp/hushd.log") ?? "").split(separator: "\n").count
        var during: PeriodStatus?
        var effectRate = 0.0
        var effectStream: Int?
        var effectEnd: Int32?
        let take = try listen(
            to: [speakerCapture],
            seconds: 3.5,
            while: [
                (
                    0.8, "the effect",
                    {
                        let sound = try aplay("hush:effects", effectFile)
                        applications.append(sound)
                        try waitForStream(sound, "running", seconds: 5)
                        effectStream = stream(of: sound)?.stream["id"] as? Int
                        during = PeriodStatus.now()
                        effectRate = try audioThreadBlocksPerSecond(over: 0.5)
                        effectEnd = sound.finish(within: 5)?.status
                    }
                )
            ]
        )
        var judged = Judged(
            disturbances: take.disturbances + (try xrunsSince(before)) + streamUnderrunsSince(musicDry, player)
        )
        let recording = take.recordings[0]
        let started = take.actedAt(0)
        let musicLevel = span(music, recording, from: 0.1, to: 3.4)
        let effectPeak = tonalPeak(effect, recording, from: started, to: 3.4)
        // A gap or a jump in the music spreads energy over every frequency: far from both tones it stays silent.
        let broadband = span(5000, recording, from: 0.1, to: 3.4)
        let log = (readWholeFile("/tmp/hushd.log") ?? "").split(separator: "\n").dropFirst(logBefore)
        let shortLine = log.firstIndex {
            $0.contains("output period \(idle.floor) frames") && $0.contains("[R24 output-period]")
        }
        let startLine = effectStream.flatMap { id in
            log.firstIndex { $0.contains("starts stream \(id)") }
        }
        let periodText: String = during.map { "\($0.frames) (\($0.reason))" } ?? "?"
        let peakText: String = effectPeak.map { db($0) } ?? "none"
        let shortText: String = shortLine.map { String($0 - logBefore) } ?? "none"
        let startText: String = startLine.map { String($0 - logBefore) } ?? "none"
        var line = "  effect over music: period \(periodText) while it played, the audio thread blocked "
        line += "\(twoDecimals(effectRate)) times a second; music \(db(musicLevel)) dBFS throughout, effect peak "
        line += "\(peakText), 5 kHz \(db(broadband)); R24 line \(shortText), the effect's start \(startText) "
        line += "lines into the log"
        judged.report = [line]
        judged.expect(effectEnd == 0, "the effect's aplay played to its end: \(String(describing: effectEnd))")
        judged.expect(
            during.map { $0.frames == idle.floor && $0.ruled == idle.floor } ?? false,
            "R24: the effect plays in the shortest period: \(String(describing: during))"
        )
        judged.expect(
            during?.reason.contains("plays effects") ?? false,
            "R24: the reason names the effect's session: \(during?.reason ?? "?")"
        )
        judged.expect(
            shortLine != nil && startLine != nil && shortLine! < startLine!,
            "R24: the short period is ruled before the effect's stream starts (log lines \(String(describing: shortLine)), \(String(describing: startLine)))"
        )
        judged.expect(effectPeak != nil, "the effect is heard")
        judged.expect(
            at(expectedLevel(step: 8), musicLevel),
            "the music plays on, untouched, through both changes: \(db(musicLevel))",
            stall: true
        )
        judged.expect(silent(broadband), "no click or gap in the music: 5 kHz \(db(broadband))", stall: true)
        return judged
    }
    try waitUntil("the longest period comes back when the effect ends", seconds: 5) {
        PeriodStatus.now().map { $0.frames == idle.ceiling } ?? false
    }

    // An application with a small buffer: 100 ms, 4800 frames; a quarter is 1200, so 1024 on the virtual
    // profile's steps (512, 1024, 2048).
    let small = try aplay("hush:music", try ToneFile.make(music, 3), ["-B", "100000"])
    applications.append(small)
    try waitForStream(small, "running")
    guard let buffered = PeriodStatus.now() else { throw CheckFailure("hushd's status has no output.period") }
    let expected = min(idle.ceiling, max(idle.floor, 1024))
    print(
        "  aplay -B 100000 beside the music: period \(buffered.ruled) (\(buffered.reason)); "
            + "\(streamUnderruns(small)) underruns"
    )
    try require(
        buffered.ruled == expected && buffered.reason.contains("buffer of 4800 frames"),
        "R24: a 100 ms buffer allows \(expected)-frame periods: \(buffered.ruled) (\(buffered.reason))"
    )
    let result = small.finish(within: 10)
    try require(result?.status == 0, "aplay -B 100000 played to its end: \(small.outcome)")
    try waitUntil("the longest period comes back", seconds: 5) {
        PeriodStatus.now().map { $0.frames == idle.ceiling } ?? false
    }
}
