import Foundation
import HushALSA
import HushCore
import HushTesting
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

// What the streams checks drive and read: unmodified ALSA applications (alsa-utils' aplay and arecord, with the
// hush device installed as deploy/install.sh installs it), the files they play and record, hushd's status over one
// kept connection (quick enough to time a stream's states), and the microphone: a tone played into the loopback
// that hushd's `[capture] pcm` records.

/// A running aplay or arecord: when it started, when it ended and how, what it printed (its output goes to a file).
/// Spawned and reaped here with posix_spawn and waitpid: Foundation's Process left a second aplay a zombie it never
/// reaped, and its waitUntilExit then hung the check.
final class Application {
    nonisolated(unsafe) private static var count = 0
    let name: String
    let pid: pid_t
    let started = monotonicNow()
    private let log: String
    private(set) var ended: Instant?
    /// The exit status, or 128 + the signal that ended it.
    private(set) var status: Int32?
    /// The budget `finish(within:)` gave it when it still ran at the end of it (and was killed): nil when it ended
    /// by itself.
    private(set) var overran: Double?

    init(_ tool: String, _ arguments: [String], name: String? = nil) throws {
        self.name = name ?? tool
        Self.count += 1
        log = "/tmp/application-\(Self.count).log"
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let path = tool.hasPrefix("/") ? tool : "/usr/bin/\(tool)"
        let argv = ([tool] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var child: pid_t = 0
        let result = posix_spawn(&child, path, &actions, nil, argv, environ)
        guard result == 0 else {
            throw CheckFailure(
                "cannot start \(path) \(arguments.joined(separator: " ")): \(String(cString: strerror(result)))"
            )
        }
        pid = child
    }

    /// Reaps the process if it ended (without waiting).
    private func reap() {
        guard ended == nil else { return }
        var code: Int32 = 0
        let result = waitpid(pid, &code, WNOHANG)
        guard result == pid else { return }
        ended = monotonicNow()
        status = code & 0x7f == 0 ? (code >> 8) & 0xff : 128 + (code & 0x7f)
    }

    var isRunning: Bool {
        reap()
        return ended == nil
    }

    /// What it printed.
    var text: String { (readFile(log) ?? "").trimmingCharacters(in: .whitespacesAndNewlines) }

    /// How it ended and what it said, for a failure's message: "exited with status 1 after 2.31 s; its last
    /// output: …", "killed by signal 11 (Segmentation fault) after …", "still running after 9.50 s, its budget: killed; it
    /// printed nothing". Never empty, whatever happened.
    var outcome: String {
        let elapsed = String(format: "%.2f s", Double(((ended ?? monotonicNow()) - started).nanoseconds) / 1e9)
        let how: String
        if let overran {
            how = "still running after \(elapsed), its budget \(String(format: "%.1f", overran)) s: killed"
        } else if let status, status > 128 {
            let signalName = strsignal(status - 128).map { String(cString: $0) } ?? "?"
            how = "killed by signal \(status - 128) (\(signalName)) after \(elapsed)"
        } else if let status {
            how = "exited with status \(status) after \(elapsed)"
        } else {
            how = "still running after \(elapsed)"
        }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: true).suffix(6)
        let said = lines.isEmpty ? "it printed nothing" : "its last output: " + lines.joined(separator: " | ")
        return "\(name) (pid \(pid)) \(how); \(said)"
    }

    /// Waits up to `seconds` for the application to end, looking every 2 ms; nil (and it is killed) if it still
    /// runs then.
    @discardableResult
    func finish(within seconds: Double) -> (status: Int32, at: Instant)? {
        let deadline = monotonicNow() + .milliseconds(Int64(seconds * 1000))
        while isRunning && monotonicNow() < deadline { sleep(.milliseconds(2)) }
        guard let ended, let status else {
            kill(pid, SIGKILL)
            var code: Int32 = 0
            _ = waitpid(pid, &code, 0)
            self.ended = monotonicNow()
            self.status = 128 + SIGKILL
            overran = seconds
            return nil
        }
        return (status, ended)
    }

    func signal(_ number: Int32) { kill(pid, number) }

    deinit {
        if isRunning {
            kill(pid, SIGKILL)
            var code: Int32 = 0
            _ = waitpid(pid, &code, 0)
        }
    }
}

/// aplay of `file` through the hush device `device` ("hush:music").
func aplay(_ device: String, _ file: String, _ extra: [String] = []) throws -> Application {
    try Application("aplay", ["-q", "-D", device] + extra + [file], name: "aplay -D \(device)")
}

/// arecord from the hush device `device` into a raw 16 kHz mono S16_LE file, for `seconds` (nil: until stopped).
/// A deep buffer (1 s) so that the emulated machine's stalls do not overrun it.
func arecord(_ device: String, _ file: String, seconds: Int?) throws -> Application {
    let length = seconds.map { ["-d", "\($0)"] } ?? []
    return try Application(
        "arecord",
        ["-q", "-D", device, "-t", "raw", "-f", "S16_LE", "-r", "\(recordRate)", "-c", "1", "-B", "1000000"] + length
            + [file],
        name: "arecord -D \(device)"
    )
}

let recordRate = 16000

/// Writes a WAV file of a sine at `hertz`, half scale (-6 dBFS), `seconds` long, mono or stereo, 16-bit.
func writeTone(_ path: String, hertz: Double, seconds: Double, rate: Int = 48000, channels: Int = 2) throws {
    let frames = Int(seconds * Double(rate))
    var data = Data(capacity: 44 + frames * channels * 2)
    func append<Value: FixedWidthInteger>(_ value: Value) { withUnsafeBytes(of: value.littleEndian) { data += $0 } }
    data += Data("RIFF".utf8)
    append(UInt32(36 + frames * channels * 2))
    data += Data("WAVEfmt ".utf8)
    append(UInt32(16))
    append(UInt16(1))  // PCM
    append(UInt16(channels))
    append(UInt32(rate))
    append(UInt32(rate * channels * 2))
    append(UInt16(channels * 2))
    append(UInt16(16))
    data += Data("data".utf8)
    append(UInt32(frames * channels * 2))
    for frame in 0..<frames {
        let value = Int16(16383 * sin(2 * Double.pi * hertz * Double(frame) / Double(rate)))
        for _ in 0..<channels { append(value) }
    }
    guard FileManager.default.createFile(atPath: path, contents: data) else {
        throw CheckFailure("cannot write \(path)")
    }
}

/// A raw mono S16_LE recording, as floats.
func readRecording(_ path: String) -> [Float] {
    guard let data = FileManager.default.contents(atPath: path) else { return [] }
    return data.withUnsafeBytes { bytes in
        stride(from: 0, to: bytes.count - 1, by: 2).map {
            Float(Int16(littleEndian: bytes.loadUnaligned(fromByteOffset: $0, as: Int16.self))) / 32767
        }
    }
}

/// The level of `hertz` in every `window`-second window of `samples` (at `rate`) from `from` to `to` seconds.
func windowLevels(
    _ hertz: Double,
    _ samples: [Float],
    rate: Int,
    from: Double,
    to: Double,
    window: Double = 0.05
) -> [Double] {
    var result: [Double] = []
    var t = max(0, from)
    while t + window <= to {
        let a = Int(t * Double(rate))
        let b = Int((t + window) * Double(rate))
        guard b <= samples.count else { break }
        result.append(ToneAnalysis.level(of: hertz, in: samples[a..<b], sampleRate: rate))
        t += window
    }
    return result
}

// MARK: hushd's control socket, quickly

/// One kept connection to hushd's control socket: a request and its reply take a few milliseconds, where a hushctl
/// process takes 50-100 ms to start under TCG (too coarse to time a stream's states). Reconnects after hushd
/// restarts. Sessions it activates are its own, as any client's.
final class ControlConnection {
    private var fd: Int32 = -1
    private var input: [UInt8] = []
    private var nextID = 1

    deinit { disconnect() }

    func disconnect() {
        if fd >= 0 { close(fd) }
        fd = -1
        input = []
    }

    private func connect() throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw CheckFailure("cannot create a socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let path = Array(e2eSocket.utf8)
        // SAFETY: sun_path holds 108 bytes, the socket's path is far shorter and the zeroed address ends it.
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path.prefix($0.count - 1)) }
        let result = withUnsafePointer(to: &address) {
            // SAFETY: sockaddr_un begins with the sockaddr header; connect reads the size given.
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard result == 0 else {
            let code = errno
            disconnect()
            throw CheckFailure("cannot connect to \(e2eSocket): \(String(cString: strerror(code)))")
        }
    }

    /// Whether hushd hung up this connection (it stopped or died: its descriptors closed), without waiting.
    func hungUp() -> Bool {
        guard fd >= 0 else { return true }
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&entry, 1, 0) > 0 else { return false }
        if entry.revents & Int16(POLLHUP | POLLERR) != 0 { return true }
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) == 0
    }

    /// hushd's status object; one reconnection is tried when the connection broke (hushd restarted).
    func status() throws -> [String: Any] {
        let reply: [String: Any]
        do {
            reply = try call(#""command":"status""#)
        } catch {
            disconnect()
            reply = try call(#""command":"status""#)
        }
        guard let status = reply["status"] as? [String: Any] else { throw CheckFailure("no status in \(reply)") }
        return status
    }

    /// Sends a request (a JSON object's fields without braces) and returns its reply; a refusal throws.
    func call(_ fields: String) throws -> [String: Any] {
        if fd < 0 { try connect() }
        let id = nextID
        nextID += 1
        let line = Array("{\(fields),\"id\":\(id)}\n".utf8)
        let sent = line.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard sent == line.count else {
            throw CheckFailure("cannot send to hushd: \(String(cString: strerror(errno)))")
        }
        let deadline = monotonicNow() + .seconds(2)
        while monotonicNow() < deadline {
            while let newline = input.firstIndex(of: 0x0A) {
                let text = Data(input[..<newline])
                input.removeSubrange(...newline)
                guard let object = try? JSONSerialization.jsonObject(with: text) as? [String: Any],
                    object["id"] as? Int == id
                else { continue }
                guard object["ok"] as? Bool == true else {
                    throw CheckFailure("hushd refused {\(fields)}: \(String(decoding: text, as: UTF8.self))")
                }
                return object
            }
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, 100) >= 0 || errno == EINTR else { break }
            var buffer = [UInt8](repeating: 0, count: 65536)
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count == 0 { throw CheckFailure("hushd closed the connection") }
            if count > 0 { input += buffer[..<count] }
        }
        throw CheckFailure("hushd did not answer {\(fields)} within 2 s")
    }
}

nonisolated(unsafe) let hushdStatus = ControlConnection()

/// The streams hushd has, as `status` lists them.
func streams() -> [[String: Any]] { ((try? hushdStatus.status())?["streams"] as? [[String: Any]]) ?? [] }

/// The stream `application` opened (by its pid), and its session.
func stream(of application: Application) -> (stream: [String: Any], session: [String: Any])? {
    guard let status = try? hushdStatus.status(),
        let stream = (status["streams"] as? [[String: Any]])?.first(where: { $0["pid"] as? Int == Int(application.pid) }
        )
    else { return nil }
    let sessions = status["sessions"] as? [[String: Any]] ?? []
    let session = sessions.first { $0["id"] as? Int == stream["session"] as? Int } ?? [:]
    return (stream, session)
}

/// The underruns hushd's output counted since it started, asked on the kept connection (no process started: under
/// TCG starting one can itself stall the machine).
func outputXruns() throws -> Int {
    guard let xruns = (try hushdStatus.status()["output"] as? [String: Any])?["xruns"] as? Int else {
        throw CheckFailure("hushd's status has no output.xruns")
    }
    return xruns
}

func state(of application: Application) -> String? { stream(of: application)?.stream["state"] as? String }

/// Waits (looking every 10 ms) until `condition` holds; returns when it first did, or fails after `seconds` naming
/// `what` and the streams hushd has. The default budget covers an application's own start-up (aplay's, arecord's)
/// on a busy emulator many times over.
@discardableResult
func waitUntil(_ what: String, seconds: Double = 30, _ condition: () -> Bool) throws -> Instant {
    let deadline = monotonicNow() + .milliseconds(Int64(seconds * 1000))
    while monotonicNow() < deadline {
        if condition() { return monotonicNow() }
        sleep(.milliseconds(10))
    }
    let states = streams().map { "\($0["name"] ?? "?") (pid \($0["pid"] ?? "?")): \($0["state"] ?? "?")" }
    throw CheckFailure("\(what) did not happen within \(Int(seconds)) s; hushd's streams: \(states)")
}

/// Waits until `application`'s stream is in `wanted` (running, held, paused); returns when it was first seen so.
@discardableResult
func waitForStream(_ application: Application, _ wanted: String, seconds: Double = 30) throws -> Instant {
    try waitUntil("\(application.name) (pid \(application.pid)) \(wanted)", seconds: seconds) {
        state(of: application) == wanted
    }
}

// MARK: The microphone

/// A 700 Hz tone at -12 dBFS played into the loopback for as long as the checks run: what hushd's microphone
/// (`[capture] pcm`) hears. Its own underruns are counted: a take during one is taken again.
final class MicrophoneTone: @unchecked Sendable {
    static let hertz = 700.0
    static let amplitude: Float = 0.25
    static var decibels: Double { 20 * log10(Double(amplitude)) }
    let underruns = Atomic<Int>(0)
    /// While set, the tone is played at twice its amplitude (-6 dBFS): a mark, to tell frames heard then from any
    /// heard before or after.
    let marked = Atomic<Bool>(false)
    static let markedAmplitude: Float = 0.5
    /// Frames written so far, and whether the device failed (then the tone stopped).
    let written = Atomic<Int>(0)
    let failed = Atomic<Bool>(false)
    private let stopped = Atomic<Bool>(false)
    private let playback: ALSAPlayback

    /// Opens `pcm` (the loopback's playback side whose capture side hushd records) and starts playing.
    init(pcm: String) throws {
        // A deep buffer: the player shares two emulated CPUs with hushd and the applications.
        playback = try ALSAPlayback(PlaybackConfiguration(pcm: pcm, periodFrames: 512, periods: 16))
        Thread.detachNewThread { [self] in play() }
    }

    private func play() {
        let frames = 512
        let channels = playback.granted.channels
        let rate = Double(playback.granted.sampleRate)
        var samples = [Int16](repeating: 0, count: frames * channels)
        var n = 0
        while !stopped.load(ordering: .relaxed) {
            let amplitude = marked.load(ordering: .relaxed) ? Self.markedAmplitude : Self.amplitude
            for frame in 0..<frames {
                let value = Int16(
                    32767 * amplitude * Float(sin(2 * Double.pi * Self.hertz * Double(n + frame) / rate))
                )
                for channel in 0..<channels { samples[frame * channels + channel] = value }
            }
            switch samples.withUnsafeBytes({ playback.write($0.baseAddress!, frames: frames) }) {
            case .written: break
            case .recovered: underruns.add(1, ordering: .relaxed)
            case .gone, .failed:
                failed.store(true, ordering: .relaxed)
                return
            }
            n += frames
            written.store(n, ordering: .relaxed)
        }
    }

    func stop() { stopped.store(true, ordering: .relaxed) }

    /// "48000 frames written (granted …), 0 underruns", for messages.
    var summary: String {
        "\(written.load(ordering: .relaxed)) frames written to \(playback.describeGrant), "
            + "\(underruns.load(ordering: .relaxed)) underrun(s)\(failed.load(ordering: .relaxed) ? ", failed" : "")"
    }
}

/// When each of `applications` was first seen in `wanted` (one status a poll, every 10 ms, so two streams starting
/// together are both timed).
func waitForStreams(_ applications: [Application], _ wanted: String, seconds: Double = 30) throws -> [Instant] {
    var seen: [Instant?] = Array(repeating: nil, count: applications.count)
    try waitUntil(applications.map(\.name).joined(separator: ", ") + " \(wanted)", seconds: seconds) {
        let listed = streams()
        let now = monotonicNow()
        for (index, application) in applications.enumerated() where seen[index] == nil {
            if listed.contains(where: { $0["pid"] as? Int == Int(application.pid) && $0["state"] as? String == wanted })
            {
                seen[index] = now
            }
        }
        return !seen.contains(nil)
    }
    return seen.map { $0! }
}

/// Seconds from `start` to `end`.
func seconds(from start: Instant, to end: Instant) -> Double { Double((end - start).nanoseconds) / 1e9 }

/// From `start` to `end` in milliseconds, for messages ("40 ms").
func ms(_ end: Instant, _ start: Instant) -> String { "\((end - start).milliseconds) ms" }

/// A take's outcome: what to print, what is wrong, and what disturbed it.
struct Judged {
    var report: [String] = []
    var problems: [String] = []
    /// Whether every problem is one a stall of the emulated machine can cause (a level or a gap in what should
    /// sound, a length): only then does a disturbance excuse the take.
    var onlyStallProblems = true
    var disturbances: [String] = []

    /// Notes `message` as a problem unless `condition` holds. `stall`: a stall of the machine could cause it (a
    /// dip in a level, a gap, a late end); it cannot make a silence sound, a light stay lit or a status lie.
    mutating func expect(_ condition: Bool, _ message: @autoclosure () -> String, stall: Bool = false) {
        guard !condition else { return }
        problems.append(message())
        if !stall { onlyStallProblems = false }
    }
}

/// Runs `take` (which sets up what it needs each time) at most `takes` times, prints the last take's report and
/// fails with its first problem. A take is taken again only when its problems are all ones a stall can cause and
/// it was disturbed: a stall can spoil a level or a length, never make a wrong one right.
func judge(_ what: String, _ take: () throws -> Judged) throws {
    var reasons: [String] = []
    for attempt in 1...takes {
        let judged = try take()
        let excused = !judged.problems.isEmpty && judged.onlyStallProblems && !judged.disturbances.isEmpty
        if !excused || attempt == takes {
            for line in judged.report { print(line) }
            guard let problem = judged.problems.first else { return }
            if excused {
                reasons.append(judged.disturbances.joined(separator: "; "))
                throw CheckFailure(
                    "\(what): none of \(takes) takes could be judged (\(reasons.joined(separator: " | "))); the last "
                        + "one: \(judged.problems.joined(separator: "; "))"
                )
            }
            throw CheckFailure(problem)
        }
        let reason = judged.disturbances.joined(separator: "; ")
        reasons.append(reason)
        print(
            "  re-measuring \(what) (take \(attempt) of \(takes) not judged: \(reason); it found: \(judged.problems))"
        )
        // Stalls come in bursts (a host compiling, the translation cache refilling): let one pass.
        sleep(.seconds(Int64(attempt)))
    }
}

/// The times `application`'s playback stream ran dry in hushd (the program late with its frames: a stall of the
/// emulated machine, not of hushd), 0 when hushd does not list it.
func streamUnderruns(_ application: Application) -> Int {
    stream(of: application)?.stream["underruns"] as? Int ?? 0
}

/// `application`'s stream underruns since `before` (``streamUnderruns(_:)``), as a disturbance: a program that
/// was late leaves a gap in what it plays.
func streamUnderrunsSince(_ before: Int, _ application: Application) -> [String] {
    let counted = streamUnderruns(application) - before
    return counted > 0 ? ["\(application.name)'s stream ran dry \(counted) time(s) (the program was late)"] : []
}

/// The underruns hushd counted since `before`, as a disturbance.
func xrunsSince(_ before: Int) throws -> [String] {
    let counted = try outputXruns() - before
    return counted > 0 ? ["hushd counted \(counted) underrun(s) meanwhile"] : []
}
