import HushCore
import HushSystem
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// The serial-console monitor's terminal: a UART, a USB gadget or adapter, or hushd's own terminal for `make run`.
///
/// It sets the line up itself (raw 8N1 at the configured baud), edits what the person types with ``LineEditor``
/// and hands back whole command lines; it prints messages above the line being typed without mangling it, queues
/// output without ever blocking (dropping the oldest lines past a bound, and saying how many), and survives the
/// terminal going away: on a hang-up it closes the device and reopens it with backoff, running ``onConnect``
/// again (a USB gadget's ttyGS0 vanishes with the cable; a pty's slave closes with its terminal emulator).
///
/// - Important: hushd's loop thread only. Nothing here blocks or starts a thread: poll ``pollDescriptor`` for
///   ``pollEvents``, wake at ``nextDeadline``, then call ``service(now:)``.
package final class SerialConsole {
    /// What the console talks to.
    package enum Endpoint: Hashable, Sendable {
        /// A serial device, set up raw at this speed.
        case device(path: String, baud: BaudRate)
        /// hushd's standard input and output: line editing when both are a terminal, plain lines otherwise.
        case standardIO
    }

    /// How many bytes may wait for a terminal that does not read before the oldest lines are dropped.
    package static let defaultQueueLimit = 64 * 1024
    /// Longer messages are cut (a single message must never fill the queue by itself).
    static let maxMessageCharacters = 2048
    static let firstRetry = Duration.milliseconds(250)
    static let maxRetry = Duration.seconds(4)

    package let endpoint: Endpoint
    /// Runs when the terminal is first opened and after every reconnection, before the prompt: print the banner
    /// and the status here. Capture the console `unowned` or `weak`: it keeps this closure.
    package var onConnect: (() -> Void)?
    /// Whether the device is open.
    package private(set) var isConnected = false
    /// Standard input only: the input ended (end of a pipe, ^D on an empty line, the terminal closed).
    package private(set) var inputEnded = false
    /// Lines dropped so far because the terminal did not read them.
    package private(set) var droppedLines = 0

    private let logger: Logger
    private var editor: LineEditor
    /// Whether the line editor runs (a terminal), or lines are read and written plainly (pipes, files).
    private let interactive: Bool
    private var inputDescriptor: Int32 = -1
    private var outputDescriptor: Int32 = -1
    private var queue: [Chunk] = []
    private var queuedBytes = 0
    private var writtenOfFirst = 0
    private let queueLimit: Int
    private var droppedSinceReport = 0
    /// Echo was dropped with the lines, so the screen no longer shows the line being typed.
    private var echoDropped = false
    private var announcementPending = false
    private var heldUntilAnnounced: [String] = []
    private var retryAt: Instant?
    private var retryDelay = SerialConsole.firstRetry
    private var lastProblem: String?
    private var lastNow = Instant.zero
    private var plainInput: [UInt8] = []
    private var outputGone = false

    /// Queued output: a message's lines (which may be dropped whole) or echo and prompts (kept where possible).
    private struct Chunk {
        var bytes: [UInt8]
        var lines: Int
    }

    private init(endpoint: Endpoint, interactive: Bool, logger: Logger, queueLimit: Int, columns: Int) {
        self.endpoint = endpoint
        self.interactive = interactive
        self.logger = logger
        self.queueLimit = max(queueLimit, 1024)
        editor = LineEditor(
            columns: columns,
            hotKeys: ConsoleRequest.hotKeys,
            completer: ConsoleRequest.completions(for:)
        )
    }

    /// Opens `device` at `baud` and sets it up raw, 8N1, no modem control, no hang-up on close.
    ///
    /// A device that does not exist yet (a USB gadget not yet bound, an adapter not yet plugged in) is not an
    /// error: it is logged once and opened when it appears.
    /// - Parameter baud: a speed termios can set (the configuration reader checked it: ``BaudRate``).
    /// - Throws: `HardwareError` for a path that is not a terminal, permission denied, or settings the driver
    ///   refuses.
    package init(
        device: String,
        baud: BaudRate,
        logger: Logger,
        queueLimit: Int = SerialConsole.defaultQueueLimit,
        columns: Int = 80
    ) throws(HardwareError) {
        endpoint = .device(path: device, baud: baud)
        interactive = true
        self.logger = logger
        self.queueLimit = max(queueLimit, 1024)
        editor = LineEditor(
            columns: columns,
            hotKeys: ConsoleRequest.hotKeys,
            completer: ConsoleRequest.completions(for:)
        )
        do throws(HardwareError) {
            try openDevice(device, baud)
        } catch {
            guard let code = error.errno, Terminal.absentErrnos.contains(code), error.operation == "open console" else {
                throw error
            }
            noteProblem(error)
            retryAt = .zero
        }
    }

    /// The console on hushd's own standard input and output (`make run`), or on other descriptors standing for
    /// them (tests).
    ///
    /// When both are a terminal, it is put in raw mode (signals kept: ^C still stops hushd) and edited like a
    /// serial line; the original settings come back at exit, on SIGINT and SIGTERM where their handling is still
    /// the default, and through ``restoreTerminal()`` and ``close()``. Otherwise lines are read and printed
    /// plainly (LF line ends, no prompt, no echo), as tests and pipes want; the descriptors are made non-blocking
    /// and their flags restored the same way.
    package static func standardIO(
        input: Int32 = STDIN_FILENO,
        output: Int32 = STDOUT_FILENO,
        logger: Logger,
        queueLimit: Int = SerialConsole.defaultQueueLimit,
        columns: Int = 80
    ) throws(HardwareError) -> SerialConsole {
        let interactive = Terminal.isTerminal(input) && Terminal.isTerminal(output)
        let console = SerialConsole(
            endpoint: .standardIO,
            interactive: interactive,
            logger: logger,
            queueLimit: queueLimit,
            columns: columns
        )
        if interactive {
            // A descriptor of our own on the terminal, so O_NONBLOCK does not leak to the shell sharing fd 0.
            let path = Terminal.name(of: input) ?? "/dev/tty"
            let saved = try Terminal.attributes(input, device: path)
            let descriptor = try Terminal.open(path)
            var raw = saved
            Terminal.makeRawInteractive(&raw)
            StandardIORestore.save(terminal: saved, of: input)
            do throws(HardwareError) {
                try Terminal.setAttributes(input, raw, device: path)
            } catch {
                Terminal.close(descriptor)
                StandardIORestore.forget()
                throw error
            }
            console.inputDescriptor = descriptor
            console.outputDescriptor = descriptor
        } else {
            StandardIORestore.save(
                input: input,
                flags: Terminal.statusFlags(input),
                output: output,
                flags: Terminal.statusFlags(output)
            )
            for fd in [input, output] {
                if let flags = Terminal.statusFlags(fd) { Terminal.setStatusFlags(fd, flags | O_NONBLOCK) }
            }
            console.inputDescriptor = input
            console.outputDescriptor = output
        }
        console.isConnected = true
        console.announcementPending = true
        return console
    }

    deinit { close() }

    /// What the console is, for logs: "/dev/ttyAMA0 at 115200 baud".
    package var name: String {
        switch endpoint {
        case .device(let path, let baud): "\(path) at \(baud)"
        case .standardIO: "standard input and output"
        }
    }

    // MARK: The loop's view

    /// The descriptor to poll, or nil while disconnected (or once standard input ended).
    package var pollDescriptor: Int32? {
        isConnected && !inputEnded ? inputDescriptor : nil
    }

    /// POLLIN, and POLLOUT while output waits for the terminal.
    package var pollEvents: Int16 {
        let writing = !queue.isEmpty && outputDescriptor == inputDescriptor
        return Int16(POLLIN) | (writing ? Int16(POLLOUT) : 0)
    }

    /// ``pollDescriptor`` with ``pollEvents`` as `poll` takes them (none while disconnected), for a
    /// `LoopParticipant`.
    package var pollRequests: [pollfd] {
        pollDescriptor.map { [pollfd(fd: $0, events: pollEvents, revents: 0)] } ?? []
    }

    /// When ``service(now:)`` must run even if nothing is ready: the next attempt to reopen the device, the
    /// banner of a fresh connection, or another try at output that cannot be polled (stdout apart from stdin).
    package var nextDeadline: Instant? {
        guard isConnected else { return retryAt }
        if announcementPending { return .zero }
        if !queue.isEmpty && (outputDescriptor != inputDescriptor || inputEnded) {
            return lastNow + .milliseconds(20)
        }
        return nil
    }

    /// Reads what was typed, echoes it, writes what is queued, reopens a vanished device when due; returns the
    /// command lines completed (a hot key comes back as the command it stands for, such as "tap up").
    package func service(now: Instant) -> [String] {
        lastNow = now
        if !isConnected {
            guard let due = retryAt, now >= due else { return [] }
            reopen(now: now)
            guard isConnected else { return [] }
        }
        if announcementPending { announce() }
        var lines: [String] = []
        if !inputEnded { readInput(into: &lines) }
        if isConnected { flush() }
        return lines
    }

    /// Prints `text` (one or more lines) above the line being typed. Never blocks: if the terminal does not read,
    /// the oldest queued lines are dropped past the bound. Dropped while disconnected.
    package func print(_ text: String) {
        guard isConnected, !outputGone else { return }
        var text = text
        if text.count > SerialConsole.maxMessageCharacters {
            text = String(text.prefix(SerialConsole.maxMessageCharacters)) + " …"
        }
        if announcementPending {
            // Before the banner: kept to follow it (bounded, the terminal may never be served).
            if heldUntilAnnounced.count < 256 { heldUntilAnnounced.append(text) }
            return
        }
        let lines = max(1, text.split(separator: "\n", omittingEmptySubsequences: false).count)
        if interactive {
            enqueue(editor.printAbove(text), lines: lines)
        } else {
            enqueue(Array((text.hasSuffix("\n") ? text : text + "\n").utf8), lines: lines)
        }
        flush()
    }

    /// Closes the device (or gives back the terminal's settings for standard input and output).
    package func close() {
        if case .standardIO = endpoint {
            StandardIORestore.restore()
            StandardIORestore.forget()
        }
        guard isConnected else { return }
        isConnected = false
        retryAt = nil
        if case .device = endpoint { Terminal.close(inputDescriptor) }
        if case .standardIO = endpoint, interactive { Terminal.close(inputDescriptor) }
    }

    /// Gives the terminal back the settings it had before ``standardIO(logger:queueLimit:columns:)`` changed them.
    /// Safe to call more than once, and from a signal handler.
    package func restoreTerminal() {
        if case .standardIO = endpoint { SerialConsole.restoreStandardIO() }
    }

    /// As ``restoreTerminal()``, for code that has no console at hand (a fatal-signal path).
    package static func restoreStandardIO() { StandardIORestore.restore() }

    // MARK: Opening and closing

    private func openDevice(_ path: String, _ baud: BaudRate) throws(HardwareError) {
        let fd = try Terminal.open(path)
        do throws(HardwareError) {
            var settings = try Terminal.attributes(fd, device: path)
            Terminal.makeRawSerial(&settings, baud: baud)
            try Terminal.setAttributes(fd, settings, device: path)
            // tcsetattr succeeds when any one setting took; check the speed did.
            var applied = try Terminal.attributes(fd, device: path)
            guard cfgetospeed(&applied) == baud.speed else {
                throw HardwareError(
                    operation: "set the line speed of",
                    device: path,
                    message: "the driver does not accept \(baud); try 115200"
                )
            }
            Terminal.discardPendingInput(fd)
        } catch {
            Terminal.close(fd)
            throw error
        }
        inputDescriptor = fd
        outputDescriptor = fd
        isConnected = true
        announcementPending = true
        retryAt = nil
        retryDelay = SerialConsole.firstRetry
        if lastProblem != nil { logger.notice("console \(name) is back") }
        lastProblem = nil
    }

    private func reopen(now: Instant) {
        guard case .device(let path, let baud) = endpoint else { return }
        do throws(HardwareError) {
            try openDevice(path, baud)
        } catch {
            noteProblem(error)
            retryDelay = min(retryDelay * 2, SerialConsole.maxRetry)
            retryAt = now + retryDelay
        }
    }

    /// Logs a problem once, not once per retry; a different problem is logged again.
    private func noteProblem(_ error: HardwareError) {
        guard lastProblem != error.description else { return }
        lastProblem = error.description
        logger.notice("console: \(error.description); hushd keeps trying to open it")
    }

    /// The terminal went away.
    private func hangUp(_ code: Int32?) {
        let cause = code.map { String(cString: strerror($0)) } ?? "end of file"
        switch endpoint {
        case .standardIO:
            inputEnded = true
            logger.debug("console input ended (\(cause))")
        case .device:
            Terminal.close(inputDescriptor)
            isConnected = false
            queue.removeAll()
            queuedBytes = 0
            writtenOfFirst = 0
            droppedSinceReport = 0
            echoDropped = false
            editor.detach()
            retryDelay = SerialConsole.firstRetry
            retryAt = lastNow + retryDelay
            let message = "console \(name) disconnected (\(cause)); reopening it when it returns"
            lastProblem = message
            logger.notice("\(message)")
        }
    }

    private func announce() {
        announcementPending = false
        onConnect?()
        let held = heldUntilAnnounced
        heldUntilAnnounced = []
        for text in held { print(text) }
        if interactive { enqueue(editor.showPrompt(), lines: 0) }
    }

    // MARK: Input

    private func readInput(into lines: inout [String]) {
        var buffer = [UInt8](repeating: 0, count: 1024)
        // A bounded amount per call: a flood of input must not keep the loop from its other work.
        for _ in 0..<64 {
            switch Terminal.read(inputDescriptor, into: &buffer) {
            case .transferred(let count):
                take(buffer[..<count], into: &lines)
                if inputEnded { return }
            case .wouldBlock:
                let revents = Terminal.readiness(inputDescriptor, events: Int16(POLLIN))
                if revents & Int16(POLLHUP | POLLERR) != 0 { hangUp(nil) }
                return
            case .hungUp(let code):
                if !interactive && !plainInput.isEmpty {
                    lines.append(String(decoding: plainInput, as: UTF8.self))
                    plainInput = []
                }
                hangUp(code)
                return
            case .failed(let code):
                logger.warning("cannot read console \(name): \(String(cString: strerror(code))) [errno \(code)]")
                hangUp(code)
                return
            }
        }
    }

    private func take(_ bytes: ArraySlice<UInt8>, into lines: inout [String]) {
        guard interactive else {
            plainInput += bytes
            while let newline = plainInput.firstIndex(of: 0x0A) {
                var line = plainInput[..<newline]
                if line.last == 0x0D { line = line.dropLast() }
                lines.append(String(decoding: line, as: UTF8.self))
                plainInput.removeSubrange(...newline)
            }
            return
        }
        let (echo, events) = editor.feed(bytes)
        enqueue(echo, lines: 0)
        for event in events {
            switch event {
            case .line(let line): lines.append(line)
            case .hotKey(let key): lines.append(ConsoleRequest.hotKeys[key] ?? String(key))
            case .endOfInput:
                // ^D ends `make run`; on a serial line it means nothing (hushd does not stop for it).
                if case .standardIO = endpoint {
                    inputEnded = true
                    return
                }
            }
        }
    }

    // MARK: Output

    private func enqueue(_ bytes: [UInt8], lines: Int) {
        guard !bytes.isEmpty, !outputGone else { return }
        queue.append(Chunk(bytes: bytes, lines: lines))
        queuedBytes += bytes.count
        while queuedBytes > queueLimit, dropOldest() {}
    }

    /// Drops the oldest message not being written; failing that, the oldest echo. False when nothing can go.
    private func dropOldest() -> Bool {
        let start = writtenOfFirst > 0 ? 1 : 0
        guard start < queue.count else { return false }
        let index = queue[start...].firstIndex(where: { $0.lines > 0 }) ?? start
        let chunk = queue.remove(at: index)
        queuedBytes -= chunk.bytes.count
        if chunk.lines > 0 {
            droppedSinceReport += chunk.lines
            droppedLines += chunk.lines
        } else {
            echoDropped = true
        }
        return true
    }

    /// Writes what the terminal takes now; once everything is out, reports lines dropped on the way.
    private func flush() {
        while isConnected, !outputGone {
            while let first = queue.first {
                switch Terminal.write(outputDescriptor, first.bytes, from: writtenOfFirst) {
                case .transferred(let count):
                    writtenOfFirst += count
                    if writtenOfFirst == first.bytes.count {
                        queue.removeFirst()
                        queuedBytes -= first.bytes.count
                        writtenOfFirst = 0
                    }
                case .wouldBlock:
                    return
                case .hungUp(let code):
                    outputFailed(code)
                    return
                case .failed(let code):
                    outputFailed(code)
                    return
                }
            }
            guard droppedSinceReport > 0 else { return }
            let notice =
                "… \(droppedSinceReport) line\(droppedSinceReport == 1 ? "" : "s") dropped "
                + "(the terminal was not reading)"
            droppedSinceReport = 0
            if !interactive {
                enqueue(Array((notice + "\n").utf8), lines: 0)
            } else if echoDropped {
                // Part of the echo is lost: start a fresh row and show the line whole again.
                echoDropped = false
                let prompt = editor.isPromptShown ? Array((editor.prompt + editor.line).utf8) : []
                enqueue([0x0D, 0x0A] + LineEditor.visible(notice) + [0x0D, 0x0A] + prompt, lines: 0)
            } else {
                enqueue(editor.printAbove(notice), lines: 0)
            }
        }
    }

    private func outputFailed(_ code: Int32?) {
        switch endpoint {
        case .device:
            hangUp(code)
        case .standardIO:
            // Nobody reads hushd's output any more (a closed pipe): stop writing, keep running.
            outputGone = true
            queue.removeAll()
            queuedBytes = 0
            logger.debug("console output closed (\(code.map { String(cString: strerror($0)) } ?? "end of file"))")
        }
    }
}

/// What ``SerialConsole/standardIO(input:output:logger:queueLimit:columns:)`` changed, kept where a signal handler
/// and an atexit handler can restore it without allocating.
private enum StandardIORestore {
    // A heap cell, not a `termios` global: Swift 6.3 emits a zero-initialised global of an imported C struct without
    // the struct's interior padding (57 bytes for termios' 60), so storing a whole termios overwrote the next global,
    // `handlersInstalled`. Found by AddressSanitizer (make test-asan, SerialConsoleTests); see docs/reliability.md.
    nonisolated(unsafe) static let terminal: UnsafeMutablePointer<termios> = {
        let cell = UnsafeMutablePointer<termios>.allocate(capacity: 1)
        cell.initialize(to: termios())
        return cell
    }()
    nonisolated(unsafe) static var terminalDescriptor: Int32 = -1
    nonisolated(unsafe) static var input: (fd: Int32, flags: Int32) = (-1, -1)
    nonisolated(unsafe) static var output: (fd: Int32, flags: Int32) = (-1, -1)
    nonisolated(unsafe) static var handlersInstalled = false

    static func save(terminal settings: termios, of fd: Int32) {
        terminal.pointee = settings
        terminalDescriptor = fd
        installHandlers()
    }

    static func save(input inputFD: Int32, flags inputFlags: Int32?, output outputFD: Int32, flags outputFlags: Int32?)
    {
        input = (inputFD, inputFlags ?? -1)
        output = (outputFD, outputFlags ?? -1)
        installHandlers()
    }

    static func restore() {
        if terminalDescriptor >= 0 { _ = tcsetattr(terminalDescriptor, TCSANOW, terminal) }
        if input.flags >= 0 { _ = fcntl(input.fd, F_SETFL, input.flags) }
        if output.flags >= 0 { _ = fcntl(output.fd, F_SETFL, output.flags) }
    }

    /// Nothing to restore any more (the console closed).
    static func forget() {
        terminalDescriptor = -1
        input = (-1, -1)
        output = (-1, -1)
    }

    private static func installHandlers() {
        guard !handlersInstalled else { return }
        handlersInstalled = true
        atexit { StandardIORestore.restore() }
        for signalNumber in [SIGINT, SIGTERM] {
            // Only where nobody else handles the signal (hushd's loop takes them through a signalfd).
            let previous = signal(signalNumber) { received in
                StandardIORestore.restore()
                signal(received, SIG_DFL)
                raise(received)
            }
            if previous != nil { signal(signalNumber, previous) }
        }
    }
}
