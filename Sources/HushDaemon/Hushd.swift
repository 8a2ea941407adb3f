import ArgumentParser
import FoundationEssentials
import HushALSA
import HushAudioFile
import HushConfiguration
import HushConsole
import HushCore
import HushGPIO
import HushRender
import HushSystem
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// The `hushd` command line: the daemon (the default), and the board tools that go with it.
package struct Hushd: ParsableCommand {
    package static let version = "0.1.0"

    package static let configuration = CommandConfiguration(
        commandName: "hushd",
        abstract: "hush: phone-like audio behaviour for a headless Linux board.",
        discussion: """
            With no subcommand hushd runs (hushd run): it reads the silence switch, volume buttons and headphone \
            jack, applies the audio policy, mixes and plays, and serves clients on the control socket. With no \
            configuration file it runs on the built-in default board, where this terminal's keys stand in for the \
            controls. The offline renderer is hush-render.
            """,
        // The libraries' versions only when asked: libsndfile's is the library's own answer, and loading it (with
        // its seven codecs) is what hushd's start leaves until a sound file is first used (CSndfile.h).
        version: CommandLine.arguments.dropFirst().contains("--version") ? versionText : "hushd \(version)",
        subcommands: [HushdRun.self, HushdCheckConfig.self, HushdPolicyConsole.self, HushdPlay.self],
        defaultSubcommand: HushdRun.self
    )

    package init() {}

    static var versionText: String { "hushd \(version)\n\(libraries)" }

    static var libraries: String {
        "alsa-lib \(ALSALibrary.version), libgpiod \(GPIOLibrary.version), \(AudioFileLibraries.sndfileVersion)"
    }
}

/// `hushd run`, the default: hush as a daemon until SIGTERM, built and run by ``DaemonRunner``.
struct HushdRun: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run hush (the default): inputs, policy, mixer, output, control socket, console."
    )

    @Option(
        help: ArgumentHelp(
            "The configuration (default /etc/hush/hushd.toml; without it and --board, the built-in default board).",
            valueName: "path"
        )
    )
    var config: String?

    @Option(
        help: ArgumentHelp("Start from a board profile (board/profiles, /usr/share/hush/boards).", valueName: "name")
    )
    var board: String?

    @Option(
        help: ArgumentHelp(
            "The console's terminal: a serial device, stdio (this terminal) or none "
                + "(default: [console] device, else stdio on a terminal).",
            valueName: "where"
        )
    )
    var console: ConsoleChoice?

    func validate() throws {
        if config != nil && board != nil { throw ValidationError("give --config or --board, not both") }
    }

    func run() throws {
        let configuration: HushdConfiguration
        do {
            configuration = try HushdConfiguration.resolve(config: config, board: board)
        } catch {
            FileHandleOutput.standardError("hushd: the configuration cannot be used:\n\(error.description)")
            throw ExitCode.failure
        }
        // Under systemd, journald stamps lines itself and reads each line's priority from its `<N>` prefix; on a
        // terminal or in a file, lines carry their time and no prefix.
        let journal = LogRouter.isJournal(
            ProcessInfo.processInfo.environment["JOURNAL_STREAM"],
            descriptor: STDERR_FILENO
        )
        let router = LogRouter(level: configuration.log.level, timestamps: !journal, journal: journal)
        LoggingSystem.bootstrap { DaemonLogHandler(label: $0, router: router) }
        ALSALibrary.printsOwnErrors(configuration.log.level <= .debug)
        let logger = Logger(label: "hushd")
        let status = DaemonRunner(configuration: configuration, router: router, console: console, logger: logger)
            .run()
        if status != 0 { throw ExitCode(status) }
    }
}

/// Where hushd's console is (`--console`, `[console] device`): a serial device, this terminal, or none.
enum ConsoleChoice: ExpressibleByArgument, Hashable {
    case serial(String)
    /// `stdio`: this terminal.
    case standardIO
    /// `none`.
    case off

    init(argument: String) {
        switch argument {
        case "stdio": self = .standardIO
        case "none": self = .off
        default: self = .serial(argument)
        }
    }
}

/// `hushd console`: the policy alone on this terminal.
struct HushdPolicyConsole: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "console",
        abstract: "Run the policy alone on this terminal, with no sound.",
        discussion: """
            Type events (silence on, plug, activate music playback, ...) and see every decision with its rule and \
            reason; help lists the commands (docs/console.md).
            """
    )

    @Flag(help: "Time moves only with 'wait MS' (reproducible scripts).")
    var manualClock = false

    @Flag(help: "Do not print the banner (for byte-exact script output).")
    var quietBanner = false

    func run() throws {
        if !quietBanner {
            print("hush \(Hushd.version): policy console. Type help for commands, quit to leave.")
            print(Hushd.libraries)
        }
        let console: PolicyConsole
        let lines = LineReader(descriptor: STDIN_FILENO)
        let version = Hushd.versionText
        if manualClock {
            let clock = ManualTimeline()
            console = PolicyConsole(
                clock: clock,
                versionText: version,
                sleep: { clock.advance(to: $0) },
                write: { print($0) }
            )
        } else {
            let clock = SystemClock()
            console = PolicyConsole(
                clock: clock,
                versionText: version,
                sleep: { clock.sleep(until: $0) },
                write: { print($0) }
            )
            lines.deadline = { console.nextDeadline.map { $0 - clock.now() } }
            lines.onTimeout = { console.tick() }
        }
        while let line = lines.next() {
            guard console.perform(line) else { break }
        }
    }
}
