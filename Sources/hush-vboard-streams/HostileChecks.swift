import HushCore
import HushTesting

#if canImport(Glibc)
import Glibc
#endif

// Clients that break the stream protocol (issue 19 §5), as HostileStreamTests has them on the host, here beside an
// unmodified aplay on the real snd-aloop: random bytes over a started stream's whole shared header (impossible ring
// counters) for a second, after a try to shrink its memfd; a playback stream started and never written; a capture
// stream started and never read; one process opening 100 streams. The clients are HushTesting's RawStreamClient,
// the host test's own. aplay's tone must stay clean on the speaker in every 20 ms window and aplay must end on
// time; hushd must keep running, refuse past [streams] max_streams_per_process and name the offender in its log.

/// `[streams] max_streams_per_process`: the virtual profile keeps the default (docs/configuration.md).
let streamsPerProcess = 8

/// How many streams one process tries to open, one after another.
let floodOpens = 100

/// The victim: a mixable playback stream, so that the deaf recorder's session (record: not mixable) leaves it be.
let victimDevice = "hush:CATEGORY=playback,OPTIONS=mixWithOthers"

/// What the hostile clients did and what hushd's status said of their streams meanwhile.
struct Hostility {
    /// The errno of the try to shrink the scribbled stream's memfd (0: it shrank).
    var shrink: Int32 = 0
    /// The scribbled stream's id, and its header's size.
    var scribbled = 0
    var headerBytes = 0
    /// Passes of random bytes over the header.
    var passes = 0
    /// Streams the 100 opens got, and the codes of the refusals.
    var opened = 0
    var refusals: [String] = []
    var violations: Int?
    var silentUnderruns: Int?
    var deafOverrunFrames: Int?
    /// Whether hushd answered `status` after the flood.
    var answered = false
    var started = monotonicNow()
    var ended = monotonicNow()
}

/// The hostile clients, one after another from this process, then all closed. A refused first stream or action
/// fails the check at once: nothing a stall does makes hushd refuse.
func beHostile() throws -> Hostility {
    var hostility = Hostility()
    var clients: [RawStreamClient] = []
    // 1. A started stream whose whole header gets random bytes (so impossible ring counters) for a second, after a
    // try to shrink its memory under hushd, which would make hushd fault on the ring if the seals let it.
    let scribbler = try RawStreamClient(socket: e2eSocket, direction: "playback", category: "ambient")
    try require(scribbler.opened, "hushd refused the first raw stream: \(scribbler.reply)")
    hostility.shrink = scribbler.shrink()
    hostility.scribbled = scribbler.id
    hostility.headerBytes = scribbler.headerBytes
    try scribbler.act("start")
    // 2. A playback stream started and never written; 3. a recorder started and never read.
    let silent = try RawStreamClient(socket: e2eSocket, direction: "playback", category: "ambient")
    try require(silent.opened, "hushd refused the silent stream: \(silent.reply)")
    try silent.act("start")
    let deaf = try RawStreamClient(socket: e2eSocket, direction: "capture", category: "record", bufferFrames: 1024)
    try require(deaf.opened, "hushd refused the deaf recorder: \(deaf.reply)")
    try deaf.act("start")
    clients += [scribbler, silent, deaf]
    var generator = SeededGenerator(seed: 19)
    hostility.passes = scribbler.scribbleHeader(for: .seconds(1), using: &generator)
    // 4. One process opening 100 streams, each on a connection of its own, as fast as hushd answers.
    let flood = RawStreamClient.openMany(floodOpens, socket: e2eSocket)
    clients += flood.opened
    hostility.opened = flood.opened.count
    hostility.refusals = flood.refusals
    if let status = try? hushdStatus.status() {
        hostility.answered = true
        let streams = status["streams"] as? [[String: Any]] ?? []
        func figure(_ client: RawStreamClient, _ key: String) -> Int? {
            streams.first { $0["id"] as? Int == client.id }?[key] as? Int
        }
        hostility.violations = figure(scribbler, "violations")
        hostility.silentUnderruns = figure(silent, "underruns")
        hostility.deafOverrunFrames = figure(deaf, "overrunFrames")
    }
    clients.removeAll()
    hostility.ended = monotonicNow()
    return hostility
}

/// The line of hushd's log that names the stream `id` of process `pid` as the one that wrote impossible counters.
func offenderNamed(stream id: Int, pid: pid_t) -> String? {
    (readFile("/tmp/hushd.log") ?? "").split(separator: "\n").first {
        $0.contains("stream \(id) of hostile (pid \(pid),") && $0.contains("wrote impossible ring counters")
    }.map { $0.trimmingCharacters(in: .whitespaces) }
}

/// How often each text occurs, for messages: "too-many-streams x92".
func counted(_ texts: [String]) -> String {
    Dictionary(grouping: texts) { $0 }.sorted { $0.key < $1.key }.map { "\($0.key) x\($0.value.count)" }
        .joined(separator: ", ")
}

/// An errno for messages: "EPERM (Operation not permitted)".
func errnoText(_ code: Int32) -> String {
    if code == 0 { return "none: it shrank" }
    return (code == EPERM ? "EPERM" : "errno \(code)") + " (\(String(cString: strerror(code))))"
}

let hostileChecks: [Check] = [
    Check(name: "streams-hostile-clients-leave-others-clean") {
        // An 8 s tone; the speaker is captured for 6 s from when aplay's stream runs (inside the tone), the hostile
        // clients starting 0.3 s in. Every 20 ms window of the capture must carry the tone at the music bus's level.
        let length = 8.0
        let captured = 6.0
        let file = try ToneFile.make(music, length)
        try judge("aplay beside hostile clients") {
            let before = try outputXruns()
            let from = monotonicNow()
            let victim = try aplay(victimDevice, file)
            defer { endAll([victim]) }
            let running = try waitForStream(victim, "running")
            var hostility = Hostility()
            let take = try listen(
                to: [speakerCapture],
                seconds: captured,
                while: [(0.3, "the hostile clients", { hostility = try beHostile() })]
            )
            let result = victim.finish(within: length + 10)
            // hushd logs whether the victim was late (a stall's doing) when its stream ends.
            _ = try? waitUntil("the victim's stream gone", seconds: 5) { stream(of: victim) == nil }
            let alive = !hushdDaemonPIDs().isEmpty
            let answers = (try? hushdStatus.status()) != nil
            let took = result.map { seconds(from: running, to: $0.at) } ?? -1
            let recording = take.recordings[0]
            let (hostileFrom, hostileTo) = (
                recording.seconds(at: hostility.started), recording.seconds(at: hostility.ended)
            )
            let windows = windowLevels(
                Double(music),
                recording.samples,
                rate: recording.sampleRate,
                from: 0.2,
                to: Double(recording.samples.count) / Double(recording.sampleRate),
                window: 0.02
            )
            let sorted = windows.sorted()
            let median = sorted.isEmpty ? -240 : sorted[sorted.count / 2]
            let spread = (sorted.last ?? 0) - (sorted.first ?? 0)
            let missing = windows.filter { $0 < -60 }.count
            let expected = expectedLevel(step: 8)
            let tooMany = hostility.refusals.filter { $0 == "too-many-streams" }.count
            let offender = offenderNamed(stream: hostility.scribbled, pid: getpid())
            var judged = Judged(
                disturbances: take.disturbances + (try xrunsSince(before)) + lateClient(victim)
                    + (stallWatch?.disturbance(from: from, to: monotonicNow(), allowed: .milliseconds(20)) ?? [])
            )
            judged.report = [
                "  the victim (aplay -D \(victimDevice)): \(windows.count) windows of 20 ms, \(missing) without the "
                    + "tone, level \(db(median)) dBFS (expected \(db(expected))), windows \(db(sorted.first ?? -240)) "
                    + "to \(db(sorted.last ?? -240)) (spread \(db(spread)) dB); the \(Int(length)) s file played in "
                    + "\(twoDecimals(took)) s once running, exit \(result?.status ?? -1)",
                "  hostile clients from \(twoDecimals(hostileFrom)) to \(twoDecimals(hostileTo)) s of the "
                    + "\(Int(captured)) s capture: \(hostility.passes) passes of random bytes over the "
                    + "\(hostility.headerBytes)-byte header; shrinking the memfd: \(errnoText(hostility.shrink)); "
                    + "\(floodOpens) opens from pid \(getpid()): \(hostility.opened) opened (\(hostility.opened + 3) with the "
                    + "first three, the limit \(streamsPerProcess)), \(hostility.refusals.count) refused "
                    + "(\(counted(hostility.refusals)))",
                "  status after: scribbler violations \(hostility.violations.map(String.init) ?? "?"), silent stream "
                    + "underruns \(hostility.silentUnderruns.map(String.init) ?? "?"), deaf recorder overrun frames "
                    + "\(hostility.deafOverrunFrames.map(String.init) ?? "?"); hushd \(alive ? "running" : "gone"), "
                    + "\(answers ? "answers status" : "does not answer status"); its log: \(offender ?? "(nobody named)")",
            ]
            judged.expect(alive && answers && hostility.answered, "hushd survives hostile clients and answers status")
            judged.expect(result?.status == 0, "the victim's aplay failed or hung: \(victim.outcome)")
            judged.expect(hostility.shrink == EPERM, "a stream's memfd cannot shrink: \(errnoText(hostility.shrink))")
            judged.expect(
                hostility.opened + 3 == streamsPerProcess,
                "one process gets \(streamsPerProcess) streams, no more and no fewer: \(hostility.opened + 3)"
            )
            judged.expect(
                tooMany == hostility.refusals.count && tooMany == floodOpens - hostility.opened,
                "every open past the limit is refused with too-many-streams: \(hostility.refusals)"
            )
            judged.expect(
                (hostility.violations ?? 0) > 0,
                "impossible counters are counted in status: \(hostility.violations.map(String.init) ?? "no figure")"
            )
            judged.expect(
                (hostility.deafOverrunFrames ?? 0) > 0,
                "a recorder that does not read loses frames: \(hostility.deafOverrunFrames.map(String.init) ?? "no figure")"
            )
            judged.expect(offender != nil, "hushd's log names the stream and the pid that wrote impossible counters")
            judged.expect(missing == 0, "the victim's tone was missing from \(missing) windows of 20 ms", stall: true)
            judged.expect(spread < 0.5, "the victim's tone moved by \(db(spread)) dB", stall: true)
            judged.expect(abs(median - expected) < 1.5, "the victim's tone at \(db(median)) dBFS", stall: true)
            judged.expect(
                hostileTo < captured - 0.1,
                "the hostile clients ran past the capture (to \(twoDecimals(hostileTo)) s)",
                stall: true
            )
            judged.expect(
                took > length - 0.1 && took < length + 0.8,
                "the victim's \(Int(length)) s file took \(twoDecimals(took)) s",
                stall: true
            )
            return judged
        }
    }
]
