import CLinux
import Foundation
import HushControlServer
import HushCore
import HushProtocol
import HushSystem
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The control server passing descriptors with a reply (SCM_RIGHTS), as `open-stream` does with a stream's memfd
/// and eventfd: they arrive with their line, also behind queued output, and the server never keeps or leaks them.
/// Then the limit on one process's connections.
@Suite("control server: descriptors and connections per process", .serialized)
struct ControlServerDescriptorTests {
    static let openStream =
        #"{"command":"open-stream","direction":"playback","category":"playback","rate":48000,"channels":2,"#
        + #""format":"S16_LE","bufferFrames":4096"#

    @Test("a reply's descriptors arrive with its line, and they work: what goes into one end comes out of the other")
    func descriptorsArriveWithTheirLine() throws {
        let fixture = try ControlFixture()
        fixture.handler.streamDescriptors = {
            var ends: [Int32] = [0, 0]
            guard pipe(&ends) == 0 else { return [] }
            return ends
        }
        let client = try DescriptorClient(path: fixture.path)
        try client.send(Self.openStream + #","id":1}"# + "\n")
        let messages = try client.messages(from: fixture, count: 1)
        #expect(
            messages[0].line
                == #"{"id":1,"ok":true,"stream":{"id":1,"periodFrames":64,"ringFrames":4096,"session":1}}"#
        )
        let received = messages[0].descriptors
        try #require(received.count == 2)
        defer { received.forEach { close($0) } }
        // Close-on-exec from the start (MSG_CMSG_CLOEXEC).
        #expect(received.allSatisfy { fcntl($0, F_GETFD) & FD_CLOEXEC != 0 })
        let word = Array("hush".utf8)
        #expect(write(received[1], word, word.count) == word.count)
        var back = [UInt8](repeating: 0, count: 8)
        #expect(read(received[0], &back, back.count) == word.count)
        #expect(Array(back.prefix(word.count)) == word)
    }

    @Test("behind a full queue of events, the descriptors still come with the reply's line and no other")
    func descriptorsBehindQueuedOutput() throws {
        let fixture = try ControlFixture(limits: ControlLimits(maxQueuedBytes: 8 << 20))
        // As hushd does: a memfd the client maps and an eventfd hushd keeps a copy of to wake it.
        var wake: Int32 = -1
        fixture.handler.streamDescriptors = {
            let memory = clinux_sealed_memfd("hush-test-stream", 4096)
            let event = clinux_eventfd()
            _ = pwrite(memory, Array("HUSH".utf8), 4, 0)
            wake = dup(event)
            return [memory, event]
        }
        defer { if wake >= 0 { close(wake) } }
        let client = try DescriptorClient(path: fixture.path)
        try client.send(#"{"command":"subscribe","events":["decision"]}"# + "\n")
        _ = try client.messages(from: fixture, count: 1)
        // The client stops reading: more events than the socket holds wait in the server's queue.
        let events = Self.fill(fixture.server, bytes: 1 << 20)
        try client.send(Self.openStream + #","id":7}"# + "\n")
        fixture.pump(until: { fixture.handler.requests.contains { $0.request.id == .number(7) } })
        try #require(fixture.handler.requests.contains { $0.request.id == .number(7) })
        fixture.server.send(Self.event, toSubscribersAnd: nil)
        // Now it reads everything: the events, the reply, the event after it.
        let messages = try client.messages(from: fixture, count: events + 2)
        let reply = try #require(messages.firstIndex { $0.line.hasPrefix(#"{"id":7,"ok":true,"stream":"#) })
        #expect(reply == events)
        #expect(messages.enumerated().allSatisfy { $0.offset == reply || $0.element.descriptors.isEmpty })
        let received = messages[reply].descriptors
        try #require(received.count == 2)
        defer { received.forEach { close($0) } }
        var magic = [UInt8](repeating: 0, count: 4)
        #expect(pread(received[0], &magic, 4, 0) == 4)
        #expect(magic == Array("HUSH".utf8))
        var one: UInt64 = 1
        #expect(write(wake, &one, 8) == 8)
        var count: UInt64 = 0
        #expect(read(received[1], &count, 8) == 8)
        #expect(count == 1)
    }

    @Test("descriptors of a connection that is gone are closed: 200 connections leave none open")
    func noDescriptorLeaks() throws {
        let fixture = try ControlFixture(limits: ControlLimits(maxQueuedBytes: 8 << 20))
        let name = "hush-leak-test"
        fixture.handler.streamDescriptors = {
            [clinux_sealed_memfd(name, 4096), clinux_sealed_memfd(name, 4096)]
        }
        let before = try Self.openDescriptors().count
        for round in 0..<200 {
            let client = try DescriptorClient(path: fixture.path)
            switch round % 3 {
            case 0:
                // Sent and received: the client closes its own, the server closed its copies.
                try client.send(Self.openStream + "}\n")
                let received = try client.messages(from: fixture, count: 1)[0].descriptors
                #expect(received.count == 2, "round \(round)")
                received.forEach { close($0) }
            case 1:
                // Still queued behind events when the client goes.
                try client.send(#"{"command":"subscribe","events":["decision"]}"# + "\n")
                _ = try client.messages(from: fixture, count: 1)
                _ = Self.fill(fixture.server, bytes: 1 << 20)
                let asked = fixture.handler.requests.count
                try client.send(Self.openStream + "}\n")
                fixture.pump(until: { fixture.handler.requests.count > asked })
                #expect(try Self.openDescriptors().contains { $0.contains(name) }, "round \(round): not queued")
            default:
                // Gone before the reply could be written.
                try client.send(Self.openStream + "}\n")
            }
            let gone = fixture.handler.disconnected.count
            client.close()
            fixture.pump(until: { fixture.handler.disconnected.count > gone })
            #expect(fixture.handler.disconnected.count == gone + 1, "round \(round)")
        }
        let open = try Self.openDescriptors()
        // By name: other suites open and close descriptors in this process at the same time.
        #expect(open.filter { $0.contains(name) } == [])
        #expect(open.count <= before + 16, "\(before) descriptors before, \(open.count) after")
    }

    @Test("a process with as many connections as the limit gets the next one refused; another process is not")
    func connectionsPerProcess() throws {
        let fixture = try ControlFixture(limits: ControlLimits(maxClients: 64, maxClientsPerProcess: 3))
        var clients: [DescriptorClient] = []
        for _ in 0..<3 {
            clients.append(try DescriptorClient(path: fixture.path))
            let before = fixture.server.clients.count
            fixture.pump(until: { fixture.server.clients.count > before })
        }
        let extra = try DescriptorClient(path: fixture.path)
        let refusal = try extra.messages(from: fixture, count: 1)[0]
        #expect(
            refusal.line
                == #"{"error":{"code":"too-many-clients","message":"process \#(getpid()) already has 3 connections "#
                + #"to hushd, the limit for one process; close one first"},"ok":false}"#
        )
        #expect(try extra.readToEnd(fixture))
        #expect(fixture.server.clients.count == 3)
        #expect(
            fixture.log.messages.contains(
                "warning: control: refused a connection from pid \(getpid()), uid \(getuid()), gid \(getgid()): "
                    + "that process already has 3 connections, the limit per process"
            )
        )
        // Another process (hushctl) is let in while this one holds its three.
        let result = try HushctlTests.run(["--socket", fixture.path, "version"], fixture: fixture)
        #expect(result.status == 0, "\(result.error)")
        #expect(result.output.hasPrefix("hushd test, protocol 1, you are client "))
        // One of the three goes: this process may connect again.
        clients.removeLast().close()
        fixture.pump(until: { fixture.server.clients.count == 2 })
        let again = try DescriptorClient(path: fixture.path)
        try again.send(#"{"command":"version","id":2}"# + "\n")
        #expect(try again.messages(from: fixture, count: 1)[0].line.contains(#""id":2,"ok":true"#))
    }

    // MARK: Helpers

    static let event = ControlEvent.decision(
        DecisionReport(
            Decision(.note("nothing changes"), rule: .r15, reason: String(repeating: "a long reason ", count: 200)),
            cause: "test",
            time: 1
        )
    )

    /// Sends decision events to subscribers until about `bytes` have gone out; returns how many.
    static func fill(_ server: ControlServer, bytes: Int) -> Int {
        let size = ControlCodec().encode(event).count
        let count = bytes / size + 1
        for _ in 0..<count { server.send(event, toSubscribersAnd: nil) }
        return count
    }

    /// Where each of this process's descriptors leads.
    static func openDescriptors() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").map { entry in
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + entry)) ?? entry
        }
    }
}

/// A client that reads with recvmsg, and knows which line each descriptor came with: the line the read that
/// brought it ended in (docs/protocol.md, "How the descriptors travel").
final class DescriptorClient {
    private(set) var fd: Int32
    private var buffer = LineBuffer(maxLineBytes: 1 << 20)
    /// Descriptors that came with a read that ended inside a line: they belong to that line.
    private var waiting: [Int32] = []

    init(path: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        let connected = try UnixSocket.withAddress(path) { connect(fd, $0, $1) }
        try #require(connected == 0, "connect: \(String(cString: strerror(errno)))")
        _ = fcntl(fd, F_SETFL, O_NONBLOCK)
    }

    deinit { close() }

    func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
        waiting.forEach { Glibc.close($0) }
        waiting = []
    }

    func send(_ text: String) throws {
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
    func available() throws -> [(line: String, descriptors: [Int32])] {
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
    func messages(from fixture: ControlFixture, count: Int) throws -> [(line: String, descriptors: [Int32])] {
        var messages: [(line: String, descriptors: [Int32])] = []
        var failure: (any Error)?
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
        if let failure { throw failure }
        try #require(messages.count == count, "expected \(count) lines, got \(messages.count)")
        return messages
    }

    /// Whether the server closes the connection (within a few seconds) after what it sent.
    func readToEnd(_ fixture: ControlFixture) throws -> Bool {
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
