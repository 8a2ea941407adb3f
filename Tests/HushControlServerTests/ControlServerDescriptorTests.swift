import CLinux
import Foundation
import HushControlServer
import HushCore
import HushProtocol
import HushTesting
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
