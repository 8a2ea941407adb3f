import CGPIOD
import HushCore
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// A GPIO input (switch, button, jack sense) read through the GPIO character device with libgpiod (1.6 or 2.x).
///
/// Both edges are watched with kernel timestamps (CLOCK_MONOTONIC, hush's timeline); the level is read at
/// start-up, never assumed; a ``Debouncer`` accepts the leading edge at once and collapses bounce trains.
package final class GPIOInputLine: InputSource {
    package let configuration: GPIOInputConfiguration
    package let name: String
    private let chip: GPIOChip
    private let request: UnsafeMutablePointer<hush_gpio_request>
    private let descriptor: Int32
    private var debouncer: Debouncer
    private let logger: Logger

    /// Requests the line. Throws when the chip or line is missing, busy or not permitted, naming which.
    package init(_ configuration: GPIOInputConfiguration, logger: Logger) throws(HardwareError) {
        self.configuration = configuration
        self.logger = logger
        let chip = try GPIOChip(configuration.chip)
        self.chip = chip
        let offset = try chip.offset(of: configuration.line)
        let name = "\(chip.title) line \(offset) (\(configuration.role))"
        self.name = name
        func requestLine(bias: GPIOBias) throws(HardwareError) -> UnsafeMutablePointer<hush_gpio_request> {
            try chip.requestInput(
                offset: offset,
                selector: configuration.line,
                activeLow: configuration.activeLow,
                bias: bias,
                consumer: configuration.consumer
            )
        }
        do {
            self.request = try requestLine(bias: configuration.bias)
        } catch let error where error.errno == EINVAL && configuration.bias != .asIs {
            // Kernels before 5.5 and some pin controllers cannot set bias: go on without it, and say so.
            logger.warning(
                "\(name): the kernel cannot set \(configuration.bias.rawValue) on this line; using it as-is. Fit an external resistor (docs/wiring.md)."
            )
            self.request = try requestLine(bias: .asIs)
        }
        descriptor = hush_gpio_request_fd(self.request)
        let level = hush_gpio_request_get_value(self.request)
        guard level >= 0 else {
            let code = errno
            hush_gpio_request_release(self.request)
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

    deinit { hush_gpio_request_release(request) }

    package var pollDescriptor: Int32? { descriptor }

    package var nextDeadline: Instant? { debouncer.deadline }

    /// Whether the line is active now (after active-low).
    package func isActive() throws(HardwareError) -> Bool {
        let level = hush_gpio_request_get_value(request)
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

    package func currentState(now: Instant) throws(HardwareError) -> [TimedInputEvent] {
        guard configuration.role.reportsInitialState else { return [] }
        guard let event = configuration.role.event(active: debouncer.reported) else { return [] }
        return [TimedInputEvent(event, at: now)]
    }

    package func readEvents(now: Instant) throws(HardwareError) -> [TimedInputEvent] {
        var out: [TimedInputEvent] = []
        var buffer = [hush_gpio_edge](repeating: hush_gpio_edge(), count: 16)
        while isReadable() {
            // SAFETY: the buffer holds `count` edges and the shim writes at most that many.
            let count = buffer.withUnsafeMutableBufferPointer {
                hush_gpio_request_read_edges(request, $0.baseAddress, UInt32($0.count))
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
                let time = Instant(nanoseconds: Int64(event.timestamp_ns))
                expireWindows(before: time, into: &out, readHardware: false)
                if let level = debouncer.edge(to: event.rising != 0, at: time) { report(level, at: time, into: &out) }
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
package final class GPIOOutputLine: OutputLine {
    package let name: String
    private let chip: GPIOChip
    private let request: UnsafeMutablePointer<hush_gpio_request>

    /// Requests `line` on `chip` as an output, initially inactive.
    package init(
        chip descriptor: String,
        line selector: GPIOLineSelector,
        activeLow: Bool = false,
        consumer: String = "hushd"
    )
        throws(HardwareError)
    {
        chip = try GPIOChip(descriptor)
        let offset = try chip.offset(of: selector)
        name = "\(chip.title) line \(offset) (output)"
        request = try chip.requestOutput(offset: offset, selector: selector, activeLow: activeLow, consumer: consumer)
    }

    deinit { hush_gpio_request_release(request) }

    package func set(_ active: Bool) throws(HardwareError) {
        guard hush_gpio_request_set_value(request, active ? 1 : 0) == 0 else {
            throw HardwareError(operation: "set", device: name, errno: errno, message: String(cString: strerror(errno)))
        }
    }
}
