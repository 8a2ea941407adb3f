import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Who may control a real hushd (issue 6 §5, docs/security.md): the socket's mode and group, peers of other uids
/// refused and logged unless allowed, and hushd itself run as a user without permission to its files. Another uid
/// is `nobody` (65534), reached through `setpriv`: these tests need root, as the test runs and CI have.
@Suite(
    "security of a real hushd",
    .serialized,
    .enabled(if: getuid() == 0 && access("/usr/bin/setpriv", X_OK) == 0, "needs root and setpriv to become nobody")
)
struct SecurityTests {
    static let nobody: UInt32 = 65534

    /// hushctl run as nobody (its own group only): exit status, output, errors.
    static func hushctlAsNobody(_ arguments: [String]) throws -> (status: Int32, output: String, error: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        process.arguments =
            ["--reuid=\(nobody)", "--regid=\(nobody)", "--clear-groups", HushctlTests.hushctl.path] + arguments
        let output = Pipe()
        let error = Pipe()
        process.standardOutput = output
        process.standardError = error
        try process.run()
        let printed = output.fileHandleForReading.readDataToEndOfFile()
        let complained = error.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (
            process.terminationStatus, String(decoding: printed, as: UTF8.self),
            String(decoding: complained, as: UTF8.self)
        )
    }

    static func socketInfo(_ path: String) throws -> stat {
        var info = stat()
        guard stat(path, &info) == 0 else { throw HushdTestFailure("cannot stat \(path): \(errno)") }
        return info
    }

    @Test("the socket is 0660 and hushd's group by default; another uid cannot even open it")
    func defaultSocket() throws {
        let hushd = try HushdProcess()
        chmod(hushd.directory, 0o755)
        let info = try Self.socketInfo(hushd.socket)
        #expect(info.st_mode & 0o7777 == 0o660)
        #expect(info.st_mode & S_IFMT == S_IFSOCK)
        #expect(info.st_gid == getegid())
        let result = try Self.hushctlAsNobody(["--socket", hushd.socket, "version"])
        #expect(result.status == 1)
        #expect(result.error.contains("cannot connect to \(hushd.socket)"), "\(result.error)")
        #expect(result.error.lowercased().contains("permission denied"), "\(result.error)")
        #expect(hushd.isRunning)
    }

    @Test("with a configured group the socket is given to it, and its members may connect")
    func configuredGroup() throws {
        let hushd = try HushdProcess(control: #"group = "nogroup""#)
        chmod(hushd.directory, 0o755)
        let info = try Self.socketInfo(hushd.socket)
        #expect(info.st_mode & 0o7777 == 0o660)
        #expect(info.st_gid == Self.nobody)
        let result = try Self.hushctlAsNobody(["--socket", hushd.socket, "--json", "version"])
        #expect(result.status == 0, "\(result.error)")
        #expect(result.output.contains(#""ok":true"#))
        #expect(hushd.log.contains("uid \(Self.nobody), gid \(Self.nobody)) connected"))
    }

    @Test("a peer of another uid that reaches the socket is refused with a reason, and the log names its uid")
    func refusedUID() throws {
        // Mode 0666: the file system lets nobody through, so hushd's own check is what refuses.
        let hushd = try HushdProcess(control: #"mode = "0666""#)
        chmod(hushd.directory, 0o755)
        let bystander = try hushd.connect()
        let result = try Self.hushctlAsNobody(["--socket", hushd.socket, "volume", "16"])
        #expect(result.status == 1)
        #expect(
            result.error == "hushctl: hushd refused volume: uid 65534 may not use hushd; join the socket's group or "
                + "ask for your uid to be added to [control] allowed_uids [not-permitted]\n"
        )
        let refusal = hushd.log.split(separator: "\n").first { $0.contains("refused a connection") }
        #expect(
            refusal?.hasSuffix(
                "uid 65534, gid 65534: uid 65534 is neither hushd's user, root, a member of the socket's group "
                    + "\(getegid()), nor in the allow list"
            ) == true,
            "\(refusal ?? "no refusal logged")"
        )
        // Nothing it asked for happened; the client already connected works on.
        #expect(try bystander.status()["systemVolume"] as? Int == 8)
    }

    @Test("a uid in allowed_uids may connect")
    func allowedUID() throws {
        let hushd = try HushdProcess(control: "mode = \"0666\"\nallowed_uids = [\(Self.nobody)]")
        chmod(hushd.directory, 0o755)
        let result = try Self.hushctlAsNobody(["--socket", hushd.socket, "volume", "9"])
        #expect(result.status == 0, "\(result.error)")
        #expect(try hushd.status()["systemVolume"] as? Int == 9)
        #expect(!hushd.log.contains("refused"))
    }

    @Test("hushd as a user without permission to its state directory: logged, served, never a crash")
    func stateWithoutPermission() throws {
        let hushd = try HushdProcess(user: Self.nobody, stateFile: "locked/state", start: false)
        // A directory of root's that nobody may not write into.
        mkdir(hushd.directory + "/locked", 0o755)
        try hushd.start()
        let client = try hushd.connect()
        #expect(try client.request(#"{"command":"volume","step":5}"#).contains(#""step":5"#))
        let deadline = Date().addingTimeInterval(3)
        while !hushd.log.contains("Permission denied") && !hushd.log.contains("permission denied")
            && Date() < deadline
        {
            usleep(20_000)
        }
        let complaint = hushd.log.split(separator: "\n").first { $0.lowercased().contains("permission denied") }
        #expect(complaint?.contains(hushd.directory + "/locked") == true, "\(hushd.log)")
        #expect(try client.request(#"{"command":"volume","step":6}"#).contains(#""step":6"#))
        #expect(hushd.isRunning)
        #expect(hushd.stop() == 0)
    }
}
