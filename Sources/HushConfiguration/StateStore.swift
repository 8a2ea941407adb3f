import HushCore
import HushHearing
import HushSystem
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// Keeps the volumes that survive a restart (``PersistedVolumes``: system volume per route, ringer volume, route
/// override) in a small file in TOML's syntax, by default `/var/lib/hush/state`.
///
/// The file looks like hushd's configuration (one syntax for everything a person reads under /etc/hush and
/// /var/lib/hush, comments allowed), but it is read by a reader of its own (``entries(in:path:)``) that accepts
/// exactly the lines hushd writes and names the first line it does not, not by a TOML parser: four keys need none,
/// and a damaged file must never reach code that can abort hushd. Its first key is a schema version, so a later
/// hushd can change the layout and an older one refuses what it does not understand.
///
/// Writes are atomic — a temporary file in the same directory, written, fsync'd, renamed over the old file, then
/// the directory fsync'd — so a crash or power cut leaves either the old state or the new, never a mix. They
/// happen at most once per `interval`: ``save(_:now:)`` records the wish and writes at once only when the last
/// write is old enough; otherwise the daemon's loop calls ``flush(now:)`` at ``nextDeadline``. ``flushNow()``
/// writes what is pending at shutdown.
///
/// A file that cannot be understood (bad syntax, another schema version, a value out of range, a route the board
/// does not have) is renamed to `state.corrupt-<UTC timestamp>`, kept for a person to look at, and the defaults
/// are used. A write that fails (read-only file system, disk full, directory missing and not creatable) is logged
/// once per kind of failure and retried later; it never stops hushd.
///
/// - Important: Not thread-safe: one owner (hushd's loop) calls it.
public final class StateStore {
    /// The schema version this hushd writes and reads.
    public static let schemaVersion = 1
    /// The default location of the state file.
    public static let defaultPath = "/var/lib/hush/state"
    /// Files larger than this are not state files hush wrote (it writes a few hundred bytes).
    static let maximumSize = 64 * 1024

    public let path: String
    /// The shortest time between two writes.
    public let interval: Duration
    /// How long to wait before trying again after a failed write.
    public let retryInterval: Duration
    /// The routes the board has, or nil to accept any route name.
    public let knownRoutes: Set<Route>?

    private let logger: Logger
    private var pending: PersistedVolumes?
    /// The week's sound dose as the file keeps it (HushHearing's `SoundDose.encoded`; policy R29): read by
    /// ``load()``, written with the volumes. Empty when there is none.
    public private(set) var soundDose = ""
    /// The volumes last loaded or saved: what a dose-only write writes beside the dose.
    private var current: PersistedVolumes?
    private var lastDoseWrite: Instant?
    private var lastWrite: Instant?
    private var retryAt: Instant?
    private var loggedFailures: Set<StateFileError.Kind> = []

    /// A store for the file at `path`. Nothing is read or written until ``load()`` or ``save(_:now:)``.
    ///
    /// - Parameters:
    ///   - interval: the shortest time between two writes.
    ///   - knownRoutes: the board's routes; a file naming another route is treated as corrupt. Nil accepts any.
    ///   - retryInterval: the wait after a failed write before the next attempt.
    public init(
        path: String,
        interval: Duration = .seconds(1),
        knownRoutes: Set<Route>? = nil,
        retryInterval: Duration = .seconds(5),
        logger: Logger
    ) {
        self.path = path
        self.interval = interval
        self.knownRoutes = knownRoutes
        self.retryInterval = retryInterval
        self.logger = logger
    }

    // MARK: Reading

    /// The volumes in the state file, or nil (use the defaults) when there is none or it cannot be used.
    ///
    /// A missing file is logged as info; a corrupt one is set aside with one error line naming the file, the
    /// problem and where the copy went; an unreadable one (permissions) is logged and left in place.
    public func load() -> PersistedVolumes? {
        let contents: StateFileIO.Contents
        do {
            contents = try StateFileIO.read(path, limit: Self.maximumSize)
        } catch {
            logger.error("\(error); starting from the default volumes")
            return nil
        }
        do throws(StateFileCorruption) {
            switch contents {
            case .missing:
                logger.info("no state file at \(path) yet; starting from the default volumes")
                return nil
            case .unusable(let corruption):
                throw corruption
            case .text(let text):
                let state = try Self.decodeState(text, path: path, knownRoutes: knownRoutes)
                logger.info("volumes restored from \(path): \(Self.summary(state.volumes))")
                soundDose = state.soundDose
                current = state.volumes
                return state.volumes
            }
        } catch {
            setAside(error)
            return nil
        }
    }

    /// Renames the corrupt file out of the way, keeping it, and says so in one line.
    private func setAside(_ corruption: StateFileCorruption) {
        let copy = Self.corruptCopyPath(for: path)
        do {
            try StateFileIO.rename(path, to: copy)
            logger.error("\(corruption); set aside as \(copy); starting from the default volumes")
        } catch {
            let line =
                "\(corruption); could not set it aside (\(error.message)); starting from the default volumes, "
                + "and the next save replaces it"
            logger.error("\(line)")
        }
    }

    /// `state.corrupt-20250614T101500Z` beside `path`, with `-2`, `-3`, … when that name is taken.
    static func corruptCopyPath(for path: String) -> String {
        var now = time(nil)
        var parts = tm()
        gmtime_r(&now, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let stamp =
            "\(parts.tm_year + 1900)\(two(parts.tm_mon + 1))\(two(parts.tm_mday))T"
            + "\(two(parts.tm_hour))\(two(parts.tm_min))\(two(parts.tm_sec))Z"
        let base = "\(path).corrupt-\(stamp)"
        var candidate = base
        var suffix = 2
        while access(candidate, F_OK) == 0 {
            candidate = "\(base)-\(suffix)"
            suffix += 1
        }
        return candidate
    }

    // MARK: Writing

    /// Records `volumes` to be written: at once when the last write is at least ``interval`` old, else at
    /// ``nextDeadline``. A newer call replaces a wish not yet written.
    public func save(_ volumes: PersistedVolumes, now: Instant) {
        pending = volumes
        current = volumes
        if let retryAt, now < retryAt { return }
        if let lastWrite, now - lastWrite < interval { return }
        write(now: now)
    }

    /// Records the week's sound dose (R29) to be written beside `volumes`, at most once per `every` (a minute by
    /// default: an SD card is not written every second while someone listens; a power cut loses at most that much of
    /// the dose, and a clean stop none, ``flushNow()``).
    public func saveSoundDose(_ text: String, volumes: PersistedVolumes, now: Instant, every: Duration = .seconds(60)) {
        guard text != soundDose else { return }
        soundDose = text
        if let lastDoseWrite, now - lastDoseWrite < every, pending == nil {
            doseWaiting = true
            return
        }
        lastDoseWrite = now
        save(current ?? volumes, now: now)
    }

    /// A dose newer than the file's waits for the next write (of the volumes, or of the dose after `every`).
    private var doseWaiting = false

    /// When ``flush(now:)`` must be called for a pending write, or nil when nothing waits.
    public var nextDeadline: Instant? {
        guard pending != nil else { return nil }
        let rateLimited = lastWrite.map { $0 + interval }
        switch (rateLimited, retryAt) {
        case (let a?, let b?): return max(a, b)
        case (let a?, nil): return a
        case (nil, let b?): return b
        case (nil, nil): return .zero
        }
    }

    /// Whether volumes wait to be written.
    public var hasPendingWrite: Bool { pending != nil }

    /// Writes the pending volumes if their deadline has come.
    public func flush(now: Instant) {
        guard let deadline = nextDeadline, deadline <= now else { return }
        write(now: now)
    }

    /// Writes the pending volumes (and a dose that waits) now, whatever the rate limit: for shutdown.
    public func flushNow() {
        guard let volumes = pending ?? (doseWaiting ? current : nil) else { return }
        if perform(volumes) {
            pending = nil
            doseWaiting = false
        }
    }

    private func write(now: Instant) {
        guard let volumes = pending else { return }
        if perform(volumes) {
            pending = nil
            lastWrite = now
            retryAt = nil
        } else {
            retryAt = now + retryInterval
        }
    }

    /// One atomic write; false (logged once per kind of failure) when it failed.
    private func perform(_ volumes: PersistedVolumes) -> Bool {
        do {
            try StateFileIO.writeAtomically(Self.encode(volumes, soundDose: soundDose), to: path)
            doseWaiting = false
            if !loggedFailures.isEmpty {
                logger.notice("state file \(path) written again")
                loggedFailures = []
            }
            logger.debug("state file \(path) written: \(Self.summary(volumes))")
            return true
        } catch {
            if loggedFailures.insert(error.kind).inserted {
                let line =
                    "\(error); the volumes are kept in memory and written when this is fixed (retrying every "
                    + "\(retryInterval.milliseconds) ms; this kind of failure is not logged again)"
                logger.error("\(line)")
            }
            return false
        }
    }

    // MARK: Format

    /// The file's text for `volumes` and the week's `soundDose` (R29; left out when empty).
    public static func encode(_ volumes: PersistedVolumes, soundDose: String = "") -> String {
        var lines = [
            "# hush state: the volumes hushd restores when it starts (policy R12).",
            "# Written by hushd, atomically and at most once a second; edit it only while hushd is stopped.",
            "schema = \(schemaVersion)",
            "ringer = \(volumes.ringer.rawValue)",
        ]
        if let route = volumes.routeOverride {
            lines.append("route_override = \(ConfigurationNode.quoted(route.name))")
        }
        if !soundDose.isEmpty {
            lines.append("# The week's sound dose on private routes (R29): hour since 1970 : dose, 1 = 100 %.")
            lines.append("sound_dose = \(ConfigurationNode.quoted(soundDose))")
        }
        lines.append("")
        lines.append("[system]")
        for (route, step) in volumes.system.sorted(by: { $0.key < $1.key }) {
            lines.append("\(key(route.name)) = \(step.rawValue)")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// One `KEY = VALUE` line of the state file, with its 1-based line number.
    struct Entry: Equatable {
        enum Value: Equatable {
            case integer(Int)
            case text(String)

            /// As the file spells it, for messages: `7`, `"loud"`.
            var written: String {
                switch self {
                case .integer(let number): String(number)
                case .text(let text): ConfigurationNode.quoted(text)
                }
            }
        }

        var key: String
        var value: Value
        var line: Int
    }

    /// The entries of a state file: those before `[system]` and those in it (nil when it has no `[system]`).
    ///
    /// The state file is hushd's own, not a general TOML file, so this reads exactly the lines ``encode(_:)``
    /// writes, in the spacing a hand edit may change: blank lines, `# comments` (also after a line),
    /// `[system]`, and `KEY = VALUE` with KEY bare (`speaker`, `line-out`) or in double quotes and VALUE a whole
    /// number or a string in double quotes, with the escapes ``ConfigurationNode/quoted(_:)`` writes. Lines end
    /// with LF or CRLF. Any other line is damage, reported with its number; no TOML parser ever sees the file.
    static func entries(
        in text: String,
        path: String
    ) throws(StateFileCorruption) -> (top: [Entry], system: [Entry]?) {
        var top: [Entry] = []
        var system: [Entry]?
        var seen: [String: Int] = [:]
        for (index, raw) in text.tomlLines.enumerated() {
            let number = index + 1
            func damage(_ what: String) -> StateFileCorruption {
                StateFileCorruption(path: path, line: number, problem: "bad syntax: \(what)")
            }
            var line = StateLineScanner(raw)
            line.skipSpaces()
            if line.atEnd || line.peek == "#" { continue }
            if line.peek == "[" {
                guard line.take("[system]") else {
                    throw damage("the only table in a state file is [system]")
                }
                guard line.restIsCommentOrNothing() else { throw damage("something follows [system]") }
                guard system == nil else { throw damage("[system] appears twice") }
                system = []
                seen = [:]
                continue
            }
            let key: String
            if line.peek == "\"" {
                guard let quoted = try line.quoted(damage) else { throw damage("the key's closing quote is missing") }
                key = quoted
            } else {
                key = line.bare()
                guard !key.isEmpty else { throw damage("not 'key = value', [system] or a # comment") }
            }
            line.skipSpaces()
            guard line.take("=") else { throw damage("no '=' after the key") }
            line.skipSpaces()
            let value: Entry.Value
            if line.peek == "\"" {
                guard let quoted = try line.quoted(damage) else {
                    throw damage("the value's closing quote is missing")
                }
                value = .text(quoted)
            } else {
                let digits = line.integer()
                guard digits.contains(where: \.isNumber) else {
                    throw damage("the value is neither a whole number nor \"text\"")
                }
                guard let integer = Int(digits) else { throw damage("the number \(digits) is too large") }
                value = .integer(integer)
            }
            guard line.restIsCommentOrNothing() else { throw damage("something follows the value") }
            if let earlier = seen[key] {
                let table = system == nil ? "" : "[system] "
                throw damage("\(table)'\(key)' is set twice (first on line \(earlier))")
            }
            seen[key] = number
            let entry = Entry(key: key, value: value, line: number)
            if system == nil { top.append(entry) } else { system!.append(entry) }
        }
        return (top, system)
    }

    /// The volumes in `text`, or why it is not a state file this hushd can use.
    ///
    /// - Parameters:
    ///   - path: the file's name, for the error.
    ///   - knownRoutes: the board's routes; nil accepts any route name.
    public static func decode(
        _ text: String,
        path: String,
        knownRoutes: Set<Route>? = nil
    ) throws(StateFileCorruption) -> PersistedVolumes {
        try decodeState(text, path: path, knownRoutes: knownRoutes).volumes
    }

    /// The volumes and the week's sound dose (its text, checked as HushHearing's `SoundDose` reads it: "HOUR:DOSE"
    /// pairs; empty when the file has none).
    public static func decodeState(
        _ text: String,
        path: String,
        knownRoutes: Set<Route>? = nil
    ) throws(StateFileCorruption) -> (volumes: PersistedVolumes, soundDose: String) {
        func corrupt(_ problem: String, line: Int?) -> StateFileCorruption {
            StateFileCorruption(path: path, line: line, problem: problem)
        }
        guard !text.allSatisfy(\.isWhitespace) else { throw corrupt("the file is empty", line: nil) }
        let (top, systemEntries) = try entries(in: text, path: path)
        let byKey = Dictionary(top.map { ($0.key, $0) }, uniquingKeysWith: { first, _ in first })

        guard let schema = byKey["schema"] else {
            throw corrupt("it has no 'schema' version (this hushd writes schema = \(schemaVersion))", line: nil)
        }
        guard schema.value == .integer(schemaVersion) else {
            throw corrupt(
                "schema version \(schema.value.written) is not \(schemaVersion), the one this hushd reads "
                    + "(was it written by another version of hush?)",
                line: schema.line
            )
        }
        let allowed: Set<String> = ["schema", "ringer", "route_override", "sound_dose", "system"]
        for entry in top where !allowed.contains(entry.key) || entry.key == "system" {
            let problem =
                entry.key == "system"
                ? "'system' must be the [system] table of route = volume step"
                : "unknown key '\(entry.key)' (schema \(schemaVersion) has \(allowed.sorted().joined(separator: ", ")))"
            throw corrupt(problem, line: entry.line)
        }

        func step(_ entry: Entry, name: String) throws(StateFileCorruption) -> VolumeStep {
            guard case .integer(let number) = entry.value, let step = VolumeStep(rawValue: number) else {
                throw corrupt(
                    "\(name) = \(entry.value.written) is not a volume step (a whole number from 0 to "
                        + "\(VolumeStep.count))",
                    line: entry.line
                )
            }
            return step
        }
        func route(_ name: String, what: String, line: Int) throws(StateFileCorruption) -> Route {
            guard !name.isEmpty else { throw corrupt("\(what) names an empty route", line: line) }
            let route = Route(name)
            if let knownRoutes, !knownRoutes.contains(route) {
                throw corrupt(
                    "\(what) names route '\(name)', which this board does not have (routes: "
                        + knownRoutes.sorted().map(\.name).joined(separator: ", ") + ")",
                    line: line
                )
            }
            return route
        }

        guard let ringerEntry = byKey["ringer"] else {
            throw corrupt("it has no 'ringer' volume", line: nil)
        }
        let ringer = try step(ringerEntry, name: "ringer")

        var routeOverride: Route?
        if let entry = byKey["route_override"] {
            guard case .text(let name) = entry.value else {
                throw corrupt("route_override = \(entry.value.written) is not a route name in quotes", line: entry.line)
            }
            routeOverride = try route(name, what: "route_override", line: entry.line)
        }

        var system: [Route: VolumeStep] = [:]
        for entry in systemEntries ?? [] {
            let target = try route(entry.key, what: "[system] \(entry.key)", line: entry.line)
            system[target] = try step(entry, name: "[system] \(entry.key)")
        }
        var soundDose = ""
        if let entry = byKey["sound_dose"] {
            guard case .text(let dose) = entry.value, (try? SoundDose(encoded: dose)) != nil else {
                throw corrupt(
                    "sound_dose = \(entry.value.written) is not the week's dose (\"HOUR:DOSE,…\": whole hours since "
                        + "1970, doses of 0 or more)",
                    line: entry.line
                )
            }
            soundDose = dose
        }
        return (PersistedVolumes(system: system, ringer: ringer, routeOverride: routeOverride), soundDose)
    }

    /// "speaker 8, headphones 6; ringer 10; route override headphones" for logs.
    static func summary(_ volumes: PersistedVolumes) -> String {
        let system = volumes.system.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value.rawValue)" }
        return "system "
            + (system.isEmpty ? "(none)" : system.joined(separator: ", "))
            + "; ringer \(volumes.ringer.rawValue)"
            + (volumes.routeOverride.map { "; route override \($0)" } ?? "")
    }

    /// A TOML key: bare when it can be, else a quoted string.
    private static func key(_ name: String) -> String {
        let bare =
            !name.isEmpty
            && name.unicodeScalars.allSatisfy {
                ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) || $0 == "_" || $0 == "-"
            }
        return bare ? name : ConfigurationNode.quoted(name)
    }
}

extension String {
    /// The lines as TOML counts them: ended by LF or CRLF. (Splitting on the Character "\n" misses CRLF, which
    /// Swift keeps as one Character: a CRLF file was one long line to the shape check, which then let through
    /// what followed a comment — found by fuzz-state.)
    package var tomlLines: [Substring] {
        split(omittingEmptySubsequences: false) { $0 == "\n" || $0 == "\r\n" }
    }
}

/// Reads one line of the state file left to right, in the shapes ``StateStore/entries(in:path:)`` accepts.
struct StateLineScanner {
    private let scalars: [Unicode.Scalar]
    private var index = 0

    init(_ line: Substring) { scalars = Array(line.unicodeScalars) }

    var atEnd: Bool { index >= scalars.count }
    var peek: Unicode.Scalar? { atEnd ? nil : scalars[index] }

    mutating func skipSpaces() {
        while let scalar = peek, scalar == " " || scalar == "\t" { index += 1 }
    }

    /// Consumes `literal` when the line continues with it.
    mutating func take(_ literal: String) -> Bool {
        let wanted = Array(literal.unicodeScalars)
        guard index + wanted.count <= scalars.count, Array(scalars[index..<index + wanted.count]) == wanted
        else { return false }
        index += wanted.count
        return true
    }

    /// Spaces, then either the end or a `#` comment.
    mutating func restIsCommentOrNothing() -> Bool {
        skipSpaces()
        return atEnd || peek == "#"
    }

    /// A bare key: ASCII letters, digits, `_` and `-`.
    mutating func bare() -> String {
        var key = ""
        while let scalar = peek, scalar.isASCII,
            scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || scalar == "_" || scalar == "-"
        {
            key.unicodeScalars.append(scalar)
            index += 1
        }
        return key
    }

    /// An optional sign and ASCII digits (no more than 20 characters: anything longer is no volume).
    mutating func integer() -> String {
        var text = ""
        if let sign = peek, sign == "+" || sign == "-" {
            text.unicodeScalars.append(sign)
            index += 1
        }
        while let digit = peek, ("0"..."9").contains(digit), text.unicodeScalars.count <= 20 {
            text.unicodeScalars.append(digit)
            index += 1
        }
        return text
    }

    /// A string in double quotes with the escapes ``ConfigurationNode/quoted(_:)`` writes (`\"`, `\\`, `\n`, `\t`,
    /// `\r`, `\uXXXX`, and `\UXXXXXXXX`); nil when the line ends before the closing quote.
    mutating func quoted<E: Error>(_ damage: (String) -> E) throws(E) -> String? {
        index += 1
        var text = ""
        while let scalar = peek {
            index += 1
            switch scalar {
            case "\"":
                return text
            case "\\":
                guard let escape = peek else { return nil }
                index += 1
                switch escape {
                case "\"", "\\": text.unicodeScalars.append(escape)
                case "n": text += "\n"
                case "t": text += "\t"
                case "r": text += "\r"
                case "u", "U":
                    let count = escape == "u" ? 4 : 8
                    guard index + count <= scalars.count,
                        let value = UInt32(String(String.UnicodeScalarView(scalars[index..<index + count])), radix: 16),
                        let decoded = Unicode.Scalar(value)
                    else { throw damage("'\\\(escape)' must be followed by \(count) hex digits of a Unicode scalar") }
                    text.unicodeScalars.append(decoded)
                    index += count
                default:
                    throw damage("'\\\(escape)' is not an escape hushd writes (\\\", \\\\, \\n, \\t, \\r, \\u)")
                }
            default:
                guard scalar.value >= 0x20 && scalar.value != 0x7F || scalar == "\t" else {
                    throw damage(
                        "a control character (U+\(String(scalar.value, radix: 16, uppercase: true))) in quotes"
                    )
                }
                text.unicodeScalars.append(scalar)
            }
        }
        return nil
    }
}

/// Why a state file was set aside: which file, where in it (when known) and what was wrong.
public struct StateFileCorruption: Error, Hashable, Sendable, CustomStringConvertible {
    public var path: String
    /// The 1-based line of the problem, when it is known.
    public var line: Int?
    public var problem: String

    public init(path: String, line: Int?, problem: String) {
        self.path = path
        self.line = line
        self.problem = problem
    }

    /// "state file /var/lib/hush/state line 4 is corrupt: ringer = 40 is not a volume step (…)"
    public var description: String {
        "state file \(path)" + (line.map { " line \($0)" } ?? "") + " is corrupt: \(problem)"
    }
}

/// Why the state file could not be read or written: the operation, the file, the system's answer.
public struct StateFileError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Kinds of failure, each logged once until a write succeeds again.
    public enum Kind: String, Hashable, Sendable {
        case readOnlyFileSystem, noSpace, missingDirectory, permissionDenied, other
    }

    public var operation: String
    public var path: String
    public var errno: Int32?
    public var message: String

    public init(operation: String, path: String, errno: Int32?, message: String) {
        self.operation = operation
        self.path = path
        self.errno = errno
        self.message = message
    }

    /// The failure's kind, from its errno.
    public var kind: Kind {
        switch errno {
        case EROFS: .readOnlyFileSystem
        case ENOSPC, EDQUOT: .noSpace
        case ENOENT, ENOTDIR: .missingDirectory
        case EACCES, EPERM: .permissionDenied
        default: .other
        }
    }

    /// "cannot create /var/lib/hush/state.tmp: the file system is read-only [errno 30]"
    public var description: String {
        "cannot \(operation) \(path): \(message)" + (errno.map { " [errno \($0)]" } ?? "")
    }

    /// An error for `errno` with a message a person can act on.
    static func system(_ operation: String, _ path: String, errno code: Int32) -> StateFileError {
        let message =
            switch code {
            case EROFS: "the file system is read-only; give hushd a writable state directory (StateDirectory=hush)"
            case ENOSPC, EDQUOT: "no space left on the device"
            case EACCES, EPERM: "permission denied; the hush user must own the state directory"
            default: String(cString: strerror(code))
            }
        return StateFileError(operation: operation, path: path, errno: code, message: message)
    }
}

/// Every system call of the state file, each errno a ``StateFileError`` or ``StateFileCorruption``; EINTR retried.
package enum StateFileIO {
    /// What reading the state file found.
    enum Contents {
        /// There is no file.
        case missing
        /// The file holds too much, or bytes that are not UTF-8: no state file hush wrote.
        case unusable(StateFileCorruption)
        case text(String)
    }

    /// The file's contents, up to `limit` bytes.
    static func read(_ path: String, limit: Int) throws(StateFileError) -> Contents {
        let fd = SystemCall.retrying { open(path, O_RDONLY | O_CLOEXEC) }
        if fd < 0 {
            if errno == ENOENT { return .missing }
            throw StateFileError.system("open", path, errno: errno)
        }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = SystemCall.retrying {
                chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            }
            if count < 0 { throw StateFileError.system("read", path, errno: errno) }
            if count == 0 { break }
            bytes += chunk[0..<count]
            if bytes.count > limit {
                let problem = "it is larger than \(limit / 1024) KiB; hush writes a few hundred bytes"
                return .unusable(StateFileCorruption(path: path, line: nil, problem: problem))
            }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            return .unusable(StateFileCorruption(path: path, line: nil, problem: "it is not UTF-8 text"))
        }
        return .text(text)
    }

    static func rename(_ from: String, to: String) throws(StateFileError) {
        guard Glibc.rename(from, to) == 0 else { throw StateFileError.system("rename \(from) to", to, errno: errno) }
    }

    /// Replaces the file at `path` with `text`: temporary file, write, fsync, rename, fsync of the directory.
    /// Creates the directory (0755) when it is missing.
    static func writeAtomically(_ text: String, to path: String) throws(StateFileError) {
        let directory = directoryName(path)
        try makeDirectory(directory)
        let temporary = temporaryPath(for: path)
        let fd = SystemCall.retrying { open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o644) }
        guard fd >= 0 else { throw StateFileError.system("create", temporary, errno: errno) }
        var closed = false
        var renamed = false
        defer {
            if !closed { close(fd) }
            if !renamed { unlink(temporary) }
        }
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let count = SystemCall.retrying {
                bytes.withUnsafeMutableBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
            }
            guard count > 0 else { throw StateFileError.system("write", temporary, errno: count < 0 ? errno : EIO) }
            offset += count
        }
        guard SystemCall.retrying({ fsync(fd) }) == 0 else {
            throw StateFileError.system("fsync", temporary, errno: errno)
        }
        closed = true
        // close can report a delayed write error (NFS); after fsync it should not, but a failure still means the
        // data may not be there.
        guard close(fd) == 0 || errno == EINTR else { throw StateFileError.system("close", temporary, errno: errno) }
        guard Glibc.rename(temporary, path) == 0 else {
            throw StateFileError.system("rename \(temporary) to", path, errno: errno)
        }
        renamed = true
        try syncDirectory(directory)
    }

    /// The temporary file a write goes through: beside the state file, so the rename stays on one file system.
    /// A crash can leave it behind; the loader never reads it and the next write replaces it.
    static func temporaryPath(for path: String) -> String { "\(path).tmp" }

    static func directoryName(_ path: String) -> String { Directory.name(of: path) }

    /// Creates `directory` and its missing parents with mode 0755.
    static func makeDirectory(_ directory: String) throws(StateFileError) {
        do {
            try Directory.make(directory)
        } catch {
            guard error.operation == "use" else {
                throw StateFileError.system(error.operation, error.path, errno: error.errno)
            }
            throw StateFileError(
                operation: "use",
                path: error.path,
                errno: ENOTDIR,
                message: "it is not a directory; the state file's directory must be one"
            )
        }
    }

    /// Makes the rename itself durable: without this a power cut can bring back the old directory entry.
    static func syncDirectory(_ directory: String) throws(StateFileError) {
        let fd = SystemCall.retrying { open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        guard fd >= 0 else { throw StateFileError.system("open directory", directory, errno: errno) }
        defer { close(fd) }
        // Some file systems cannot fsync a directory (EINVAL); the rename is then as durable as they make it.
        guard SystemCall.retrying({ fsync(fd) }) == 0 || errno == EINVAL else {
            throw StateFileError.system("fsync directory", directory, errno: errno)
        }
    }
}
