import CGPIOD
import HushCore

#if canImport(Glibc)
import Glibc
#endif

/// An open GPIO chip, through CGPIOD's `hush_gpio_*` API (libgpiod 1.6 or 2.x underneath; the same code and
/// messages on both). Lines requested through it must be released before it closes: their owners hold the chip.
final class GPIOChip {
    let handle: UnsafeMutablePointer<hush_gpio_chip>
    /// "gpiochip0 [pinctrl-bcm2711]" for messages.
    let title: String

    /// Opens `descriptor`: a name ("gpiochip0"), number ("0"), path ("/dev/gpiochip0") or label.
    init(_ descriptor: String) throws(HardwareError) {
        var code = ENOENT
        var opened: UnsafeMutablePointer<hush_gpio_chip>?
        for attempt in GPIOChipLookup.attempts(for: descriptor) where opened == nil {
            switch attempt {
            case .path(let path):
                opened = hush_gpio_chip_open(path)
                if opened == nil { code = errno }
            case .label(let label):
                opened = GPIOChip.open(label: label)
                if opened == nil { code = ENOENT }
            }
        }
        guard let opened else {
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
        handle = opened
        title = "\(String(cString: hush_gpio_chip_name(opened))) [\(String(cString: hush_gpio_chip_label(opened)))]"
    }

    deinit { hush_gpio_chip_close(handle) }

    var name: String { String(cString: hush_gpio_chip_name(handle)) }
    var label: String { String(cString: hush_gpio_chip_label(handle)) }
    var lineCount: UInt32 { hush_gpio_chip_num_lines(handle) }

    /// The chips on this system, as "gpiochip0 [pinctrl-bcm2711]".
    static func available() -> [String] {
        GPIOChipLookup.devicePaths().compactMap { path in
            guard let chip = hush_gpio_chip_open(path) else { return nil }
            defer { hush_gpio_chip_close(chip) }
            return "\(String(cString: hush_gpio_chip_name(chip))) [\(String(cString: hush_gpio_chip_label(chip)))]"
        }
    }

    /// The first chip (in /dev order) whose label is `label`, opened.
    private static func open(label: String) -> UnsafeMutablePointer<hush_gpio_chip>? {
        for path in GPIOChipLookup.devicePaths() {
            guard let chip = hush_gpio_chip_open(path) else { continue }
            if String(cString: hush_gpio_chip_label(chip)) == label { return chip }
            hush_gpio_chip_close(chip)
        }
        return nil
    }

    /// The offset of the line `selector` names on this chip.
    func offset(of selector: GPIOLineSelector) throws(HardwareError) -> UInt32 {
        switch selector {
        case .offset(let offset):
            guard offset < lineCount else {
                throw HardwareError(
                    operation: "find \(selector) on",
                    device: title,
                    errno: EINVAL,
                    message: "the chip has only \(lineCount) lines (0-\(lineCount - 1))"
                )
            }
            return offset
        case .name(let name):
            let found = hush_gpio_chip_find_line(handle, name)
            guard found >= 0 else {
                let names = lineNames()
                throw HardwareError(
                    operation: "find \(selector) on",
                    device: title,
                    errno: ENOENT,
                    message: "no line has that name; named lines: "
                        + (names.isEmpty ? "none (use an offset)" : names.joined(separator: ", "))
                )
            }
            return UInt32(found)
        }
    }

    /// The names of the chip's named lines, for error messages.
    func lineNames() -> [String] {
        (0..<lineCount).compactMap { offset in hush_gpio_chip_line_name(handle, offset).map { String(cString: $0) } }
    }

    /// Requests line `offset` as an input watched on both edges; errors say who holds the line or what to change.
    func requestInput(
        offset: UInt32,
        selector: GPIOLineSelector,
        activeLow: Bool,
        bias: GPIOBias,
        consumer: String
    ) throws(HardwareError) -> UnsafeMutablePointer<hush_gpio_request> {
        let request = hush_gpio_request_input(handle, offset, consumer, activeLow ? 1 : 0, bias.shimValue)
        guard let request else { throw requestFailure(errno, offset: offset, selector: selector) }
        return request
    }

    /// Requests line `offset` as an output, initially inactive.
    func requestOutput(
        offset: UInt32,
        selector: GPIOLineSelector,
        activeLow: Bool,
        consumer: String
    ) throws(HardwareError) -> UnsafeMutablePointer<hush_gpio_request> {
        guard let request = hush_gpio_request_output(handle, offset, consumer, activeLow ? 1 : 0) else {
            throw requestFailure(errno, offset: offset, selector: selector)
        }
        return request
    }

    private func requestFailure(_ code: Int32, offset: UInt32, selector: GPIOLineSelector) -> HardwareError {
        let message: String
        switch code {
        case EBUSY:
            let user =
                hush_gpio_chip_line_consumer(handle, offset).map { "'\(String(cString: $0))'" }
                ?? "another driver or program"
            message = "line is busy (used by \(user))"
        case EACCES, EPERM:
            message = "permission denied: add the hush user to the gpio group (deploy/udev has the rule)"
        default:
            message = String(cString: strerror(code))
        }
        return HardwareError(operation: "request \(selector) on", device: title, errno: code, message: message)
    }
}

/// How a chip descriptor from a profile is found: libgpiod 1.6's `gpiod_chip_open_lookup` rules, which 2.x
/// dropped (it opens paths only), kept here so a profile means the same chip with either library.
enum GPIOChipLookup: Hashable, Sendable {
    case path(String)
    case label(String)

    /// What to try, in order, for `descriptor`: a number is /dev/gpiochipN; anything else is first the label of a
    /// chip present, then a path when it starts with /dev/, else a name under /dev.
    static func attempts(for descriptor: String) -> [GPIOChipLookup] {
        if !descriptor.isEmpty, descriptor.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
            let number = UInt32(descriptor)
        {
            return [.path("/dev/gpiochip\(number)")]
        }
        return [.label(descriptor), .path(descriptor.hasPrefix("/dev/") ? descriptor : "/dev/\(descriptor)")]
    }

    /// The GPIO character devices under `directory` (/dev/gpiochip*), in byte order as libgpiod 1.6 lists them.
    static func devicePaths(in directory: String = "/dev") -> [String] {
        guard let stream = opendir(directory) else { return [] }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
                String(decoding: bytes.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name.hasPrefix("gpiochip") { names.append(name) }
        }
        return names.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }.map { "\(directory)/\($0)" }
    }
}

extension GPIOBias {
    /// CGPIOD's `hush_gpio_bias`.
    var shimValue: Int32 {
        switch self {
        case .asIs: Int32(HUSH_GPIO_BIAS_AS_IS.rawValue)
        case .disabled: Int32(HUSH_GPIO_BIAS_DISABLED.rawValue)
        case .pullUp: Int32(HUSH_GPIO_BIAS_PULL_UP.rawValue)
        case .pullDown: Int32(HUSH_GPIO_BIAS_PULL_DOWN.rawValue)
        }
    }
}

/// Where a configured line really is: the chip's kernel name and the line's offset.
package struct GPIOLineLocation: Hashable, Sendable, CustomStringConvertible {
    /// The chip's kernel name, e.g. "gpiochip0".
    package var chip: String
    package var label: String
    package var offset: UInt32

    /// Finds `line` on `chip` (a name, number, path or label) without requesting it.
    package init(chip descriptor: String, line selector: GPIOLineSelector) throws(HardwareError) {
        let chip = try GPIOChip(descriptor)
        offset = try chip.offset(of: selector)
        self.chip = chip.name
        label = chip.label
    }

    package var description: String { "\(chip) [\(label)] line \(offset)" }
}
