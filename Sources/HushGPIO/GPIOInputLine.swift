import CGPIOD
import HushCore
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// A GPIO input (switch, button, jack sense) read through the GPIO character device with libgpiod 1.x.
///
/// Both edges are watched with kernel timestamps (CLOCK_MONOTONIC, hush's timeline); the level is read at
/// start-up, never assumed; a ``Debouncer`` accepts the leading edge at once and collapses bounce trains.
public final class GPIOInputLine: InputSource {
    public let configuration: GPIOInputConfiguration
    public let name: String
    private let chip: GPIOChip
    private let line: OpaquePointer
    private let descriptor: Int32
    private var debouncer: Debouncer
    private let logger: Logger

    /// Requests the line. Throws when the chip or line is missing, busy or not permitted, naming which.
    public init(_ configuration: GPIOInputConfiguration, logger: Logger) throws(HardwareError) {
        self.configuration = configuration
        self.logger = logger
        chip = try GPIOChip(configuration.chip)
        line = try chip.line(configuration.line)
        let offset = gpiod_line_offset(line)
        name = "\(chip.title) line \(offset) (\(configuration.role))"
        let activeLow = configuration.activeLow ? Int32(GPIOD_LINE_REQUEST_FLAG_ACTIVE_LOW) : 0
        let type = Int32(GPIOD_LINE_REQUEST_EVENT_BOTH_EDGES)
        do {
            try chip.request(
                line,
                selector: configuration.line,
                type: type,
                flags: activeLow | configuration.bias.requestFlags,
                consumer: configuration.consumer,
                value: 0
            )
        } catch let error where error.errno == EINVAL && configuration.bias != .asIs {
            // Kernels before 5.5 and some pin controllers cannot set bias: go on without it, and say so.
            logger.warning(
                "\(name): the kernel cannot set \(configuration.bias.rawValue) on this line; using it as-is. Fit an external resistor (docs/wiring.md)."
            )
            try chip.request(
                line,
                selector: configuration.line,
                type: type,
                flags: activeLow,
                consumer: configuration.consumer,
                value: 0
            )
        }
        descriptor = gpiod_line_event_get_fd(line)
        let level = gpiod_line_get_value(line)
        guard level >= 0 else {
            let code = errno
            gpiod_line_release(line)
            throw HardwareError(
                operation: "read \(configuration.line) on",
                device: chip.title,
                errno: code,
                message: String(cString: strerror(code))
            )
        }
        debouncer = Debouncer(window: configuration.debounce, initial: level == 1)
        logger.info("\(name): ready, \(level == 1 ? "active" : "inactive") at start")
    }

    deinit { gpiod_line_release(line) }

    public var pollDescriptor: Int32? { descriptor }

    public var nextDeadline: Instant? { debouncer.deadline }

    /// Whether the line is active now (after active-low).
    public func isActive() throws(HardwareError) -> Bool {
        let level = gpiod_line_get_value(line)
        guard level >= 0 else {
            throw HardwareError(
                operation: "read",
                device: name,
                errno: errno,
                message: String(cString: strerror(errno))
            )
        }
        return level == 1
    }

    public func currentState(now: Instant) throws(HardwareError) -> [TimedInputEvent] {
        guard configuration.role.reportsInitialState else { return [] }
        guard let event = configuration.role.event(active: debouncer.reported) else { return [] }
        return [TimedInputEvent(event, at: now)]
    }

    public func readEvents(now: Instant) throws(HardwareError) -> [TimedInputEvent] {
        var out: [TimedInputEvent] = []
        var buffer = [gpiod_line_event](repeating: gpiod_line_event(), count: 16)
        while isReadable() {
            // SAFETY: the buffer holds `count` events and libgpiod writes at most that many.
            let count = buffer.withUnsafeMutableBufferPointer {
                gpiod_line_event_read_multiple(line, $0.baseAddress, UInt32($0.count))
            }
            guard count > 0 else {
                if count < 0 && errno == EINTR { continue }
                let code = errno
                throw HardwareError(
                    operation: "read events from",
                    device: name,
                    errno: code,
                    message: code == ENODEV ? "the GPIO chip is gone" : String(cString: strerror(code))
                )
            }
            for event in buffer.prefix(Int(count)) {
                let time = Instant(nanoseconds: Int64(event.ts.tv_sec) * 1_000_000_000 + Int64(event.ts.tv_nsec))
                expireWindows(before: time, into: &out, readHardware: false)
                let active = event.event_type == Int32(GPIOD_LINE_EVENT_RISING_EDGE)
                if let level = debouncer.edge(to: active, at: time) { report(level, at: time, into: &out) }
            }
        }
        expireWindows(before: now + .nanoseconds(1), into: &out, readHardware: true)
        return out
    }

    /// Ends debounce windows that closed before `time`; the settled level comes from the edges seen, or at the
    /// end of a read from the hardware itself.
    private func expireWindows(before time: Instant, into out: inout [TimedInputEvent], readHardware: Bool) {
        while let deadline = debouncer.deadline, deadline < time {
            let level = readHardware ? (try? isActive()) : nil
            guard let settled = debouncer.expire(at: deadline, level: level) else { continue }
            report(settled, at: deadline, into: &out)
        }
    }

    private func report(_ active: Bool, at time: Instant, into out: inout [TimedInputEvent]) {
        guard let event = configuration.role.event(active: active) else { return }
        out.append(TimedInputEvent(event, at: time))
    }

    private func isReadable() -> Bool {
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, 0) > 0 && entry.revents & Int16(POLLIN) != 0
    }
}

/// A GPIO output: an LED or a vibration motor that signals a silenced alert.
public final class GPIOOutputLine: OutputLine {
    public let name: String
    private let chip: GPIOChip
    private let line: OpaquePointer

    /// Requests `line` on `chip` as an output, initially inactive.
    public init(
        chip descriptor: String,
        line selector: GPIOLineSelector,
        activeLow: Bool = false,
        consumer: String = "hushd"
    )
        throws(HardwareError)
    {
        chip = try GPIOChip(descriptor)
        line = try chip.line(selector)
        name = "\(chip.title) line \(gpiod_line_offset(line)) (output)"
        try chip.request(
            line,
            selector: selector,
            type: Int32(GPIOD_LINE_REQUEST_DIRECTION_OUTPUT),
            flags: activeLow ? Int32(GPIOD_LINE_REQUEST_FLAG_ACTIVE_LOW) : 0,
            consumer: consumer,
            value: 0
        )
    }

    deinit { gpiod_line_release(line) }

    public func set(_ active: Bool) throws(HardwareError) {
        guard gpiod_line_set_value(line, active ? 1 : 0) == 0 else {
            throw HardwareError(operation: "set", device: name, errno: errno, message: String(cString: strerror(errno)))
        }
    }
}
