import Foundation
import HushConfiguration
import HushConsole
import HushControlServer
import HushCore
import HushDaemon
import HushOutput
import HushProtocol
import HushRender
import HushSystem
import HushTesting
import Logging
import Synchronization
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
        fixture.server.send(.interruptionBegan(SessionID(3), by: SessionID(4)), toSubscribersAnd: ClientID(1002))
        fixture.server.send(.sessionFinished(SessionID(9)), to: ClientID(1002))
        fixture.pump(for: 30)
        let route =
            #"{"event":"route-changed","previous":"speaker","reason":"newDeviceAvailable","route":"headphones"}"#
        let interruption = #"{"by":4,"event":"interruption-began","session":3}"#
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

    @Test(
        "a peer whose uid is not allowed gets an error line, is closed and logged",
        .enabled(if: getuid() == 0 && access("/usr/bin/setpriv", X_OK) == 0 && access("/usr/bin/python3", X_OK) == 0)
    )
    func refusedPeer() throws {
        let directory = try ScratchDirectory(prefix: "hush-control")
        chmod(directory.path, 0o755)
        let fixture = try ControlFixture(directory: directory, mode: 0o666)
        // nobody (65534), in no group of ours, runs a tiny client that prints what hushd answers.
        let script =
            "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); "
            + "sys.stdout.write(s.makefile().read())"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        process.arguments = [
            "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", script, fixture.path,
        ]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        fixture.pump(until: { !process.isRunning }, milliseconds: 10_000)
        process.waitUntilExit()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(
            text == #"{"error":{"code":"not-permitted","message":"uid 65534 may not use hushd; join the socket's "#
                + #"group or ask for your uid to be added to [control] allowed_uids"},"ok":false}"# + "\n"
        )
        #expect(
            fixture.log.messages.contains {
                $0.hasPrefix("warning: control: refused a connection from pid")
                    && $0.contains("uid 65534 is neither hushd's user, root, a member of the socket's group")
            }
        )
        #expect(fixture.server.clients.isEmpty)
    }
}

/// hushctl against the server with the fake handler: what a person reads, byte for byte.
@Suite("hushctl against the control server", .serialized)
struct HushctlTests {
    static var hushctl: URL {
        let bundle = Bundle.main.bundleURL
        for directory in [bundle, bundle.deletingLastPathComponent()] {
            let candidate = directory.appendingPathComponent("hushctl")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        return bundle.deletingLastPathComponent().appendingPathComponent("hushctl")
    }

    /// Runs hushctl while the test's loop serves the socket; returns its status, output and errors.
    static func run(
        _ arguments: [String],
        input: String = "",
        fixture: ControlFixture?,
        environment: [String: String]? = nil
    ) throws -> (status: Int32, output: String, error: String) {
        let process = Process()
        process.executableURL = hushctl
        process.arguments = arguments
        if let environment { process.environment = environment }
        let stdin = Pipe()
        let stdout = Pipe()
        let stderr = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        stdin.fileHandleForWriting.write(Data(input.utf8))
        try stdin.fileHandleForWriting.close()
        if let fixture {
            fixture.pump(until: { !process.isRunning }, milliseconds: 10_000)
        }
        process.waitUntilExit()
        return (
            process.terminationStatus,
            String(decoding: stdout.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self),
            String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        )
    }

    @Test("hushctl status prints the status for an 80x24 terminal")
    func status() throws {
        let fixture = try ControlFixture()
        let result = try Self.run(["--socket", fixture.path, "status"], fixture: fixture)
        #expect(result.status == 0)
        #expect(result.error == "")
        #expect(
            result.output == """
                hushd 0.1.0, up 1 min 15 s, 1 client
                silence switch   silent
                headphones       unplugged
                route            speaker (automatic)
                system volume    8/16 (-24.0 dB)
                ringer volume    10/16 (-17.5 dB)
                buttons control  the system volume
                secondary audio  may play
                output           default (open)
                                 48000 Hz, 2 ch, 3 x 64 frames (4 ms), 0 xruns, 0 losses
                microphone       none ([capture] pcm is not set): capture streams get silence
                sessions         1
                  ID CLIENT    PID   UID  BUS    CATEGORY      OPTIONS  STATE
                   1   1000    321  1000  music  playback      -        playing
                streams          none

                """
        )
    }

    @Test("hushctl --json status prints the status object; the socket may come from $HUSH_SOCKET")
    func jsonStatus() throws {
        let fixture = try ControlFixture()
        let result = try Self.run(["--json", "status"], fixture: fixture, environment: ["HUSH_SOCKET": fixture.path])
        #expect(result.status == 0)
        let object = try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any]
        #expect(object?["systemVolume"] as? Int == 8)
        #expect(object?["ringerVolume"] as? Int == 10)
        #expect(object?["route"] as? String == "speaker")
        #expect(result.output.hasSuffix("}\n") && !result.output.dropLast().contains("\n"))
    }

    @Test("hushctl volume, ringer and route send the right requests and print the replies")
    func volumeAndRoute() throws {
        let fixture = try ControlFixture()
        var result = try Self.run(["--socket", fixture.path, "volume", "9"], fixture: fixture)
        #expect(result.output == "system volume 9/16 (-20.8 dB)\n")
        result = try Self.run(["--socket", fixture.path, "volume"], fixture: fixture)
        #expect(result.output == "system volume 8/16 (-24.0 dB)\n")
        result = try Self.run(["ringer", "up", "--socket", fixture.path], fixture: fixture)
        #expect(result.output == "ringer volume 9/16 (-20.8 dB)\n")
        result = try Self.run(["--socket", fixture.path, "route", "auto"], fixture: fixture)
        #expect(result.output == "route speaker (automatic)\n")
        result = try Self.run(["--socket", fixture.path, "--json", "route", "headphones"], fixture: fixture)
        #expect(result.output == #"{"id":1,"ok":true,"route":{"current":"headphones","overridden":true}}"# + "\n")
        #expect(
            fixture.handler.requests.map(\.request.command) == [
                .setVolume(.system, .step(VolumeStep(clamping: 9))), .getVolume(.system),
                .setVolume(.ringer, .delta(1)),
                .setRoute(nil), .setRoute(.headphones),
            ]
        )
    }

    @Test("hushctl play holds its session: hello, activate, play, then deactivate with notifyOthers when time is up")
    func play() throws {
        let fixture = try ControlFixture()
        let result = try Self.run(
            ["--socket", fixture.path, "play", "--tone", "440", "--bus", "ringer", "--duck-others", "--for", "0.3"],
            fixture: fixture
        )
        #expect(result.status == 0)
        #expect(result.error == "")
        let commands = fixture.handler.requests.map(\.request.command)
        #expect(
            commands == [
                .hello(name: "hushctl play"),
                // No --category: the ringer bus's own, a ringtone's soloAmbient (hushctl alarm is playback).
                .activate(
                    SessionConfiguration(bus: .ringer, category: .soloAmbient, options: [.duckOthers]),
                    name: nil
                ),
                .play(SessionID(1), .tone(440), loop: false), .deactivate(SessionID(1), notifyOthers: true),
            ]
        )
        #expect(
            result.output
                == "session 1: playing a 440 Hz tone (ringer soloAmbient [duckOthers]); ^C stops\n"
                + "session 1: time is up, deactivated\n"
        )
    }

    @Test("hushctl play ends when its sound finishes and prints interruptions as they come")
    func playUntilFinished() throws {
        let fixture = try ControlFixture()
        let process = Process()
        process.executableURL = Self.hushctl
        process.arguments = ["--socket", fixture.path, "play", "/tmp/chime.wav"]
        let stdout = Pipe()
        process.standardOutput = stdout
        try process.run()
        fixture.pump(until: { fixture.handler.requests.count == 3 }, milliseconds: 10_000)
        let owner = try #require(fixture.handler.requests.last?.client.id)
        fixture.server.send(.interruptionBegan(SessionID(1), by: SessionID(2)), toSubscribersAnd: owner)
        fixture.server.send(.interruptionEnded(SessionID(1), shouldResume: true), toSubscribersAnd: owner)
        fixture.server.send(.sessionFinished(SessionID(1)), toSubscribersAnd: owner)
        fixture.pump(until: { !process.isRunning }, milliseconds: 10_000)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(
            String(decoding: stdout.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self) == """
                session 1: playing /tmp/chime.wav (music playback); ^C stops
                interruption began: session 1, by session 2
                interruption ended: session 1, should resume
                session 1 finished
                session 1: finished, deactivated

                """
        )
        #expect(fixture.handler.requests.last?.request.command == .deactivate(SessionID(1), notifyOthers: true))
    }

    @Test("hushctl shell sends typed commands on one connection and prints replies and errors")
    func shell() throws {
        let fixture = try ControlFixture()
        let script = """
            activate music playback name=radio
            tone 1 440 loop
            pause 7
            volume 9
            bogus
            {"command":"stop","session":1}
            deactivate 1 notify
            """
        let result = try Self.run(["--socket", fixture.path, "shell"], input: script + "\n", fixture: fixture)
        #expect(result.status == 1)
        #expect(
            result.output == """
                session 1
                ok
                error [unknown-session]: there is no session 7
                event: system volume: 9/16 on speaker
                system volume 9/16 (-20.8 dB)
                ok
                ok

                """
        )
        #expect(result.error == "hushctl: unknown command 'bogus'; type help for the commands\n")
        // One connection for everything.
        #expect(Set(fixture.handler.requests.map(\.client.id)).count == 1)
        #expect(fixture.handler.disconnected.count == 1)
    }

    @Test("hushctl says clearly when hushd is not there")
    func notRunning() throws {
        let result = try Self.run(["--socket", "/tmp/hush-nonexistent/control.sock", "status"], fixture: nil)
        #expect(result.status == 1)
        #expect(result.output == "")
        #expect(
            result.error
                == "hushctl: cannot connect to /tmp/hush-nonexistent/control.sock: no such file (is hushd running?)\n"
        )
    }
}

// MARK: - The fixture

/// A server in a temporary directory with a fake handler, and the loop that drives it.
final class ControlFixture {
    let directory: ScratchDirectory
    let path: String
    let server: ControlServer
    let handler: FakeControlHandler
    let log = ControlTestLog()

    init(directory: ScratchDirectory? = nil, limits: ControlLimits = ControlLimits(), mode: mode_t = 0o660) throws {
        self.directory = try directory ?? ScratchDirectory(prefix: "hush-control")
        path = self.directory.path + "/control.sock"
        server = try ControlServer(path: path, mode: mode, limits: limits, logger: log.logger)
        handler = FakeControlHandler()
        handler.server = server
        server.handler = handler
    }

    deinit { server.close() }

    func connect() throws -> ControlTestClient {
        let client = try ControlTestClient(path: path)
        let before = server.clients.count
        pump(until: { self.server.clients.count > before })
        return client
    }

    /// One turn of hushd's loop: poll the server's descriptors, then service them.
    func turn(timeout: Int32) {
        var requests = server.pollRequests
        _ = poll(&requests, nfds_t(requests.count), timeout)
        server.service(requests, now: .zero)
    }

    func pump(for milliseconds: Int) {
        let end = Self.now() + milliseconds
        repeat { turn(timeout: 5) } while Self.now() < end
    }

    func pump(until done: () -> Bool, milliseconds: Int = 3000) {
        let end = Self.now() + milliseconds
        while !done() && Self.now() < end { turn(timeout: 5) }
    }

    func lines(from client: ControlTestClient, count: Int) throws -> [String] {
        var lines: [String] = []
        pump(until: {
            lines += client.availableLines()
            return lines.count >= count
        })
        try #require(lines.count == count, "expected \(count) lines, got \(lines)")
        return lines
    }

    func line(from client: ControlTestClient) throws -> String { try lines(from: client, count: 1)[0] }

    static func now() -> Int {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return time.tv_sec * 1000 + time.tv_nsec / 1_000_000
    }
}

/// Answers like hushd would, records what it was asked and who left.
final class FakeControlHandler: ControlHandler {
    weak var server: ControlServer?
    var requests: [(request: ControlRequest, client: ControlClient)] = []
    var disconnected: [ControlClient] = []
    var sessions: UInt64 = 0
    /// What `open-stream` passes with its reply (the server closes them); none when nil.
    var streamDescriptors: (() -> [Int32])?

    func handle(_ request: ControlRequest, from client: ControlClient) -> ControlReply {
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
            .play(let session, _, _):
            guard session.rawValue <= sessions else {
                return .failure(ControlError(.unknownSession, "there is no \(session)", field: "session"))
            }
            return .ok()
        default:
            return .ok()
        }
    }

    func clientDisconnected(_ client: ControlClient) { disconnected.append(client) }
}

/// A fixed status, for byte-for-byte output.
private enum ControlStatusFixture {
    static let status = ControlStatus(
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
final class ControlTestClient {
    private(set) var fd: Int32
    private var buffer = LineBuffer(maxLineBytes: 1 << 20)

    init(path: String) throws {
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
        try #require(result == 0, "connect: \(String(cString: strerror(errno)))")
        _ = fcntl(fd, F_SETFL, O_NONBLOCK)
    }

    deinit { close() }

    /// Closes once: a second close could close a descriptor another test opened since.
    func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    func write(_ text: String) throws {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let count = bytes[offset...].withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            try #require(count > 0 || errno == EAGAIN, "send: \(String(cString: strerror(errno)))")
            if count > 0 { offset += count }
        }
    }

    /// The complete lines readable now.
    func availableLines() -> [String] {
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
    func readToEnd(_ fixture: ControlFixture) throws -> String {
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
        Issue.record("the connection was not closed")
        return text
    }
}

/// Keeps every log message as "level: message" (HushTesting's recorder, at info).
final class ControlTestLog: Sendable {
    private let recorded = RecordingLogHandler.logger(label: "control-test", level: .info)

    var messages: [String] { recorded.1.leveled }

    var logger: Logger { recorded.0 }
}
