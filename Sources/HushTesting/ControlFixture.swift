import Foundation
import HushControlServer
import HushCore
import HushProtocol
import HushSystem
import Logging

#if canImport(Glibc)
import Glibc
#endif

// A control server on a real Unix socket with a fake handler, and clients for it: for the control server's own
// tests (HushControlServerTests) and for hushctl's, which run the built hushctl against it (HushIntegrationTests).

/// A server in a temporary directory with a fake handler, and the loop that drives it.
package final class ControlFixture {
    package let directory: ScratchDirectory
    package let path: String
    package let server: ControlServer
    package let handler: FakeControlHandler
    package let log = ControlTestLog()

    package init(
        directory: ScratchDirectory? = nil,
        limits: ControlLimits = ControlLimits(),
        mode: mode_t = 0o660
    ) throws {
        self.directory = try directory ?? ScratchDirectory(prefix: "hush-control")
        path = self.directory.path + "/control.sock"
        server = try ControlServer(path: path, mode: mode, limits: limits, logger: log.logger)
        handler = FakeControlHandler()
        handler.server = server
        server.handler = handler
    }

    deinit { server.close() }

    package func connect() throws -> ControlTestClient {
        let client = try ControlTestClient(path: path)
        let before = server.clients.count
        pump(until: { self.server.clients.count > before })
        return client
    }

    /// One turn of hushd's loop: poll the server's descriptors, then service them.
    package func turn(timeout: Int32) {
        var requests = server.pollRequests
        _ = poll(&requests, nfds_t(requests.count), timeout)
        server.service(requests, now: .zero)
    }

    package func pump(for milliseconds: Int) {
        let end = Self.now() + milliseconds
        repeat { turn(timeout: 5) } while Self.now() < end
    }

    package func pump(until done: () -> Bool, milliseconds: Int = 3000) {
        let end = Self.now() + milliseconds
        while !done() && Self.now() < end { turn(timeout: 5) }
    }

    package func lines(from client: ControlTestClient, count: Int) throws -> [String] {
        var lines: [String] = []
        pump(until: {
            lines += client.availableLines()
            return lines.count >= count
        })
        guard lines.count == count else { throw TestFailure("expected \(count) lines, got \(lines)") }
        return lines
    }

    package func line(from client: ControlTestClient) throws -> String { try lines(from: client, count: 1)[0] }

    package static func now() -> Int {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return time.tv_sec * 1000 + time.tv_nsec / 1_000_000
    }
}

/// Answers like hushd would, records what it was asked and who left.
package final class FakeControlHandler: ControlHandler {
    package weak var server: ControlServer?
    package var requests: [(request: ControlRequest, client: ControlClient)] = []
    package var disconnected: [ControlClient] = []
    package var sessions: UInt64 = 0
    /// What `open-stream` passes with its reply (the server closes them); none when nil.
    package var streamDescriptors: (() -> [Int32])?

    package init() {}

    package func handle(_ request: ControlRequest, from client: ControlClient) -> ControlReply {
        requests.append((request, client))
        switch request.command {
        case .hello, .version:
            return ControlReply(hello: HelloReport(version: "test", client: client.id))
        case .activate:
            sessions += 1
            return ControlReply(session: SessionID(sessions))
        case .setVolume(let kind, .delta(let delta)):
            let step = VolumeStep(clamping: 8 + delta)
            return ControlReply(
                volume: VolumeReport(kind: kind, step: step, gainDecibels: VolumeCurve.default.decibels(at: step))
            )
        case .getRoute:
            return ControlReply(route: RouteReport(current: .speaker, overridden: false))
        case .setRoute(let route):
            return ControlReply(route: RouteReport(current: route ?? .speaker, overridden: route != nil))
        case .getVolume(let kind):
            return ControlReply(volume: VolumeReport(kind: kind, step: VolumeStep(clamping: 8), gainDecibels: -24))
        case .setVolume(let kind, .step(let step)):
            // Like hushd: the policy's notification goes out while the request is handled, before the reply.
            server?.send(.volumeChanged(kind, step, route: .speaker), toSubscribersAnd: client.id)
            let decibels = VolumeCurve.default.decibels(at: step)
            return ControlReply(volume: VolumeReport(kind: kind, step: step, gainDecibels: decibels))
        case .status:
            return ControlReply(status: ControlStatusFixture.status)
        case .openStream:
            sessions += 1
            return ControlReply(
                stream: StreamReport(
                    id: StreamID(sessions),
                    session: SessionID(sessions),
                    ringFrames: 4096,
                    periodFrames: 64
                ),
                descriptors: streamDescriptors?() ?? []
            )
        case .pause(let session), .resume(let session), .stop(let session), .deactivate(let session, _),
            .play(let session, _, _), .setLevel(let session, _):
            guard session.rawValue <= sessions else {
                return .failure(ControlError(.unknownSession, "there is no \(session)", field: "session"))
            }
            return .ok()
        default:
            return .ok()
        }
    }

    package func clientDisconnected(_ client: ControlClient) { disconnected.append(client) }
}

/// A fixed status, for byte-for-byte output: what ``FakeControlHandler`` answers `status` with.
package enum ControlStatusFixture {
    package static let status = ControlStatus(
        version: "0.1.0",
        uptimeSeconds: 75,
        silenceSwitch: .silent,
        jack: .unplugged,
        route: .speaker,
        routeOverridden: false,
        systemVolume: VolumeStep(clamping: 8),
        systemGainDecibels: -24,
        ringerVolume: VolumeStep(clamping: 10),
        ringerGainDecibels: -17.5,
        buttonsControl: .system,
        secondaryAudioShouldBeSilenced: false,
        sessions: [
            ControlStatus.Session(
                id: SessionID(1),
                client: ClientID(1000),
                pid: 321,
                uid: 1000,
                gid: 1000,
                name: "radio",
                configuration: SessionConfiguration(bus: .music, category: .playback),
                state: "playing",
                sound: "a 440 Hz tone"
            )
        ],
        output: ControlStatus.Output(
            pcm: "default",
            open: true,
            sampleRate: 48_000,
            channels: 2,
            periodFrames: 64,
            periods: 3,
            xruns: 0,
            losses: 0,
            latencyMilliseconds: 4
        ),
        clients: 1
    )
}

/// A client socket, read without blocking.
package final class ControlTestClient {
    package private(set) var fd: Int32
    private var buffer = LineBuffer(maxLineBytes: 1 << 20)

    package init(path: String) throws {
        // Close-on-exec: the hushctl processes other tests start must not inherit it.
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard result == 0 else { throw TestFailure("connect: \(String(cString: strerror(errno)))") }
        _ = fcntl(fd, F_SETFL, O_NONBLOCK)
    }

    deinit { close() }

    /// Closes once: a second close could close a descriptor another test opened since.
    package func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    package func write(_ text: String) throws {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let count = bytes[offset...].withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard count > 0 || errno == EAGAIN else { throw TestFailure("send: \(String(cString: strerror(errno)))") }
            if count > 0 { offset += count }
        }
    }

    /// The complete lines readable now.
    package func availableLines() -> [String] {
        var lines: [String] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            guard count > 0 else { break }
            for item in buffer.append(chunk[0..<count]) {
                if case .line(let bytes) = item { lines.append(String(decoding: bytes, as: UTF8.self)) }
            }
        }
        return lines
    }

    /// Reads until the server closes the connection; returns what came.
    package func readToEnd(_ fixture: ControlFixture) throws -> String {
        var text = ""
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let end = ControlFixture.now() + 3000
        while ControlFixture.now() < end {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count == 0 { return text }
            if count > 0 {
                text += String(decoding: chunk[0..<count], as: UTF8.self)
            } else if errno == ECONNRESET {
                return text
            } else {
                fixture.pump(for: 5)
            }
        }
        throw TestFailure("the connection was not closed (it sent \(text.utf8.count) bytes)")
    }
}

/// Keeps every log message as "level: message" (HushTesting's recorder, at info).
package final class ControlTestLog: Sendable {
    private let recorded = RecordingLogHandler.logger(label: "control-test", level: .info)

    package init() {}

    package var messages: [String] { recorded.1.leveled }

    package var logger: Logger { recorded.0 }
}

/// A client that reads with recvmsg, and knows which line each descriptor came with: the line the read that
/// brought it ended in (docs/protocol.md, "How the descriptors travel").
package final class DescriptorClient {
    package private(set) var fd: Int32
    private var buffer = LineBuffer(maxLineBytes: 1 << 20)
    /// Descriptors that came with a read that ended inside a line: they belong to that line.
    private var waiting: [Int32] = []

    package init(path: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        let connected = try UnixSocket.withAddress(path) { connect(fd, $0, $1) }
        guard connected == 0 else { throw TestFailure("connect: \(String(cString: strerror(errno)))") }
        _ = fcntl(fd, F_SETFL, O_NONBLOCK)
    }

    deinit { close() }

    package func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
        waiting.forEach { Glibc.close($0) }
        waiting = []
    }

    package func send(_ text: String) throws {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            switch UnixSocket.send(fd, bytes) {
            case .wrote(let count): bytes = bytes.dropFirst(count)
            case .wouldBlock: usleep(1000)
            case .failed(let code): throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
            }
        }
    }

    /// The lines readable now, each with the descriptors that came with it.
    package func available() throws -> [(line: String, descriptors: [Int32])] {
        var messages: [(line: String, descriptors: [Int32])] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            var descriptors: [Int32] = []
            switch UnixSocket.receive(fd, into: &chunk, descriptors: &descriptors) {
            case .bytes(let count):
                let lines = buffer.append(chunk[0..<count]).compactMap { item -> String? in
                    guard case .line(let bytes) = item else { return nil }
                    return String(decoding: bytes, as: UTF8.self)
                }
                // This read's descriptors belong to the line it ended in: its last complete line when it ended
                // at a newline, else the line the next reads complete.
                let endsLine = chunk[count - 1] == 0x0A
                for (index, line) in lines.enumerated() {
                    var owned: [Int32] = []
                    if index == 0 {
                        owned += waiting
                        waiting = []
                    }
                    if index == lines.count - 1 && endsLine { owned += descriptors }
                    messages.append((line, owned))
                }
                if lines.isEmpty || !endsLine { waiting += descriptors }
            case .wouldBlock, .endOfFile:
                return messages
            case .failed(let code):
                throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
            }
        }
    }

    /// Exactly `count` lines, serving the fixture's loop while they come.
    package func messages(from fixture: ControlFixture, count: Int) throws -> [(line: String, descriptors: [Int32])] {
        var messages: [(line: String, descriptors: [Int32])] = []
        var failure: (any Error)?
        // Ten seconds without a line is a server that stopped; a slow machine (an emulated arm64 under load) still
        // sending is given the time it takes.
        var before = -1
        while messages.count < count && messages.count > before && failure == nil {
            before = messages.count
            fixture.pump(
                until: {
                    do {
                        messages += try available()
                    } catch {
                        failure = error
                        return true
                    }
                    return messages.count >= count
                },
                milliseconds: 10_000
            )
        }
        if let failure { throw failure }
        guard messages.count == count else { throw TestFailure("expected \(count) lines, got \(messages.count)") }
        return messages
    }

    /// Whether the server closes the connection (within a few seconds) after what it sent.
    package func readToEnd(_ fixture: ControlFixture) throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 4096)
        var ended = false
        fixture.pump(
            until: {
                var descriptors: [Int32] = []
                if case .endOfFile = UnixSocket.receive(fd, into: &chunk, descriptors: &descriptors) { ended = true }
                descriptors.forEach { Glibc.close($0) }
                return ended
            },
            milliseconds: 3000
        )
        return ended
    }
}
