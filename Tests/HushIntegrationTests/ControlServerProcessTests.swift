import Foundation
import HushProtocol
import HushTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The control server against other processes: hushctl beside this one at the limit per process, and a client
/// of another uid (Python as nobody) refused. The fixture is HushTesting's, as in HushControlServerTests.
@Suite("control server: other processes", .serialized)
struct ControlServerProcessTests {
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
