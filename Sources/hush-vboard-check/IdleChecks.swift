import HushCore
import HushTesting

#if canImport(Glibc)
import Glibc
#endif

// The output's idle state on a real snd-aloop (issue 20, "Idle"): hushd with nothing to play stops the loopback's
// playback substream and its audio thread sleeps; a sound after that is heard, and how long it took is printed
// beside the same sound played while the output runs.

/// The context switches (voluntary and not) of hushd's hush-audio thread, and of all its threads together.
func hushdContextSwitches(_ pid: pid_t) -> (audio: Int, all: Int) {
    var audio = 0
    var all = 0
    for task in globPaths("/proc/\(pid)/task/*") {
        let count = (readFile(task + "/status") ?? "").split(separator: "\n")
            .filter { $0.contains("ctxt_switches:") }
            .compactMap { Int($0.split(separator: ":").last?.trimmingCharacters(in: .whitespaces) ?? "") }
            .reduce(0, +)
        all += count
        if readFile(task + "/comm") == "hush-audio" { audio = count }
    }
    return (audio, all)
}

/// The state line of the loopback's playback substream ("state: RUNNING", "state: SETUP", "closed").
func loopbackPlaybackState() -> String {
    let text = readFile("/proc/asound/Loopback/pcm0p/sub0/status") ?? "closed"
    return text.split(separator: "\n").first { $0.hasPrefix("state:") }.map(String.init) ?? text
}

let idleChecks: [Check] = [
    Check(name: "output-idle-stops-the-device-and-wakes-for-a-sound") {
        // The virtual profile as it is: idle after the default 5 s.
        try setUpBoardForHushd()
        try startHushd()
        defer { stopHushd() }
        func idle() -> Bool { ((try? status())?["output"] as? [String: Any])?["idle"] as? Bool == true }
        guard let wentIdle = timedWait(40, idle) else {
            throw CheckFailure("hushd's output did not go idle within 40 s of silence (\(loopbackPlaybackState()))")
        }
        let state = loopbackPlaybackState()
        print("  idle \(wentIdle) after the socket answered; the loopback's playback substream: \(state)")
        try require(!state.contains("RUNNING"), "the loopback's playback substream runs while hushd is idle")
        guard let pid = hushdDaemonPIDs().first else { throw CheckFailure("no hushd process") }
        let before = hushdContextSwitches(pid)
        sleep(.seconds(2))
        let after = hushdContextSwitches(pid)
        let audio = after.audio - before.audio
        print("  over 2 s idle: hush-audio \(audio) context switches, all of hushd's threads \(after.all - before.all)")
        try require(audio <= 2, "the idle audio thread woke \(audio) times in 2 s")

        // A tone 0.5 s into a recording, once from idle and once while the output still runs from it: when its
        // first sample comes out, counted from when hushctl was started (its start-up and the request included).
        func onset(_ what: String, fromIdle: Bool) throws -> (latency: Double, running: Bool) {
            try measure(what) {
                // A take from idle that is taken again (the last one disturbed) starts from idle again: the last
                // take's tone woke the output.
                if fromIdle, timedWait(40, idle) == nil {
                    throw CheckFailure("\(what): hushd's output did not go idle again within 40 s")
                }
                var running = false
                let take = try listenToHushd(
                    seconds: 3,
                    while: [
                        (
                            0.5, "play a tone",
                            {
                                running = loopbackPlaybackState().contains("RUNNING")
                                _ = try startClient(
                                    "idle-tone",
                                    // Playback, which the silence switch never silences (R1): an earlier check
                                    // may have left the switch on silent.
                                    "play --tone \(musicTone) --bus music --category playback --mix-with-others --for 1"
                                )
                            }
                        )
                    ]
                )
                let samples = take.recordings[0].samples
                guard let first = samples.firstIndex(where: { abs($0) > 0.001 }) else {
                    throw CheckFailure("\(what): nothing heard in 3 s")
                }
                let heard = levels(
                    musicTone,
                    samples,
                    from: Double(first) / 48000 + 0.05,
                    to: Double(first) / 48000 + 0.9
                )
                // Only an undisturbed take (no stall of the recorder, no underrun of hushd) is held to the level:
                // a gap a stall made is retaken by `measure`, not failed here.
                let disturbances = take.disturbances
                if disturbances.isEmpty {
                    try require(
                        abs(heard.min - expectedLevel(step: 8)) < 1.5,
                        "\(what): the tone at \(heard) dBFS, not \(expectedLevel(step: 8))"
                    )
                }
                return (((Double(first) / 48000 - take.actedAt(0)) * 1000, running), disturbances)
            }
        }
        let fromIdle = try onset("a tone after idle", fromIdle: true)
        let warm = try onset("a tone while the output runs", fromIdle: false)
        try require(!fromIdle.running, "the output was running when the first tone was asked for")
        print(
            "  first sample after the command: \(Int(fromIdle.latency.rounded())) ms from idle, "
                + "\(Int(warm.latency.rounded())) ms with the output running"
                + (warm.running ? "" : " (it had gone idle again: both from idle)")
        )
    }
]
