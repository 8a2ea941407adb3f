import HushCore
import HushTesting
import Logging

#if canImport(Glibc)
import Glibc
#endif

let logger: Logger = {
    LoggingSystem.bootstrap { StreamLogHandler.standardError(label: $0) }
    var logger = Logger(label: "hush.vboard")
    logger.logLevel = .debug
    return logger
}()

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

func describe(_ events: [TimedInputEvent]) -> String {
    events.map { "\($0.event)" }.joined(separator: "; ")
}

let allChecks: [Check] =
    gpioChecks + alsaChecks + evdevChecks + outputChecks + periodChecks + volumeControlChecks + idleChecks
