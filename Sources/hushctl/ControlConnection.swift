import HushProtocol

#if canImport(Glibc)
import Glibc
#endif

/// What went wrong talking to hushd, phrased for the person at the terminal.
struct ClientFailure: Error, CustomStringConvertible {
    var description: String
    /// Connecting only: why, in a few words ("permission denied (join …)"), and the errno.
    var reason = ""
    var code: Int32 = 0
    init(_ description: String) { self.description = description }
}

/// One connection to hushd's control socket. hushctl may block: it is a one-shot client, not the daemon.
final class ControlConnection {
    let path: String
    /// -1 once closed. A throwing init closes it itself: `deinit` still runs then, and must not close it again
    /// (the number may belong to another descriptor by then).
    private(set) var fd: Int32
    private var input = LineBuffer(maxLineBytes: 1 << 24)
    private var lines: [[UInt8]] = []
    private var nextID: Int64 = 1
    private let codec = ControlCodec(maxLineBytes: 1 << 24)
    /// Raw lines as they arrive, for --json (replies and events alike).
    var onLine: (([UInt8]) -> Void)?
    /// Events that arrive while a reply is awaited.
    var onEvent: ((ControlEvent) -> Void)?

    init(path: String) throws(ClientFailure) {
        self.path = path
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else {
            var failure = ClientFailure("hushctl: cannot create a socket: \(String(cString: strerror(errno)))")
            failure.reason = "cannot create a socket: \(String(cString: strerror(errno)))"
            failure.code = errno
            throw failure
        }
        let bytes = Array(path.utf8)
        var address = sockaddr_un()
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else {
            close(fd)
            fd = -1
            var failure = ClientFailure(
                "hushctl: cannot connect to \(path): the path is longer than \(capacity - 1) bytes"
            )
            failure.reason = "the path is longer than \(capacity - 1) bytes"
            failure.code = ENAMETOOLONG
            throw failure
        }
        address.sun_family = sa_family_t(AF_UNIX)
        // SAFETY: the path and its NUL fit in sun_path (checked above); the zeroed address supplies the NUL.
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        var result: Int32
        repeat {
            result = withUnsafePointer(to: &address) {
                // SAFETY: sockaddr_un begins with the generic sockaddr header.
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
        } while result < 0 && errno == EINTR
        guard result == 0 else {
            let code = errno
            close(fd)
            fd = -1
            var failure = ClientFailure("hushctl: cannot connect to \(path): " + Self.explain(code))
            failure.reason = Self.explain(code)
            failure.code = code
            throw failure
        }
    }

    deinit { if fd >= 0 { close(fd) } }

    static func explain(_ code: Int32) -> String {
        switch code {
        case ENOENT: "no such file (is hushd running?)"
        case ECONNREFUSED: "connection refused (hushd is not running; the socket is left from an earlier run)"
        case EACCES, EPERM:
            "permission denied (join the socket's group, usually hush: sudo usermod -aG hush $USER, then log in again)"
        case ENOTSOCK: "not a socket"
        default: String(cString: strerror(code)).lowercased()
        }
    }

    /// Sends `command` with a fresh id; returns the id.
    @discardableResult
    func send(_ command: ControlCommand) throws(ClientFailure) -> RequestID {
        let id = RequestID.number(nextID)
        nextID += 1
        try write(codec.encode(ControlRequest(id: id, command)))
        return id
    }

    /// Sends a line as it is (the shell's raw JSON).
    func write(_ bytes: [UInt8]) throws(ClientFailure) {
        var offset = 0
        while offset < bytes.count {
            let count = bytes[offset...].withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if count < 0 {
                if errno == EINTR { continue }
                // hushd may have refused the connection (not-permitted, too-many-clients) and closed it before
                // this request went out: its one line saying why is still there to read, and the end of file
                // after it is reported by the reading side. Stopping here would hide the reason.
                if errno == EPIPE || errno == ECONNRESET { return }
                throw ClientFailure("hushctl: hushd closed the connection (\(String(cString: strerror(errno))))")
            }
            offset += count
        }
    }

    /// Sends `command` and waits for its reply, handing events that come first to ``onEvent``.
    func request(_ command: ControlCommand) throws(ClientFailure) -> ControlReply {
        let id = try send(command)
        while true {
            guard let message = try nextMessage(timeout: -1) else { continue }
            switch message {
            case .event(let event): onEvent?(event)
            case .reply(let reply) where reply.id == id: return reply
            // An error without an id is about the connection itself (refused, too many clients).
            case .reply(let reply) where reply.id == nil && !reply.ok: return reply
            case .reply: continue
            }
        }
    }

    /// Like ``request(_:)``, but an error reply becomes a failure.
    func expectOK(_ command: ControlCommand) throws(ClientFailure) -> ControlReply {
        let reply = try request(command)
        if let error = reply.error, !reply.ok {
            throw ClientFailure("hushctl: hushd refused \(command.name): \(error.message) [\(error.code)]")
        }
        return reply
    }

    /// The next line from hushd, waiting up to `timeout` milliseconds (-1: no limit); nil when none came.
    func nextMessage(timeout: Int32) throws(ClientFailure) -> ServerMessage? {
        guard let line = try nextLine(timeout: timeout) else { return nil }
        onLine?(line)
        do {
            return try codec.decodeMessage(line)
        } catch {
            throw ClientFailure("hushctl: hushd sent a line hushctl does not understand: \(error.message)")
        }
    }

    /// Whether a complete line is already buffered (so polling the socket is not needed to get it).
    var hasBufferedLine: Bool { !lines.isEmpty }

    func nextLine(timeout: Int32) throws(ClientFailure) -> [UInt8]? {
        while lines.isEmpty {
            var request = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&request, 1, timeout)
            if ready < 0 && errno == EINTR { return nil }
            if ready == 0 { return nil }
            try readAvailable()
        }
        return lines.removeFirst()
    }

    /// Reads what the socket holds now into complete lines.
    func readAvailable() throws(ClientFailure) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        if count == 0 { throw ClientFailure("hushctl: hushd closed the connection") }
        if count < 0 {
            if errno == EINTR || errno == EAGAIN { return }
            throw ClientFailure("hushctl: reading from hushd failed: \(String(cString: strerror(errno)))")
        }
        for item in input.append(buffer[0..<count]) {
            if case .line(let line) = item { lines.append(line) }
        }
    }
}

/// SIGINT and SIGTERM as a readable pipe, so a held connection ends cleanly (deactivating with notifyOthers)
/// instead of dying mid-session.
enum StopSignal {
    /// The write end; a plain integer, so the handler only reads a word and calls write (async-signal-safe).
    nonisolated(unsafe) static var writeEnd: Int32 = -1

    /// The read end, readable once a stop signal came.
    static func install() -> Int32 {
        var ends: [Int32] = [-1, -1]
        pipe(&ends)
        _ = fcntl(ends[1], F_SETFL, O_NONBLOCK)
        writeEnd = ends[1]
        let handler: @convention(c) (Int32) -> Void = { _ in
            var byte: UInt8 = 1
            _ = write(StopSignal.writeEnd, &byte, 1)
        }
        signal(SIGINT, handler)
        signal(SIGTERM, handler)
        signal(SIGPIPE, SIG_IGN)
        return ends[0]
    }
}
