import CLinux
import HushCore

#if canImport(Glibc)
import Glibc
#endif

/// Something hushd's loop waits on: descriptors to poll, a time to be woken, work to do when either comes.
///
/// hushd runs one thread for everything but the audio: inputs, the control socket, the console, ALSA controls,
/// the state file and timers all take turns here, so no lock guards the policy and no callback races another.
package protocol LoopParticipant: AnyObject {
    /// The descriptors to poll now, with the events wanted (read back in `service`'s `ready`).
    var pollRequests: [pollfd] { get }
    /// When `service` must run even if no descriptor is ready.
    var nextDeadline: Instant? { get }
    /// Does what is due: `ready` holds this participant's descriptors with their `revents` (possibly none).
    func service(_ ready: [pollfd], now: Instant)
}

/// SIGINT, SIGTERM and SIGHUP as readable events on a descriptor (signalfd), so hushd stops cleanly from its own
/// loop: the state file is flushed, the device closed, the socket removed.
package final class SignalDescriptor {
    package let descriptor: Int32
    private var mask = sigset_t()

    /// Blocks the signals for the whole process (threads started later inherit the mask) and opens the descriptor.
    package init(_ signals: [Int32] = [SIGINT, SIGTERM, SIGHUP]) throws(HardwareError) {
        sigemptyset(&mask)
        for signal in signals { sigaddset(&mask, signal) }
        pthread_sigmask(SIG_BLOCK, &mask, nil)
        descriptor = signalfd(-1, &mask, Int32(SFD_NONBLOCK | SFD_CLOEXEC))
        guard descriptor >= 0 else {
            throw HardwareError(
                operation: "watch for signals",
                device: "signalfd",
                errno: errno,
                message: String(cString: strerror(errno))
            )
        }
        // A client that closes its socket while hushd writes must not kill hushd.
        signal(SIGPIPE, SIG_IGN)
    }

    deinit {
        close(descriptor)
        pthread_sigmask(SIG_UNBLOCK, &mask, nil)
    }

    /// The signals received since the last call.
    package func take() -> [Int32] {
        var received: [Int32] = []
        var info = signalfd_siginfo()
        while read(descriptor, &info, MemoryLayout<signalfd_siginfo>.size) == MemoryLayout<signalfd_siginfo>.size {
            received.append(Int32(info.ssi_signo))
        }
        return received
    }
}

/// Waits for the participants, up to `limit`, then lets every participant whose descriptor is ready or whose
/// deadline passed do its work.
package func runLoopIteration(_ participants: [any LoopParticipant], clock: any MonotonicClock, limit: Duration) {
    var requests: [pollfd] = []
    var ranges: [Range<Int>] = []
    for participant in participants {
        let start = requests.count
        requests += participant.pollRequests
        ranges.append(start..<requests.count)
    }
    let now = clock.now()
    var wake = now + limit
    for participant in participants {
        if let deadline = participant.nextDeadline { wake = min(wake, deadline) }
    }
    let milliseconds = max(0, (wake.nanoseconds - now.nanoseconds + 999_999) / 1_000_000)
    let result = requests.withUnsafeMutableBufferPointer {
        poll($0.baseAddress, nfds_t($0.count), Int32(clamping: milliseconds))
    }
    if result < 0 && errno != EINTR { usleep(10_000) }  // EBADF or ENOMEM: do not spin
    let after = clock.now()
    for (index, participant) in participants.enumerated() {
        let mine = Array(requests[ranges[index]])
        let due = participant.nextDeadline.map { $0 <= after } ?? false
        if due || mine.contains(where: { $0.revents != 0 }) {
            participant.service(mine, now: after)
        }
    }
}
