import CLinux
import HushCore
import HushSystem

#if canImport(Glibc)
import Glibc
#endif

/// A pseudo-terminal pair: the slave stands in for a serial device, the master for the person's terminal.
///
/// The console tests open `slavePath` as the console "device" and type into and read from the master; the
/// virtual board can do the same to script the console.
public final class PseudoTerminal {
    /// The master side: what a terminal emulator holds.
    public let master: Int32
    /// The slave's path, for example /dev/pts/3.
    public let slavePath: String
    private var isOpen = true

    /// Opens a new pair; the master is non-blocking.
    public init() throws(HardwareError) {
        let fd = SystemCall.retrying { posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC) }
        guard fd >= 0 else {
            let code = errno
            throw HardwareError(
                operation: "open",
                device: "/dev/ptmx",
                errno: code,
                message: "cannot make a pseudo-terminal: \(String(cString: strerror(code)))"
            )
        }
        var name = [CChar](repeating: 0, count: 128)
        guard grantpt(fd) == 0, unlockpt(fd) == 0, ptsname_r(fd, &name, name.count) == 0 else {
            let code = errno
            Terminal.close(fd)
            throw HardwareError(
                operation: "unlock",
                device: "/dev/ptmx",
                errno: code,
                message: String(cString: strerror(code))
            )
        }
        Terminal.setStatusFlags(fd, (Terminal.statusFlags(fd) ?? 0) | O_NONBLOCK)
        master = fd
        slavePath = Terminal.string(name)
    }

    deinit { close() }

    /// Types `bytes` at the terminal.
    public func type(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            guard case .transferred(let count) = Terminal.write(master, bytes, from: offset) else { return }
            offset += count
        }
    }

    public func type(_ text: String) { type(Array(text.utf8)) }

    /// Everything the slave side wrote: waits up to `timeout` for the first byte, then reads until the line has
    /// been quiet for `settle` (a pty hands data over from a kernel work queue, so one write on the slave may
    /// arrive in pieces).
    public func readAvailable(timeout: Duration = .milliseconds(200), settle: Duration = .milliseconds(20)) -> [UInt8] {
        var collected: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        var wait = timeout
        while true {
            var request = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(clamping: wait.nanoseconds / 1_000_000)
            guard SystemCall.retrying({ poll(&request, 1, milliseconds) }) > 0, request.revents & Int16(POLLIN) != 0
            else { return collected }
            let before = collected.count
            while case .transferred(let count) = Terminal.read(master, into: &buffer) {
                collected += buffer[..<count]
            }
            // Readable but nothing read: the slave side is closed (EIO), not slow.
            if collected.count == before { return collected }
            wait = settle
        }
    }

    /// Closes the master: the slave side sees a hang-up, as when a terminal emulator quits.
    public func close() {
        guard isOpen else { return }
        isOpen = false
        Terminal.close(master)
    }
}
