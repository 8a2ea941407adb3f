import HushCore

#if canImport(Glibc)
import Glibc
#endif

/// A clock for `--manual-clock`: it stands still until a `wait` moves it.
package final class ManualTimeline: MonotonicClock, @unchecked Sendable {
    private var current = Instant.zero
    package init() {}
    package func now() -> Instant { current }
    package func advance(to instant: Instant) { current = max(current, instant) }
}

package enum FileHandleOutput {
    package static func standardError(_ text: String) {
        let line = text.hasSuffix("\n") ? text : text + "\n"
        _ = line.withCString { write(STDERR_FILENO, $0, strlen($0)) }
    }
}

/// Reads lines from a descriptor, waking at `deadline` to let timers fire while nothing is typed.
package final class LineReader {
    private let descriptor: Int32
    private var buffer: [UInt8] = []
    private var ended = false
    /// How long until something is due, or nil to wait for input only.
    package var deadline: () -> Duration? = { nil }
    package var onTimeout: () -> Void = {}

    package init(descriptor: Int32) { self.descriptor = descriptor }

    /// The next line without its newline, or nil at end of input.
    package func next() -> String? {
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            if ended {
                guard !buffer.isEmpty else { return nil }
                defer { buffer.removeAll() }
                return String(decoding: buffer, as: UTF8.self)
            }
            var pfd = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let timeout = deadline().map { Int32(clamping: max(0, ($0.nanoseconds + 999_999) / 1_000_000)) } ?? -1
            let ready = SystemCall.retrying { poll(&pfd, 1, timeout) }
            if ready == 0 {
                onTimeout()
                continue
            }
            if ready < 0 {
                ended = true
                continue
            }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let count = SystemCall.retrying {
                chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            }
            if count <= 0 {
                ended = true
            } else {
                buffer.append(contentsOf: chunk[..<count])
            }
        }
    }
}
