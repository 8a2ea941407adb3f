import HushALSA
import HushCore
import HushTesting

#if canImport(Glibc)
import Glibc
#endif

/// The level of `hz` in the 100 ms window starting at `seconds`, in dBFS.
func level(_ hz: Double, _ samples: [Float], at seconds: Double) -> Double {
    let start = Int(seconds * 48000)
    guard start >= 0, start + 4800 <= samples.count else { return -240 }
    return ToneAnalysis.level(of: hz, in: samples[start..<(start + 4800)], sampleRate: 48000)
}

/// Where `startPlay` sends the output of `hushd play`.
let playLog = "/tmp/hushd-play.log"

/// Starts `hushd play` in the background on `pcm` with the scenario file at `scenarioPath`; its output goes to
/// `playLog`. The old log is removed first: the shell truncates it only when the background job starts, and a
/// reader that came before that once took the previous run's summary for this one's.
func startPlay(pcm: String, scenarioPath: String, period: Int? = nil, extra: String = "") throws {
    unlink(playLog)
    let periodOption = period.map { " --period \($0)" } ?? ""
    let command =
        "/payload/hushd play --board /payload/virtual.toml --pcm \(pcm)\(periodOption) --scenario \(scenarioPath)"
        + " \(extra) >\(playLog) 2>&1 &"
    try require(system(command) == 0, "could not start hushd play on \(pcm)")
}

/// Starts `hushd play` in the background on snd-aloop with `scenario` and waits until it feeds the device.
func playInBackground(_ scenario: String, extra: String = "") throws {
    let path = "/tmp/scenario-\(getpid()).txt"
    try writeFile(path, scenario)
    try startPlay(pcm: "hw:Loopback,0,0", scenarioPath: path, extra: extra)
    // Recording starts once hushd feeds the device: its start-up under a loaded TCG host can take seconds, and the
    // checks read the capture from the music's onset.
    let start = monotonicNow()
    while readFile("/proc/asound/Loopback/pcm0p/sub0/status")?.contains("state: RUNNING") != true {
        guard monotonicNow() - start < .seconds(60) else {
            throw CheckFailure("hushd play did not start feeding hw:Loopback,0,0 within 60 s")
        }
        sleep(.milliseconds(10))
    }
}

/// Polls `condition` every 5 ms for up to `seconds`; how long it took to hold, or nil if it never did.
func waitFor(_ seconds: Double, _ condition: () -> Bool) -> Duration? {
    let start = monotonicNow()
    while monotonicNow() - start < .milliseconds(Int64(seconds * 1000)) {
        if condition() { return monotonicNow() - start }
        sleep(.milliseconds(5))
    }
    return nil
}

/// How long a condition took to hold, and the longest stretch the waiting check was itself held off: a poll every
/// 5 ms that came far later means the emulated machine stalled, and hushd (which waits on the same machine) with it.
struct TimedWait: CustomStringConvertible {
    let elapsed: Duration
    let heldOff: Duration
    /// The time the condition took less the stall the check saw: what a deadline is judged against.
    var judged: Duration { elapsed - heldOff }
    var description: String {
        heldOff < .milliseconds(20)
            ? "\(elapsed.milliseconds) ms"
            : "\(elapsed.milliseconds) ms (the check held off \(heldOff.milliseconds) ms)"
    }
}

/// Polls `condition` every 5 ms for up to `seconds`, noting how late each poll came; nil if it never held.
func timedWait(_ seconds: Double, _ condition: () -> Bool) -> TimedWait? {
    let start = monotonicNow()
    var previous = start
    var heldOff = Duration.zero
    while monotonicNow() - start < .milliseconds(Int64(seconds * 1000)) {
        let now = monotonicNow()
        heldOff = max(heldOff, now - previous - .milliseconds(5))
        previous = now
        if condition() { return TimedWait(elapsed: monotonicNow() - start, heldOff: max(.zero, heldOff)) }
        sleep(.milliseconds(5))
    }
    return nil
}

/// Waits up to `seconds` for hushd play to print its summary; returns the whole log.
func awaitPlaySummary(seconds: Double) -> String {
    let start = monotonicNow()
    while monotonicNow() - start < .milliseconds(Int64(seconds * 1000)) {
        if let log = readWholeFile(playLog), log.contains("played ") { return log }
        sleep(.milliseconds(100))
    }
    return readWholeFile(playLog) ?? ""
}

/// The underruns `hushd play` counted, from the summary it prints at the end; nil without a summary.
func playUnderruns(_ log: String) -> Int? {
    guard let summary = log.split(separator: "\n").first(where: { $0.hasPrefix("played ") }) else { return nil }
    return summary.split(separator: ",").first { $0.contains("underruns") }?.split(separator: " ").first
        .flatMap { Int($0) }
}

/// A log's lines, each indented and marked as hushd's.
func hushdLines(_ log: String) -> String {
    log.split(separator: "\n", omittingEmptySubsequences: false).map { "  hushd: \($0)" }.joined(separator: "\n")
}

/// Plays a 440 Hz tone at -6 dBFS into `pcm` for `seconds`; false when the device cannot be used.
func playTone(pcm: String, seconds: Double) -> Bool {
    guard let playback = try? ALSAPlayback(PlaybackConfiguration(pcm: pcm, periodFrames: 512, periods: 3)) else {
        return false
    }
    let frames = 512
    var samples = [Int16](repeating: 0, count: frames * 2)
    var n = 0
    while Double(n) < seconds * 48000 {
        for frame in 0..<frames {
            let value = Int16(16384 * sin(2 * Double.pi * 440 * Double(n + frame) / 48000))
            samples[2 * frame] = value
            samples[2 * frame + 1] = value
        }
        _ = samples.withUnsafeBytes { playback.write($0.baseAddress!, frames: frames) }
        n += frames
    }
    return true
}

let outputChecks: [Check] = [
    Check(name: "output-silence-switch-on-snd-aloop") {
        // hushd plays music (440 Hz) and an ambient effect (1000 Hz) into snd-aloop; the capture side hears it.
        // The switch comes on 2.5 s in: the capture opens only once hushd feeds the device, and a capture that
        // opened over a second late (as probably happened once in CI, on a clean clone's first boot) began with the
        // effect already silenced.
        // A take that holds an underrun, or periods the capture lost, says how the host was doing: taken again.
        let samples = try measure("the silence switch under hushd play") {
            try playInBackground(
                """
                0 activate 1 music playback tone=440 loop
                0 activate 2 effect ambient tone=1000 loop
                0 play 1
                0 play 2
                2.5 silence on
                4.0 silence off
                5.5 end
                """
            )
            let recording = try record("hw:Loopback,1,0", seconds: 6.5, periodFrames: 512)
            let log = awaitPlaySummary(seconds: 5)
            print(hushdLines(log))
            guard let underruns = playUnderruns(log) else {
                throw CheckFailure("hushd play printed no summary: \(log)")
            }
            let disturbances =
                [recording.disturbance].compactMap { $0 }
                + (underruns > 0 ? ["hushd play counted \(underruns) underrun(s) during it"] : [])
            return (recording.samples, disturbances)
        }
        guard let onset = stride(from: 0.0, to: 2.0, by: 0.01).first(where: { level(440, samples, at: $0) > -40 })
        else { throw CheckFailure("the music never arrived on the capture side") }
        let music = level(440, samples, at: onset + 0.5)
        try require(abs(music - (-30.02)) < 1, "music at system volume 8 should be -30 dBFS, is \(music)")
        let effect = level(1000, samples, at: onset + 0.5)
        try require(
            effect > -31,
            "the effect should sound before silence: 1000 Hz at \(effect) dBFS \(onset + 0.5) s into the capture "
                + "(music onset at \(onset) s)"
        )
        // The switch's two edges are found in the capture rather than assumed at fixed offsets from the onset: under
        // a loaded host the capture can start late, and one 100 ms window is one sample of a noisy clock.
        let end = Double(samples.count) / 48000 - 0.1
        guard
            let silencedAt = stride(from: onset + 0.5, to: end, by: 0.02).first(where: {
                level(1000, samples, at: $0) < -80 && level(440, samples, at: $0) > -31
            })
        else {
            throw CheckFailure(
                "the effect was never silent while the music played: 1000 Hz at onset+2.0 s is "
                    + "\(level(1000, samples, at: onset + 2.0)) dBFS"
            )
        }
        let effectHeard = { (t: Double) in level(1000, samples, at: t) > -31 }
        guard let backAt = stride(from: silencedAt, to: end, by: 0.02).first(where: effectHeard) else {
            throw CheckFailure(
                "the effect is not back after silence off: silent from \(silencedAt - onset) s after the onset, "
                    + "1000 Hz peaks at \(levels(1000, samples, from: silencedAt, to: end).max) dBFS after that"
            )
        }
        let silentFor = backAt - silencedAt
        try require(
            abs(silentFor - 1.5) < 0.25,
            "the effect should be silent for the switch's 1.5 s, was silent for \(silentFor) s"
        )
        let musicWhileSilenced = levels(440, samples, from: silencedAt, to: backAt).min
        try require(musicWhileSilenced > -31, "the music is not silenced: it fell to \(musicWhileSilenced) dBFS")
        print(
            "  effect silent for \(String(format: "%.2f", silentFor)) s; music held at \(musicWhileSilenced) dBFS or more"
        )
        print("  music onset at \(onset) s of capture; levels match the policy")
    },
    Check(name: "output-underrun-recovery-sigstop") {
        // hushd is stopped (SIGSTOP) for 200 ms while it plays: the device underruns, hushd counts it, recovers
        // with a fade-in, and the music comes back.
        // The stop explains one underrun; a take with more (the machine stalled as well) is taken again.
        let (samples, count, summary) = try measure("the 200 ms stop under hushd play") {
            try playInBackground(
                """
                0 activate 1 music playback tone=440 loop
                0 play 1
                5 end
                """
            )
            let stopper = "sleep 2; killall -STOP hushd; sleep 0.2; killall -CONT hushd"
            try require(system("(\(stopper)) &") == 0, "could not start the stopper")
            let recording = try record("hw:Loopback,1,0", seconds: 4.5, periodFrames: 512)
            let log = awaitPlaySummary(seconds: 5)
            print(
                log.split(separator: "\n").filter { $0.contains("underrun") || $0.contains("played") }.map {
                    "  hushd: \($0)"
                }.joined(separator: "\n")
            )
            guard let summary = log.split(separator: "\n").first(where: { $0.hasPrefix("played ") }),
                let count = playUnderruns(log)
            else { throw CheckFailure("hushd play printed no summary: \(log)") }
            let disturbances =
                [recording.disturbance].compactMap { $0 }
                + (count > 1 ? ["hushd play counted \(count) underruns, the stop explains one"] : [])
            return ((recording.samples, count, summary), disturbances)
        }
        try require(count >= 1, "SIGSTOP for 200 ms caused no counted underrun (\(summary))")
        guard let onset = stride(from: 0.0, to: 1.5, by: 0.01).first(where: { level(440, samples, at: $0) > -40 })
        else { throw CheckFailure("the music never arrived") }
        let after = level(440, samples, at: onset + 3.0)
        try require(abs(after - (-30.02)) < 1, "the music is back after the stop: \(after) dBFS")
        print("  \(count) underrun(s) counted; music back at \(Int(after.rounded())) dBFS")
    },
    Check(name: "output-smallest-period") {
        // The smallest period the emulated machine sustains through snd-aloop without an underrun, with the
        // capture side reading: tried from small to large, 3 s each.
        var sustained: Int?
        for period in [64, 128, 256, 512, 1024, 2048] {
            let path = "/tmp/scenario-period.txt"
            try writeFile(path, "0 activate 1 music playback tone=440 loop\n0 play 1\n3 end\n")
            try startPlay(pcm: "hw:Loopback,0,0", scenarioPath: path, period: period)
            _ = try? record("hw:Loopback,1,0", seconds: 2.8, periodFrames: period)
            let log = awaitPlaySummary(seconds: 5)
            let summary = log.split(separator: "\n").first { $0.hasPrefix("played ") }.map(String.init) ?? "no summary"
            print("  period \(period): \(summary)")
            sleep(.milliseconds(300))
            // Sustained: no underrun, and the device really took 3 s of periods (a stalled device takes few).
            let periods =
                summary.split(separator: " ").firstIndex(of: "periods,").flatMap { index in
                    Int(summary.split(separator: " ")[index - 1])
                } ?? 0
            if summary.contains(" 0 underruns") && periods >= 3 * 48000 / period * 9 / 10 {
                sustained = period
                break
            }
        }
        guard let sustained else { throw CheckFailure("no period up to 2048 frames ran without underruns") }
        print("  smallest period sustained under TCG: \(sustained) frames")
    },
    Check(name: "output-device-gone-and-back") {
        // hushd plays on snd-dummy; the driver is unbound (as when a USB DAC is pulled), then bound again. The
        // kernel frees the card only when hushd has closed it, so the unbind finishing proves hushd let go; while
        // the card is gone hushd retries with backoff and stays quiet; once it is back hushd must be feeding it
        // within 500 ms.
        let driver = "/sys/bus/platform/drivers/snd_dummy"
        let status = "/proc/asound/Dummy/pcm0p/sub0/status"
        let path = "/tmp/scenario-devloss.txt"
        try writeFile(path, "0 activate 1 music playback tone=440 loop\n0 play 1\n7 end\n")
        try startPlay(pcm: "hw:Dummy,0,0", scenarioPath: path, period: 512)
        func running() -> Bool { readFile(status)?.contains("state: RUNNING") == true }
        try require(waitFor(3) { running() } != nil, "hushd never started feeding snd-dummy")
        sleep(.milliseconds(500))
        guard
            let pid = globPaths("/proc/[0-9]*/comm").first(where: { readFile($0)?.hasPrefix("hushd") == true })
                .map({ String($0.dropFirst(6).dropLast(5)) })
        else { throw CheckFailure("cannot find hushd's process") }
        guard
            let audio = globPaths("/proc/\(pid)/task/[0-9]*/comm").first(where: {
                readFile($0)?.hasPrefix("hush-audio") == true
            })
        else { throw CheckFailure("hushd has no thread named hush-audio") }
        func cpuTicks() -> Int {
            // The audio thread's utime and stime: fields 14 and 15 of its stat (after the name in parentheses).
            let statPath = String(audio.dropLast(4)) + "stat"
            guard let stat = readFile(statPath), let close = stat.lastIndex(of: ")") else { return 0 }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            return (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0)
        }
        try require(system("echo snd_dummy.0 > \(driver)/unbind &") == 0, "could not start the unbind")
        guard let unbound = waitFor(3, { readFile("/proc/asound/cards")?.contains("Dummy") != true }) else {
            throw CheckFailure("the card is still there 3 s after the unbind: hushd did not close it")
        }
        print("  card gone \(unbound.milliseconds) ms after the unbind (hushd closed its handle)")
        let ticksBefore = cpuTicks()
        sleep(.seconds(1))
        let ticksGone = cpuTicks() - ticksBefore
        let hz = Int(sysconf(Int32(_SC_CLK_TCK)))
        print("  hushd's audio thread used \(ticksGone * 1000 / hz) ms of CPU in the 1 s the card was gone")
        try require(
            ticksGone * 1000 / hz <= 50,
            "the audio thread is busy while the device is gone: \(ticksGone) ticks"
        )
        try writeFile("\(driver)/bind", "snd_dummy.0")
        guard let back = timedWait(3, { running() }) else {
            print(readFile(playLog).map(hushdLines) ?? "")
            throw CheckFailure("hushd did not resume output within 3 s of the card's return")
        }
        print("  output running again \(back) after the card returned")
        try require(back.judged < .milliseconds(500), "output came back after \(back), more than 500 ms")
        let log = awaitPlaySummary(seconds: 8)
        guard let summary = log.split(separator: "\n").first(where: { $0.hasPrefix("played ") }) else {
            throw CheckFailure("hushd play printed no summary: \(log)")
        }
        print("  hushd: \(summary)")
        try require(summary.contains(" 1 device losses") && summary.contains(" 1 reopenings"), "summary: \(summary)")
    },
    Check(name: "output-capture-device-gone-and-back") {
        // hushd play relays snd-dummy's capture onto the music bus (as it would a USB microphone or line input);
        // the driver is unbound, then bound again. The unbind finishing proves hushd closed the capture handle at
        // once; hushd says so, opens it again when the card is back and says that too, while the output plays on.
        let driver = "/sys/bus/platform/drivers/snd_dummy"
        let status = "/proc/asound/Dummy/pcm0c/sub0/status"
        func capturing() -> Bool { readFile(status)?.contains("state: RUNNING") == true }
        try playInBackground(
            """
            0 activate 1 music playback capture=hw:Dummy,0,0
            0 play 1
            9 end
            """
        )
        try require(waitFor(3) { capturing() } != nil, "hushd never started capturing from snd-dummy")
        sleep(.milliseconds(500))
        try require(system("echo snd_dummy.0 > \(driver)/unbind &") == 0, "could not start the unbind")
        guard let unbound = waitFor(3, { readFile("/proc/asound/cards")?.contains("Dummy") != true }) else {
            throw CheckFailure("the card is still there 3 s after the unbind: hushd did not close its capture")
        }
        guard let said = waitFor(2, { readFile(playLog)?.contains("capture hw:Dummy,0,0: reads fail") == true })
        else { throw CheckFailure("hushd did not say the capture was lost: \(readFile(playLog) ?? "")") }
        print("  card gone \(unbound.milliseconds) ms after the unbind; hushd said so \(said.milliseconds) ms later")
        sleep(.milliseconds(1000))
        try writeFile("\(driver)/bind", "snd_dummy.0")
        guard let back = timedWait(3, { capturing() }) else {
            throw CheckFailure(
                "hushd did not capture again within 3 s of the card's return: \(readFile(playLog) ?? "")"
            )
        }
        let backSaid = waitFor(2, { readFile(playLog)?.contains("capture hw:Dummy,0,0 is back") == true })
        print("  capturing again \(back) after the card returned; said: \(backSaid != nil)")
        try require(backSaid != nil, "hushd did not say the capture is back: \(readFile(playLog) ?? "")")
        try require(back.judged < .milliseconds(500), "the capture came back after \(back), more than 500 ms")
        let output = readFile("/proc/asound/Loopback/pcm0p/sub0/status")?.contains("state: RUNNING") == true
        try require(output, "the output stopped while the capture was gone")
        let log = awaitPlaySummary(seconds: 10)
        try require(log.contains("played "), "hushd play printed no summary: \(log)")
    },
    Check(name: "output-live-capture-into-music-bus") {
        // A program plays a 440 Hz tone into snd-aloop's second substream; hushd captures it as a live voice on
        // the music bus (playback category) through a capture router and relay (the recorders' path), and mixes it
        // out through the first substream. Unplugging pauses it (R5) and its relay hears nothing; plugged and
        // played again, it is live at once.
        try require(
            system("/payload/hush-vboard-check --tone hw:Loopback,0,1 15 >/tmp/tone.log 2>&1 & echo $! >/tmp/tone.pid")
                == 0,
            "no tone"
        )
        // Long enough for a slow hushd start; stopped with the check, so the loopback is free for the next one.
        defer { _ = system("kill $(cat /tmp/tone.pid)") }
        sleep(.milliseconds(300))
        try playInBackground(
            """
            0 plug
            0 activate 1 music playback capture=hw:Loopback,1,1
            0 play 1
            2.5 unplug
            4.5 plug
            4.5 play 1
            6.5 end
            """
        )
        let samples = try record("hw:Loopback,1,0", seconds: 7, periodFrames: 512).samples
        let log = awaitPlaySummary(seconds: 5)
        guard let onset = stride(from: 0.0, to: 2.0, by: 0.01).first(where: { level(440, samples, at: $0) > -40 })
        else { throw CheckFailure("the captured tone never came out of hushd: \(log)") }
        // Under TCG three processes share two emulated CPUs, so a 100 ms window may catch a late capture period
        // (played as silence): the level is judged on the best window of the first two seconds.
        let live = stride(from: onset + 0.3, to: onset + 2.2, by: 0.1).map { level(440, samples, at: $0) }.max() ?? -240
        try require(abs(live - (-30.02)) < 1.5, "the live voice at system volume 8 should be -30 dBFS, is \(live)")
        let paused = stride(from: onset + 2.9, to: onset + 4.4, by: 0.1).map { level(440, samples, at: $0) }.max() ?? 0
        try require(paused < -80, "after the unplug the live voice is paused (R5): \(paused) dBFS")
        let again =
            stride(from: onset + 4.8, to: onset + 6.2, by: 0.1).map { level(440, samples, at: $0) }.max() ?? -240
        try require(abs(again - (-30.02)) < 1.5, "plugged and played again, the live voice is back: \(again) dBFS")
        print(
            "  live capture at \(Int(live.rounded())) dBFS, paused by the unplug (\(Int(paused.rounded())) dBFS), "
                + "back at \(Int(again.rounded())) dBFS when plugged and played"
        )
    },
]
