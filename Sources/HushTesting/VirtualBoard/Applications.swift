import Foundation
import HushCore

#if canImport(Glibc)
import Glibc
#endif

// What the check programs that start applications drive and read (hush-vboard-streams, hush-vboard-voice,
// hush-vboard-latency): a program run and reaped by hand, its output in a file (`Application`), a raw recording it
// wrote, and hushd's status over one kept connection (`hushdStatus`, quick enough to time a stream's states) with
// the waits built on it.

/// A running aplay or arecord: when it started, when it ended and how, what it printed (its output goes to a file).
/// Spawned and reaped here with posix_spawn and waitpid: Foundation's Process left a second aplay a zombie it never
/// reaped, and its waitUntilExit then hung the check.
package final class Application {
    nonisolated(unsafe) private static var count = 0
    package let name: String
    package let pid: pid_t
    package let started = monotonicNow()
    private let log: String
    package private(set) var ended: Instant?
    /// The exit status, or 128 + the signal that ended it.
    package private(set) var status: Int32?
    /// The budget `finish(within:)` gave it when it still ran at the end of it (and was killed): nil when it ended
    /// by itself.
    package private(set) var overran: Double?

    package init(_ tool: String, _ arguments: [String], name: String? = nil) throws {
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

    package var isRunning: Bool {
        reap()
        return ended == nil
    }

    /// What it printed.
    package var text: String { (readFile(log) ?? "").trimmingCharacters(in: .whitespacesAndNewlines) }

    /// How it ended and what it said, for a failure's message: "exited with status 1 after 2.31 s; its last
    /// output: …", "killed by signal 11 (Segmentation fault) after …", "still running after 9.50 s, its budget: killed; it
    /// printed nothing". Never empty, whatever happened.
    package var outcome: String {
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
    package func finish(within seconds: Double) -> (status: Int32, at: Instant)? {
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

    package func signal(_ number: Int32) { kill(pid, number) }

    deinit {
        if isRunning {
            kill(pid, SIGKILL)
            var code: Int32 = 0
            _ = waitpid(pid, &code, 0)
        }
    }
}

/// A raw mono S16_LE recording, as floats.
package func readRecording(_ path: String) -> [Float] {
    guard let data = FileManager.default.contents(atPath: path) else { return [] }
    return data.withUnsafeBytes { bytes in
        stride(from: 0, to: bytes.count - 1, by: 2).map {
            Float(Int16(littleEndian: bytes.loadUnaligned(fromByteOffset: $0, as: Int16.self))) / 32767
        }
    }
}

// MARK: hushd's control socket, quickly

/// One kept connection to hushd's control socket: a request and its reply take a few milliseconds, where a hushctl
/// process takes 50-100 ms to start under TCG (too coarse to time a stream's states). Reconnects after hushd
/// restarts. Sessions it activates are its own, as any client's.
package final class ControlConnection {
    private var fd: Int32 = -1
    private var input: [UInt8] = []
    private var nextID = 1

    package init() {}

    deinit { disconnect() }

    package func disconnect() {
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
    package func hungUp() -> Bool {
        guard fd >= 0 else { return true }
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&entry, 1, 0) > 0 else { return false }
        if entry.revents & Int16(POLLHUP | POLLERR) != 0 { return true }
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) == 0
    }

    /// hushd's status object; one reconnection is tried when the connection broke (hushd restarted).
    package func status() throws -> [String: Any] {
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
    package func call(_ fields: String) throws -> [String: Any] {
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

nonisolated(unsafe) package let hushdStatus = ControlConnection()

/// The streams hushd has, as `status` lists them.
package func streams() -> [[String: Any]] { ((try? hushdStatus.status())?["streams"] as? [[String: Any]]) ?? [] }

/// The stream `application` opened (by its pid), and its session.
package func stream(of application: Application) -> (stream: [String: Any], session: [String: Any])? {
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
package func outputXruns() throws -> Int {
    guard let xruns = (try hushdStatus.status()["output"] as? [String: Any])?["xruns"] as? Int else {
        throw CheckFailure("hushd's status has no output.xruns")
    }
    return xruns
}

package func state(of application: Application) -> String? { stream(of: application)?.stream["state"] as? String }

/// Waits (looking every 10 ms) until `condition` holds; returns when it first did, or fails after `seconds` naming
/// `what` and the streams hushd has. The default budget covers an application's own start-up (aplay's, arecord's)
/// on a busy emulator many times over.
@discardableResult
package func waitUntil(_ what: String, seconds: Double = 30, _ condition: () -> Bool) throws -> Instant {
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
package func waitForStream(_ application: Application, _ wanted: String, seconds: Double = 30) throws -> Instant {
    try waitUntil("\(application.name) (pid \(application.pid)) \(wanted)", seconds: seconds) {
        state(of: application) == wanted
    }
}
