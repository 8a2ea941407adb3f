import HushALSA
import HushAudioFile
import HushCore
import HushGPIO
import HushPolicy

#if canImport(Glibc)
import Glibc
#endif

/// The `hushd` command line.
public enum HushdCommand {
    public static let version = "0.1.0"

    static let usage = """
        usage: hushd [--config PATH | --board NAME] [--console DEVICE|stdio|none]
               hushd check-config [--config PATH | --board NAME]
               hushd render --scenario FILE --out OUT.wav [--board PROFILE] [--events FILE]
               hushd play --scenario FILE [--board PROFILE] [--pcm NAME]
               hushd console [--manual-clock] [--quiet-banner]
               hushd --version | --help

        hushd runs hush: inputs, policy, mixer, output, control socket, console
        (hushd --help-daemon for its options). With no configuration file it runs on
        the built-in default board: this terminal's keys stand in for the controls.

        hushd console runs the policy alone on this terminal: type events (silence on,
        plug, activate music playback, ...) and see every decision with its rule and
        reason. Type help for the commands.

          --manual-clock   time moves only with 'wait MS' (reproducible scripts)
          --quiet-banner   do not print the banner (for byte-exact script output)
        """

    /// Runs hushd with `arguments` and exits the process.
    public static func run(arguments: [String]) -> Never {
        if arguments.first == "render" { exit(RenderCommand.run(Array(arguments.dropFirst()))) }
        if arguments.first == "play" { exit(PlayCommand.run(Array(arguments.dropFirst()))) }
        if arguments.first == "check-config" { exit(CheckConfigCommand.run(Array(arguments.dropFirst()))) }
        if arguments == ["--help-daemon"] {
            print(DaemonCommand.usage)
            exit(0)
        }
        let policyConsole =
            arguments.first == "console" || arguments.contains("--manual-clock")
            || arguments.contains("--quiet-banner")
        if !policyConsole && !arguments.contains("--version") && !arguments.contains("--help")
            && !arguments.contains("-h")
        {
            exit(DaemonCommand.run(arguments))
        }
        var manualClock = false
        var banner = true
        for argument in arguments.drop(while: { $0 == "console" }) {
            switch argument {
            case "--manual-clock": manualClock = true
            case "--quiet-banner": banner = false
            case "--version":
                print(versionText)
                exit(0)
            case "--help", "-h":
                print(usage)
                exit(0)
            default:
                FileHandleOutput.standardError("hushd: unknown option '\(argument)'\n\(usage)")
                exit(64)
            }
        }
        if banner {
            print("hush \(version): policy console. Type help for commands, quit to leave.")
            print(libraries)
        }
        let console: PolicyConsole
        let lines = LineReader(descriptor: STDIN_FILENO)
        if manualClock {
            let clock = ManualTimeline()
            console = PolicyConsole(clock: clock, sleep: { clock.advance(to: $0) }, write: { print($0) })
        } else {
            let clock = SystemClock()
            console = PolicyConsole(clock: clock, sleep: { clock.sleep(until: $0) }, write: { print($0) })
            lines.deadline = { console.nextDeadline.map { $0 - clock.now() } }
            lines.onTimeout = { console.tick() }
        }
        while let line = lines.next() {
            guard console.perform(line) else { break }
        }
        exit(0)
    }

    static var versionText: String { "hushd \(version)\n\(libraries)" }

    static var libraries: String {
        "alsa-lib \(ALSALibrary.version), libgpiod \(GPIOLibrary.version), \(AudioFileLibraries.sndfileVersion)"
    }
}

/// A clock for `--manual-clock`: it stands still until a `wait` moves it.
final class ManualTimeline: MonotonicClock, @unchecked Sendable {
    private var current = Instant.zero
    func now() -> Instant { current }
    func advance(to instant: Instant) { current = max(current, instant) }
}

enum FileHandleOutput {
    static func standardError(_ text: String) {
        let line = text.hasSuffix("\n") ? text : text + "\n"
        _ = line.withCString { write(STDERR_FILENO, $0, strlen($0)) }
    }
}

/// Reads lines from a descriptor, waking at `deadline` to let timers fire while nothing is typed.
final class LineReader {
    private let descriptor: Int32
    private var buffer: [UInt8] = []
    private var ended = false
    /// How long until something is due, or nil to wait for input only.
    var deadline: () -> Duration? = { nil }
    var onTimeout: () -> Void = {}

    init(descriptor: Int32) { self.descriptor = descriptor }

    /// The next line without its newline, or nil at end of input.
    func next() -> String? {
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            if ended {
                guard !buffer.isEmpty else { return nil }
                defer { buffer.removeAll() }
                return String(decoding: buffer, as: UTF8.self)
            }
            var pfd = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let timeout = deadline().map { Int32(clamping: max(0, ($0.nanoseconds + 999_999) / 1_000_000)) } ?? -1
            let ready = poll(&pfd, 1, timeout)
            if ready == 0 {
                onTimeout()
                continue
            }
            if ready < 0 {
                if errno == EINTR { continue }
                ended = true
                continue
            }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 {
                ended = true
            } else {
                buffer.append(contentsOf: chunk[..<count])
            }
        }
    }
}
