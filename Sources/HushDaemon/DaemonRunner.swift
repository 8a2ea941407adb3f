import FoundationEssentials
import HushALSA
import HushConfiguration
import HushConsole
import HushControlServer
import HushCore
import HushGPIO
import HushInput
import HushOutput
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
        // The socket listens before anything else is opened: a client (the plugin in a program that starts with
        // the board, hushctl) can connect from here, and waits in the backlog until hushd is ready and answers it
        // whole. A second hushd fails here, before it touches the sound card the first one plays on.
        let listening: ControlServer
        do {
            listening = try ControlParticipant.listen(configuration.control, logger: logger)
        } catch {
            logger.critical("cannot open the control socket: \(error)")
            return 1
        }
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
        // Every exit path leaves through one teardown: what was set up is undone in the reverse order.
        let teardown = Teardown()
        defer { teardown.run() }
        var stopped = false
        // The console first: start-up problems (a busy GPIO line, a missing card) should be on it.
        let console = openConsole(daemon)
        if let console {
            teardown.add {
                if stopped { console.console.print("hushd stopped") }
                console.console.restoreTerminal()
            }
        }
        do {
            try daemon.start()
        } catch {
            logger.critical("cannot start: \(error.description)")
            return 1
        }
        teardown.add { daemon.shutDown() }
        if let tap = daemon.hearingTap {
            let hearing = HearingParticipant(tap: tap, daemon: daemon, store: store)
            daemon.participants.append(hearing)
            daemon.hearing = hearing
        }
        if let store {
            daemon.participants.append(StateParticipant(store: store, daemon: daemon))
            teardown.add { store.flushNow() }
        }
        let routeSwitches = RouteSwitches(
            switches: configuration.routes.mapValues(\.switches),
            daemon: daemon,
            setter: RouteSwitches.alsa
        )
        let captureSwitch = configuration.capture.flatMap { capture -> CaptureCardSwitch? in
            guard let card = capture.card, let name = capture.privacyControl else { return nil }
            // A codec's "Capture Switch" is a mixer control (amixer's scontrol "Capture"), as route switches are.
            let element = ALSAElementName(name, interface: .mixer)
            return CaptureCardSwitch(
                card: card,
                element: element,
                daemon: daemon,
                control: CaptureCardSwitch.alsa(card: card, element: element)
            )
        }
        let alertLight = openAlertLight(daemon)
        teardown.add { alertLight?.set(false) }
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
        let microphoneLight = openIndicator(.micLED, "microphone light")
        teardown.add { microphoneLight?.set(false) }
        let control: ControlParticipant
        do {
            control = try ControlParticipant(
                configuration: configuration.control,
                streams: configuration.streams,
                daemon: daemon,
                server: listening,
                microphoneChanged: { on in microphoneLight?.set(on) }
            )
        } catch {
            logger.critical("cannot open the control socket: \(error)")
            return 1
        }
        teardown.add { control.close() }
        daemon.participants.append(control)
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
        daemon.warningSoundPath = configuration.sounds.hearingWarning
        if let startup = configuration.sounds.startup { daemon.playStartupSound(startup) }
        let status = daemon.run(signals: signals)
        notifier.stopping()
        logger.notice("stopping: closing the socket and the output, saving the state")
        stopped = true
        withExtendedLifetime((routeSwitches, captureSwitch)) {}
        return status
    }

    /// Start-up is over: hands back the program's and libraries' pages only start-up read (`ResidentMemory`),
    /// then locks memory as it is touched from now on, so what the audio path uses stays in RAM and what start-up
    /// used is not pinned there for the daemon's life.
    private func settleMemory() {
        let release = ResidentMemory.releaseCleanFilePages()
        let locked = AudioOutputThread.lockMemory(logger: logger)
        let footprint = ProcessFootprint.current()
        let lock = locked ? "locked from now on as it is touched" : "not locked (see the warning above)"
        logger.info(
            "memory: handed back \(release.kibibytes) KiB of start-up code and read-only data; \(footprint.residentKiB) KiB resident, \(lock)"
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

/// What hushd undoes on its way out, whichever way it leaves: each step is added as the thing it undoes is set up,
/// and ``run()`` takes them in the reverse order, once (the socket closed before the output stops, the output
/// stopped before the lights go out, the terminal restored last).
final class Teardown {
    private var steps: [() -> Void] = []

    func add(_ step: @escaping () -> Void) { steps.append(step) }

    func run() {
        while let step = steps.popLast() { step() }
    }
}
