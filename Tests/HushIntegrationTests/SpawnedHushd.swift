import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A real `hushd` (the built binary) started the way a person or systemd starts it: the arguments, the
/// environment and the standard input are the test's to choose (``HushdProcess`` always gives `--config` and
/// `--console none`). Standard output and standard error go to one log file; standard input is a pipe the test
/// may write console lines to.
///
/// It runs under `setpriv --pdeathsig KILL`, so a test that crashes cannot leave it running.
final class SpawnedHushd: RunningHushd {
    let logPath: String
    var pid: pid_t = 0
    /// The write end of hushd's standard input, -1 once closed.
    private(set) var input: Int32 = -1

    /// Starts hushd; returns at once (see ``waitForSocket(_:seconds:)``).
    ///
    /// - Parameters:
    ///   - arguments: hushd's arguments.
    ///   - environment: its whole environment (nothing of the test runner's is passed on).
    ///   - logPath: where standard output and standard error go (appended to).
    ///   - directory: the working directory hushd starts in.
    ///   - user: run hushd as this uid (and its group, no others); nil runs it as the test's user.
    init(
        arguments: [String],
        environment: [String: String],
        logPath: String,
        directory: String,
        user: UInt32? = nil
    ) throws {
        self.logPath = logPath
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else {
            throw HushdTestFailure("cannot make a pipe for hushd's input: \(String(cString: strerror(errno)))")
        }
        // Neither end may stay open in hushd beyond its standard input, nor in other tests' children.
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        input = ends[1]
        defer { close(ends[0]) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, ends[0], 0)
        posix_spawn_file_actions_addopen(&actions, 1, logPath, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // glibc 2.29 has this call; Swift's Glibc module does not import it, hence the lookup.
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addchdir_np") else {
            throw HushdTestFailure("this libc has no posix_spawn_file_actions_addchdir_np (glibc 2.29 or later does)")
        }
        typealias AddChdir =
            @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) ->
            Int32
        // SAFETY: the symbol is glibc's posix_spawn_file_actions_addchdir_np, whose C signature AddChdir spells;
        // `actions` was initialised above and the path outlives the call (glibc copies it).
        _ = unsafeBitCast(symbol, to: AddChdir.self)(&actions, directory)
        let command =
            ["/usr/bin/setpriv", "--pdeathsig", "KILL"]
            + (user.map { ["--reuid=\($0)", "--regid=\($0)", "--clear-groups"] } ?? [])
            + [HushdTranscriptTests.hushd.path] + arguments
        let argv = command.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { envp.forEach { free($0) } }
        var child: pid_t = 0
        let result = posix_spawn(&child, command[0], &actions, nil, argv, envp)
        guard result == 0 else {
            close(input)
            input = -1
            throw HushdTestFailure("cannot start hushd through setpriv: \(String(cString: strerror(result)))")
        }
        pid = child
    }

    deinit {
        stop()
        if input >= 0 { close(input) }
    }
}
