import Logging
import Synchronization

/// A log handler that keeps every message, so tests can check what a person at the console would read.
public struct RecordingLogHandler: LogHandler {
    /// The messages logged so far, from any thread.
    public final class Box: Sendable {
        let lines = Mutex<[(Logger.Level, String)]>([])
        public init() {}
        public var messages: [String] { lines.withLock { $0.map(\.1) } }
        public func messages(at level: Logger.Level) -> [String] {
            lines.withLock { $0.filter { $0.0 == level }.map(\.1) }
        }
        /// The messages at `level` and above.
        public func messages(atLeast level: Logger.Level) -> [String] {
            lines.withLock { $0.filter { $0.0 >= level }.map(\.1) }
        }
        /// Every message as "level: message", as hushd's log writes it.
        public var leveled: [String] { lines.withLock { $0.map { "\($0.0): \($0.1)" } } }
    }

    public let box: Box
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .trace

    public init(box: Box) { self.box = box }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        box.lines.withLock { $0.append((event.level, event.message.description)) }
    }

    /// A logger at `level` that records into a new box.
    public static func logger(label: String = "hush.test", level: Logger.Level = .trace) -> (Logger, Box) {
        let box = Box()
        var logger = Logger(label: label) { _ in RecordingLogHandler(box: box) }
        logger.logLevel = level
        return (logger, box)
    }
}
