import HushCore
import HushTesting

#if canImport(Glibc)
import Glibc
#endif

// hushd stops (SIGTERM) or dies (SIGKILL) under a playing aplay and a recording arecord: both must fail with
// -ENODEV ("No such device") within one of their periods, not hang. A stopping hushd marks every stream closed in
// shared memory first; a killed one is noticed by the plugin's poll when its socket hangs up.

/// The applications' period here: aplay and arecord are given 100 ms periods (-F) in a 400 ms buffer (-B).
let applicationPeriod = 0.1

/// Whether `pid` runs (not a zombie, not reaped), by /proc.
func isAlive(_ pid: pid_t) -> Bool {
    guard let stat = readFile("/proc/\(pid)/stat"), let close = stat.lastIndex(of: ")") else { return false }
    return stat[stat.index(close, offsetBy: 2)] != "Z"
}

let endingChecks: [Check] = [
    Check(name: "streams-hushd-stopping-or-dying-fails-aplay-and-arecord-at-once") {
        for (signal, what) in [(SIGTERM, "stops (SIGTERM)"), (SIGKILL, "dies (kill -9)")] {
            let ended = try measure("aplay and arecord when hushd \(what)") {
                if hushdDaemonPIDs().isEmpty { try startHushd() }
                let timing = ["-F", "100000", "-B", "400000"]
                // A mixable player, so that the recorder's session (non-mixable) does not interrupt it.
                let player = try Application(
                    "aplay",
                    ["-q", "-D", "hush:CATEGORY=playback,OPTIONS=mixWithOthers"] + timing
                        + [try ToneFile.make(music, 60)],
                    name: "aplay"
                )
                let recorder = try Application(
                    "arecord",
                    ["-q", "-D", "hush:CATEGORY=record", "-t", "raw", "-f", "S16_LE", "-r", "16000", "-c", "1"]
                        + timing + ["/tmp/ending.raw"],
                    name: "arecord"
                )
                _ = try waitForStreams([player, recorder], "running")
                sleep(.milliseconds(500))
                let pid = try hushdPID()
                // A connection of the check's own: it hangs up when hushd's descriptors close, which is when the
                // applications' connections do (a killed process's memory is torn down first, for a while under
                // TCG, and until then nothing can tell them).
                _ = try hushdStatus.status()
                // Both applications are watched every millisecond; how late the watch itself came (the emulated
                // machine stalled) is noted, and a stall longer than the bound makes the take be measured again.
                let killed = monotonicNow()
                kill(pid, signal)
                var ends: [Instant?] = [nil, nil]
                var hungUp: Instant?
                var gone: Instant?
                var last = killed
                var stall = Duration.zero
                while (ends.contains(nil) || gone == nil || hungUp == nil) && monotonicNow() - killed < .seconds(10) {
                    sleep(.milliseconds(1))
                    let now = monotonicNow()
                    stall = max(stall, now - last - .milliseconds(1))
                    last = now
                    // hushd is gone when it is a zombie or reaped: its descriptors (the sockets) closed before.
                    if gone == nil, !isAlive(pid) { gone = now }
                    if hungUp == nil, hushdStatus.hungUp() { hungUp = now }
                    for (index, application) in [player, recorder].enumerated()
                    where ends[index] == nil && !application.isRunning {
                        ends[index] = now
                    }
                }
                let results = [player.finish(within: 0.1), recorder.finish(within: 0.1)]
                let measured = (
                    applications: [player, recorder], killed: killed, gone: gone ?? killed,
                    hungUp: hungUp ?? killed, ends: ends,
                    results: results, stall: stall
                )
                let bound = Duration.milliseconds(Int64(applicationPeriod * 1000))
                let disturbed = stall > bound ? ["the check's own watch stalled \(stall.milliseconds) ms"] : []
                if !disturbed.isEmpty { stopHushd(signal: "KILL") }
                return (measured, disturbed)
            }
            print(
                "  hushd \(what): its connections hung up \(ms(ended.hungUp, ended.killed)) after the signal, the "
                    + "process gone after \(ms(ended.gone, ended.killed)) (the watch stalled at most "
                    + "\(ended.stall.milliseconds) ms)"
            )
            // A stopping hushd ends every stream (their state in shared memory) before it closes anything: judged
            // from the signal. A killed one tells nobody until the kernel closes its descriptors: from the hang-up.
            let reference = signal == SIGKILL ? ended.hungUp : ended.killed
            let from = signal == SIGKILL ? "hushd hung up" : "the signal"
            for (index, application) in ended.applications.enumerated() {
                let took = ended.ends[index].map { $0 - reference }
                let message = application.text.split(separator: "\n").last ?? "(nothing)"
                print(
                    "  \(application.name) ended \(ended.ends[index].map { ms($0, ended.killed) } ?? "never") after the "
                        + "signal, \(ended.ends[index].map { ms($0, ended.hungUp) } ?? "-") after hushd hung up, exit "
                        + "\(ended.results[index]?.status ?? -1): \(message)"
                )
                try require(took != nil, "\(application.name) still runs 10 s after hushd \(what)")
                try require(ended.results[index]?.status != 0, "\(application.name) must report the loss")
                try require(
                    application.text.contains("No such device"),
                    "\(application.name) fails with -ENODEV: \(application.outcome)"
                )
                try require(
                    (took ?? .seconds(10)) - ended.stall <= .milliseconds(Int64(applicationPeriod * 1000)),
                    "\(application.name) noticed within one of its periods (100 ms) after \(from): "
                        + "\(took.map(\.milliseconds) ?? -1) ms"
                )
            }
            stopHushd(signal: "KILL")
        }
    }
]
