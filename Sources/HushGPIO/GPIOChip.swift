import CGPIOD
import HushCore

#if canImport(Glibc)
import Glibc
#endif

/// An open GPIO chip (libgpiod 1.x `gpiod_chip`). Closing it releases every line requested through it.
final class GPIOChip {
    let handle: OpaquePointer
    /// "gpiochip0 [pinctrl-bcm2711]" for messages.
    let title: String

    /// Opens `descriptor`: a name ("gpiochip0"), number ("0"), path ("/dev/gpiochip0") or label.
    init(_ descriptor: String) throws(HardwareError) {
        guard let handle = gpiod_chip_open_lookup(descriptor) else {
            let code = errno
            let message: String
            switch code {
            case EACCES, EPERM:
                message = "permission denied: add the hush user to the gpio group (deploy/udev has the rule)"
            case ENOENT, ENODEV, ENOTTY:
                let present = GPIOChip.available()
                message =
                    "no such GPIO chip; chips present: "
                    + (present.isEmpty ? "none (is the GPIO driver loaded?)" : present.joined(separator: ", "))
            default:
                message = String(cString: strerror(code))
            }
            throw HardwareError(operation: "open GPIO chip", device: "'\(descriptor)'", errno: code, message: message)
        }
        self.handle = handle
        title = "\(String(cString: gpiod_chip_name(handle))) [\(String(cString: gpiod_chip_label(handle)))]"
    }

    deinit { gpiod_chip_close(handle) }

    /// The chips on this system, as "gpiochip0 [pinctrl-bcm2711]".
    static func available() -> [String] {
        guard let iterator = gpiod_chip_iter_new() else { return [] }
        defer { gpiod_chip_iter_free(iterator) }
        var names: [String] = []
        while let chip = gpiod_chip_iter_next(iterator) {
            names.append("\(String(cString: gpiod_chip_name(chip))) [\(String(cString: gpiod_chip_label(chip)))]")
        }
        return names
    }

    /// The line `selector` names on this chip.
    func line(_ selector: GPIOLineSelector) throws(HardwareError) -> OpaquePointer {
        switch selector {
        case .offset(let offset):
            guard offset < gpiod_chip_num_lines(handle) else {
                throw HardwareError(
                    operation: "find \(selector) on",
                    device: title,
                    errno: EINVAL,
                    message:
                        "the chip has only \(gpiod_chip_num_lines(handle)) lines (0-\(gpiod_chip_num_lines(handle) - 1))"
                )
            }
            guard let line = gpiod_chip_get_line(handle, offset) else {
                throw HardwareError(
                    operation: "find \(selector) on",
                    device: title,
                    errno: errno,
                    message: String(cString: strerror(errno))
                )
            }
            return line
        case .name(let name):
            guard let line = gpiod_chip_find_line(handle, name) else {
                let names = lineNames()
                throw HardwareError(
                    operation: "find \(selector) on",
                    device: title,
                    errno: ENOENT,
                    message: "no line has that name; named lines: "
                        + (names.isEmpty ? "none (use an offset)" : names.joined(separator: ", "))
                )
            }
            return line
        }
    }

    /// The names of the chip's named lines, for error messages.
    func lineNames() -> [String] {
        (0..<gpiod_chip_num_lines(handle)).compactMap { offset in
            guard let line = gpiod_chip_get_line(handle, offset), let name = gpiod_line_name(line) else { return nil }
            return String(cString: name)
        }
    }

    /// Requests `line` with `type` and `flags`; turns failures into errors that say who holds the line or what
    /// to change.
    func request(
        _ line: OpaquePointer,
        selector: GPIOLineSelector,
        type: Int32,
        flags: Int32,
        consumer: String,
        value: Int32
    ) throws(HardwareError) {
        let result = consumer.withCString { name in
            var config = gpiod_line_request_config(consumer: name, request_type: type, flags: flags)
            return gpiod_line_request(line, &config, value)
        }
        guard result != 0 else { return }
        let code = errno
        let message: String
        switch code {
        case EBUSY:
            _ = gpiod_line_update(line)
            let user = gpiod_line_consumer(line).map { "'\(String(cString: $0))'" } ?? "another driver or program"
            message = "line is busy (used by \(user))"
        case EACCES, EPERM:
            message = "permission denied: add the hush user to the gpio group (deploy/udev has the rule)"
        default:
            message = String(cString: strerror(code))
        }
        throw HardwareError(operation: "request \(selector) on", device: title, errno: code, message: message)
    }
}

extension GPIOBias {
    var requestFlags: Int32 {
        switch self {
        case .asIs: 0
        case .disabled: Int32(GPIOD_LINE_REQUEST_FLAG_BIAS_DISABLE)
        case .pullUp: Int32(GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_UP)
        case .pullDown: Int32(GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_DOWN)
        }
    }
}

/// Where a configured line really is: the chip's kernel name and the line's offset.
public struct GPIOLineLocation: Hashable, Sendable, CustomStringConvertible {
    /// The chip's kernel name, e.g. "gpiochip0".
    public var chip: String
    public var label: String
    public var offset: UInt32

    /// Finds `line` on `chip` (a name, number, path or label) without requesting it.
    public init(chip descriptor: String, line selector: GPIOLineSelector) throws(HardwareError) {
        let chip = try GPIOChip(descriptor)
        let line = try chip.line(selector)
        self.chip = String(cString: gpiod_chip_name(chip.handle))
        label = String(cString: gpiod_chip_label(chip.handle))
        offset = gpiod_line_offset(line)
    }

    public var description: String { "\(chip) [\(label)] line \(offset)" }
}
