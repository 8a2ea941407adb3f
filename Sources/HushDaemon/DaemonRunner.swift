import FoundationEssentials
import HushALSA
import HushAudioFile
import HushConfiguration
import HushConsole
import HushControlServer
import HushCore
import HushGPIO
import HushInput
import HushOutput
import HushPolicy
import HushRender
import HushSystem
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// Builds the daemon from a configuration, runs it, and takes it down cleanly.
final class DaemonRunner {
    let configuration: HushdConfiguration
    let router: LogRouter
    let consoleChoice: ConsoleChoice?
    let logger: Logger

    init(configuration: HushdConfiguration, router: LogRouter, console: ConsoleChoice?, logger: Logger) {
        self.configuration = configuration
        self.router = router
        consoleChoice = console
        self.logger = logger
    }

    func run() -> Int32 {
        let signals: SignalDescriptor
        do {
            signals = try SignalDescriptor()
        } catch {
            logger.critical("\(error.description)")
            return 1
        }
        let notifier = SystemdNotifier(logger: logger)
        let store = configuration.state.file.map {
            StateStore(path: $0, interval: configuration.state.writeInterval, logger: logger)
        }
        let persisted = store?.load()
        let daemon = Daemon(
            setup: configuration.daemonSetup(persisted: persisted),
            inputs: openInputs(),
            clock: SystemClock(),
            logger: logger
        )
        // The console first: start-up problems (a busy GPIO line, a missing card) should be on it.
        let console = openConsole(daemon)
        do {
            try daemon.start()
        } catch {
            logger.critical("cannot start: \(error.description)")
            console?.console.restoreTerminal()
            return 1
        }
        if let store { daemon.participants.append(StateParticipant(store: store, daemon: daemon)) }
        let routeSwitches = RouteSwitches(
            switches: configuration.routes.mapValues(\.switches),
            daemon: daemon,
            setter: RouteSwitches.alsa
        )
        let alertLight = openAlertLight(daemon)
        if let card = configuration.alsaControlsCard {
            do {
                let controls = try ALSAVolumeControls(
                    card: card,
                    values: HushControlValues(
                        system: daemon.audio.policy.systemVolume,
                        ringer: daemon.audio.policy.ringerVolume,
                        silent: daemon.audio.policy.silenceSwitch == .silent
                    ),
                    curve: configuration.volume.curve,
                    logger: logger
                )
                daemon.participants.append(VolumeControlsParticipant(controls: controls, daemon: daemon))
            } catch {
                logger.error("hushd's volumes will not show in amixer: \(error.description)")
            }
        }
        let control: ControlParticipant
        do {
            control = try ControlParticipant(
                configuration: configuration.control,
                streams: configuration.streams,
                daemon: daemon
            )
        } catch {
            logger.critical("cannot open the control socket: \(error)")
            daemon.shutDown()
            console?.console.restoreTerminal()
            return 1
        }
        daemon.participants.append(control)
        let microphoneLight = openIndicator(.micLED, "microphone light")
        if let microphoneLight {
            control.streams.onMicrophoneChanged = { on in microphoneLight.set(on) }
        }
        if let console { daemon.participants.append(console) }
        if let interval = notifier.watchdogInterval {
            daemon.participants.append(
                WatchdogParticipant(notifier: notifier, interval: interval, now: daemon.clock.now())
            )
        }
        settleMemory()
        let summary = "\(daemon.outputDescription), socket \(configuration.control.socket)"
        notifier.ready(status: (daemon.outputCounters.open ? "playing on " : "waiting for its output, ") + summary)
        let board = configuration.board.name.isEmpty ? "no board profile" : "board '\(configuration.board.name)'"
        logger.notice("hushd \(Hushd.version) ready on \(board): \(summary)")
        let status = daemon.run(signals: signals)
        notifier.stopping()
        logger.notice("stopping: closing the socket and the output, saving the state")
        control.close()
        store?.flushNow()
        daemon.shutDown()
        alertLight?.set(false)
        microphoneLight?.set(false)
        _ = routeSwitches
        console?.console.print("hushd stopped")
        console?.console.restoreTerminal()
        return status
    }

    /// Start-up is over: hands back the program's and libraries' pages only start-up read (`ResidentMemory`),
    /// then locks memory as it is touched from now on, so what the audio path uses stays in RAM and what start-up
    /// used is not pinned there for the daemon's life.
    private func settleMemory() {
        let release = ResidentMemory.releaseCleanFilePages()
        AudioOutputThread.lockMemory(logger: logger)
        let footprint = ProcessFootprint.current()
        logger.info(
            "memory: handed back \(release.kibibytes) KiB of start-up code and read-only data; \(footprint.residentKiB) KiB resident, locked from now on as it is touched"
        )
    }

    /// Opens every configured input; one that fails is logged and left out (hushd runs without it rather than
    /// not at all: the console says what is missing).
    private func openInputs() -> [InputSource] {
        var sources: [InputSource] = []
        for input in configuration.gpioInputs {
            do {
                sources.append(try GPIOInputLine(input, logger: logger))
            } catch {
                logger.error("input left out: \(error.description)")
            }
        }
        for input in configuration.evdevInputs {
            do {
                sources.append(try EvdevInputSource(input, logger: logger))
            } catch {
                logger.error("input left out: \(error.description)")
            }
        }
        for input in configuration.alsaControlInputs {
            do {
                sources.append(try ALSAControlSource(input, logger: logger))
            } catch {
                logger.error("input left out: \(error.description)")
            }
        }
        return sources
    }

    /// The alert light, when the board has one; a line that cannot be had is logged and left out.
    private func openAlertLight(_ daemon: Daemon) -> AlertLight? {
        guard let settings = configuration.outputs[.alertLED] else { return nil }
        do {
            let line = try GPIOOutputLine(chip: settings.chip, line: settings.line, activeLow: settings.activeLow)
            return AlertLight(line: line, daemon: daemon)
        } catch {
            logger.error("no alert light: \(error.description)")
            return nil
        }
    }

    /// A light on a GPIO line (`[outputs.NAME]`) that hushd drives itself; one that cannot be had is logged and
    /// left out.
    private func openIndicator(_ name: HushdConfiguration.OutputName, _ what: String) -> IndicatorLight? {
        guard let settings = configuration.outputs[name] else { return nil }
        do {
            let line = try GPIOOutputLine(chip: settings.chip, line: settings.line, activeLow: settings.activeLow)
            return IndicatorLight(line: line, what: what, logger: logger)
        } catch {
            logger.error("no \(what): \(error.description)")
            return nil
        }
    }

    private func openConsole(_ daemon: Daemon) -> DaemonConsole? {
        let standIns = !configuration.terminalInputs.isEmpty
        // The built-in board's controls are keys on this terminal: read lines even from a pipe then.
        let choice =
            consoleChoice ?? configuration.console.device.map(ConsoleChoice.init(argument:))
            ?? (isatty(STDIN_FILENO) == 1 || standIns ? .standardIO : .off)
        let serial: SerialConsole
        do {
            switch choice {
            case .off:
                return nil
            case .standardIO:
                serial = try SerialConsole.standardIO(logger: logger)
            case .serial(let device):
                serial = try SerialConsole(device: device, baud: configuration.console.baud, logger: logger)
            }
        } catch {
            logger.error("no console: \(error.description)")
            return nil
        }
        let console = DaemonConsole(
            console: serial,
            daemon: daemon,
            standIns: standIns,
            banner: banner(daemon, standIns: standIns),
            logLevel: router.level,
            busDefaults: Dictionary(
                uniqueKeysWithValues: configuration.buses.map { bus, settings in
                    (bus, SessionConfiguration(bus: bus, category: settings.category, options: settings.options))
                }
            )
        )
        // A console on this process's own terminal already shows standard error: the same line twice helps nobody.
        if choice != .standardIO || !Self.sameFile(STDOUT_FILENO, STDERR_FILENO) {
            router.console = { [unowned serial] line in serial.print(line) }
        }
        return console
    }

    /// Whether two descriptors lead to the same file (a terminal, a pipe, a log file).
    static func sameFile(_ a: Int32, _ b: Int32) -> Bool {
        var first = stat()
        var second = stat()
        guard fstat(a, &first) == 0, fstat(b, &second) == 0 else { return false }
        return first.st_dev == second.st_dev && first.st_ino == second.st_ino
    }

    private func banner(_ daemon: Daemon, standIns: Bool) -> [String] {
        let board = configuration.board
        var lines = [
            "hush \(Hushd.version) on board '\(board.name)'"
                + (board.description.isEmpty ? "" : ": \(board.description)")
        ]
        let output = configuration.output
        lines.append(
            "output \(output.pcm), \(output.sampleRate) Hz, \(output.channels) ch, \(output.periodFrames)-frame periods; "
                + "socket \(configuration.control.socket)"
        )
        if standIns {
            lines.append("this terminal stands in for the controls: + - volume, ! silence switch, * headphones")
        }
        lines.append("type help for commands")
        return lines
    }
}
