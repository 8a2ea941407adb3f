import Foundation
import HushControlServer
import HushCore
import HushProtocol
import HushTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The control socket over a real Unix socket in a temporary directory, with a fake handler, driven by a poll loop
/// in the test the way hushd's loop drives it.
@Suite("control server", .serialized)
struct ControlServerTests {
    // MARK: Lines and replies

    @Test("a request in pieces is answered once its newline arrives; the reply echoes its id")
    func partialLines() throws {
        let fixture = try ControlFixture()
        let client = try fixture.connect()
        try client.write(#"{"comm"#)
        fixture.pump(for: 50)
        #expect(client.availableLines().isEmpty)
        try client.write(#"and":"status","id":"#)
        fixture.pump(for: 20)
        try client.write("41}\n")
        let line = try fixture.line(from: client)
        #expect(line.hasPrefix(#"{"id":41,"ok":true,"status":{"#))
        #expect(fixture.handler.requests.map(\.request) == [ControlRequest(id: .number(41), .status)])
    }

    @Test("two requests in one write get two replies, in order")
    func twoInOneRead() throws {
        let fixture = try ControlFixture()
        let client = try fixture.connect()
        try client.write(
            #"{"command":"volume","id":1}"# + "\n"
                + #"{"command":"activate","bus":"music","category":"playback","id":2}"# + "\n"
        )
        let lines = try fixture.lines(from: client, count: 2)
        #expect(lines[0] == #"{"id":1,"ok":true,"volume":{"gainDecibels":-24,"kind":"system","step":8}}"#)
        #expect(lines[1] == #"{"id":2,"ok":true,"session":1}"#)
    }

    @Test("an over-long line is answered with an error and discarded; the connection stays usable")
    func overLongLine() throws {
        let fixture = try ControlFixture(limits: ControlLimits(maxLineBytes: 1024))
        let client = try fixture.connect()
        try client.write(String(repeating: "x", count: 5000))
        fixture.pump(for: 20)
        try client.write(String(repeating: "y", count: 3000) + "\n" + #"{"command":"version","id":2}"# + "\n")
        let lines = try fixture.lines(from: client, count: 2)
        #expect(
            lines[0] == #"{"error":{"code":"line-too-long","message":"the line is 8000 bytes long, over the limit of "#
                + #"1024 bytes; it was discarded"},"ok":false}"#
        )
        #expect(lines[1].hasPrefix(#"{"hello":{"client":1000,"protocol":1,"version":"test"},"id":2,"ok":true}"#))
    }

    @Test("malformed JSON, an unknown command and wrong types get error replies; the next request is answered")
    func malformedThenGood() throws {
        let fixture = try ControlFixture()
        let client = try fixture.connect()
        try client.write(
            "{nope\n" + #"{"command":"dance","id":3}"# + "\n" + #"{"command":"pause","session":"x","id":4}"#
                + "\n\n   \n" + #"{"command":"status","id":5}"# + "\n"
        )
        let lines = try fixture.lines(from: client, count: 4)
        #expect(lines[0].hasPrefix(#"{"error":{"code":"malformed-json","message":"the line is not a JSON object"#))
        #expect(
            lines[1].hasPrefix(
                #"{"error":{"code":"unknown-command","field":"command","message":"unknown command \"dance\""#
            )
        )
        #expect(lines[1].hasSuffix(#""id":3,"ok":false}"#))
        #expect(lines[2].hasPrefix(#"{"error":{"code":"wrong-type","field":"session""#))
        #expect(lines[3].hasPrefix(#"{"id":5,"ok":true,"status":"#))
        // Only the good request reached the handler; blank lines are not requests.
        #expect(fixture.handler.requests.map(\.request.command) == [.status])
    }

    @Test("the handler's refusal goes back as it is, with the request's id")
    func handlerRefusal() throws {
        let fixture = try ControlFixture()
        let client = try fixture.connect()
        try client.write(#"{"command":"pause","session":9,"id":"p"}"# + "\n")
        #expect(
            try fixture.line(from: client)
                == #"{"error":{"code":"unknown-session","field":"session","message":"there is no session 9"},"id":"p","ok":false}"#
        )
    }

    // MARK: Clients

    @Test("peer credentials are the connecting process's, and show in the log")
    func credentials() throws {
        let fixture = try ControlFixture()
        let client = try fixture.connect()
        try client.write(#"{"command":"hello","name":"probe"}"# + "\n")
        _ = try fixture.line(from: client)
        let seen = try #require(fixture.handler.requests.first?.client)
        #expect(seen.pid == getpid())
        #expect(seen.uid == getuid())
        #expect(seen.gid == getgid())
        #expect(seen.name == "probe")
        #expect(fixture.server.clients == [seen])
        #expect(fixture.server.client(seen.id) == seen)
        #expect(
            fixture.log.messages.contains(
                "info: control: client 1000 (pid \(getpid()), uid \(getuid()), gid \(getgid())) connected"
            )
        )
        #expect(
            fixture.log.messages.contains {
                $0.hasPrefix("info: control: client 1000 \"probe\" (pid") && $0.hasSuffix("said hello")
            }
        )
    }

    @Test("a disconnect is reported to the handler once, with the client that left")
    func disconnect() throws {
        let fixture = try ControlFixture()
        let first = try fixture.connect()
        let second = try fixture.connect()
        try second.write(#"{"command":"version"}"# + "\n")
        _ = try fixture.line(from: second)
        first.close()
        fixture.pump(until: { !fixture.handler.disconnected.isEmpty })
        #expect(fixture.handler.disconnected.map(\.id) == [ClientID(1000)])
        fixture.pump(for: 30)
        #expect(fixture.handler.disconnected.count == 1)
        #expect(fixture.server.clients.map(\.id) == [ClientID(1001)])
        #expect(
            fixture.log.messages.contains {
                $0.hasPrefix("info: control: client 1000 (pid") && $0.hasSuffix("disconnected")
            }
        )
    }

    @Test("the 17th client gets an error line and is closed; the log says why; the 16 keep working")
    func tooManyClients() throws {
        // One process holds them all: the per-process limit must not be the one that binds.
        let fixture = try ControlFixture(limits: ControlLimits(maxClients: 16, maxClientsPerProcess: 1024))
        var clients: [ControlTestClient] = []
        for _ in 0..<16 { clients.append(try fixture.connect()) }
        let extra = try ControlTestClient(path: fixture.path)
        fixture.pump(for: 50)
        let refusal = try fixture.line(from: extra)
        #expect(
            refusal == #"{"error":{"code":"too-many-clients","message":"hushd already has 16 clients, its limit; "#
                + #"try again when one has left"},"ok":false}"#
        )
        #expect(try extra.readToEnd(fixture) == "")
        #expect(fixture.server.clients.count == 16)
        #expect(
            fixture.log.messages.contains {
                $0.hasPrefix("warning: control: refused a connection from pid")
                    && $0.hasSuffix("already 16 clients, the limit")
            }
        )
        #expect(fixture.handler.disconnected.isEmpty)
        try clients[15].write(#"{"command":"version"}"# + "\n")
        #expect(try fixture.line(from: clients[15]).contains(#""client":1015"#))
    }

    // MARK: Events

    @Test("a subscriber that never reads is cut off with a logged reason; another keeps receiving everything")
    func slowSubscriberCutOff() throws {
        let fixture = try ControlFixture(limits: ControlLimits(maxQueuedBytes: 64 * 1024))
        let slow = try fixture.connect()
        let reader = try fixture.connect()
        for client in [slow, reader] {
            try client.write(#"{"command":"subscribe"}"# + "\n")
            _ = try fixture.line(from: client)
        }
        let event = ControlEvent.decision(
            DecisionReport(
                Decision(.note("nothing changes"), rule: .r15, reason: String(repeating: "a long reason ", count: 10)),
                cause: "test",
                time: 1
            )
        )
        var received = 0
        let total = 20_000
        for index in 0..<total {
            fixture.server.send(event, toSubscribersAnd: nil)
            if index % 100 == 99 {
                fixture.pump(for: 0)
                received += reader.availableLines().count
            }
        }
        fixture.pump(until: {
            received += reader.availableLines().count
            return received == total
        })
        #expect(received == total)
        #expect(fixture.handler.disconnected.map(\.id) == [ClientID(1000)])
        #expect(
            fixture.log.messages.contains {
                $0.hasPrefix("warning: control: client 1000 (pid") && $0.contains("cut off: ")
                    && $0.hasSuffix("over the limit of 65536 (a subscriber that stopped reading?)")
            }
        )
        // The slow client finds the end of its stream once it reads what was delivered.
        _ = try slow.readToEnd(fixture)
        #expect(fixture.server.clients.map(\.id) == [ClientID(1001)])
    }

    @Test("subscribers get what they asked for; a session's owner gets its events unsubscribed; others nothing")
    func eventRouting() throws {
        let fixture = try ControlFixture()
        let all = try fixture.connect()
        let routes = try fixture.connect()
        let owner = try fixture.connect()
        let bystander = try fixture.connect()
        try all.write(#"{"command":"subscribe","id":1}"# + "\n")
        #expect(
            try fixture.line(from: all).hasPrefix(
                #"{"events":["interruption-began","interruption-ended","route-changed""#
            )
        )
        try routes.write(#"{"command":"subscribe","events":["route-changed"],"id":2}"# + "\n")
        #expect(try fixture.line(from: routes) == #"{"events":["route-changed"],"id":2,"ok":true}"#)
        let change = RouteChange(previous: .speaker, current: .headphones, reason: .newDeviceAvailable)
        fixture.server.send(.routeChanged(change), toSubscribersAnd: nil)
        fixture.server.send(
            .interruptionBegan(SessionID(3), cause: .session(SessionID(4))),
            toSubscribersAnd: ClientID(1002)
        )
        fixture.server.send(.sessionFinished(SessionID(9)), to: ClientID(1002))
        fixture.pump(for: 30)
        let route =
            #"{"event":"route-changed","previous":"speaker","reason":"newDeviceAvailable","route":"headphones"}"#
        let interruption = #"{"by":4,"event":"interruption-began","reason":"session","session":3}"#
        #expect(all.availableLines() == [route, interruption])
        #expect(routes.availableLines() == [route])
        #expect(owner.availableLines() == [interruption, #"{"event":"session-finished","session":9}"#])
        #expect(bystander.availableLines() == [])
        try all.write(#"{"command":"unsubscribe","id":3}"# + "\n")
        #expect(try fixture.line(from: all) == #"{"id":3,"ok":true}"#)
        fixture.server.send(.silenceChanged(.silent), toSubscribersAnd: nil)
        fixture.pump(for: 30)
        #expect(all.availableLines() == [])
    }

    @Test("events the handler sends while answering arrive before the reply; no re-entry on a cut-off")
    func eventsDuringHandling() throws {
        let fixture = try ControlFixture()
        let client = try fixture.connect()
        try client.write(#"{"command":"subscribe","events":["volume-changed"]}"# + "\n")
        _ = try fixture.line(from: client)
        try client.write(#"{"command":"volume","step":9,"id":7}"# + "\n")
        let lines = try fixture.lines(from: client, count: 2)
        #expect(lines[0] == #"{"event":"volume-changed","kind":"system","route":"speaker","step":9}"#)
        #expect(lines[1] == #"{"id":7,"ok":true,"volume":{"gainDecibels":-20.8,"kind":"system","step":9}}"#)
    }

    // MARK: The socket file

    @Test("the socket gets its mode; close removes it")
    func socketFile() throws {
        let directory = try ScratchDirectory(prefix: "hush-control")
        let path = directory.path + "/control.sock"
        let server = try ControlServer(
            path: path,
            mode: 0o660,
            limits: ControlLimits(),
            logger: ControlTestLog().logger
        )
        var info = stat()
        #expect(stat(path, &info) == 0)
        #expect(info.st_mode & S_IFMT == S_IFSOCK)
        #expect(info.st_mode & 0o777 == 0o660)
        #expect(server.socketGroup == getegid())
        server.close()
        #expect(access(path, F_OK) != 0)
    }

    @Test("a stale socket is removed; a live hushd's socket, a file and a missing group are refused clearly")
    func startUpRefusals() throws {
        let directory = try ScratchDirectory(prefix: "hush-control")
        let path = directory.path + "/control.sock"
        let log = ControlTestLog()
        // A stale socket: bound, then its owner gone.
        let abandoned = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(abandoned, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        #expect(bound == 0)
        close(abandoned)
        let fresh = try ControlServer(path: path, limits: ControlLimits(), logger: log.logger)
        #expect(
            log.messages.contains(
                "notice: removed the stale control socket \(path) (left by a hushd that did not stop cleanly)"
            )
        )
        #expect {
            try ControlServer(path: path, limits: ControlLimits(), logger: log.logger)
        } throws: { error in
            "\(error)" == "cannot create the control socket \(path): another hushd answers on it; stop that one first "
                + "(systemctl stop hushd) or set [control] socket to another path"
        }
        fresh.close()
        let file = directory.path + "/file"
        #expect(creat(file, 0o600) >= 0)
        #expect {
            try ControlServer(path: file, limits: ControlLimits(), logger: log.logger)
        } throws: { error in
            "\(error)" == "cannot create the control socket \(file): the path exists and is not a socket; remove it "
                + "or set [control] socket to another path"
        }
        #expect {
            try ControlServer(path: path, group: "no-such-group-hush", limits: ControlLimits(), logger: log.logger)
        } throws: { error in
            "\(error)" == "cannot give the control socket to group 'no-such-group-hush': \(path): there is no group "
                + "'no-such-group-hush'; create it (groupadd --system no-such-group-hush) or name an existing group in "
                + "[control] group"
        }
        #expect {
            try ControlServer(
                path: directory.path + "/missing/control.sock",
                limits: ControlLimits(),
                logger: log.logger
            )
        } throws: { error in
            "\(error)".hasPrefix(
                "cannot bind the control socket \(directory.path)/missing/control.sock: No such file or directory; create its directory"
            )
        }
        let long = directory.path + "/" + String(repeating: "s", count: 120)
        #expect {
            try ControlServer(path: long, limits: ControlLimits(), logger: log.logger)
        } throws: { error in
            "\(error)".hasSuffix("a Unix socket path holds at most 107")
        }
    }
}
