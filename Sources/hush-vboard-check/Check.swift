import HushCore
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// One named check against real drivers.
struct Check: Sendable {
    let name: String
    let run: @Sendable () throws -> Void
}

/// Why a check failed, in words.
struct CheckFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

func require(_ condition: Bool, _ message: @autoclosure () -> String) throws {
    if !condition { throw CheckFailure(message()) }
}

let logger: Logger = {
    LoggingSystem.bootstrap { StreamLogHandler.standardError(label: $0) }
    var logger = Logger(label: "hush.vboard")
    logger.logLevel = .debug
    return logger
}()

/// Runs `checks`, printing PASS/FAIL per check and the summary line; true when all passed.
func runChecks(_ checks: [Check]) -> Bool {
    var passed = 0
    var failed = 0
    for check in checks {
        let start = monotonicNow()
        do {
            try check.run()
            passed += 1
            print("PASS \(check.name) (\((monotonicNow() - start).milliseconds) ms)")
        } catch {
            failed += 1
            print("FAIL \(check.name): \(error)")
        }
        fflush(nil)
    }
    print("\(passed) passed, \(failed) failed")
    return failed == 0
}

func monotonicNow() -> Instant {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Instant(nanoseconds: Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec))
}

func sleep(_ duration: Duration) {
    var request = timespec(
        tv_sec: Int(duration.nanoseconds / 1_000_000_000),
        tv_nsec: Int(duration.nanoseconds % 1_000_000_000)
    )
    var left = timespec()
    while nanosleep(&request, &left) == -1 && errno == EINTR { request = left }
}

/// Reads `source` until nothing has happened for `quiet` and (with `waitForDeadlines`) no deadline is pending;
/// returns every event.
func drain(
    _ source: some InputSource,
    quiet: Duration = .milliseconds(60),
    limit: Duration = .seconds(5),
    waitForDeadlines: Bool = true
) throws -> [TimedInputEvent] {
    var events: [TimedInputEvent] = []
    let start = monotonicNow()
    var lastActivity = start
    while monotonicNow() - start < limit {
        let now = monotonicNow()
        let waitUntil = min(source.nextDeadline ?? (lastActivity + quiet), lastActivity + quiet)
        let timeout = max(0, (waitUntil - now).milliseconds + 1)
        if let fd = source.pollDescriptor {
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            _ = poll(&entry, 1, Int32(timeout))
        } else {
            sleep(.milliseconds(timeout))
        }
        let new = try source.readEvents(now: monotonicNow())
        if !new.isEmpty { lastActivity = monotonicNow() }
        events += new
        if (!waitForDeadlines || source.nextDeadline == nil) && monotonicNow() - lastActivity >= quiet { break }
    }
    return events
}

/// Everything left in a C stream (a file, or a pipe from `popen`), as text.
func readAll(_ stream: UnsafeMutablePointer<FILE>) -> String {
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while case let count = fread(&buffer, 1, buffer.count, stream), count > 0 { bytes += buffer[..<count] }
    return String(decoding: bytes, as: UTF8.self)
}

/// The whole text of a file, as it is; nil when it cannot be opened.
func readWholeFile(_ path: String) -> String? {
    guard let file = fopen(path, "r") else { return nil }
    defer { fclose(file) }
    return readAll(file)
}

/// The whole text of a sysfs or procfs file (or a log), without its final newline; nil when it cannot be opened.
/// Whole, not its first line: /proc/asound/cards lists the Loopback card first, and a check that read one line
/// saw the Dummy card gone the moment it started waiting (the removal checks' "gone after 0 ms").
func readFile(_ path: String) -> String? {
    guard var text = readWholeFile(path) else { return nil }
    if text.hasSuffix("\n") { text.removeLast() }
    return text
}

/// Writes `text` to a sysfs file in one write, as the kernel expects.
func writeFile(_ path: String, _ text: String) throws {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    guard fd >= 0 else { throw CheckFailure("cannot open \(path): \(String(cString: strerror(errno)))") }
    defer { close(fd) }
    let written = text.withCString { write(fd, $0, strlen($0)) }
    guard written == text.utf8.count else {
        throw CheckFailure("cannot write '\(text)' to \(path): \(String(cString: strerror(errno)))")
    }
}

/// The paths matching a shell pattern.
func globPaths(_ pattern: String) -> [String] {
    var result = glob_t()
    defer { globfree(&result) }
    guard glob(pattern, 0, nil, &result) == 0 else { return [] }
    return (0..<Int(result.gl_pathc)).compactMap { result.gl_pathv[$0].map { String(cString: $0) } }
}

func describe(_ events: [TimedInputEvent]) -> String {
    events.map { "\($0.event)" }.joined(separator: "; ")
}

let allChecks: [Check] = gpioChecks + alsaChecks + evdevChecks + outputChecks + volumeControlChecks
