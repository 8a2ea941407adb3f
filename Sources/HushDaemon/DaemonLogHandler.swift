import Logging

#if canImport(Glibc)
import Glibc
#endif

/// hushd's log: every message at or above the shared level to standard error (journald under systemd: one line
/// per message, no timestamp of its own there), and notices and worse also to the console, where the person at
/// the board is looking: the errors, and the notices that say a failed part works again ("the output device is
/// back", "hw:1,0 opened at attempt 5"), so that nobody is left reading an error that no longer holds.
///
/// When standard error is the journal (``LogRouter/isJournal(_:descriptor:)``), every line written there starts
/// with its sd-daemon priority (`<4>` for a warning, sd-daemon(3)); journald strips it and stores the line at that
/// priority, so `journalctl -u hushd -p warning` finds hushd's warnings and errors. Without it every line would be
/// stored at info. The console's copy never carries the prefix.
///
/// Messages reach the console through ``LogRouter/console``, set once the console is up; the console prints them
/// above the line being typed.
package struct DaemonLogHandler: LogHandler {
    package var metadata: Logger.Metadata = [:]
    package let label: String
    let router: LogRouter

    package init(label: String, router: LogRouter) {
        self.label = label
        self.router = router
    }

    package var logLevel: Logger.Level {
        get { router.level.level }
        set { router.level.level = newValue }
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        let level = event.level
        var text = "\(level): \(event.message)"
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        if !merged.isEmpty {
            text += " " + merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        }
        if router.timestamps {
            var now = timespec()
            clock_gettime(CLOCK_REALTIME, &now)
            var parts = tm()
            var seconds = now.tv_sec
            localtime_r(&seconds, &parts)
            func padded(_ value: Int, _ width: Int) -> String {
                let digits = String(value)
                return String(repeating: "0", count: max(0, width - digits.count)) + digits
            }
            let stamp =
                "\(padded(Int(parts.tm_hour), 2)):\(padded(Int(parts.tm_min), 2)):\(padded(Int(parts.tm_sec), 2))."
                + "\(padded(now.tv_nsec / 1_000_000, 3)) "
            text = stamp + text
        }
        let line = (router.journal ? Self.journalLines(text, level: level) : text) + "\n"
        _ = line.withCString { write(STDERR_FILENO, $0, strlen($0)) }
        if level >= .notice, let console = router.console { console(text) }
    }

    /// The sd-daemon(3) priority prefix journald reads at the start of a line: `<7>` debug … `<2>` critical.
    static func journalPrefix(_ level: Logger.Level) -> String {
        switch level {
        case .trace, .debug: "<7>"
        case .info: "<6>"
        case .notice: "<5>"
        case .warning: "<4>"
        case .error: "<3>"
        case .critical: "<2>"
        }
    }

    /// `text` with the level's prefix on every line: journald reads the prefix per line, so a continuation line
    /// without one (a configuration error's list, the cards present) would be stored at info.
    static func journalLines(_ text: String, level: Logger.Level) -> String {
        let prefix = journalPrefix(level)
        return text.split(separator: "\n", omittingEmptySubsequences: false).map { prefix + $0 }.joined(
            separator: "\n"
        )
    }
}

/// What every `DaemonLogHandler` of the process shares: the level (the console's `log level` changes it), where
/// notices and worse go besides standard error, whether lines carry their own time (not under journald), and
/// whether they carry sd-daemon priority prefixes (only under journald).
package final class LogRouter: @unchecked Sendable {
    package let level: LogLevelBox
    package var console: ((String) -> Void)?
    package var timestamps: Bool
    /// Standard error is the journal: lines written there start with `<N>`, their priority.
    package var journal: Bool

    package init(level: Logger.Level, timestamps: Bool, journal: Bool = false) {
        self.level = LogLevelBox(level)
        self.timestamps = timestamps
        self.journal = journal
    }

    /// Whether `descriptor` is the journal stream systemd connected: `JOURNAL_STREAM` is "DEV:INODE" of that
    /// stream, and must match the descriptor's own device and inode (the check systemd.exec(5) documents). The
    /// variable alone is not enough: a program started from a unit inherits it while its standard error may have
    /// been sent to a file or a terminal, where `<4>` would only be noise.
    ///
    /// - Parameters:
    ///   - variable: `JOURNAL_STREAM`'s value, nil when it is not set.
    ///   - descriptor: the descriptor hushd logs to (standard error).
    package static func isJournal(_ variable: String?, descriptor: Int32) -> Bool {
        guard let variable else { return false }
        let parts = variable.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { return false }
        return UInt64(status.st_dev) == device && UInt64(status.st_ino) == inode
    }
}
