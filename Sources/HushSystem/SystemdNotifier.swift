import FoundationEssentials
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Tells systemd how hushd is doing (`sd_notify(3)`), without linking libsystemd.
///
/// Under `Type=notify` systemd passes the path of a datagram socket in `$NOTIFY_SOCKET` and waits for `READY=1`
/// before it counts hushd as started; with `WatchdogSec=` it also passes `$WATCHDOG_USEC` and restarts hushd when
/// `WATCHDOG=1` stops arriving. Started any other way (a terminal, `make run`, the tests) there is no
/// `$NOTIFY_SOCKET` and every call does nothing.
///
/// - Important: No call ever blocks: messages go out with `MSG_DONTWAIT`, so a stalled systemd cannot stall the
///   daemon's loop. A message that cannot be sent is dropped and the first such failure is logged (later ones
///   are not, or a missing socket would flood the journal once per watchdog period).
package final class SystemdNotifier: Sendable {
    /// Half the watchdog period systemd asked for (`WATCHDOG_USEC`), or nil when no watchdog is set for this
    /// process. Call ``watchdog()`` at least this often, from the loop whose liveness it should prove.
    package let watchdogInterval: Duration?

    /// Whether a notification socket was given and opened: false outside systemd.
    package var isEnabled: Bool { socket != nil }

    /// The socket as systemd named it ("/run/systemd/notify", "@name" for an abstract one), for logs.
    package let socketName: String?

    private let socket: NotifySocket?
    private let failureLogged = Atomic<Bool>(false)
    private let logger: Logger

    /// Reads `NOTIFY_SOCKET`, `WATCHDOG_USEC` and `WATCHDOG_PID` from `environment` and opens the socket.
    ///
    /// A socket name hush cannot use (not a path, too long) or a socket that cannot be created is logged as a
    /// warning and leaves the notifier disabled: hushd still runs, but systemd will time out its start.
    package init(environment: [String: String] = ProcessInfo.processInfo.environment, logger: Logger) {
        self.logger = logger
        watchdogInterval = Self.watchdogInterval(environment: environment, pid: getpid(), logger: logger)
        guard let name = environment["NOTIFY_SOCKET"], !name.isEmpty else {
            socketName = nil
            socket = nil
            return
        }
        socketName = name
        do {
            socket = try NotifySocket(name: name)
            logger.debug(
                "systemd notifications go to \(name)\(watchdogInterval.map { "; watchdog every \($0)" } ?? "")"
            )
        } catch {
            socket = nil
            failureLogged.store(true, ordering: .relaxed)
            logger.warning("\(error); systemd will not hear that hushd is ready and may stop it")
        }
    }

    /// Start-up is complete: the socket is listening and the audio device is open. `status` is what
    /// `systemctl status hushd` shows.
    package func ready(status: String) {
        send("READY=1\nSTATUS=\(Self.oneLine(status))")
    }

    /// A one-line status for `systemctl status hushd` ("playing: music; route speaker; volume 60%").
    package func status(_ text: String) {
        send("STATUS=\(Self.oneLine(text))")
    }

    /// hushd is alive. Systemd restarts it when this does not arrive within `WatchdogSec=`.
    package func watchdog() {
        send("WATCHDOG=1")
    }

    /// hushd is re-reading its configuration; call ``ready(status:)`` when done. `MONOTONIC_USEC` lets
    /// `Type=notify-reload` (systemd 253 and later) tell this reload from an earlier one.
    package func reloading(status: String) {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let microseconds = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
        send("RELOADING=1\nMONOTONIC_USEC=\(microseconds)\nSTATUS=\(Self.oneLine(status))")
    }

    /// hushd is shutting down: systemd stops waiting for watchdog pings and reports "deactivating".
    package func stopping() {
        send("STOPPING=1")
    }

    /// Sends one datagram; a failure is logged once and otherwise dropped (see the type's notes).
    private func send(_ message: String) {
        guard let socket else { return }
        do {
            try socket.send(message)
        } catch {
            if !failureLogged.exchange(true, ordering: .relaxed) {
                let first = message.prefix { $0 != "\n" }
                logger.warning(
                    "\(error) (while sending \(first)); further notification failures are not logged. Is hushd running under the hushd.service unit it was started by?"
                )
            }
        }
    }

    /// Status text goes into a `KEY=value` line: a newline in it would start a new assignment.
    private static func oneLine(_ text: String) -> String {
        String(text.map { $0.isNewline ? " " : $0 })
    }

    /// Half of `WATCHDOG_USEC` when it is set, positive, and meant for `pid` (`WATCHDOG_PID` absent or equal),
    /// so that a ping is due well before systemd's deadline even if one loop turn runs late.
    package static func watchdogInterval(environment: [String: String], pid: pid_t, logger: Logger) -> Duration? {
        guard let text = environment["WATCHDOG_USEC"] else { return nil }
        guard let microseconds = UInt64(text), microseconds > 0 else {
            logger.warning("ignoring WATCHDOG_USEC='\(text)': it must be a positive number of microseconds")
            return nil
        }
        if let owner = environment["WATCHDOG_PID"] {
            // A watchdog meant for another process (a parent that exec'd hushd without clearing it) is not ours.
            guard let ownerPID = pid_t(owner), ownerPID == pid else { return nil }
        }
        return .microseconds(Int64(clamping: microseconds / 2))
    }
}

/// Why a message could not reach systemd: what was attempted, on which socket, and the system's answer.
package struct SystemdNotifyError: Error, Hashable, Sendable, CustomStringConvertible {
    package var operation: String
    package var socket: String
    package var errno: Int32?
    package var message: String

    /// "cannot send to systemd's notification socket /run/systemd/notify: Connection refused [errno 111]"
    package var description: String {
        "cannot \(operation) systemd's notification socket \(socket): \(message)"
            + (errno.map { " [errno \($0)]" } ?? "")
    }
}

/// An unbound AF_UNIX datagram socket and the address of systemd's notification socket. Every raw call of the
/// notifier is here; EINTR is retried, other errnos become a ``SystemdNotifyError``.
private final class NotifySocket: Sendable {
    package let name: String
    package let descriptor: Int32
    package let address: sockaddr_un
    package let addressLength: socklen_t

    /// Builds the address for `name`: an absolute path, or `@name` for the abstract namespace (the `@` stands for
    /// the leading NUL byte, as in systemd's own convention).
    package init(name: String) throws(SystemdNotifyError) {
        self.name = name
        var bytes = Array(name.utf8)
        let isAbstract = bytes.first == UInt8(ascii: "@")
        guard isAbstract || bytes.first == UInt8(ascii: "/") else {
            throw SystemdNotifyError(
                operation: "use",
                socket: "'\(name)'",
                message: "NOTIFY_SOCKET must be an absolute path or '@name' (hush does not speak vsock)"
            )
        }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        if isAbstract { bytes[0] = 0 }
        // A path needs room for its terminating NUL; an abstract name is counted by the address length instead.
        guard bytes.count + (isAbstract ? 0 : 1) <= capacity, bytes.count > 1 else {
            throw SystemdNotifyError(
                operation: "use",
                socket: "'\(name)'",
                message: "the name is \(bytes.count) bytes; a Unix socket address holds 1 to \(capacity - 1)"
            )
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let pathOffset = MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path)!
        addressLength = socklen_t(pathOffset + bytes.count + (isAbstract ? 0 : 1))
        self.address = address

        let created = Glibc.socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard created >= 0 else {
            let code = Glibc.errno
            throw SystemdNotifyError(
                operation: "create a socket for",
                socket: name,
                errno: code,
                message: String(cString: strerror(code))
            )
        }
        descriptor = created
    }

    deinit {
        Glibc.close(descriptor)
    }

    /// One datagram to systemd, never waiting: a full queue is EAGAIN, a vanished listener ECONNREFUSED or
    /// ENOENT, and no SIGPIPE either way.
    package func send(_ message: String) throws(SystemdNotifyError) {
        var address = self.address
        let bytes = Array(message.utf8)
        while true {
            // SAFETY: `bytes` and `address` live across the call; the length passed is the one built in init.
            let sent = bytes.withUnsafeBytes { buffer in
                withUnsafePointer(to: &address) { pointer in
                    pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                        sendto(
                            descriptor,
                            buffer.baseAddress,
                            buffer.count,
                            Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL),
                            socketAddress,
                            addressLength
                        )
                    }
                }
            }
            if sent >= 0 { return }
            let code = Glibc.errno
            if code == EINTR { continue }
            precondition(code != EBADF && code != EFAULT, "sendto failed with errno \(code): a bug in hush")
            let hint =
                switch code {
                case EAGAIN: "its queue is full (systemd is not reading)"
                case ECONNREFUSED, ENOENT: "nothing is listening there (systemd restarted, or a stale NOTIFY_SOCKET)"
                case EACCES, EPERM: "permission denied (a sandbox setting of the unit?)"
                default: String(cString: strerror(code))
                }
            throw SystemdNotifyError(operation: "send to", socket: name, errno: code, message: hint)
        }
    }
}
