import Foundation
import HushTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Why a test against a real hushd could not go on: what was being done and what was seen.
struct HushdTestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A real `hushd` — the built binary — on a temporary configuration: no hardware (its output fails to open, so
/// sound goes to the WAV fallback, /dev/null), its control socket, state file and sound directory in a fresh
/// directory under /tmp, its log (stderr) in a file there.
///
/// It runs under `setpriv --pdeathsig KILL`, so a test that crashes cannot leave it running; `user` runs it as
/// another uid. The directory goes when the value does, after hushd was stopped.
final class HushdProcess: RunningHushd {
    let directory: String
    var socket: String { directory + "/control.sock" }
    let statePath: String
    var soundDirectory: String { directory + "/sounds" }
    var logPath: String { directory + "/hushd.log" }
    var configPath: String { directory + "/hushd.toml" }
    var pid: pid_t = 0
    private let user: UInt32?

    /// Writes the configuration and starts hushd (see ``start()``).
    ///
    /// - Parameters:
    ///   - control: more `[control]` keys, one per line (`max_clients = 64`).
    ///   - extra: more tables, appended to the file.
    ///   - user: run hushd as this uid (and its group, no others); nil runs it as the test's user.
    ///   - stateFile: the state file's path relative to the directory (`state` by default).
    ///   - fallback: `[output] fallback_wav`; nil for none, so hushd starts waiting for its card.
    ///   - packageSounds: `[sounds]` keys naming the package's own sounds (`board/sounds/`), by key: each file is
    ///     copied into the sound directory and the key names the copy (`["startup": "startup.wav"]`).
    init(
        control: String = "",
        extra: String = "",
        user: UInt32? = nil,
        stateFile: String = "state",
        fallback: String? = "/dev/null",
        packageSounds: [String: String] = [:],
        start: Bool = true
    ) throws {
        var template = Array("/tmp/hush-real-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else {
            throw HushdTestFailure("cannot create a temporary directory: \(String(cString: strerror(errno)))")
        }
        directory = String(cString: made)
        statePath = directory + "/" + stateFile
        self.user = user
        try FileManager.default.createDirectory(atPath: soundDirectory, withIntermediateDirectories: false)
        var soundKeys: [String] = []
        for (key, name) in packageSounds.sorted(by: { $0.key < $1.key }) {
            let root = String(#filePath.dropLast("Tests/HushIntegrationTests/HushdProcess.swift".count))
            try FileManager.default.copyItem(atPath: root + "board/sounds/" + name, toPath: soundDirectory + "/" + name)
            soundKeys.append("\(key) = \"\(soundDirectory)/\(name)\"")
        }
        let text = """
            [output]
            pcm = "hw:CARD=HushNoSuchCard,DEV=0"
            \(fallback.map { "fallback_wav = \"\($0)\"" } ?? "")

            [control]
            socket = "\(socket)"
            \(control.contains("group =") ? "" : #"group = """#)
            \(control)

            [state]
            file = "\(statePath)"
            write_interval_ms = 100

            [sounds]
            directories = ["\(soundDirectory)"]
            \(soundKeys.joined(separator: "\n"))

            [alsa_controls]
            enabled = false

            \(extra)
            """
        try text.write(toFile: configPath, atomically: true, encoding: .utf8)
        if let user {
            for path in [directory, soundDirectory] { chown(path, user, user) }
        }
        if start { try self.start() }
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Starts hushd and waits until its socket answers (up to a minute; see ``waitForSocket(_:seconds:)``).
    ///
    /// - Throws: when hushd exits first or never answers, with the end of its log.
    func start() throws {
        let hushd = HushdTranscriptTests.hushd.path
        var arguments = ["/usr/bin/setpriv", "--pdeathsig", "KILL"]
        if let user { arguments += ["--reuid=\(user)", "--regid=\(user)", "--clear-groups"] }
        arguments += [hushd, "--config", configPath, "--console", "none"]
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, logPath, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, logPath, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        // The test runner's own descriptors stay out: hushd's descriptor count must be its own. (glibc 2.34 has
        // this call; Swift's Glibc module does not import it, hence the lookup.)
        if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") {
            typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
            // SAFETY: the symbol is glibc's posix_spawn_file_actions_addclosefrom_np, whose C signature CloseFrom
            // spells; `actions` was initialised above.
            _ = unsafeBitCast(symbol, to: CloseFrom.self)(&actions, 3)
        }
        let argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var child: pid_t = 0
        let result = posix_spawn(&child, arguments[0], &actions, nil, argv, environ)
        guard result == 0 else {
            throw HushdTestFailure("cannot start \(hushd) through setpriv: \(String(cString: strerror(result)))")
        }
        pid = child
        try waitForSocket(socket)
    }

    /// hushd's resident memory in KiB (VmRSS in /proc/PID/status).
    func residentKiB() throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let value = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        else { throw HushdTestFailure("no VmRSS line in /proc/\(pid)/status") }
        return value
    }

    /// How many file descriptors hushd has open (/proc/PID/fd).
    func openDescriptors() throws -> Int {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count
    }

    func connect() throws -> HushdConnection { try HushdConnection(path: socket) }

    /// The status object, from a fresh connection.
    func status() throws -> [String: Any] {
        let connection = try connect()
        defer { connection.close() }
        return try connection.status()
    }
}

/// One client connection to a real hushd: lines out, lines in, with timeouts so a hung hushd fails the test
/// instead of hanging it.
final class HushdConnection {
    private(set) var fd: Int32
    private var input: [UInt8] = []
    /// Events that arrived while a reply was awaited, oldest first.
    var events: [String] = []
    private var nextID = 1

    init(path: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw HushdTestFailure("cannot create a socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        // SAFETY: sun_path holds 108 bytes; test paths under /tmp are far shorter, and the zeroed address ends them.
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes.prefix($0.count - 1)) }
        let result = withUnsafePointer(to: &address) {
            // SAFETY: sockaddr_un begins with the sockaddr header; connect reads the size given.
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard result == 0 else {
            let code = errno
            // deinit runs after a throw from a fully initialised object: closing twice would close whatever
            // descriptor another test has opened under the same number since (a state file read got EBADF).
            close()
            throw HushdTestFailure("cannot connect to \(path): \(String(cString: strerror(code)))")
        }
    }

    deinit { close() }

    func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    /// Writes all of `bytes` (blocking).
    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let count = bytes[offset...].withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if count < 0 {
                if errno == EINTR { continue }
                throw HushdTestFailure("cannot write to hushd: \(String(cString: strerror(errno)))")
            }
            offset += count
        }
    }

    func send(_ text: String) throws { try send(Array(text.utf8)) }

    /// Reads what is there within `milliseconds`; false at end of file.
    @discardableResult
    func fill(milliseconds: Int32) throws -> Bool {
        var request = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&request, 1, milliseconds) > 0 else { return true }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let count = buffer.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        if count < 0 {
            if errno == EAGAIN || errno == EINTR { return true }
            if errno == ECONNRESET { return false }
            throw HushdTestFailure("cannot read from hushd: \(String(cString: strerror(errno)))")
        }
        input += buffer[0..<count]
        return count > 0
    }

    /// The complete lines received so far, without waiting.
    func takeLines() -> [String] {
        var lines: [String] = []
        while let newline = input.firstIndex(of: 0x0A) {
            lines.append(String(decoding: input[..<newline], as: UTF8.self))
            input.removeSubrange(...newline)
        }
        return lines
    }

    /// The next line, waiting up to `milliseconds`.
    func line(milliseconds: Int = 5000) throws -> String {
        let deadline = Date().addingTimeInterval(Double(milliseconds) / 1000)
        while true {
            if let newline = input.firstIndex(of: 0x0A) {
                defer { input.removeSubrange(...newline) }
                return String(decoding: input[..<newline], as: UTF8.self)
            }
            guard Date() < deadline else { throw HushdTestFailure("no line from hushd within \(milliseconds) ms") }
            guard try fill(milliseconds: 50) else {
                throw HushdTestFailure("hushd closed the connection (after \(input.count) bytes without a newline)")
            }
        }
    }

    /// Whether hushd closed the connection within `milliseconds` (anything still unread is kept).
    func closedByPeer(milliseconds: Int = 2000) throws -> Bool {
        let deadline = Date().addingTimeInterval(Double(milliseconds) / 1000)
        while Date() < deadline {
            if try !fill(milliseconds: 50) { return true }
        }
        return false
    }

    /// The next reply (a line with "ok"), keeping events that come first in ``events``.
    func reply(milliseconds: Int = 5000) throws -> String {
        while true {
            let text = try line(milliseconds: milliseconds)
            if text.contains(#""event":"#) && !text.contains(#""ok":"#) {
                events.append(text)
            } else {
                return text
            }
        }
    }

    /// Sends one request line and returns its reply.
    func request(_ line: String) throws -> String {
        try send(line + "\n")
        return try reply()
    }

    /// Sends a request (a JSON object's fields without braces, e.g. `"command":"status"`) and returns the reply
    /// decoded.
    func call(_ fields: String) throws -> [String: Any] {
        try Self.object(request("{" + fields + "}"))
    }

    func status() throws -> [String: Any] {
        let reply = try call(#""command":"status""#)
        guard let status = reply["status"] as? [String: Any] else {
            throw HushdTestFailure("status reply without a status: \(reply)")
        }
        return status
    }

    static func object(_ line: String) throws -> [String: Any] {
        guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
            throw HushdTestFailure("not a JSON object from hushd: \(line)")
        }
        return object
    }
}

/// What the tests' real hushd processes share: whether it runs, stopping it, its log, waiting for its socket.
protocol RunningHushd: AnyObject {
    /// hushd's process id, 0 once it has exited and been reaped.
    var pid: pid_t { get set }
    /// Where its standard output and standard error go.
    var logPath: String { get }
}

extension RunningHushd {
    /// Whether hushd is still running (a zombie counts as gone: it is reaped here).
    var isRunning: Bool {
        guard pid > 0 else { return false }
        var status: Int32 = 0
        let result = waitpid(pid, &status, WNOHANG)
        if result == pid {
            pid = 0
            return false
        }
        return result == 0
    }

    /// Sends `signal` and waits for hushd to exit (SIGKILL after 10 s). Returns its wait status.
    @discardableResult
    func stop(_ signal: Int32 = SIGTERM) -> Int32 {
        guard pid > 0 else { return 0 }
        kill(pid, signal)
        var status: Int32 = 0
        let deadline = Date().addingTimeInterval(10)
        while true {
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid || (result < 0 && errno != EINTR) { break }
            if Date() > deadline {
                kill(pid, SIGKILL)
                waitpid(pid, &status, 0)
                break
            }
            usleep(2000)
        }
        pid = 0
        return status
    }

    /// hushd's log so far.
    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Waits until a Unix socket at `path` accepts a connection. A hushd that still runs and has not answered yet is
    /// slow, not wrong (under qemu-user beside other tests its start-up took more than 10 s): the budget is a
    /// minute, and a hushd that exits fails at once.
    ///
    /// - Throws: when hushd exits first or the socket does not answer in time, with hushd's log.
    func waitForSocket(_ path: String, seconds: Double = 60) throws {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            guard isRunning else { throw HushdTestFailure("hushd exited at start-up; its log:\n\(log)") }
            if let probe = try? HushdConnection(path: path) {
                probe.close()
                return
            }
            usleep(10_000)
        }
        throw HushdTestFailure("hushd did not answer on \(path) within \(seconds) s; its log:\n\(log)")
    }
}

/// The built hushd with its console on a pipe (typed into with ``type(_:)``: the switch, the jack, media keys, a
/// session by hand), the silence switch a terminal control, and its mix in `wav` (the WAV fallback, paced like a
/// device).
final class ConsoleHushd {
    let scratch: ScratchDirectory
    let process = Process()
    let console = Pipe()
    var socket: String { scratch.path + "/control.sock" }
    var wav: String { scratch.path + "/mix.wav" }
    var log: String { scratch.path + "/hushd.log" }

    init() throws {
        try ALSADeviceTests.requireTools()
        scratch = try ScratchDirectory(prefix: "hush-console")
        let config = scratch.path + "/hushd.toml"
        try """
        [output]
        pcm = "hw:CARD=HushNoSuchCard,DEV=0"
        fallback_wav = "\(wav)"
        realtime_priority = 0

        [inputs.silence_switch]
        kind = "terminal"

        [control]
        socket = "\(socket)"
        group = ""

        [state]
        file = ""

        [alsa_controls]
        enabled = false
        """.write(toFile: config, atomically: true, encoding: .utf8)
        FileManager.default.createFile(atPath: log, contents: nil)
        let handle = try #require(FileHandle(forWritingAtPath: log))
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        process.arguments = [
            "--pdeathsig", "KILL", HushdTranscriptTests.hushd.path, "--config", config, "--console", "stdio",
        ]
        process.standardInput = console
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        try wait("the socket answering") { (try? status()) != nil }
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    func type(_ line: String) { console.fileHandleForWriting.write(Data((line + "\n").utf8)) }

    func status() throws -> [String: Any] {
        let connection = try HushdConnection(path: socket)
        defer { connection.close() }
        return try connection.status()
    }

    var streams: [[String: Any]] { ((try? status())?["streams"] as? [[String: Any]]) ?? [] }

    func state(of application: ALSADeviceTests.Application) -> String? {
        let pid = Int(application.process.processIdentifier)
        return streams.first { $0["pid"] as? Int == pid }?["state"] as? String
    }

    /// The console's newest session (an `activate` just typed).
    func newestConsoleSession() -> Int? {
        let sessions = ((try? status())?["sessions"] as? [[String: Any]]) ?? []
        return sessions.filter { $0["pid"] == nil }.compactMap { $0["id"] as? Int }.max()
    }

    func wait(_ what: String, seconds: Double = 10, _ condition: () -> Bool) throws {
        let deadline = Date().addingTimeInterval(seconds)
        while !condition() {
            guard Date() < deadline else {
                let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
                throw HushdTestFailure("\(what) did not happen within \(seconds) s; hushd's log:\n\(text)")
            }
            usleep(10_000)
        }
    }

    /// Stops hushd and returns its mix (left channel).
    func finish() throws -> [Float] {
        process.terminate()
        process.waitUntilExit()
        return try ALSADeviceTests.mix(wav)
    }
}

/// Runs a program to its end; returns its exit status and what it printed (standard output and error together).
func runToEnd(_ executable: URL, _ arguments: [String]) throws -> (status: Int32, output: String) {
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    let output = Pipe()
    process.standardOutput = output
    process.standardError = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: data, as: UTF8.self))
}
