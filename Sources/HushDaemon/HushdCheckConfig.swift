import ArgumentParser
import HushConfiguration
import HushCore
import HushSystem

#if canImport(Glibc)
import Glibc
#endif

/// `hushd check-config`: checks a configuration without starting hushd.
struct HushdCheckConfig: ParsableCommand {
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

    func validate() throws {
        if config != nil && board != nil { throw ValidationError("give --config or --board, not both") }
    }

    func run() throws {
        let outcome = Self.check(config: config, board: board)
        if !outcome.output.isEmpty { print(outcome.output) }
        if !outcome.errors.isEmpty { FileHandleOutput.standardError(outcome.errors) }
        if outcome.status != 0 { throw ExitCode(outcome.status) }
    }

    /// What the command prints and its exit status, separate from printing so tests can compare it.
    struct Outcome: Equatable {
        var status: Int32
        var output: String
        var errors: String
    }

    /// Checks the configuration `arguments` name (what follows `hushd check-config`), as the command line would.
    static func check(
        _ arguments: [String],
        defaultExists: (String) -> Bool = { access($0, F_OK) == 0 }
    ) -> Outcome {
        do {
            let command = try parse(arguments)
            return check(config: command.config, board: command.board, defaultExists: defaultExists)
        } catch {
            let status = exitCode(for: error).rawValue
            let message = fullMessage(for: error)
            return status == 0
                ? Outcome(status: 0, output: message, errors: "") : Outcome(status: status, output: "", errors: message)
        }
    }

    /// Checks the configuration at `config`, or the board profile `board` (not both: ``validate()``), or else
    /// /etc/hush/hushd.toml; `defaultExists` says whether a file is there.
    static func check(
        config: String?,
        board: String?,
        defaultExists: (String) -> Bool = { access($0, F_OK) == 0 }
    ) -> Outcome {
        if config == nil, board == nil, !defaultExists(HushdConfiguration.defaultPath) {
            return Outcome(
                status: 0,
                output: "no \(HushdConfiguration.defaultPath): hushd would start on its built-in default "
                    + "(no hardware needed)\n" + HushdConfiguration.builtIn.summary,
                errors: ""
            )
        }
        do {
            let configuration =
                if let board {
                    try HushdConfiguration.board(board)
                } else {
                    try HushdConfiguration.load(file: config ?? HushdConfiguration.defaultPath)
                }
            let problems = machineProblems(configuration)
            guard problems.isEmpty else { return refusal(ConfigurationError(problems)) }
            return Outcome(
                status: 0,
                output: "configuration OK: \(configuration.files.joined(separator: " + "))\n" + configuration.summary,
                errors: ""
            )
        } catch {
            return refusal(error)
        }
    }

    private static func refusal(_ error: ConfigurationError) -> Outcome {
        let count = error.problems.count
        return Outcome(
            status: 1,
            output: "",
            errors: error.description + "\n"
                + "\(count) problem\(count == 1 ? "" : "s") in the configuration: hushd would not start"
        )
    }

    /// What hushd's start-up refuses on this machine that the file alone cannot show, found the way start-up
    /// finds it: `[control] group` must name a group that exists here (``ControlServer`` gives the socket to it
    /// with the same lookup, and hushd does not start without it). Each problem names the file and line of the
    /// key, or the last file when the value is the default.
    static func machineProblems(
        _ configuration: HushdConfiguration,
        groupID: (String) -> UInt32? = UnixSocket.groupID
    ) -> [ConfigurationProblem] {
        guard let group = configuration.control.socketGroup(exists: { groupID($0) != nil }), groupID(group) == nil
        else { return [] }
        var file = configuration.files.last ?? HushdConfiguration.defaultPath
        var line: Int?
        for candidate in configuration.files.reversed() {
            guard let text = try? ConfigurationLoader.read(candidate),
                let found = (try? ConfigurationNode.parse(text, file: candidate))?.table?["control"]?.table?["group"]?
                    .line
            else { continue }
            file = candidate
            line = found
            break
        }
        return [
            ConfigurationProblem(
                file: file,
                line: line,
                section: "control",
                key: "group",
                message: "[control] group = \"\(group)\"\(line == nil ? " (the default)" : ""): there is no group "
                    + "'\(group)' on this machine, and hushd gives its control socket to that group or does not "
                    + "start; create it (groupadd --system \(group)), name an existing group, or set group = \"\" "
                    + "to keep hushd's own"
            )
        ]
    }
}

extension HushdConfiguration {
    /// What hushd would use, for `hushd check-config` and the start-up log: one topic per line, 8-column labels.
    package var summary: String {
        var lines: [String] = []
        func add(_ label: String, _ entries: [String]) {
            for (index, entry) in entries.enumerated() {
                let padded = index == 0 ? label + String(repeating: " ", count: max(1, 10 - label.count)) : "          "
                lines.append(padded + entry)
            }
        }
        add(
            "board",
            [
                board.name.isEmpty
                    ? "(unnamed)" : board.name + (board.description.isEmpty ? "" : ": " + board.description)
            ]
        )
        add(
            "output",
            [
                "\(output.pcm): \(output.sampleRate) Hz, \(output.channels) ch, \(output.format), "
                    + "\(output.periodFrames)-frame periods × \(output.periods)",
                "real-time priority "
                    + (output.realtimePriority == 0 ? "none (normal scheduling)" : "\(output.realtimePriority)"),
            ] + outputAbsence
        )
        add(
            "routes",
            routeOrder.flatMap { route -> [String] in
                guard let settings = routes[route] else { return [] }
                var line = Self.padded(route.name, 12) + settings.pcm
                if let format = settings.format, format != output.format { line += ", \(format)" }
                return [line]
                    + settings.switches.map {
                        "              sets \($0.element) on card \($0.card) to \($0.value)"
                    }
            } + routeAbsence
        )
        add(
            "inputs",
            inputs.isEmpty
                ? ["none"] : inputs.keys.sorted().map { Self.padded($0.rawValue, 18) + describe(inputs[$0]!) }
        )
        if !outputs.isEmpty {
            add(
                "outputs",
                outputs.sorted { $0.key.rawValue < $1.key.rawValue }.map {
                    Self.padded($0.key.rawValue, 18) + "gpio \($0.value.chip) \($0.value.line)"
                        + ($0.value.activeLow ? ", active low" : "")
                }
            )
        }
        add(
            "volume",
            [
                "system \(volume.defaultSystem.rawValue), ringer \(volume.defaultRinger.rawValue), "
                    + "start-up cap \(volume.startupMaximum.rawValue); curve "
                    + volume.curve.anchors.map { "\($0.step): \(Self.decibels($0.decibels))" }.joined(separator: ", "),
                "buttons repeat after \(buttons.repeatDelay.milliseconds) ms every "
                    + "\(buttons.repeatInterval.milliseconds) ms; with nothing playing they move the "
                    + "\(buttons.idleTarget) volume",
                "ducking \(Self.decibels(ducking.depthDecibels)), attack \(ducking.attack.milliseconds) ms, "
                    + "release \(ducking.release.milliseconds) ms; ramps: silence \(ramps.silence.milliseconds) ms, "
                    + "volume \(ramps.volume.milliseconds) ms",
            ]
        )
        add(
            "buses",
            [
                Bus.allCases.map { bus in
                    let settings = buses[bus] ?? BusSettings(category: .playback)
                    return "\(bus) \(settings.category)" + (settings.options.isEmpty ? "" : " \(settings.options)")
                }.joined(separator: "; ")
            ]
        )
        add("console", [console.device.map { "\($0) at \(console.baud)" } ?? "none"])
        add(
            "socket",
            [
                "\(control.socket), mode 0\(String(control.mode, radix: 8)), "
                    + (control.socketGroup { UnixSocket.groupID($0) != nil }.map { "group \($0)" }
                        ?? "hushd's own group"
                        + (control.groupGiven || control.group == nil
                            ? "" : " (no group \(control.group ?? "") here)")),
                "\(control.maxClients) clients (\(control.maxClientsPerProcess) per process), "
                    + "\(control.maxSessionsPerClient) sessions each, lines up to "
                    + "\(control.maxLineBytes) bytes; other uids allowed: "
                    + (control.allowedUIDs.isEmpty
                        ? "none" : control.allowedUIDs.map(String.init).joined(separator: ", ")),
            ]
        )
        add(
            "streams",
            [
                "\(streams.maxStreams) at once, \(streams.maxStreamsPerProcess) per process; rings up to "
                    + "\(streams.ringKiBMax) KiB (\(streams.maxRingFrames(frameBytes: 4)) frames of 16-bit stereo)"
            ]
        )
        add(
            "capture",
            [
                capture.map {
                    "\($0.pcm) at \(output.sampleRate) Hz, \(output.channels) ch; if it does not open, capture streams "
                        + "get silence"
                } ?? "none: capture streams get silence"
            ]
        )
        add(
            "state",
            [
                state.file.map { "\($0), written at most every \(state.writeInterval.milliseconds) ms" }
                    ?? "none: volumes are not kept across restarts"
            ]
        )
        add(
            "controls",
            [
                alsaControlsCard.map { "Hush volume controls on ALSA card \($0)" }
                    ?? (alsaControls.enabled ? "none: the output PCM names no card" : "off")
            ]
        )
        add(
            "sounds",
            [
                sounds.directories.isEmpty
                    ? "none: play requests for files are refused" : sounds.directories.joined(separator: ", ")
            ] + ownSoundLines
        )
        add("log", [log.level.rawValue])
        return lines.joined(separator: "\n")
    }

    /// hushd's own sounds (the start-up sound, policy R25; the hearing warning's, R30), and whether each is there
    /// to be played.
    private var ownSoundLines: [String] {
        let own: [(String, String?, String)] = [
            ("start-up sound", sounds.startup, "hushd would start without it"),
            ("hearing warning sound", sounds.hearingWarning, "the warnings would have no sound"),
        ]
        return own.compactMap { name, path, without in
            guard let path else { return nil }
            let there = access(path, R_OK) == 0
            return "\(name) \(path)" + (there ? "" : " (not readable here: \(without))")
        }
    }

    /// What hushd does when the output PCM does not open at start (Daemon.openOutput, AudioOutputThread): it
    /// never fails start-up for it, so check-config must not say it does.
    private var outputAbsence: [String] {
        if let fallback = output.fallbackWAV {
            return ["if the PCM does not open at start, sound goes to the WAV file \(fallback)"]
        }
        return [
            "if the PCM does not open at start, hushd starts without sound and opens it when it appears",
            "(tried every 250 ms); it must then grant \(output.sampleRate) Hz, \(output.channels) ch and "
                + "\(output.periodFrames)-frame periods, or it stays closed and the log says what it offers",
        ]
    }

    /// What hushd does when a route's own PCM does not open (OutputRouter.pendingRoute); nothing when every route
    /// plays on `[output] pcm`.
    private var routeAbsence: [String] {
        guard routes.values.contains(where: { $0.pcm != output.pcm }) else { return [] }
        return [
            "a route's PCM that does not open (busy, card missing) is waited for: the sound stays where it",
            "plays and hushd tries the PCM again after 250 ms, then at most every 2 s",
        ]
    }

    private func describe(_ input: Input) -> String {
        switch input {
        case .gpio(let gpio):
            "gpio \(gpio.chip) \(gpio.line), active \(gpio.activeLow ? "low" : "high"), \(gpio.bias.rawValue), "
                + "\(gpio.debounce.milliseconds) ms debounce" + (gpio.mediaKey.map { ", key \($0)" } ?? "")
        case .evdev(let evdev):
            "evdev \(evdev.device) " + evdev.codes.map(\.name).joined(separator: ", ")
                + (evdev.grab ? ", grabbed" : "") + (evdev.optional ? ", optional" : "")
        case .alsa(let alsa): "alsa card \(alsa.card) control \(alsa.element)"
        case .terminal: "keys on hushd's terminal"
        }
    }

    private static func padded(_ text: String, _ width: Int) -> String {
        text + String(repeating: " ", count: max(1, width - text.count))
    }

    private static func decibels(_ value: Float) -> String { DecimalText.trimmed(value, places: 1) + " dB" }
}
