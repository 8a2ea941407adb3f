import CLinux
import HushCore

#if canImport(Glibc)
import Glibc
#endif

/// A line speed the serial console can set, checked against what Linux's termios can express.
///
/// The configuration holds one of these (`[console] baud`), so a speed the console cannot set is refused when the
/// file is read, by `hushd check-config` as by hushd, and never at start-up.
public struct BaudRate: Hashable, Sendable, CustomStringConvertible {
    package let bitsPerSecond: Int
    package let speed: speed_t

    /// The speeds hush accepts: the usual 9600…921600, and the higher ones the Pi's UARTs and USB adapters reach.
    /// The one list: the configuration reader's message and the console both come from it.
    package static let supported: [(Int, Int32)] = [
        (9600, B9600), (19200, B19200), (38400, B38400), (57600, B57600), (115_200, B115200),
        (230_400, B230400), (460_800, B460800), (500_000, B500000), (576_000, B576000), (921_600, B921600),
        (1_000_000, B1000000), (1_500_000, B1500000), (2_000_000, B2000000), (3_000_000, B3000000),
    ]

    /// 115200, what the Pi's firmware and most serial adapters use, and `[console] baud`'s default.
    package static let standard = BaudRate(checked: 115_200)

    /// The supported speeds, for messages: "9600, 19200, …, 3000000".
    package static var supportedList: String { supported.map { "\($0.0)" }.joined(separator: ", ") }

    /// Nil when `bitsPerSecond` is not one of ``supported``.
    package init?(_ bitsPerSecond: Int) {
        guard let entry = BaudRate.supported.first(where: { $0.0 == bitsPerSecond }) else { return nil }
        self.bitsPerSecond = bitsPerSecond
        speed = speed_t(entry.1)
    }

    private init(checked bitsPerSecond: Int) {
        guard let rate = BaudRate(bitsPerSecond) else { preconditionFailure("\(bitsPerSecond) is in the list") }
        self = rate
    }

    public var description: String { "\(bitsPerSecond) baud" }
}

/// The outcome of one non-blocking read or write on a terminal.
package enum TerminalIO: Equatable {
    /// This many bytes moved (never 0).
    case transferred(Int)
    /// Nothing can move now (EAGAIN): poll and come back.
    case wouldBlock
    /// The other side is gone: end of file on read, or EIO/ENXIO/EPIPE (a hung-up line, a closed pty master, an
    /// unplugged USB serial device).
    case hungUp(errno: Int32?)
    /// Anything else, with its errno.
    case failed(errno: Int32)
}

/// Every system call the console makes, errno turned into a `HardwareError` or a `TerminalIO` here; EINTR retried.
package enum Terminal {
    /// Errnos meaning "the device is not there (yet)": retried quietly rather than reported as a configuration error.
    package static let absentErrnos: Set<Int32> = [ENOENT, ENODEV, ENXIO, EIO, EBUSY, EAGAIN]

    /// Opens `path` read-write, non-blocking, never as the controlling terminal.
    package static func open(_ path: String) throws(HardwareError) -> Int32 {
        let fd = SystemCall.retrying { Glibc.open(path, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC) }
        guard fd >= 0 else {
            let code = errno
            throw HardwareError(operation: "open console", device: path, errno: code, message: openAdvice(code))
        }
        return fd
    }

    private static func openAdvice(_ code: Int32) -> String {
        switch code {
        case ENOENT: return "no such device (is the UART enabled, the adapter plugged in, the gadget loaded?)"
        case EACCES, EPERM:
            return "permission denied; add hushd's user to the 'dialout' group or fix the udev rule"
        case EBUSY: return "the device is in use by another program (a login getty? see docs/console.md)"
        default: return String(cString: strerror(code))
        }
    }

    /// The terminal settings of `fd`; a descriptor that is not a terminal gets an error saying what to name instead.
    package static func attributes(_ fd: Int32, device: String) throws(HardwareError) -> termios {
        var settings = termios()
        guard SystemCall.retrying({ tcgetattr(fd, &settings) }) == 0 else {
            let code = errno
            if code == ENOTTY || code == EINVAL {
                throw HardwareError(
                    operation: "use console",
                    device: device,
                    errno: code,
                    message: "it is not a terminal (a pipe or a file?); name a serial device such as /dev/ttyAMA0, "
                        + "/dev/ttyS0, /dev/ttyGS0 or /dev/ttyUSB0"
                )
            }
            throw HardwareError(
                operation: "read the settings of console",
                device: device,
                errno: code,
                message: String(cString: strerror(code))
            )
        }
        return settings
    }

    /// Applies `settings` at once.
    package static func setAttributes(_ fd: Int32, _ settings: termios, device: String) throws(HardwareError) {
        var settings = settings
        guard SystemCall.retrying({ tcsetattr(fd, TCSANOW, &settings) }) == 0 else {
            let code = errno
            throw HardwareError(
                operation: "set up console",
                device: device,
                errno: code,
                message: String(cString: strerror(code))
            )
        }
    }

    /// Raw 8N1 at `baud`: no canonical mode, no echo, no signals, no CR/LF translation either way (the line editor
    /// does all of that), receiver on, modem lines ignored (CLOCAL) and left up on close (no HUPCL, so closing and
    /// reopening does not hang up a terminal that watches DTR). One byte satisfies a read, so with O_NONBLOCK an
    /// empty line reads as EAGAIN and a read of 0 really means hang-up.
    package static func makeRawSerial(_ settings: inout termios, baud: BaudRate) {
        settings.c_iflag &= ~tcflag_t(IGNBRK | BRKINT | PARMRK | ISTRIP | INLCR | IGNCR | ICRNL | IXON | IXOFF | IXANY)
        settings.c_iflag &= ~tcflag_t(INPCK | IUCLC | IMAXBEL)
        settings.c_oflag &= ~tcflag_t(OPOST)
        settings.c_lflag &= ~tcflag_t(ECHO | ECHOE | ECHOK | ECHONL | ICANON | ISIG | IEXTEN)
        settings.c_cflag &= ~tcflag_t(CSIZE | PARENB | CSTOPB | HUPCL) & ~tcflag_t(CRTSCTS)
        settings.c_cflag |= tcflag_t(CS8 | CREAD | CLOCAL)
        setControlCharacter(&settings, VMIN, 1)
        setControlCharacter(&settings, VTIME, 0)
        cfsetispeed(&settings, baud.speed)
        cfsetospeed(&settings, baud.speed)
    }

    /// Line-at-a-time input off and echo off for a person's own terminal (`make run`), keeping signals (^C still
    /// stops hushd) but disabling ^Z, which would leave the terminal raw under a stopped process, and keeping output
    /// processing, so log lines other code writes with a bare LF still start at the left margin.
    package static func makeRawInteractive(_ settings: inout termios) {
        settings.c_iflag &= ~tcflag_t(ICRNL | INLCR | IGNCR | IXON)
        settings.c_lflag &= ~tcflag_t(ECHO | ECHONL | ICANON | IEXTEN)
        setControlCharacter(&settings, VMIN, 1)
        setControlCharacter(&settings, VTIME, 0)
        setControlCharacter(&settings, VSUSP, 0)
    }

    private static func setControlCharacter(_ settings: inout termios, _ index: Int32, _ value: cc_t) {
        // SAFETY: c_cc is a fixed-size C array imported as a tuple; index is one of the V* constants, below NCCS.
        withUnsafeMutableBytes(of: &settings.c_cc) { $0[Int(index)] = value }
    }

    package static func controlCharacter(_ settings: termios, _ index: Int32) -> cc_t {
        // SAFETY: as above, reading.
        withUnsafeBytes(of: settings.c_cc) { $0[Int(index)] }
    }

    /// Discards what was typed before hushd opened the line (noise, a half-typed command from a previous session).
    package static func discardPendingInput(_ fd: Int32) {
        _ = SystemCall.retrying { tcflush(fd, TCIFLUSH) }
    }

    /// The text of a NUL-terminated C buffer.
    package static func string(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    package static func isTerminal(_ fd: Int32) -> Bool { isatty(fd) == 1 }

    /// The terminal's device path (for reopening it with flags of hush's own).
    package static func name(of fd: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: 256)
        guard ttyname_r(fd, &buffer, buffer.count) == 0 else { return nil }
        return string(buffer)
    }

    /// The descriptor's status flags (O_NONBLOCK…), or nil when it is not open.
    package static func statusFlags(_ fd: Int32) -> Int32? {
        let flags = fcntl(fd, F_GETFL)
        return flags < 0 ? nil : flags
    }

    package static func setStatusFlags(_ fd: Int32, _ flags: Int32) {
        _ = SystemCall.retrying { fcntl(fd, F_SETFL, flags) }
    }

    /// What `poll` says about `fd` right now, without waiting.
    package static func readiness(_ fd: Int32, events: Int16) -> Int16 {
        var request = pollfd(fd: fd, events: events, revents: 0)
        guard SystemCall.retrying({ poll(&request, 1, 0) }) > 0 else { return 0 }
        return request.revents
    }

    /// One non-blocking read into `buffer`.
    package static func read(_ fd: Int32, into buffer: inout [UInt8]) -> TerminalIO {
        let count = buffer.withUnsafeMutableBytes { bytes in
            SystemCall.retrying { Glibc.read(fd, bytes.baseAddress, bytes.count) }
        }
        if count > 0 { return .transferred(count) }
        if count == 0 { return .hungUp(errno: nil) }
        return classify(errno)
    }

    /// One non-blocking write of `bytes[offset...]`.
    package static func write(_ fd: Int32, _ bytes: [UInt8], from offset: Int) -> TerminalIO {
        let count = bytes.withUnsafeBytes { all in
            SystemCall.retrying { Glibc.write(fd, all.baseAddress! + offset, all.count - offset) }
        }
        if count > 0 { return .transferred(count) }
        if count == 0 { return .wouldBlock }
        return classify(errno)
    }

    private static func classify(_ code: Int32) -> TerminalIO {
        switch code {
        case EAGAIN, EWOULDBLOCK: return .wouldBlock
        case EIO, ENXIO, EPIPE, ENODEV: return .hungUp(errno: code)
        default: return .failed(errno: code)
        }
    }

    package static func close(_ fd: Int32) {
        // Linux releases the descriptor even when close reports EINTR, so retrying could close someone else's.
        _ = Glibc.close(fd)
    }
}
