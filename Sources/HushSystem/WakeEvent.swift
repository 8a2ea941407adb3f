import CLinux
import HushCore

#if canImport(Glibc)
import Glibc
#endif

/// A blocking eventfd that one thread sleeps on and another rings: how the idle audio thread waits for sound with
/// no timer (0 wake-ups while it waits). A ring before the wait is kept in the counter, so it is never missed.
package final class WakeEvent: @unchecked Sendable {
    private let descriptor: Int32

    package init() throws(HardwareError) {
        let made = clinux_eventfd()
        guard made >= 0 else {
            throw HardwareError(
                operation: "make the audio thread's wake-up eventfd",
                device: "hushd",
                errno: -made,
                message: String(cString: strerror(-made))
            )
        }
        // The shim's eventfds are non-blocking (for poll); this one is read to sleep.
        _ = fcntl(made, F_SETFL, fcntl(made, F_GETFL) & ~O_NONBLOCK)
        descriptor = made
    }

    deinit { close(descriptor) }

    /// Wakes the thread in ``wait()``, or makes its next wait return at once. Never blocks.
    package func ring() { clinux_eventfd_signal(descriptor) }

    /// Sleeps until ``ring()`` (at once if it rang since the last wait), and resets it. One system call, no
    /// allocation.
    package func wait() {
        var count: UInt64 = 0
        while read(descriptor, &count, 8) < 0 && errno == EINTR {}
    }
}
