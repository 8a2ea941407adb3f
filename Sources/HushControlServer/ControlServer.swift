import HushCore
import HushProtocol
import HushSystem
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// A connection to the control socket, as the handler sees it: its client id and the peer's credentials
/// (SO_PEERCRED, taken when it connected).
package struct ControlClient: Hashable, Sendable, CustomStringConvertible {
    package let id: ClientID
    package let pid: Int32
    package let uid: UInt32
    package let gid: UInt32
    /// The name the client gave in `hello`, if it did.
    package internal(set) var name: String?

    package init(id: ClientID, pid: Int32, uid: UInt32, gid: UInt32, name: String? = nil) {
        self.id = id
        self.pid = pid
        self.uid = uid
        self.gid = gid
        self.name = name
    }

    /// "client 1003 (pid 4242, uid 1000, gid 1000)", with the hello name when there is one.
    package var description: String {
        "client \(id.rawValue)" + (name.map { " \"\($0)\"" } ?? "") + " (pid \(pid), uid \(uid), gid \(gid))"
    }
}

/// What the daemon does with requests. Called on hushd's loop thread, from ``ControlServer/service(_:now:)``.
package protocol ControlHandler: AnyObject {
    /// Carries out one request from `client`; returns the reply (an error reply for rejections).
    ///
    /// `subscribe` and `unsubscribe` never arrive here: the server keeps subscriptions itself. The reply's `id`
    /// is set to the request's by the server. The reply's `descriptors` become the server's: it sends them with
    /// the reply's line and closes them then, or when the connection is gone first.
    func handle(_ request: ControlRequest, from client: ControlClient) -> ControlReply
    /// The connection closed (or was cut off): its sessions end (policy rule R10, event `.clientGone`).
    ///
    /// Never called from inside ``ControlServer/send(_:toSubscribersAnd:)``: a client cut off while an event
    /// is queued is reported from the next ``ControlServer/service(_:now:)``, so the handler is not re-entered.
    func clientDisconnected(_ client: ControlClient)
}

/// The control socket: a Unix stream socket where clients send newline-delimited JSON requests and receive
/// replies and events (docs/protocol.md).
///
/// - Important: Runs on hushd's single loop thread and never blocks: every descriptor is non-blocking, output
///   waits in a bounded queue per client, and the loop polls ``pollRequests`` (POLLOUT only while output waits).
///   It starts no threads.
package final class ControlServer: LoopParticipant {
    /// Where the socket is.
    package let path: String
    package let limits: ControlLimits
    /// Who may connect: hushd's own uid, root, members of the socket's group, and these uids.
    package let allowedUIDs: Set<UInt32>
    /// The socket file's group (the configured group, or hushd's); its members may connect.
    package let socketGroup: UInt32
    package weak var handler: (any ControlHandler)?

    private let logger: Logger
    private let codec: ControlCodec
    private var listener: Int32
    private var socketInode: ino_t = 0
    private var connections: [Int32: Connection] = [:]
    private var nextClient: UInt64
    /// Clients that went away outside ``service(_:now:)``; the handler hears of them at the next service.
    private var pendingDisconnects: [ControlClient] = []
    private var readBuffer = [UInt8](repeating: 0, count: 65_536)

    /// Creates the socket at `path`: a stale socket file left by a crashed hushd is removed, but a live hushd on
    /// it is not disturbed.
    ///
    /// - Parameters:
    ///   - mode: the socket file's permissions (0660: hushd's user and group).
    ///   - group: the socket file's group, by name; its members may connect. Nil keeps hushd's own group.
    ///   - allowedUIDs: more users who may connect, whatever their groups.
    ///   - firstClientID: the first client id handed out (kept clear of the console's and scenarios' ids).
    /// - Throws: `HardwareError` naming the path and what to do: another hushd answers there, the path is not a
    ///   socket, the group does not exist, the directory is missing or not writable.
    package init(
        path: String,
        mode: mode_t = 0o660,
        group: String? = nil,
        limits: ControlLimits = ControlLimits(),
        allowedUIDs: Set<UInt32> = [],
        firstClientID: UInt64 = 1000,
        logger: Logger
    ) throws(HardwareError) {
        self.path = path
        self.limits = limits
        self.allowedUIDs = allowedUIDs
        self.logger = logger
        codec = ControlCodec(maxLineBytes: limits.maxLineBytes)
        nextClient = firstClientID

        var groupID: UInt32?
        if let group {
            guard let id = UnixSocket.groupID(group) else {
                throw HardwareError(
                    operation: "give the control socket to group '\(group)':",
                    device: path,
                    message: "there is no group '\(group)'; create it (groupadd --system \(group)) or name an "
                        + "existing group in [control] group"
                )
            }
            groupID = id
        }
        try Self.removeStaleSocket(at: path, logger: logger)

        listener = try UnixSocket.stream(for: path)
        let fd = listener
        do throws(HardwareError) {
            let bound = try UnixSocket.withAddress(path) { address, length in bind(fd, address, length) == 0 ? 0 : errno
            }
            guard bound == 0 else {
                throw UnixSocket.error(
                    "bind the control socket",
                    path,
                    bound,
                    bound == ENOENT ? "create its directory (systemd's RuntimeDirectory=hush does)" : nil
                )
            }
            guard chmod(path, mode) == 0 else {
                throw UnixSocket.error("set the mode of the control socket", path, errno)
            }
            var info = stat()
            guard stat(path, &info) == 0 else { throw UnixSocket.error("check the control socket", path, errno) }
            // A socket made in hushd's own group (hushd.service: Group=hush, the default group) needs no chown, which
            // the unit's system call filter (~@privileged) refuses.
            if let groupID, info.st_gid != groupID {
                guard chown(path, uid_t.max, groupID) == 0 else {
                    let error = errno
                    throw UnixSocket.error(
                        "give the control socket to group '\(group ?? "")':",
                        path,
                        error,
                        "hushd must run as root or be a member of the group"
                            + (error == EPERM
                                ? "; under systemd a SystemCallFilter without @chown refuses it too (hushd.service "
                                    + "does): name the unit's Group= in [control] group" : "")
                    )
                }
                guard stat(path, &info) == 0 else { throw UnixSocket.error("check the control socket", path, errno) }
            }
            socketInode = info.st_ino
            socketGroup = info.st_gid
            // A boot's worth of clients may connect before hushd is ready (it listens first): they wait here.
            guard listen(fd, 64) == 0 else { throw UnixSocket.error("listen on the control socket", path, errno) }
        } catch {
            Glibc.close(fd)
            // A throw after socketGroup is set (listen) leaves self fully initialised, so deinit runs and calls
            // close(): it must not close the number again (it may belong to another descriptor by then).
            listener = -1
            unlink(path)
            throw error
        }
        logger.info(
            "control socket \(path) ready (mode \(String(mode, radix: 8)), group \(socketGroup), up to \(limits.maxClients) clients, \(limits.maxClientsPerProcess) per process)"
        )
    }

    private static func removeStaleSocket(at path: String, logger: Logger) throws(HardwareError) {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            guard errno == ENOENT else { throw UnixSocket.error("check the control socket path", path, errno) }
            return
        }
        guard info.st_mode & S_IFMT == S_IFSOCK else {
            throw HardwareError(
                operation: "create the control socket",
                device: path,
                message: "the path exists and is not a socket; remove it or set [control] socket to another path"
            )
        }
        guard try !UnixSocket.answers(path) else {
            throw HardwareError(
                operation: "create the control socket",
                device: path,
                message: "another hushd answers on it; stop that one first (systemctl stop hushd) or set "
                    + "[control] socket to another path"
            )
        }
        guard unlink(path) == 0 || errno == ENOENT else {
            throw UnixSocket.error("remove the stale control socket", path, errno)
        }
        logger.notice("removed the stale control socket \(path) (left by a hushd that did not stop cleanly)")
    }

    deinit { close() }

    // MARK: The loop

    /// The listening socket and every client: POLLIN always, POLLOUT only while output waits.
    package var pollRequests: [pollfd] {
        guard listener >= 0 else { return [] }
        var requests = [pollfd(fd: listener, events: Int16(POLLIN), revents: 0)]
        for connection in connections.values.sorted(by: { $0.client.id < $1.client.id }) {
            let events = POLLIN | (connection.queued > 0 ? POLLOUT : 0)
            requests.append(pollfd(fd: connection.fd, events: Int16(events), revents: 0))
        }
        return requests
    }

    /// Now, while a disconnect waits to be reported to the handler; otherwise nil.
    package var nextDeadline: Instant? { pendingDisconnects.isEmpty ? nil : .zero }

    /// Accepts new clients, reads and answers complete request lines, writes queued output, and reports
    /// disconnects to the handler.
    package func service(_ ready: [pollfd], now: Instant) {
        for request in ready where request.fd != listener && request.revents != 0 {
            // A descriptor closed since the poll (cut off by an event) is no longer ours.
            guard let connection = connections[request.fd] else { continue }
            if request.revents & Int16(POLLOUT) != 0 { flush(connection) }
            // A failed write closes the connection; its descriptor number must not be read again.
            if !connection.closed && request.revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 { receive(connection) }
        }
        // Accepted after the clients are served, so a descriptor number freed above is not mistaken for a new one.
        if ready.contains(where: { $0.fd == listener && $0.revents & Int16(POLLIN) != 0 }) { acceptClients() }
        reportDisconnects()
    }

    /// Closes every connection and the socket, and removes the socket file. The handler is not told of the
    /// clients (hushd is stopping).
    package func close() {
        for connection in connections.values {
            connection.closeDescriptors()
            Glibc.close(connection.fd)
        }
        connections.removeAll()
        guard listener >= 0 else { return }
        Glibc.close(listener)
        listener = -1
        // Only our own socket: another hushd may have replaced it since.
        var info = stat()
        if stat(path, &info) == 0, info.st_ino == socketInode { unlink(path) }
    }

    // MARK: Events

    /// Sends `event` to every subscriber whose filter takes it, and to `owner` (a session's client) whether
    /// subscribed or not. A client whose queue overflows is cut off.
    package func send(_ event: ControlEvent, toSubscribersAnd owner: ClientID?) {
        let line = codec.encode(event)
        for connection in connectionsInOrder
        where connection.client.id == owner || connection.subscription?.contains(event.kind) == true {
            enqueue(line, to: connection)
        }
    }

    /// Sends `event` to one client.
    package func send(_ event: ControlEvent, to client: ClientID) {
        guard let connection = connections.values.first(where: { $0.client.id == client }) else { return }
        enqueue(codec.encode(event), to: connection)
    }

    /// The connected clients, oldest first.
    package var clients: [ControlClient] { connectionsInOrder.map(\.client) }

    /// A client id no connection has or will have: for sessions that belong to something other than one
    /// connection (an application's streams, which come and go on connections of their own).
    package func reserveClientID() -> ClientID {
        defer { nextClient += 1 }
        return ClientID(nextClient)
    }

    /// The connected client with this id.
    package func client(_ id: ClientID) -> ControlClient? {
        connections.values.first { $0.client.id == id }?.client
    }

    // MARK: Connections

    private final class Connection {
        let fd: Int32
        var client: ControlClient
        var input: LineBuffer
        var output: [UInt8] = []
        var outputStart = 0
        /// Bytes written to the socket since the connection opened: `output[outputStart]` is byte number `sent`.
        var sent = 0
        /// Descriptors waiting to go with a queued line, oldest first: the line's first byte (as a count of bytes
        /// since the connection opened, like `sent`) and its length.
        var descriptors: [(position: Int, length: Int, descriptors: [Int32])] = []
        /// The event kinds it subscribed to; nil when it has not.
        var subscription: Set<ControlEventKind>?
        var closed = false

        init(fd: Int32, client: ControlClient, maxLineBytes: Int) {
            self.fd = fd
            self.client = client
            input = LineBuffer(maxLineBytes: maxLineBytes)
        }

        var queued: Int { output.count - outputStart }

        /// Closes the descriptors that were never sent (the connection is gone).
        func closeDescriptors() {
            for pending in descriptors {
                for descriptor in pending.descriptors { Glibc.close(descriptor) }
            }
            descriptors.removeAll()
        }
    }

    private var connectionsInOrder: [Connection] {
        connections.values.sorted { $0.client.id < $1.client.id }
    }

    private func acceptClients() {
        while true {
            let fd: Int32
            do {
                guard let accepted = try UnixSocket.accept(listener, path: path) else { return }
                fd = accepted
            } catch {
                // EMFILE and the like: say so once per burst and let the loop come back.
                logger.error("control: \(error.description)")
                return
            }
            guard let credentials = UnixSocket.peerCredentials(fd) else {
                logger.warning("control: a connection without peer credentials was refused")
                Glibc.close(fd)
                continue
            }
            let peer = "pid \(credentials.pid), uid \(credentials.uid), gid \(credentials.gid)"
            guard isAllowed(credentials, fd: fd) else {
                let why =
                    "uid \(credentials.uid) is neither hushd's user, root, a member of the socket's group "
                    + "\(socketGroup), nor in the allow list"
                logger.warning("control: refused a connection from \(peer): \(why)")
                refuse(
                    fd,
                    ControlError(
                        .notPermitted,
                        "uid \(credentials.uid) may not use hushd; join the socket's group or ask for your uid to "
                            + "be added to [control] allowed_uids"
                    )
                )
                continue
            }
            let fromProcess = connections.values.count { $0.client.pid == credentials.pid }
            guard fromProcess < limits.maxClientsPerProcess else {
                logger.warning(
                    "control: refused a connection from \(peer): that process already has \(fromProcess) connections, the limit per process"
                )
                refuse(
                    fd,
                    ControlError(
                        .tooManyClients,
                        "process \(credentials.pid) already has \(fromProcess) connections to hushd, the limit for "
                            + "one process; close one first"
                    )
                )
                continue
            }
            guard connections.count < limits.maxClients else {
                logger.warning(
                    "control: refused a connection from \(peer): already \(connections.count) clients, the limit"
                )
                refuse(
                    fd,
                    ControlError(
                        .tooManyClients,
                        "hushd already has \(limits.maxClients) clients, its limit; try again when one has left"
                    )
                )
                continue
            }
            let client = ControlClient(
                id: ClientID(nextClient),
                pid: credentials.pid,
                uid: credentials.uid,
                gid: credentials.gid
            )
            nextClient += 1
            connections[fd] = Connection(fd: fd, client: client, maxLineBytes: limits.maxLineBytes)
            logger.info("control: \(client) connected")
        }
    }

    private func isAllowed(_ peer: UnixSocket.PeerCredentials, fd: Int32) -> Bool {
        if peer.uid == 0 || peer.uid == geteuid() || allowedUIDs.contains(peer.uid) || peer.gid == socketGroup {
            return true
        }
        let groups = UnixSocket.peerGroups(fd) ?? UnixSocket.groups(ofUser: peer.uid, primary: peer.gid)
        return groups.contains(socketGroup)
    }

    /// Tells a refused peer why (one line, best effort: its buffer is empty) and closes the connection.
    private func refuse(_ fd: Int32, _ error: ControlError) {
        _ = UnixSocket.send(fd, codec.encode(ControlReply.failure(error))[...])
        Glibc.close(fd)
    }

    private func receive(_ connection: Connection) {
        // A bounded number of reads per turn, so one busy client cannot hold the loop.
        for _ in 0..<8 {
            switch UnixSocket.read(connection.fd, into: &readBuffer) {
            case .bytes(let count):
                for item in connection.input.append(readBuffer[0..<count]) {
                    dispatch(item, from: connection)
                    if connection.closed { return }
                }
            case .wouldBlock:
                return
            case .endOfFile:
                drop(connection, reason: nil)
                return
            case .failed(let code):
                drop(connection, reason: "read failed: \(String(cString: strerror(code)))")
                return
            }
        }
    }

    private func dispatch(_ item: LineBuffer.Item, from connection: Connection) {
        let reply: ControlReply
        switch item {
        case .tooLong(let length):
            logger.debug("control: \(connection.client): a \(length)-byte line over the limit was discarded")
            reply = .failure(ControlCodec.tooLong(length, limit: limits.maxLineBytes))
        case .line(let bytes):
            // Blank lines (a person pressing Enter in a shell session) are not requests.
            guard bytes.contains(where: { ![0x20, 0x09, 0x0D].contains($0) }) else { return }
            switch codec.decodeRequest(bytes) {
            case .failure(let failure):
                logger.debug("control: \(connection.client): \(failure.error)")
                reply = .failure(failure.error, id: failure.id)
            case .success(let request):
                reply = answer(request, from: connection)
            }
        }
        enqueue(codec.encode(reply), descriptors: reply.descriptors, to: connection)
    }

    private func answer(_ request: ControlRequest, from connection: Connection) -> ControlReply {
        var reply: ControlReply
        switch request.command {
        case .subscribe(let kinds):
            let chosen = kinds ?? Set(ControlEventKind.allCases)
            connection.subscription = chosen
            reply = ControlReply(events: chosen.sorted())
        case .unsubscribe:
            connection.subscription = nil
            reply = .ok()
        default:
            if case .hello(let name?) = request.command {
                connection.client.name = name
                logger.info("control: \(connection.client) said hello")
            }
            guard let handler else {
                reply = .failure(ControlError(.internalError, "hushd is starting or stopping; try again"))
                break
            }
            reply = handler.handle(request, from: connection.client)
            if !reply.ok, let error = reply.error {
                logger.debug("control: \(connection.client): \(request.command.name) refused: \(error)")
            }
        }
        reply.id = request.id
        return reply
    }

    /// Queues `line` for `connection` and writes what the socket takes now. A client whose queue passes the
    /// limit is cut off: it stopped reading, and hushd must not hold its output without bound.
    ///
    /// `descriptors` go with the line's first byte, however much output waits before it; they are closed once
    /// sent, or when the connection is gone.
    private func enqueue(_ line: [UInt8], descriptors: [Int32] = [], to connection: Connection) {
        guard !connection.closed else {
            for descriptor in descriptors { Glibc.close(descriptor) }
            return
        }
        if !descriptors.isEmpty {
            connection.descriptors.append((connection.sent + connection.queued, line.count, descriptors))
        }
        connection.output += line
        if connection.queued > limits.maxQueuedBytes {
            drop(
                connection,
                reason: "cut off: \(connection.queued) bytes of output wait unread, over the limit of "
                    + "\(limits.maxQueuedBytes) (a subscriber that stopped reading?)"
            )
            return
        }
        flush(connection)
    }

    /// Writes what the socket takes. A line with descriptors goes alone in the sendmsg that carries them: the
    /// bytes before it end the sendmsg before, so the peer receives the descriptors with the read that returns
    /// the line's first byte, and that read ends inside the line or at its end (docs/protocol.md, "Streams").
    private func flush(_ connection: Connection) {
        while !connection.closed && connection.queued > 0 {
            let start = connection.outputStart
            var end = connection.output.count
            var descriptors: [Int32] = []
            if let next = connection.descriptors.first {
                let offset = next.position - connection.sent
                if offset <= 0 {
                    // At the line's first byte (never past it: a line's descriptors go with its first sendmsg).
                    descriptors = next.descriptors
                    end = min(end, start + next.length)
                } else {
                    end = min(end, start + offset)
                }
            }
            switch UnixSocket.send(connection.fd, connection.output[start..<end], descriptors: descriptors) {
            case .wrote(let count) where count > 0:
                connection.outputStart += count
                connection.sent += count
                if !descriptors.isEmpty {
                    // The peer has its own now.
                    for descriptor in descriptors { Glibc.close(descriptor) }
                    connection.descriptors.removeFirst()
                }
            case .wrote, .wouldBlock:
                compact(connection)
                return
            case .failed(let code):
                let reason =
                    code == EPIPE || code == ECONNRESET
                    ? nil : "write failed: \(String(cString: strerror(code)))"
                drop(connection, reason: reason)
                return
            }
        }
        connection.output.removeAll(keepingCapacity: connection.output.count <= 65_536)
        connection.outputStart = 0
    }

    private func compact(_ connection: Connection) {
        guard connection.outputStart > 65_536, connection.outputStart * 2 > connection.output.count else { return }
        connection.output.removeFirst(connection.outputStart)
        connection.outputStart = 0
    }

    /// Closes a connection now; the handler hears of it at the end of the current (or next) service.
    private func drop(_ connection: Connection, reason: String?) {
        guard !connection.closed else { return }
        connection.closed = true
        connection.closeDescriptors()
        Glibc.close(connection.fd)
        connections[connection.fd] = nil
        if let reason {
            logger.warning("control: \(connection.client) \(reason)")
        } else {
            logger.info("control: \(connection.client) disconnected")
        }
        pendingDisconnects.append(connection.client)
    }

    private func reportDisconnects() {
        // The handler's own events may cut off more clients while it is told: keep going until none is left.
        while !pendingDisconnects.isEmpty {
            let client = pendingDisconnects.removeFirst()
            handler?.clientDisconnected(client)
        }
    }
}
