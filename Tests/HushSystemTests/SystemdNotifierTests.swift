import Glibc
import HushSystem
import HushTesting
import Logging
import Synchronization
import Testing

/// The notifier against a real AF_UNIX datagram socket standing in for systemd's, bound in a temporary directory or
/// in the abstract namespace: what arrives is what systemd would read.
@Suite("systemd notifications")
struct SystemdNotifierTests {
    @Test("READY, STATUS, WATCHDOG, RELOADING and STOPPING arrive as one datagram each, as sd_notify sends them")
    func messagesArrive() throws {
        let systemd = try FakeNotifySocket()
        let (logger, log) = RecordingLogHandler.logger(label: "hush.systemd.test", level: .info)
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": systemd.name], logger: logger)
        #expect(notifier.isEnabled)

        notifier.ready(status: "playing on hw:CARD=sndrpihifiberry,DEV=0")
        #expect(systemd.receive() == "READY=1\nSTATUS=playing on hw:CARD=sndrpihifiberry,DEV=0")
        notifier.watchdog()
        #expect(systemd.receive() == "WATCHDOG=1")
        notifier.status("route headphones")
        #expect(systemd.receive() == "STATUS=route headphones")
        notifier.reloading(status: "reading /etc/hush/hushd.toml")
        let reload = try #require(systemd.receive()).split(separator: "\n").map(String.init)
        #expect(reload.count == 3)
        #expect(reload.first == "RELOADING=1")
        #expect(reload.last == "STATUS=reading /etc/hush/hushd.toml")
        let monotonic = try #require(reload.dropFirst().first)
        #expect(monotonic.hasPrefix("MONOTONIC_USEC=") && UInt64(monotonic.dropFirst(15)).map { $0 > 0 } == true)
        notifier.stopping()
        #expect(systemd.receive() == "STOPPING=1")
        #expect(systemd.receive() == nil)
        #expect(log.messages(at: .warning).isEmpty)
    }

    @Test("an abstract socket ('@name') is reached through the abstract namespace, not a file")
    func abstractSocket() throws {
        let systemd = try FakeNotifySocket(abstract: true)
        #expect(systemd.name.hasPrefix("@"))
        let notifier = SystemdNotifier(
            environment: ["NOTIFY_SOCKET": systemd.name],
            logger: RecordingLogHandler.logger(label: "hush.systemd.test", level: .info).0
        )
        notifier.ready(status: "ok")
        #expect(systemd.receive() == "READY=1\nSTATUS=ok")
    }

    @Test("a newline in a status cannot smuggle in another assignment")
    func statusIsOneLine() throws {
        let systemd = try FakeNotifySocket()
        let notifier = SystemdNotifier(
            environment: ["NOTIFY_SOCKET": systemd.name],
            logger: RecordingLogHandler.logger(label: "hush.systemd.test", level: .info).0
        )
        notifier.status("fine\nSTOPPING=1")
        #expect(systemd.receive() == "STATUS=fine STOPPING=1")
    }

    @Test("without NOTIFY_SOCKET (a terminal, make run) the notifier is off and quiet")
    func noSocket() {
        let (logger, log) = RecordingLogHandler.logger(label: "hush.systemd.test", level: .info)
        let notifier = SystemdNotifier(environment: ["WATCHDOG_USEC": "20000000"], logger: logger)
        #expect(!notifier.isEnabled)
        #expect(notifier.socketName == nil)
        notifier.ready(status: "ok")
        notifier.watchdog()
        notifier.stopping()
        #expect(log.messages.isEmpty)
    }

    @Test(
        "the watchdog interval is half of WATCHDOG_USEC, and only for this process",
        arguments: [
            (["WATCHDOG_USEC": "20000000"], Duration?.some(.seconds(10))),
            (["WATCHDOG_USEC": "3"], .some(.microseconds(1))),
            (["WATCHDOG_USEC": "20000000", "WATCHDOG_PID": String(getpid())], .some(.seconds(10))),
            (["WATCHDOG_USEC": "20000000", "WATCHDOG_PID": String(getpid() + 1)], nil),
            (["WATCHDOG_USEC": "20000000", "WATCHDOG_PID": "init"], nil),
            (["WATCHDOG_USEC": "0"], nil),
            (["WATCHDOG_USEC": "soon"], nil),
            ([:], nil),
        ]
    )
    func watchdogInterval(environment: [String: String], expected: Duration?) {
        let notifier = SystemdNotifier(
            environment: environment,
            logger: RecordingLogHandler.logger(label: "hush.systemd.test", level: .info).0
        )
        #expect(notifier.watchdogInterval == expected)
    }

    @Test("a malformed WATCHDOG_USEC is reported, naming the value")
    func badWatchdogIsLogged() {
        let (logger, log) = RecordingLogHandler.logger(label: "hush.systemd.test", level: .info)
        _ = SystemdNotifier(environment: ["WATCHDOG_USEC": "soon"], logger: logger)
        #expect(log.messages(at: .warning).count == 1)
        #expect(log.messages(at: .warning).first?.contains("WATCHDOG_USEC='soon'") == true)
    }

    @Test(
        "a socket name hush cannot use leaves the notifier off, with one warning that names it",
        arguments: ["run/systemd/notify", "vsock:2:1234", "/" + String(repeating: "x", count: 200), "@"]
    )
    func unusableName(name: String) {
        let (logger, log) = RecordingLogHandler.logger(label: "hush.systemd.test", level: .info)
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": name], logger: logger)
        #expect(!notifier.isEnabled)
        notifier.ready(status: "ok")
        notifier.watchdog()
        let warnings = log.messages(at: .warning)
        #expect(warnings.count == 1)
        #expect(warnings.first?.contains("'\(name)'") == true)
    }

    @Test("with nothing listening, sends fail quietly after one warning naming the socket and errno")
    func nothingListening() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/notify"
        let (logger, log) = RecordingLogHandler.logger(label: "hush.systemd.test", level: .info)
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": path], logger: logger)
        #expect(notifier.isEnabled)
        notifier.ready(status: "ok")
        notifier.watchdog()
        notifier.watchdog()
        let warnings = log.messages(at: .warning)
        #expect(warnings.count == 1)
        #expect(warnings.first?.contains(path) == true)
        #expect(warnings.first?.contains("[errno \(ENOENT)]") == true)
        #expect(warnings.first?.contains("READY=1") == true)
    }

    @Test(
        "a systemd that stops reading never blocks hushd: the queue fills, sends fail, one warning",
        .timeLimit(.minutes(1))
    )
    func fullQueueDoesNotBlock() throws {
        let systemd = try FakeNotifySocket()
        let (logger, log) = RecordingLogHandler.logger(label: "hush.systemd.test", level: .info)
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": systemd.name], logger: logger)
        // A blocking send would hang here once the receiver's queue (net.unix.max_dgram_qlen) is full.
        var sent = 0
        while log.messages(at: .warning).isEmpty && sent < 100_000 {
            notifier.watchdog()
            sent += 1
        }
        for _ in 0..<100 { notifier.watchdog() }
        let warnings = log.messages(at: .warning)
        #expect(warnings.count == 1)
        #expect(warnings.first?.contains("[errno \(EAGAIN)]") == true)
        #expect(systemd.receive() == "WATCHDOG=1")
    }
}

/// A datagram socket bound where systemd's would be, read without waiting.
private final class FakeNotifySocket {
    let name: String
    private let descriptor: Int32
    private let directory: TemporaryDirectory?

    init(abstract: Bool = false) throws {
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        try #require(descriptor >= 0, "socket: errno \(errno)")
        if abstract {
            directory = nil
            name = "@hush-notify-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        } else {
            let directory = try TemporaryDirectory()
            self.directory = directory
            name = directory.path + "/notify"
        }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(name.utf8)
        if abstract { bytes[0] = 0 }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path)! + bytes.count)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
        }
        try #require(bound == 0, "bind \(name): errno \(errno)")
    }

    deinit {
        close(descriptor)
    }

    /// The next datagram, or nil when none is queued (the notifier's sends are complete when they return).
    func receive() -> String? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(descriptor, &buffer, buffer.count, Int32(MSG_DONTWAIT))
        guard count >= 0 else { return nil }
        return String(decoding: buffer[..<count], as: UTF8.self)
    }
}

/// A directory under $TMPDIR (or /tmp), removed with everything in it when the value goes away.
private final class TemporaryDirectory {
    let path: String

    init() throws {
        var template = Array(
            ((getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp") + "/hush-notify-XXXXXX").utf8CString
        )
        let created = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        try #require(created != nil, "mkdtemp: errno \(errno)")
        path = String(cString: created!)
    }

    deinit {
        if let entries = opendir(path) {
            while let entry = readdir(entries) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) {
                    String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
                }
                if name != "." && name != ".." { unlink(path + "/" + name) }
            }
            closedir(entries)
        }
        rmdir(path)
    }
}

/// Keeps what the notifier logs, so the tests can read what a person would see in the journal.
