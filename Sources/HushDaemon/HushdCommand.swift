import ArgumentParser
import HushALSA
import HushAudioFile
import HushConsole
import HushCore
import HushGPIO
import HushRender
import HushSystem

#if canImport(Glibc)
import Glibc
#endif

/// The `hushd` command line: the daemon (the default), and the board tools that go with it.
package struct HushdCommand: ParsableCommand {
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
        version: versionText,
        subcommands: [
            RunCommandLine.self, CheckConfigCommandLine.self, PolicyConsoleCommandLine.self,
            PlayCommandLine.self,
        ],
        defaultSubcommand: RunCommandLine.self
    )

    package init() {}

    static var versionText: String { "hushd \(version)\n\(libraries)" }

    static var libraries: String {
        "alsa-lib \(ALSALibrary.version), libgpiod \(GPIOLibrary.version), \(AudioFileLibraries.sndfileVersion)"
    }
}

/// `hushd run`, the default: hush as a daemon until SIGTERM.
struct RunCommandLine: ParsableCommand {
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
    var console: String?

    func validate() throws {
        if config != nil && board != nil { throw ValidationError("give --config or --board, not both") }
    }

    func run() throws {
        let status = DaemonCommand.run(config: config, board: board, console: console)
        if status != 0 { throw ExitCode(status) }
    }
}

/// `hushd check-config`.
struct CheckConfigCommandLine: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-config",
        abstract: "Check hushd's configuration without starting it.",
        discussion: """
            Checks the file given with --config, the board profile given with --board (a name in board/profiles, \
            /usr/share/hush/boards or /etc/hush/boards, or a path), or else /etc/hush/hushd.toml. Prints what hushd \
            would use and exits 0, or prints every problem, each with its file and line, and exits 1. Every key is \
            described in docs/configuration.md.
            """
    )

    @Option(help: ArgumentHelp("The configuration file to check.", valueName: "path"))
    var config: String?

    @Option(help: ArgumentHelp("The board profile to check.", valueName: "name"))
    var board: String?

    func run() throws {
        let outcome = CheckConfigCommand.check(config: config, board: board)
        if !outcome.output.isEmpty { print(outcome.output) }
        if !outcome.errors.isEmpty { FileHandleOutput.standardError(outcome.errors) }
        if outcome.status != 0 { throw ExitCode(outcome.status) }
    }
}

/// `hushd console`: the policy alone on this terminal.
struct PolicyConsoleCommandLine: ParsableCommand {
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
            print("hush \(HushdCommand.version): policy console. Type help for commands, quit to leave.")
            print(HushdCommand.libraries)
        }
        let console: PolicyConsole
        let lines = LineReader(descriptor: STDIN_FILENO)
        let version = HushdCommand.versionText
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
