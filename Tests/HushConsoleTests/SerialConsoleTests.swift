import Glibc
import HushConsole
import HushCore
import HushSystem
import HushTesting
import Logging
import Synchronization
import Testing

/// The console over real pseudo-terminals: the slave is the "serial device" hushd opens, the test is the person at
/// the terminal on the master side. What the master reads is exactly what a terminal would print.
@Suite("serial console")
struct SerialConsoleTests {
    @Test("the device is set up raw 8N1 at the configured baud, no echo, no CR/LF translation, no hang-up on close")
    func termiosApplied() throws {
        for baud in [9600, 115_200, 921_600, 3_000_000] {
            let pty = try PseudoTerminal()
            let rate = try #require(BaudRate(baud))
            let console = try SerialConsole(device: pty.slavePath, baud: rate, logger: ConsoleLog().logger)
            #expect(console.isConnected)
            var settings = try Self.settings(of: pty.slavePath)
            #expect(settings.c_lflag & tcflag_t(ICANON | ECHO | ISIG | IEXTEN) == 0)
            #expect(settings.c_iflag & tcflag_t(ICRNL | INLCR | IGNCR | IXON | ISTRIP) == 0)
            #expect(settings.c_oflag & tcflag_t(OPOST) == 0)
            #expect(settings.c_cflag & tcflag_t(CSIZE) == tcflag_t(CS8))
            #expect(settings.c_cflag & tcflag_t(CLOCAL | CREAD) == tcflag_t(CLOCAL | CREAD))
            #expect(settings.c_cflag & (tcflag_t(PARENB | CSTOPB | HUPCL) | tcflag_t(CRTSCTS)) == 0)
            let speeds: [Int: Int32] = [9600: B9600, 115_200: B115200, 921_600: B921600, 3_000_000: B3000000]
            #expect(cfgetospeed(&settings) == speed_t(speeds[baud]!))
            #expect(cfgetispeed(&settings) == speed_t(speeds[baud]!))
            console.close()
        }
    }

    @Test("a baud termios cannot set is no BaudRate; a file, a FIFO and a directory are refused saying what to do")
    func refusals() throws {
        // The configuration reader refuses these by the same list (CheckConfigTests walks [console] baud).
        for refused in [0, 1200, 2400, 4800, 12345, 115_201, 4_000_000] { #expect(BaudRate(refused) == nil) }
        #expect(BaudRate.supportedList.hasPrefix("9600, 19200, "))
        #expect(BaudRate.supportedList.hasSuffix(", 921600, 1000000, 1500000, 2000000, 3000000"))
        let directory = try ScratchDirectory(prefix: "hush-console")
        let file = directory.path + "/console.log"
        let fd = open(file, O_CREAT | O_WRONLY, 0o600)
        close(fd)
        let fifo = directory.path + "/fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        for path in [file, fifo] {
            #expect {
                try SerialConsole(device: path, baud: .standard, logger: ConsoleLog().logger)
            } throws: { error in
                "\(error)" == "cannot use console \(path): it is not a terminal (a pipe or a file?); name a serial "
                    + "device such as /dev/ttyAMA0, /dev/ttyS0, /dev/ttyGS0 or /dev/ttyUSB0 [errno 25]"
            }
        }
        #expect {
            try SerialConsole(device: directory.path, baud: .standard, logger: ConsoleLog().logger)
        } throws: { error in
            "\(error)".hasPrefix("cannot open console \(directory.path): ")
        }
    }

    @Test("banner, prompt, a typed line returned once, its echo and the answer in CRLF lines")
    func typedLine() throws {
        let pty = try PseudoTerminal()
        let console = try SerialConsole(device: pty.slavePath, baud: .standard, logger: ConsoleLog().logger)
        console.onConnect = { [unowned console] in console.print("hush 0.1.0 serial console\nroute speaker, volume 8") }
        #expect(console.nextDeadline == .zero, "the banner is due at once")
        #expect(console.service(now: Instant(nanoseconds: 1)).isEmpty)
        #expect(console.nextDeadline == nil)
        #expect(Self.text(pty.readAvailable()) == "hush 0.1.0 serial console\r\nroute speaker, volume 8\r\n> ")

        pty.type("stat")
        #expect(Self.serve(console, until: 0).isEmpty)
        pty.type("us\r\n")
        #expect(Self.serve(console, until: 1) == ["status"])
        #expect(Self.text(pty.readAvailable()) == "status\r\n> ")
        console.print("switch ring, headphones out, route speaker")
        #expect(Self.text(pty.readAvailable()) == "\r  \rswitch ring, headphones out, route speaker\r\n> ")

        // A hot key comes back as the command it stands for, echoed as if typed.
        pty.type("+")
        #expect(Self.serve(console, until: 1) == ["tap up"])
        #expect(Self.text(pty.readAvailable()) == "tap up\r\n> ")
        // ^D means nothing on a serial line.
        pty.type([0x04])
        _ = Self.serve(console, until: 0)
        #expect(!console.inputEnded && console.isConnected)
    }

    @Test("a decision printed while the person types clears the row, prints, and puts the partial line back")
    func asynchronousOutput() throws {
        let pty = try PseudoTerminal()
        let console = try SerialConsole(device: pty.slavePath, baud: .standard, logger: ConsoleLog().logger)
        _ = console.service(now: .zero)
        _ = pty.readAvailable()
        pty.type("volu")
        _ = Self.serve(console, until: 0)
        #expect(Self.text(pty.readAvailable()) == "volu")
        console.print("12:03:04.120 [R5] pause session 3 — headphones unplugged")
        #expect(
            Self.text(pty.readAvailable())
                == "\r      \r12:03:04.120 [R5] pause session 3 — headphones unplugged\r\n> volu"
        )
        pty.type("me up\r")
        #expect(Self.serve(console, until: 1) == ["volume up"])
    }

    @Test("the terminal going away is noticed, logged once, retried with backoff; onConnect runs on its return")
    func reconnect() throws {
        let directory = try ScratchDirectory(prefix: "hush-console")
        let link = directory.path + "/console"
        let first = try PseudoTerminal()
        #expect(symlink(first.slavePath, link) == 0)
        let log = ConsoleLog()
        let console = try SerialConsole(device: link, baud: .standard, logger: log.logger)
        let connections = Mutex(0)
        console.onConnect = { [unowned console] in
            connections.withLock { $0 += 1 }
            console.print("hush banner")
        }
        _ = console.service(now: .zero)
        #expect(connections.withLock { $0 } == 1)
        #expect(Self.text(first.readAvailable()) == "hush banner\r\n> ")

        // The terminal emulator quits: the slave sees a hang-up.
        first.close()
        let hangUp = Instant(nanoseconds: 10_000_000_000)
        Self.waitReadable(console)
        _ = console.service(now: hangUp)
        #expect(!console.isConnected)
        #expect(console.pollDescriptor == nil)
        #expect(console.nextDeadline == hangUp + .milliseconds(250))
        #expect(
            log.notices == ["console \(link) at 115200 baud disconnected (end of file); reopening it when it returns"]
        )
        console.print("lost: nobody is there")

        // The device is not there: retried quietly, one line for the whole absence, backoff doubling up to 4 s.
        #expect(unlink(link) == 0)
        var now = hangUp
        var delays: [Duration] = []
        for _ in 0..<7 {
            now = console.nextDeadline!
            _ = console.service(now: now)
            #expect(!console.isConnected)
            delays.append(console.nextDeadline! - now)
        }
        #expect(delays.map(\.milliseconds) == [500, 1000, 2000, 4000, 4000, 4000, 4000])
        #expect(log.notices.count == 2)
        #expect(log.notices.last?.hasPrefix("console: cannot open console \(link): no such device") == true)

        // It comes back (as a new pty: a pty's slave path never returns once its master closed).
        let second = try PseudoTerminal()
        #expect(symlink(second.slavePath, link) == 0)
        #expect(console.service(now: now + .milliseconds(100)).isEmpty, "not before the retry is due")
        #expect(!console.isConnected)
        _ = console.service(now: console.nextDeadline!)
        #expect(console.isConnected)
        #expect(connections.withLock { $0 } == 2)
        #expect(log.notices.last == "console \(link) at 115200 baud is back")
        // What was printed while nobody was there is not replayed; the banner and a fresh prompt are.
        #expect(Self.text(second.readAvailable()) == "hush banner\r\n> ")
        second.type("sessions\r")
        #expect(Self.serve(console, until: 1) == ["sessions"])
        // A later hang-up starts the backoff afresh.
        second.close()
        Self.waitReadable(console)
        _ = console.service(now: now)
        #expect(console.nextDeadline == now + .milliseconds(250))
    }

    @Test("a device that does not exist yet is no error: logged once, opened when it appears")
    func absentAtStart() throws {
        let directory = try ScratchDirectory(prefix: "hush-console")
        let link = directory.path + "/ttyGS0"
        let log = ConsoleLog()
        let console = try SerialConsole(device: link, baud: .standard, logger: log.logger)
        #expect(!console.isConnected)
        #expect(console.nextDeadline == .zero)
        #expect(console.service(now: Instant(nanoseconds: 5)).isEmpty)
        #expect(log.notices.count == 1)
        let pty = try PseudoTerminal()
        #expect(symlink(pty.slavePath, link) == 0)
        _ = console.service(now: console.nextDeadline!)
        #expect(console.isConnected)
        #expect(Self.text(pty.readAvailable()) == "> ")
    }

    @Test("a terminal that does not read: the oldest lines are dropped past the bound and counted when it drains")
    func queueBound() throws {
        let pty = try PseudoTerminal()
        let console = try SerialConsole(
            device: pty.slavePath,
            baud: .standard,
            logger: ConsoleLog().logger,
            queueLimit: 4096
        )
        _ = console.service(now: .zero)
        let total = 3000
        for number in 0..<total {
            console.print("line \(number) " + String(repeating: "x", count: 60))
        }
        #expect(console.pollEvents & Int16(POLLOUT) != 0, "output waits: POLLOUT is asked for")
        #expect(console.pollRequests.map(\.fd) == [console.pollDescriptor!])
        #expect(console.pollRequests.map(\.events) == [Int16(POLLIN | POLLOUT)])
        var received: [UInt8] = []
        for _ in 0..<10_000 {
            let chunk = pty.readAvailable(timeout: .milliseconds(20))
            _ = console.service(now: .zero)
            received += chunk
            if chunk.isEmpty && console.pollEvents & Int16(POLLOUT) == 0 { break }
        }
        // Each row is what remains after the last CR that cleared it.
        let rows = Self.text(received).components(separatedBy: "\r\n").map { $0.split(separator: "\r").last ?? "" }
        let numbers = rows.compactMap { row in row.hasPrefix("line ") ? Int(row.split(separator: " ")[1]) : nil }
        let notices = rows.filter { $0.hasPrefix("… ") }
        #expect(notices.count == 1)
        let dropped = try #require(notices.first.flatMap { Int($0.split(separator: " ")[1]) })
        #expect(notices.first == "… \(dropped) lines dropped (the terminal was not reading)")
        #expect(dropped > 0)
        #expect(console.droppedLines == dropped)
        #expect(numbers.count + dropped == total)
        #expect(numbers == numbers.sorted(), "lines stay in order; only the oldest queued go")
        #expect(numbers.last == total - 1, "the newest line is never the one dropped")
        #expect(rows.last == "> ")
    }

    @Test("standard I/O on a terminal: raw mode with signals kept, ^D ends the input, close restores the settings")
    func standardIOTerminal() throws {
        let pty = try PseudoTerminal()
        let slave = open(pty.slavePath, O_RDWR | O_NOCTTY)
        defer { close(slave) }
        let before = try Self.settings(of: pty.slavePath)
        #expect(before.c_lflag & tcflag_t(ICANON | ECHO) == tcflag_t(ICANON | ECHO))
        let console = try SerialConsole.standardIO(input: slave, output: slave, logger: ConsoleLog().logger)
        let raw = try Self.settings(of: pty.slavePath)
        #expect(raw.c_lflag & tcflag_t(ICANON | ECHO) == 0)
        #expect(raw.c_lflag & tcflag_t(ISIG) != 0, "^C still stops hushd")
        #expect(descriptorFlags(slave) & O_NONBLOCK == 0, "the shared descriptor stays blocking")
        _ = console.service(now: .zero)
        #expect(Self.text(pty.readAvailable()) == "> ")
        pty.type("version\r")
        #expect(Self.serve(console, until: 1) == ["version"])
        pty.type([0x04])
        _ = Self.serve(console, until: 0)
        #expect(console.inputEnded)
        #expect(console.pollDescriptor == nil)
        console.close()
        let after = try Self.settings(of: pty.slavePath)
        #expect(after.c_lflag == before.c_lflag && after.c_iflag == before.c_iflag)
    }

    @Test("standard I/O on pipes: plain lines in (LF or CRLF), plain lines out, end of input, flags restored")
    func standardIOPipes() throws {
        var input: [Int32] = [0, 0]
        var output: [Int32] = [0, 0]
        #expect(pipe(&input) == 0 && pipe(&output) == 0)
        defer { for fd in input + output { close(fd) } }
        let console = try SerialConsole.standardIO(input: input[0], output: output[1], logger: ConsoleLog().logger)
        console.onConnect = { [unowned console] in console.print("hush 0.1.0") }
        _ = console.service(now: .zero)
        let script = "status\nvolume up\r\nlast"
        #expect(write(input[1], script, script.utf8.count) == script.utf8.count)
        close(input[1])
        input[1] = -1
        var lines: [String] = []
        for _ in 0..<100 where !console.inputEnded { lines += console.service(now: .zero) }
        #expect(lines == ["status", "volume up", "last"])
        #expect(console.inputEnded)
        console.print("done")
        var buffer = [UInt8](repeating: 0, count: 256)
        let count = read(output[0], &buffer, buffer.count)
        #expect(Self.text(Array(buffer[..<max(count, 0)])) == "hush 0.1.0\ndone\n")
        #expect(descriptorFlags(input[0]) & O_NONBLOCK != 0)
        console.close()
        #expect(descriptorFlags(input[0]) & O_NONBLOCK == 0)
        #expect(descriptorFlags(output[1]) & O_NONBLOCK == 0)
    }

    // MARK: Helpers

    static func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    static func settings(of path: String) throws -> termios {
        let fd = open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK)
        try #require(fd >= 0)
        defer { close(fd) }
        var settings = termios()
        try #require(tcgetattr(fd, &settings) == 0)
        return settings
    }

    /// Waits (up to a second) until the console's descriptor has something to say.
    static func waitReadable(_ console: SerialConsole) {
        guard let fd = console.pollDescriptor else { return }
        var request = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        _ = poll(&request, 1, 1000)
    }

    /// Serves the console until `count` lines came back (or, for 0, until the typing has been read).
    static func serve(_ console: SerialConsole, until count: Int) -> [String] {
        var lines: [String] = []
        for _ in 0..<50 {
            waitReadable(console)
            lines += console.service(now: .zero)
            if count > 0 ? lines.count >= count : true { break }
        }
        return lines
    }
}

private func descriptorFlags(_ fd: Int32) -> Int32 { fcntl(fd, F_GETFL) }

/// Keeps what the console logs at notice and above (HushTesting's recorder).
private final class ConsoleLog: Sendable {
    private let recorded = RecordingLogHandler.logger(label: "console-test")

    var notices: [String] { recorded.1.messages(atLeast: .notice) }

    var logger: Logger { recorded.0 }
}
