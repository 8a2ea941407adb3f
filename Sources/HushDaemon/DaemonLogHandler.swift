import Logging

#if canImport(Glibc)
import Glibc
#endif

/// hushd's log: every message at or above the shared level to standard error (journald under systemd: one line
/// per message, no timestamp of its own there), and notices and worse also to the console, where the person at
/// the board is looking: the errors, and the notices that say a failed part works again ("the output device is
/// back", "hw:1,0 opened at attempt 5"), so that nobody is left reading an error that no longer holds.
///
/// Messages reach the console through ``LogRouter/console``, set once the console is up; the console prints them
/// above the line being typed.
public struct DaemonLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public let label: String
    let router: LogRouter

    public init(label: String, router: LogRouter) {
        self.label = label
        self.router = router
    }

    public var logLevel: Logger.Level {
        get { router.level.level }
        set { router.level.level = newValue }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
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
            let stamp = String(
                format: "%02d:%02d:%02d.%03d ",
                parts.tm_hour,
                parts.tm_min,
                parts.tm_sec,
                now.tv_nsec / 1_000_000
            )
            text = stamp + text
        }
        let line = text + "\n"
        _ = line.withCString { write(STDERR_FILENO, $0, strlen($0)) }
        if level >= .notice, let console = router.console { console(text) }
    }
}

/// What every `DaemonLogHandler` of the process shares: the level (the console's `log level` changes it), where
/// notices and worse go besides standard error, and whether lines carry their own time (not under journald).
public final class LogRouter: @unchecked Sendable {
    public let level: LogLevelBox
    public var console: ((String) -> Void)?
    public var timestamps: Bool

    public init(level: Logger.Level, timestamps: Bool) {
        self.level = LogLevelBox(level)
        self.timestamps = timestamps
    }
}
