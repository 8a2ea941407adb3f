import Foundation
import HushALSA
import HushCore

#if canImport(Glibc)
import Glibc
import HushTesting
#endif

// The fault checks (board/virtual/scenarios/faults.sh, issue 6 §3): hushd on the virtual profile, as on a board,
// stopped, starved, robbed of its sound card and killed while it plays — and each time what comes out of the
// loopback, hushd's counters and its clients are checked.
//
// The quick version runs in `make test`; `make faults` runs the long one. The lengths come from
// /payload/faults.conf (`load_seconds=…`, `sweep_seconds=…`, `cycles=…`), which the make target writes.

/// The lengths of this run: quick unless /payload/faults.conf says otherwise.
struct FaultSettings {
    var loadSeconds = 8
    var sweepSeconds = 4
    var cycles = 3

    static let current: FaultSettings = {
        var settings = FaultSettings()
        for line in (readFile("/payload/faults.conf") ?? "").split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, let value = Int(parts[1]), value > 0 else { continue }
            switch parts[0] {
            case "load_seconds": settings.loadSeconds = value
            case "sweep_seconds": settings.sweepSeconds = value
            case "cycles": settings.cycles = value
            default: print("  faults.conf: unknown setting '\(parts[0])' ignored")
            }
        }
        return settings
    }()
}

/// The silent stretches of a steady tone: runs of 1 ms windows whose RMS is under -54 dBFS, at least `minimum`
/// long, between `from` and `to` seconds. Each is (start, length) in milliseconds.
func gaps(in samples: [Float], from: Double, to: Double, minimum: Int = 2) -> [(start: Int, length: Int)] {
    let window = 48
    var found: [(Int, Int)] = []
    var runStart: Int?
    for ms in Int(from * 1000)..<min(Int(to * 1000), samples.count / window) {
        let slice = samples[(ms * window)..<((ms + 1) * window)]
        let rms = (slice.reduce(0) { $0 + $1 * $1 } / Float(window)).squareRoot()
        if rms < 0.002 {
            if runStart == nil { runStart = ms }
        } else if let start = runStart {
            if ms - start >= minimum { found.append((start, ms - start)) }
            runStart = nil
        }
    }
    return found
}

/// RMS of `samples` from `ms` for `length` milliseconds.
func rms(_ samples: [Float], at ms: Int, length: Int) -> Float {
    let slice = samples[(ms * 48)..<min((ms + length) * 48, samples.count)]
    return (slice.reduce(0) { $0 + $1 * $1 } / Float(max(slice.count, 1))).squareRoot()
}

let faultChecks: [Check] = [
    Check(name: "faults-start") {
        try setUpBoardForHushd()
        try startHushd()
        let settings = FaultSettings.current
        print(
            "  hushd is up; load \(settings.loadSeconds) s, period sweep \(settings.sweepSeconds) s per period, "
                + "\(settings.cycles) device removals"
        )
    },
    Check(name: "faults-underruns-sigstop-10-50-200-ms") {
        // hushd stopped for 10, 50 and 200 ms while music plays: the device runs dry once what it queued at the
        // audio thread's last period is played — music alone is mixed in the longest period (R24), 2048 frames
        // queued on a wake level of 1536: 75 ms. Every silence heard must be an underrun hushd counted; the music must be back within two
        // periods of hushd's audio thread running again, fading in, and nothing may be left playing afterwards.
        //
        // When the thread ran again is hushd's own account: its underrun warning gives the longest gap between the
        // starts of two periods, which spans the stop and any stall of the emulated machine around it. The silence
        // that gap explains is the gap less the 3 periods queued at the last start before it; what is heard beyond
        // that is hushd's recovery. A silence away from the stop (another stall) or periods the capture lost make
        // the take be measured again.
        let client = try startClient(
            "fault-music",
            "play --tone \(musicTone) --bus music --category playback --for 600"
        )
        try waitForPlaying(1)
        let pid = try hushdPID()
        let period = try outputPeriod()
        let periodMs = Double(period.frames) / 48
        let buffered = period.queueMilliseconds
        print("  music alone: \(period.frames)-frame periods, \(buffered) ms queued after each")
        for stopMs in [10, 50, 200] {
            struct Stop {
                var heard: [Float] = []
                var stoppedAt = 0.0
                var stoppedFor = 0.0
                var counted = 0
                var warnings: [String] = []
                var gaps: [Int] = []
                var silences: [(start: Int, length: Int)] = []
                /// The silences from the stop to the end of the longest one, with what sounded between them.
                var outage: (start: Int, length: Int)?
            }
            let stop = try measure("the \(stopMs) ms stop") {
                var stop = Stop()
                let before = try underrunsCounted()
                let warned = underrunWarnings().count
                var stopped = (Instant.zero, Instant.zero)
                let take = try listen(
                    to: [speakerCapture],
                    seconds: 2,
                    while: [
                        (
                            0.8, "SIGSTOP for \(stopMs) ms",
                            {
                                stopped.0 = monotonicNow()
                                kill(pid, SIGSTOP)
                                sleep(.milliseconds(Int64(stopMs)))
                                kill(pid, SIGCONT)
                                stopped.1 = monotonicNow()
                            }
                        )
                    ]
                )
                stop.heard = take.recordings[0].samples
                stop.stoppedAt = take.recordings[0].seconds(at: stopped.0)
                stop.stoppedFor = Double((stopped.1 - stopped.0).nanoseconds) / 1e6
                stop.counted = try underrunsCounted() - before
                // hushd writes its warning when it next looks at the audio thread's counters.
                if stop.counted > 0 { _ = waitFor(3) { underrunWarnings().count > warned } }
                stop.warnings = Array(underrunWarnings().dropFirst(warned))
                stop.gaps = stop.warnings.compactMap { warning in
                    warning.firstMatch(of: /longest gap between periods was (\d+) ms/).flatMap { Int($0.1) }
                }
                stop.silences = gaps(in: stop.heard, from: 0.3, to: 1.9)
                var disturbances = take.disturbances
                // The thread runs again at most a period (the one it was writing) after the stop: later than that,
                // the machine held it off after SIGCONT (or hushd dawdled after the underrun; a hushd that does it
                // every time fails as none of the takes can be judged).
                if let gap = stop.gaps.max(), Double(gap) > stop.stoppedFor + periodMs + 10 {
                    disturbances.append(
                        "hushd's audio thread ran again \(gap - Int(stop.stoppedFor)) ms after the "
                            + "\(Int(stop.stoppedFor)) ms stop by its longest gap between periods (\(gap) ms), more than a period later"
                    )
                }
                let stopStart = Int(stop.stoppedAt * 1000)
                // The stop's outage: from the first silence after the stop began through every silence that
                // follows within 100 ms of sound, so that a recovery that plays a period and stops again is one
                // slow recovery, not two quick ones.
                var outage: (start: Int, end: Int)?
                for silence in stop.silences where silence.start + silence.length > stopStart {
                    if let current = outage {
                        if silence.start - current.end <= 100 {
                            outage = (current.start, silence.start + silence.length)
                        }
                    } else if silence.start <= stopStart + Int(stop.stoppedFor) + 2 * Int(buffered) {
                        outage = (silence.start, silence.start + silence.length)
                    }
                }
                stop.outage = outage.map { ($0.start, $0.end - $0.start) }
                let elsewhere = stop.silences.filter { silence in
                    guard let outage else { return true }
                    return silence.start + silence.length <= outage.start || silence.start >= outage.end
                }
                if !elsewhere.isEmpty {
                    disturbances.append(
                        "silence away from the stop at \(elsewhere.map { "\($0.start) ms (\($0.length) ms)" }) of the "
                            + "capture (the stop at \(stopStart) ms): the emulated machine stalled"
                    )
                }
                return (stop, disturbances)
            }
            let longest = stop.outage?.length ?? 0
            let steady = levels(musicTone, stop.heard, from: stop.stoppedAt + 0.6, to: 1.95).min
            // The fade-in: the first millisecond after the outage is quieter than the tone's steady RMS.
            let fade = stop.outage.map { outage in
                rms(stop.heard, at: outage.start + outage.length, length: 1)
                    / rms(stop.heard, at: outage.start + outage.length + 20, length: 20)
            }
            // hushd's longest gap between periods (the stop, and any stall with it); without an underrun warning,
            // the stop as the check measured it.
            let held = Double(stop.gaps.max() ?? Int(stop.stoppedFor.rounded()))
            let recovery = Double(longest) - max(0, held - buffered)
            print(
                "  stopped \(stopMs) ms (\(Int(stop.stoppedFor.rounded())) ms by the check's clock): \(stop.counted) "
                    + "underrun(s) counted, \(stop.silences.count) silence(s) heard, outage \(longest) ms; the audio "
                    + "thread held \(Int(held)) ms by hushd's account (recovery ≈ \(Int(recovery.rounded())) ms); "
                    + "first ms after it at " + (fade.map { String(format: "%.2f", $0) } ?? "-")
                    + " of the steady level; music \(steady) dBFS"
            )
            for warning in stop.warnings { print("  hushd said: \(warning)") }
            try require(
                stop.counted >= stop.silences.count,
                "\(stop.silences.count) silences heard, \(stop.counted) underruns counted"
            )
            if stop.stoppedFor > buffered {
                try require(stop.counted >= 1, "a \(stopMs) ms stop emptied the device but no underrun was counted")
                try require(!stop.silences.isEmpty, "a \(stopMs) ms stop left no silence in the capture")
            }
            if stop.counted > 0 {
                // hushd's warnings say what it saw: the audio thread's longest gap between periods spans the stop.
                try require(
                    !stop.warnings.isEmpty && stop.gaps.count == stop.warnings.count,
                    "hushd's underrun warnings give no gap between periods: \(stop.warnings)"
                )
                try require(
                    Double(stop.gaps.max() ?? 0) >= stop.stoppedFor - 20,
                    "hushd's longest gap between periods (\(stop.gaps) ms) does not span the "
                        + "\(Int(stop.stoppedFor)) ms stop"
                )
                if stopMs == 200 {
                    try require(
                        stop.warnings.contains { $0.contains("held off") },
                        "a 200 ms stop was not reported as the thread held off: \(stop.warnings)"
                    )
                }
            }
            try require(
                recovery <= 2 * periodMs + 2,
                "the music came back \(Int(recovery)) ms after the silence hushd's \(Int(held)) ms gap between periods "
                    + "explains (\(longest) ms of outage; at most two periods, \(Int(2 * periodMs)) ms, allowed)"
            )
            if let fade { try require(fade < 0.9, "no fade-in after the underrun: first ms at \(fade) of steady") }
            try require(abs(steady - expectedLevel(step: 8)) < 1, "the music is back at its level: \(steady)")
        }
        kill(client, SIGTERM)
        try waitForSilence(on: "music")
        let after = try capture("the silence after the client stopped")
        let stuck = [musicTone, effectTone, ringerTone].map { levels($0, after, from: 0.1, to: 0.95).max }.max() ?? 0
        let sessions = (try status()["sessions"] as? [[String: Any]])?.count ?? -1
        print("  after the client stopped: loudest tone \(stuck) dBFS, \(sessions) session(s)")
        try require(stuck < -80 && sessions == 0, "a voice is stuck: \(stuck) dBFS, \(sessions) sessions")
    },
    Check(name: "faults-cpu-load-three-buses") {
        // stress-ng on every CPU of the guest while hushd plays on all three buses: underruns are counted and
        // reported (on the console and in status); then the smallest period that plays through the same load
        // without one, by `hushd play`.
        let settings = FaultSettings.current
        let cpus = sysconf(Int32(_SC_NPROCESSORS_ONLN))
        let clients = try [
            startClient("load-music", "play --tone \(musicTone) --bus music --category playback --for 600"),
            startClient("load-effect", "play --tone \(effectTone) --bus effect --category ambient --for 600"),
            startClient(
                "load-ringer",
                "play --tone \(ringerTone) --bus ringer --category playback --mix-with-others --for 600"
            ),
        ]
        try waitForPlaying(3)
        let before = try underrunsCounted()
        let warned = underrunWarnings().count
        shell("stress-ng --cpu \(cpus) --timeout \(settings.loadSeconds)s --quiet")
        let counted = try underrunsCounted() - before
        let playing = (try status()["sessions"] as? [[String: Any]])?.filter { $0["state"] as? String == "playing" }
        print(
            "  \(settings.loadSeconds) s of stress-ng --cpu \(cpus), three buses at 512-frame periods: \(counted) "
                + "underrun(s) counted; \(playing?.count ?? 0) sessions still playing"
        )
        try require(playing?.count == 3, "the load stopped sessions: \(playing?.count ?? 0) play")
        // Only the warnings logged during the load (the SIGSTOP check's are in the same log), which hushd writes
        // when it next looks at the audio thread's counters.
        if counted > 0 { _ = waitFor(3) { underrunWarnings().count > warned } }
        let warnings = underrunWarnings().dropFirst(warned)
        for warning in warnings { print("  hushd said: \(warning)") }
        if counted > 0 {
            try require(!warnings.isEmpty, "\(counted) underrun(s) counted under load but none reported in hushd's log")
        }
        for client in clients { kill(client, SIGTERM) }
        try waitForSilence(on: "music")
        stopHushd()

        // The period sweep: three voices through `hushd play` under the same load, on the Dummy card. Not on the
        // Loopback card: snd-aloop in this kernel (6.1) moves its pointer on the jiffies timer (4 ms at HZ=250),
        // and takes 128-frame (2.7 ms) periods at a small fraction of their rate even with no load (82 of 3 000
        // periods in 8 s, no underrun), which measured the driver, not hushd. snd-dummy (hrtimer=1) runs on a
        // high-resolution timer and keeps time at 64 frames.
        var table: [(period: Int, underruns: Int, share: Int)] = []
        let scenario = "/tmp/scenario-load.txt"
        try writeFile(
            scenario,
            """
            0 activate 1 music playback tone=440 loop
            0 activate 2 effect ambient mix tone=1000 loop
            0 activate 3 ringer playback mix tone=1500 loop
            0 play 1
            0 play 2
            0 play 3
            \(settings.sweepSeconds) end

            """
        )
        for period in [64, 128, 256, 512, 1024, 2048] {
            shell("stress-ng --cpu \(cpus) --timeout \(settings.sweepSeconds + 2)s --quiet &")
            sleep(.milliseconds(300))
            try startPlay(pcm: "hw:Dummy,0,0", scenarioPath: scenario, period: period)
            let summary =
                awaitPlaySummary(seconds: Double(settings.sweepSeconds) + 5)
                .split(separator: "\n").first { $0.hasPrefix("played ") }.map(String.init) ?? "no summary"
            shell("killall stress-ng")
            sleep(.milliseconds(300))
            let words = summary.split(separator: " ")
            let underruns = words.firstIndex(of: "underruns,").flatMap { Int(words[$0 - 1]) } ?? -1
            let periods = words.firstIndex(of: "periods,").flatMap { Int(words[$0 - 1]) } ?? 0
            let share = periods * period * 100 / (settings.sweepSeconds * 48000)
            table.append((period, underruns, share))
            print("  period \(period) under load: \(summary) (\(share)% of the periods in that time)")
        }
        // Sustained: no underrun, and the device took at least 80% of the periods in that time.
        let sustained = table.first { $0.underruns == 0 && $0.share >= 80 }?.period
        print("  smallest period with no underrun under stress-ng in the VM: \(sustained.map(String.init) ?? "none")")
        try require(table.allSatisfy { $0.underruns >= 0 }, "hushd play printed no summary for a period: \(table)")
        try require(sustained != nil, "no period from 64 to 2048 frames played through the load without an underrun")
        try startHushd()
    },
    Check(name: "faults-device-removal-repeated") {
        // snd-dummy unbound and bound again, repeatedly, under `hushd play`: every time the card must go (hushd
        // closed it), hushd must stay quiet while it is gone and feed it again within 500 ms of its return.
        let settings = FaultSettings.current
        let driver = "/sys/bus/platform/drivers/snd_dummy"
        let pcmStatus = "/proc/asound/Dummy/pcm0p/sub0/status"
        let scenario = "/tmp/scenario-removal.txt"
        let seconds = settings.cycles * 3 + 4
        try writeFile(scenario, "0 activate 1 music playback tone=440 loop\n0 play 1\n\(seconds) end\n")
        try startPlay(pcm: "hw:Dummy,0,0", scenarioPath: scenario, period: 512)
        func running() -> Bool { readFile(pcmStatus)?.contains("state: RUNNING") == true }
        // Start-up of `hushd play` in a loaded TCG guest can take seconds; the removals are what is timed.
        try require(waitFor(60) { running() } != nil, "hushd never started feeding snd-dummy within 60 s")
        // The check's own handle on the card goes first (the kernel's unbind waits for every handle to close); the
        // amplifier switch is made again once the removals are over.
        amplifierControl = nil
        defer {
            amplifierControl = try? ALSAUserControl(
                card: "Dummy",
                element: speakerAmplifierSwitch,
                initial: true,
                count: 2,
                writableByOthers: true
            )
        }
        var backTimes: [TimedWait] = []
        var goneTimes: [Int64] = []
        for cycle in 1...settings.cycles {
            // In the background: the kernel's unbind waits until every handle on the card is closed.
            try require(system("echo snd_dummy.0 > \(driver)/unbind &") == 0, "could not start the unbind")
            guard let gone = waitFor(3, { readFile("/proc/asound/cards")?.contains("Dummy") != true }) else {
                throw CheckFailure("cycle \(cycle): the card is still there 3 s after the unbind")
            }
            sleep(.milliseconds(700))
            try writeFile("\(driver)/bind", "snd_dummy.0")
            guard let back = timedWait(3, { running() }) else {
                throw CheckFailure("cycle \(cycle): hushd did not feed the card within 3 s of its return")
            }
            goneTimes.append(gone.milliseconds)
            backTimes.append(back)
            sleep(.milliseconds(800))
        }
        let summary =
            awaitPlaySummary(seconds: Double(seconds) + 5)
            .split(separator: "\n").first { $0.hasPrefix("played ") }.map(String.init) ?? "no summary"
        print("  \(settings.cycles) removals: card gone after \(goneTimes) ms, output back after \(backTimes)")
        print("  hushd: \(summary)")
        try require(
            backTimes.allSatisfy { $0.judged < .milliseconds(500) },
            "output came back later than 500 ms: \(backTimes)"
        )
        try require(
            summary.contains(" \(settings.cycles) device losses") && summary.contains(" \(settings.cycles) reopenings"),
            "every loss and return counted: \(summary)"
        )
    },
    Check(name: "faults-loopback-card-removed-under-the-daemon") {
        // The daemon's own card (output, its volume controls, the "Headphone Jack" it reads) unbound and bound
        // again while music plays: hushd keeps running, says what happened, and plays again once it is back.
        let driver = "/sys/bus/platform/drivers/snd_aloop"
        let pcmStatus = "/proc/asound/Loopback/pcm0p/sub0/status"
        _ = try startClient("removal-music", "play --tone \(musicTone) --bus music --category playback --for 600")
        try waitForPlaying(1)
        let pid = try hushdPID()
        jackControl = nil
        // The check's own handles on the card go first: the kernel's unbind waits for every one to close.
        try require(system("echo snd_aloop.0 > \(driver)/unbind &") == 0, "could not start the unbind")
        let start = monotonicNow()
        while readFile("/proc/asound/cards")?.contains("Loopback") == true && monotonicNow() - start < .seconds(3) {
            sleep(.milliseconds(10))
        }
        try require(readFile("/proc/asound/cards")?.contains("Loopback") != true, "the Loopback card did not go")
        let goneAfter = (monotonicNow() - start).milliseconds
        sleep(.seconds(1))
        let lost = try status()["output"] as? [String: Any]
        try writeFile("\(driver)/bind", "snd_aloop.0")
        guard let backAfter = timedWait(3, { readFile(pcmStatus)?.contains("state: RUNNING") == true }) else {
            throw CheckFailure("hushd did not play on the card again within 3 s of the bind")
        }
        sleep(.milliseconds(500))
        let heard = try capture("music once the card is back")
        // The best 50 ms window: the card is back and playing at its level; a dropout in a loaded TCG guest is not
        // what this check is about.
        let music = levels(musicTone, heard, from: 0.1, to: 0.95).max
        print(
            "  card gone \(goneAfter) ms after the unbind; while gone output open = \(lost?["open"] ?? "?"); "
                + "playing again \(backAfter) after the bind; music \(music) dBFS"
        )
        try require(try hushdPID() == pid, "hushd restarted or died")
        try require(lost?["open"] as? Bool == false, "status did not say the output was lost")
        try require(backAfter.judged < .milliseconds(500), "output came back after \(backAfter), more than 500 ms")
        try require(abs(music - expectedLevel(step: 8)) < 1, "the music is back at its level: \(music)")
        let log = readWholeFile("/tmp/hushd.log") ?? ""
        try require(log.contains("the output device is gone"), "hushd's log does not say the output went")
        jackControl = try ALSAUserControl(card: "Loopback", element: jack, initial: false)
        shell("killall hushctl")
        try waitForSilence(on: "music")
    },
    Check(name: "faults-hushd-starts-before-its-card") {
        // A card whose driver comes up after hushd (a DAC HAT probed late, a USB card plugged in later): hushd
        // starts without its output, its "Headphone Jack" and its amixer volumes, serves its socket, and takes
        // each of them up once the card appears. Failing instead would leave systemd restarting it until its
        // start limit (five in 10 s) gave up for good.
        let driver = "/sys/bus/platform/drivers/snd_aloop"
        let pcmStatus = "/proc/asound/Loopback/pcm0p/sub0/status"
        stopHushd()
        jackControl = nil
        try require(system("echo snd_aloop.0 > \(driver)/unbind") == 0, "could not unbind snd_aloop")
        try require(readFile("/proc/asound/cards")?.contains("Loopback") != true, "the Loopback card did not go")
        let logStart = (readWholeFile("/tmp/hushd.log") ?? "").count
        try startHushd()
        let pid = try hushdPID()
        _ = try startClient("late-music", "play --tone \(musicTone) --bus music --category playback --for 600")
        try waitForPlaying(1)
        let before = try status()["output"] as? [String: Any] ?? [:]
        try writeFile("\(driver)/bind", "snd_aloop.0")
        let playingAfter = timedWait(3) { readFile(pcmStatus)?.contains("state: RUNNING") == true }
        // The codec's jack control, as its driver would add it with the card.
        jackControl = try ALSAUserControl(card: "Loopback", element: jack, initial: false)
        sleep(.milliseconds(300))
        let music = levels(musicTone, try capture("music on the late card"), from: 0.1, to: 0.95).max
        var volumes: [Int] = []
        let controlsStart = monotonicNow()
        while volumes.isEmpty && monotonicNow() - controlsStart < .seconds(3) {
            volumes = (try? ALSAElementClient(card: "Loopback").readAll(ALSAVolumeControls.systemElement)) ?? []
            if volumes.isEmpty { sleep(.milliseconds(100)) }
        }
        try setJack(true)
        var route = ""
        let plugged = monotonicNow()
        while route != "headphones" && monotonicNow() - plugged < .seconds(5) {
            route = (try? status())?["route"] as? String ?? ""
            if route != "headphones" { sleep(.milliseconds(100)) }
        }
        let routeAfter = (monotonicNow() - plugged).milliseconds
        try setJack(false)
        let log = String((readWholeFile("/tmp/hushd.log") ?? "").dropFirst(logStart))
        let lines = log.split(separator: "\n").filter {
            $0.contains("as soon as it appears") || $0.contains("waiting for it")
                || $0.contains("added when it appears")
                || $0.contains("output device is here") || $0.contains("is back")
        }
        for line in lines { print("  log: \(line)") }
        print(
            "  started without the card: output open = \(before["open"] ?? "?"); playing "
                + "\(playingAfter.map(String.init(describing:)) ?? "never") after the "
                + "bind, music \(music) dBFS; hush volume controls \(volumes); the jack plugged: route headphones "
                + "after \(routeAfter) ms"
        )
        try require(try hushdPID() == pid, "hushd restarted or died")
        try require(before["open"] as? Bool == false, "status said the missing output was open: \(before)")
        guard let playingAfter else { throw CheckFailure("output did not play within 3 s of the bind") }
        try require(
            playingAfter.judged < .milliseconds(500),
            "output played \(playingAfter) after the bind, more than 500 ms"
        )
        try require(abs(music - expectedLevel(step: 8)) < 1, "the music plays at its level: \(music)")
        try require(!volumes.isEmpty, "hushd's volume controls were not added to the card when it appeared")
        try require(route == "headphones", "the jack on the late card was not read: route \(route)")
        try require(log.contains("hushd runs without sound"), "the log does not say the output was missing")
        try require(log.contains("the output device is here"), "the log does not say the output appeared")
        shell("killall hushctl")
        try waitForSilence(on: "music")
    },
    Check(name: "faults-crash-kill9-under-supervision") {
        // hushd killed with SIGKILL while it plays, restarted by a supervisor as systemd's Restart=on-failure
        // would: the client sees its connection close, hushd is back with the same volumes and plays again.
        try hushctl("volume 11")
        try hushctl("ringer 6")
        sleep(.milliseconds(1500))  // the state file is written at most once a second
        stopHushd()
        try writeFile(
            "/tmp/supervise.sh",
            """
            while [ ! -e /tmp/supervisor-stop ]; do
                /payload/hushd --config \(e2eConfig) >>/tmp/hushd.log 2>&1
                echo "supervisor: hushd exited with status $?" >>/tmp/supervisor.log
                sleep 0.1
            done

            """
        )
        shell("rm -f /tmp/supervisor-stop /tmp/supervisor.log; sh /tmp/supervise.sh >/dev/null 2>&1 &")
        defer {
            shell("touch /tmp/supervisor-stop")
            stopHushd()
        }
        var start = monotonicNow()
        while shell("/payload/hushctl --socket \(e2eSocket) status").status != 0
            && monotonicNow() - start < .seconds(20)
        {
            sleep(.milliseconds(100))
        }
        let client = try startClient(
            "crash-music",
            "play --tone \(musicTone) --bus music --category playback --for 600"
        )
        try waitForPlaying(1)
        let victim = try hushdPID()
        kill(victim, SIGKILL)
        start = monotonicNow()
        var clientGone: Int64?
        var answering: Int64?
        while monotonicNow() - start < .seconds(20) && (clientGone == nil || answering == nil) {
            if clientGone == nil && kill(client, 0) != 0 { clientGone = (monotonicNow() - start).milliseconds }
            if answering == nil, (try? hushdPID()).map({ $0 != victim }) == true,
                shell("/payload/hushctl --socket \(e2eSocket) status").status == 0
            {
                answering = (monotonicNow() - start).milliseconds
            }
            sleep(.milliseconds(20))
        }
        let clientLog = readWholeFile("/tmp/client-crash-music.log") ?? ""
        let state = try status()
        _ = try startClient("after-crash", "play --tone \(musicTone) --bus music --category playback --for 600")
        try waitForPlaying(1)
        let music = levels(musicTone, try capture("music after the restart"), from: 0.1, to: 0.95).min
        print(
            "  client saw the connection close after \(clientGone.map { "\($0) ms" } ?? "never"); hushd answering "
                + "again after \(answering.map { "\($0) ms" } ?? "never"); volumes \(state["systemVolume"] ?? "?")/"
                + "\(state["ringerVolume"] ?? "?"); music \(music) dBFS (step 11: \(expectedLevel(step: 11)))"
        )
        print("  " + (readWholeFile("/tmp/supervisor.log") ?? "").split(separator: "\n").joined(separator: "; "))
        try require(clientGone != nil, "the client did not notice hushd was gone")
        try require(clientLog.contains("closed the connection"), "the client did not say why it ended: \(clientLog)")
        try require(answering != nil, "the supervisor's hushd never answered")
        try require(state["systemVolume"] as? Int == 11 && state["ringerVolume"] as? Int == 6, "volumes: \(state)")
        try require(abs(music - expectedLevel(step: 11)) < 1, "music at step 11 after the restart: \(music)")
        shell("killall hushctl")
    },
]
