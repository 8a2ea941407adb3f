import HushCore
import HushInput
import HushTesting

#if canImport(Glibc)
import Glibc
#endif

// The real-time soak (issue 6, docs/reliability.md#soak; board/virtual/soak/soak.sh): hushd on the virtual profile
// for HUSH_SOAK_SECONDS of wall time while random hardware events (silence switch, volume taps and holds, the jack
// from ALSA and from evdev, media keys) and hushctl clients (sessions on every bus that play, duck, end, or whose
// client is killed; volume, ringer and route changes) keep coming. hushd's resident set (smaps_rollup Rss) and open descriptors are read from
// /proc every few seconds and its underrun count from `hushctl --json status`.

/// What one sample of hushd saw.
private struct SoakSample {
    var seconds: Double
    var residentKiB: Int
    var descriptors: Int
    var underruns: Int
}

/// RSS growth after the warm-up that the soak tolerates (issue 6).
private let soakGrowthLimitKiB = 64

private func environmentNumber(_ name: String, default value: Int) -> Int {
    guard let text = getenv(name) else { return value }
    return Int(String(cString: text)) ?? value
}

/// hushd's pid, from pidof.
private func runningHushd() throws -> Int32 {
    let text = shell("pidof hushd").output.trimmingCharacters(in: .whitespacesAndNewlines)
    guard let pid = Int32(text) else { throw CheckFailure("hushd is not running (pidof: '\(text)')") }
    return pid
}

private func sampleHushd(_ pid: Int32, at seconds: Double) throws -> SoakSample {
    guard let statusText = readWholeFile("/proc/\(pid)/status") else {
        throw CheckFailure("hushd (pid \(pid)) is gone after \(seconds) s")
    }
    // Rss from smaps_rollup, counted from the page tables; VmRSS comes from per-CPU counters that can lag by more
    // than the 64 KiB the soak allows.
    let rollup = readWholeFile("/proc/\(pid)/smaps_rollup") ?? statusText
    let rssLine = rollup.split(separator: "\n").first { $0.hasPrefix("Rss:") || $0.hasPrefix("VmRSS:") } ?? ""
    guard let rss = Int(rssLine.filter(\.isNumber)) else { throw CheckFailure("no Rss for hushd: '\(rssLine)'") }
    let output = try status()["output"] as? [String: Any] ?? [:]
    guard let underruns = output["xruns"] as? Int else { throw CheckFailure("status has no output.xruns: \(output)") }
    return SoakSample(
        seconds: seconds,
        residentKiB: rss,
        descriptors: globPaths("/proc/\(pid)/fd/*").count,
        underruns: underruns
    )
}

/// Drives one random thing a device sees; returns what it did, for the log.
private final class SoakDriver {
    var random: SeededGenerator
    var clients: [(pid: Int32, ends: Instant)] = []
    var plugged = false
    var switchedOn = false
    var events = 0
    var sessions = 0
    static let maximumClients = 6
    var killed = 0
    let tones = [220.0, 440.0, 1000.0, 1500.0, 2500.0]

    init(seed: UInt64) { random = SeededGenerator(seed: seed) }

    func startSession() throws {
        let bus = ["effect", "music", "ringer"].randomElement(using: &random)!
        let category = ["ambient", "soloAmbient", "playback", "playAndRecord"].randomElement(using: &random)!
        var options = ""
        if Bool.random(using: &random) { options += " --mix-with-others" }
        if Int.random(in: 0..<4, using: &random) == 0 { options += " --duck-others" }
        if Int.random(in: 0..<4, using: &random) == 0 { options += " --transient" }
        let seconds = Int.random(in: 1...12, using: &random)
        let tone = tones.randomElement(using: &random)!
        sessions += 1
        let pid = try startClient(
            "soak-\(sessions % 8)",
            "play --tone \(tone) --bus \(bus) --category \(category)\(options) --for \(seconds)"
        )
        clients.append((pid, monotonicNow() + .seconds(Int64(seconds) + 5)))
    }

    /// Kills a client that still runs: its connection drops and hushd must end its sessions.
    func killClient() {
        clients.removeAll { monotonicNow() > $0.ends }
        guard let index = clients.indices.randomElement(using: &random) else { return }
        kill(clients[index].pid, Bool.random(using: &random) ? SIGTERM : SIGKILL)
        clients.remove(at: index)
        killed += 1
    }

    func step(_ kind: Int) throws {
        events += 1
        switch kind {
        case 0, 1, 2:
            clients.removeAll { monotonicNow() > $0.ends }
            if clients.count < Self.maximumClients { try startSession() } else { killClient() }
        case 3:
            killClient()
        case 4:
            switchedOn.toggle()
            try line(silenceSwitchLine, "silence-switch").set(active: switchedOn)
        case 5:
            try tap(line(Bool.random(using: &random) ? volumeUpLine : volumeDownLine, "volume button"))
        case 6:
            // A hold long enough to repeat (R3).
            let button = try line(Bool.random(using: &random) ? volumeUpLine : volumeDownLine, "volume button")
            try button.set(active: true)
            sleep(.milliseconds(Int64.random(in: 550...1200, using: &random)))
            try button.set(active: false)
        case 7:
            plugged.toggle()
            if Bool.random(using: &random) {
                try setJack(plugged)
            } else {
                guard let keys = virtualKeys else { throw CheckFailure("no uinput keys device") }
                try keys.emit(.headphoneInsert, value: plugged ? 1 : 0)
                try keys.sync()
            }
        case 8:
            guard let keys = virtualKeys else { throw CheckFailure("no uinput keys device") }
            let key = [EvdevCode.playPause, .nextSong, .previousSong].randomElement(using: &random)!
            try keys.key(key, pressed: true)
            try keys.key(key, pressed: false)
        default:
            switch Int.random(in: 0..<3, using: &random) {
            case 0: try hushctl("volume \(Int.random(in: 0...16, using: &random))")
            case 1: try hushctl("ringer \(Int.random(in: 0...16, using: &random))")
            default: try hushctl("route \(["speaker", "headphones", "auto"].randomElement(using: &random)!)")
            }
        }
    }

    /// Ends every client still running, so that the last sample sees hushd with no sessions.
    func stopAll() {
        for client in clients { kill(client.pid, SIGTERM) }
        clients.removeAll()
    }
}

let soakChecks: [Check] = [
    Check(name: "soak-start") {
        try setUpBoardForHushd()
        try startHushd()
        let pid = try runningHushd()
        print("  hushd is up (pid \(pid))")
        // The audio thread must run at SCHED_FIFO, above the clients the soak starts: an underrun that comes from
        // a thread at normal priority says nothing about hushd. /proc/PID/task/TID/stat: rt_priority and policy are
        // fields 40 and 41, counted from the pid (the name in parentheses may hold spaces, so count from its end).
        let audio = globPaths("/proc/\(pid)/task/*").first {
            readWholeFile("\($0)/comm")?.trimmingCharacters(in: .whitespacesAndNewlines) == "hush-audio"
        }
        guard let audio, let stat = readWholeFile("\(audio)/stat"), let close = stat.lastIndex(of: ")") else {
            throw CheckFailure("hushd has no thread named hush-audio")
        }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        let priority = fields.count > 38 ? Int(fields[37]) : nil
        let policy = fields.count > 38 ? Int(fields[38]) : nil
        print(
            "  audio thread \(audio): policy \(policy.map(String.init) ?? "?") (1 = SCHED_FIFO), priority \(priority ?? -1)"
        )
        try require(policy == 1 && priority == 70, "hushd's audio thread is not at SCHED_FIFO 70")
    },
    Check(name: "soak-real-time") {
        let duration = Double(environmentNumber("HUSH_SOAK_SECONDS", default: 60))
        let seed = UInt64(environmentNumber("HUSH_SOAK_SEED", default: 1))
        let interval = 5.0
        // The warm-up: every kind of event at least once, then random ones for a tenth of the run (at least 20 s),
        // so that what hushd allocates once (queues, a first ducking, a first ringer) is not counted as growth.
        let warmUp = max(20.0, duration / 10)
        try require(
            duration >= warmUp + 3 * interval,
            "HUSH_SOAK_SECONDS=\(Int(duration)) leaves no time after the warm-up"
        )
        let pid = try runningHushd()
        let driver = SoakDriver(seed: seed)
        let start = monotonicNow()
        func elapsed() -> Double { Double((monotonicNow() - start).nanoseconds) / 1e9 }
        let first = try sampleHushd(pid, at: 0)
        var samples: [SoakSample] = []
        print("  soak: \(Int(duration)) s, seed \(seed), warm-up \(Int(warmUp)) s, a sample every \(Int(interval)) s")
        /// Random events until `end`, sampling every `interval`.
        func drive(until end: Double) throws {
            var next = (elapsed() / interval).rounded(.up) * interval
            while elapsed() < end {
                try driver.step(Int.random(in: 0...12, using: &driver.random))
                sleep(.milliseconds(Int64.random(in: 150...1500, using: &driver.random)))
                guard elapsed() >= next else { continue }
                let sample = try sampleHushd(pid, at: elapsed())
                samples.append(sample)
                print(
                    "  t=\(Int(sample.seconds)) s rss=\(sample.residentKiB) KiB fds=\(sample.descriptors) "
                        + "underruns=\(sample.underruns) clients=\(driver.clients.count)"
                )
                fflush(nil)
                next += interval
            }
        }
        /// hushd with every client gone: its descriptors are then its own, comparable from one time to another.
        func quiet() throws -> SoakSample {
            driver.stopAll()
            sleep(.seconds(2))
            let sample = try sampleHushd(pid, at: elapsed())
            samples.append(sample)
            return sample
        }
        for kind in 0...9 {
            try driver.step(kind)
            sleep(.milliseconds(300))
        }
        // As many clients at once as the run will have: their connections' buffers are hushd's high-water mark.
        while driver.clients.count < SoakDriver.maximumClients { try driver.startSession() }
        try driver.step(9)
        sleep(.seconds(3))
        try drive(until: warmUp)
        let baseline = try quiet()
        try drive(until: duration)
        let last = try quiet()
        let sessionsLeft = (try status()["sessions"] as? [[String: Any]] ?? []).count

        let after = samples.filter { $0.seconds >= baseline.seconds }
        let peak = after.map(\.residentKiB).max()!
        let growth = peak - baseline.residentKiB
        let busy = after.map(\.descriptors)
        let underruns = last.underruns - first.underruns
        print(
            "  soak: \(Int(last.seconds)) s, \(driver.events) events, \(driver.sessions) sessions "
                + "(\(driver.killed) clients killed); RSS \(first.residentKiB) KiB at the start, "
                + "\(baseline.residentKiB) KiB after warm-up (\(Int(baseline.seconds)) s), peak \(peak), "
                + "end \(last.residentKiB) KiB: growth \(growth) KiB (limit \(soakGrowthLimitKiB)); fds with no "
                + "client \(first.descriptors) at the start, \(baseline.descriptors) after warm-up, "
                + "\(last.descriptors) at the end (\(busy.min()!)-\(busy.max()!) with clients); underruns "
                + "\(underruns); sessions left \(sessionsLeft)"
        )
        try require(growth <= soakGrowthLimitKiB, "hushd's RSS grew \(growth) KiB after the warm-up")
        try require(
            first.descriptors == baseline.descriptors && baseline.descriptors == last.descriptors,
            "hushd's open descriptors with no client changed: \(first.descriptors), \(baseline.descriptors), "
                + "\(last.descriptors)"
        )
        // hushd's own account of each: the longest gap between periods and the likeliest cause (a gap longer than
        // the queue is the thread held off, which under TCG is the emulated machine standing still).
        for warning in underrunWarnings() { print("  hushd said: \(warning)") }
        try require(underruns == 0, "\(underruns) underrun(s), none provoked")
        try require(sessionsLeft == 0, "\(sessionsLeft) session(s) left after every client ended")
    },
]
