import Foundation
import HushAudioFile
import HushProtocol
import HushTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The README's first steps, verbatim: `make run` starts hushd with no configuration on this terminal, and "in
/// another terminal, `hushctl status` and `hushctl play --tone 440` talk to it over the control socket" — with no
/// --socket and no $HUSH_SOCKET, in the same environment. HOME and XDG_RUNTIME_DIR point into a fresh directory,
/// so nothing collides with another hushd. Under root both run as nobody: root may write /run/hush, where a
/// system hushd (or another test's) may be listening.
@Suite("make run, then hushctl in another terminal", .serialized)
final class MakeRunTests {
    let scratch: ScratchDirectory
    let user: UInt32?
    let environment: [String: String]
    let hushd: SpawnedHushd

    init() throws {
        scratch = try ScratchDirectory(prefix: "hush-make-run")
        user = getuid() == 0 ? 65534 : nil
        let home = scratch.path + "/home"
        let runtime = scratch.path + "/run"
        let checkout = scratch.path + "/checkout"
        for directory in [home, runtime, checkout] {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        }
        if let user {
            for path in [scratch.path, home, runtime, checkout] { chown(path, user, user) }
        }
        chmod(runtime, 0o700)
        environment = ["PATH": "/usr/bin:/bin", "HOME": home, "XDG_RUNTIME_DIR": runtime, "TERM": "dumb"]
        // `make run` is `swift run hushd`: no arguments, started in the checkout, stdin the terminal.
        hushd = try SpawnedHushd(
            arguments: [],
            environment: environment,
            logPath: scratch.path + "/hushd.log",
            directory: checkout,
            user: user
        )
        try hushd.waitForSocket(runtime + "/hush-control.sock")
    }

    deinit { hushd.stop() }

    /// Starts the real hushctl in the test's environment, as `user`, its output in `name.out` and `name.err`.
    ///
    /// Not through Foundation's `Process`: its children inherit the test thread's blocked signals, and a hushctl
    /// with SIGINT blocked would never see the ^C the test sends. A shell gives a command an empty mask.
    func startHushctl(_ arguments: [String], name: String) throws -> pid_t {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGINT, SIGTERM, SIGPIPE] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(
            &actions,
            1,
            scratch.path + "/\(name).out",
            O_WRONLY | O_CREAT | O_TRUNC,
            0o644
        )
        posix_spawn_file_actions_addopen(
            &actions,
            2,
            scratch.path + "/\(name).err",
            O_WRONLY | O_CREAT | O_TRUNC,
            0o644
        )
        let command =
            ["/usr/bin/setpriv", "--pdeathsig", "KILL"]
            + (user.map { ["--reuid=\($0)", "--regid=\($0)", "--clear-groups"] } ?? [])
            + [HushctlTests.hushctl.path] + arguments
        let argv = command.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { envp.forEach { free($0) } }
        var child: pid_t = 0
        let result = posix_spawn(&child, command[0], &actions, &attributes, argv, envp)
        guard result == 0 else {
            throw HushdTestFailure("cannot start hushctl through setpriv: \(String(cString: strerror(result)))")
        }
        return child
    }

    func output(_ name: String, _ stream: String = "out") -> String {
        (try? String(contentsOfFile: scratch.path + "/\(name).\(stream)", encoding: .utf8)) ?? ""
    }

    /// Waits up to 10 s for hushctl to exit; returns its exit status, or nil when it had to be killed.
    func exitStatus(of child: pid_t) -> Int32? {
        var status: Int32 = 0
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            let result = waitpid(child, &status, WNOHANG)
            if result == child { return (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f) }
            usleep(10_000)
        }
        kill(child, SIGKILL)
        waitpid(child, &status, 0)
        return nil
    }

    /// Runs hushctl to its end (10 s at most); returns its exit status.
    func runHushctl(_ arguments: [String], name: String) throws -> Int32? {
        try exitStatus(of: startHushctl(arguments, name: name))
    }

    @Test("hushctl status, with no --socket, answers from make run's hushd")
    func status() throws {
        let status = try runHushctl(["status"], name: "status")
        #expect(status == 0, "hushctl status failed: \(output("status", "err"))\nhushd's log:\n\(hushd.log)")
        let lines = output("status").split(separator: "\n")
        #expect(lines.first?.hasPrefix("hushd ") == true, "\(lines)")
        #expect(lines.contains("sessions         none"), "\(lines)")
    }

    @Test("hushctl play --tone 440, with no --socket, plays until ^C; status shows its session meanwhile")
    func playTone() throws {
        let play = try startHushctl(["play", "--tone", "440"], name: "play")
        let deadline = Date().addingTimeInterval(10)
        while !output("play").contains("playing") && output("play", "err").isEmpty && Date() < deadline {
            usleep(10_000)
        }
        #expect(
            output("play").contains("session 1: playing a 440 Hz tone"),
            "hushctl play: \(output("play")) \(output("play", "err"))\nhushd's log:\n\(hushd.log)"
        )
        #expect(try runHushctl(["status"], name: "status") == 0)
        #expect(output("status").contains("sessions         1"), "\(output("status"))")
        kill(play, SIGINT)
        #expect(exitStatus(of: play) == 0, "hushctl play after ^C: \(output("play", "err"))")
        #expect(output("play").hasSuffix("session 1: stopped, deactivated\n"), "\(output("play"))")
    }

    @Test("make run's sound file is the person's (beside the state file), never the checkout's; hushd says where")
    func soundFileOutsideCheckout() throws {
        #expect(try runHushctl(["status"], name: "status") == 0)
        let checkout = scratch.path + "/checkout"
        // The sound file is the fallback for a machine where ALSA's default does not open (a build machine).
        if output("status").contains("output           file:") {
            let path = environment["HOME"]! + "/.local/state/hush/hushd-output.wav"
            // The status line is cut to 80 columns; the JSON has the whole name.
            #expect(try runHushctl(["--json", "status"], name: "json") == 0)
            let json = output("json").replacingOccurrences(of: "\\/", with: "/")
            #expect(json.contains("\"file:\(path)\""), "\(json)")
            #expect(hushd.log.contains("sound goes to the WAV file \(path) instead: it holds the latest 30 to 60 s"))
            #expect(hushd.log.contains("'aplay \(path)'"), "hushd says how to listen: \(hushd.log)")
            usleep(1_200_000)  // the header counts what was written at least every second
            let (samples, channels, rate) = try SoundFile.readPCM16(path)
            #expect(channels == 2 && rate == 48000 && samples.count >= 48000 * 2, "\(samples.count) samples")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: checkout).isEmpty, "nothing in the checkout")
    }

    @Test("with no hushd anywhere, hushctl names every path it tried")
    func nothingThere() throws {
        hushd.stop()
        let status = try runHushctl(["status"], name: "none")
        #expect(status == 1)
        let tried = ControlSocketLocation(runtimeDirectory: environment["XDG_RUNTIME_DIR"], uid: user ?? getuid())
            .places
        let error = output("none", "err")
        #expect(error.hasPrefix("hushctl: cannot reach hushd; no --socket or $HUSH_SOCKET, so hushctl tried:\n"))
        for path in tried { #expect(error.contains("  \(path): "), "\(path) in: \(error)") }
        #expect(error.contains("give --socket PATH or set HUSH_SOCKET"))
    }
}
