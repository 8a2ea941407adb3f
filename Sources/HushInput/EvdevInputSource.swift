import CEvdev
import HushCore
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// Which input device: a node path, or the name the kernel gives it ("gpio-keys", "hush-controls").
public enum EvdevDeviceSelector: Hashable, Sendable, CustomStringConvertible {
    case path(String)
    case name(String)

    public var description: String {
        switch self {
        case .path(let path): path
        case .name(let name): "'\(name)'"
        }
    }
}

/// One evdev input device and what its codes mean.
public struct EvdevInputConfiguration: Hashable, Sendable {
    public var device: EvdevDeviceSelector
    /// Take the device for hush alone (EVIOCGRAB), so other programs do not also act on its keys.
    public var grab: Bool
    public var roles: [EvdevCode: EvdevRole]
    /// Start even when the device is absent, and wait for it to appear.
    public var optional: Bool
    /// Where device nodes appear and disappear.
    public var watchDirectory: String
    /// How long to wait before retrying a node that appeared but could not be opened yet (udev sets
    /// permissions after the node is created).
    public var retryInterval: Duration

    public init(
        device: EvdevDeviceSelector,
        roles: [EvdevCode: EvdevRole] = EvdevEventTranslator.defaultRoles,
        grab: Bool = false,
        optional: Bool = false,
        watchDirectory: String = "/dev/input",
        retryInterval: Duration = .milliseconds(100)
    ) {
        self.device = device
        self.roles = roles
        self.grab = grab
        self.optional = optional
        self.watchDirectory = watchDirectory
        self.retryInterval = retryInterval
    }
}

/// Keys and switches from an evdev device (a gpio-keys overlay, a USB remote, a uinput test device) read with
/// libevdev.
///
/// Timestamps are CLOCK_MONOTONIC (hush's timeline). Switch positions are read at start. SYN_DROPPED is handled by
/// libevdev's sync mode, so the final state survives a flood. The device may come and go: one stable descriptor
/// (an epoll set of an inotify watch on /dev/input and the device) lets the daemon poll it throughout, and the
/// device is reopened when it returns, its switch positions reported again.
public final class EvdevInputSource: InputSource {
    public let configuration: EvdevInputConfiguration
    public private(set) var name: String
    private var translator: EvdevEventTranslator
    private let epoll: Int32
    private let inotify: Int32
    private var device: OpaquePointer?
    private var deviceDescriptor: Int32 = -1
    private var devicePath: String?
    private var retryAt: Instant?
    private var pendingStates: [InputEvent] = []
    /// How many times the kernel dropped events (SYN_DROPPED) and the state was resynchronised.
    public private(set) var resynchronisations = 0
    private let logger: Logger

    /// Opens the device. Throws when it is missing (unless `optional`), not permitted or grabbed elsewhere.
    public init(_ configuration: EvdevInputConfiguration, logger: Logger) throws(HardwareError) {
        self.configuration = configuration
        self.logger = logger
        translator = EvdevEventTranslator(roles: configuration.roles)
        name = "evdev device \(configuration.device)"
        epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        inotify = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard epoll >= 0, inotify >= 0 else {
            throw HardwareError(
                operation: "watch",
                device: configuration.watchDirectory,
                errno: errno,
                message: Syscall.errorText(errno)
            )
        }
        let mask = UInt32(IN_CREATE | IN_ATTRIB | IN_DELETE)
        if inotify_add_watch(inotify, configuration.watchDirectory, mask) < 0 {
            logger.warning(
                "cannot watch \(configuration.watchDirectory) (\(Syscall.errorText(errno))): \(name) will not be reopened if it goes away"
            )
        }
        var event = epoll_event(events: EPOLLIN.rawValue, data: epoll_data_t(fd: inotify))
        _ = epoll_ctl(epoll, EPOLL_CTL_ADD, inotify, &event)
        do {
            try open()
        } catch let error where configuration.optional && error.errno == ENOENT {
            logger.warning("\(error.description); waiting for it to appear")
        } catch {
            Syscall.close(epoll)
            Syscall.close(inotify)
            throw error
        }
    }

    deinit {
        closeDevice()
        Syscall.close(inotify)
        Syscall.close(epoll)
    }

    public var pollDescriptor: Int32? { epoll }

    public var nextDeadline: Instant? { retryAt }

    /// The node the device was opened from, while it is open.
    public var openPath: String? { devicePath }

    public func currentState(now: Instant) throws(HardwareError) -> [TimedInputEvent] {
        switchStates().map { TimedInputEvent($0, at: now) }
    }

    public func readEvents(now: Instant) throws(HardwareError) -> [TimedInputEvent] {
        var out = pendingStates.map { TimedInputEvent($0, at: now) }
        pendingStates = []
        let changed = drainInotify()
        if device == nil, changed || (retryAt.map { $0 <= now } ?? false) {
            retryAt = nil
            do {
                try open()
                logger.notice("\(name) is back")
                out += switchStates().map { TimedInputEvent($0, at: now) }
            } catch let error where error.errno == EACCES || error.errno == EPERM {
                retryAt = now + configuration.retryInterval  // udev may not have set permissions yet
            } catch {
                if error.errno != ENOENT { logger.warning("\(error.description)") }
            }
        }
        guard let device else { return out }
        var flag = UInt32(LIBEVDEV_READ_FLAG_NORMAL.rawValue)
        var event = input_event()
        while true {
            let status = libevdev_next_event(device, flag, &event)
            if status == -EAGAIN {
                if flag == UInt32(LIBEVDEV_READ_FLAG_SYNC.rawValue) {
                    flag = UInt32(LIBEVDEV_READ_FLAG_NORMAL.rawValue)
                    continue
                }
                break
            }
            if status == Int32(LIBEVDEV_READ_STATUS_SYNC.rawValue) {
                if flag == UInt32(LIBEVDEV_READ_FLAG_NORMAL.rawValue) {
                    resynchronisations += 1
                    logger.warning("\(name): the kernel dropped events (SYN_DROPPED); resynchronising its state")
                    flag = UInt32(LIBEVDEV_READ_FLAG_SYNC.rawValue)
                    continue
                }
            } else if status != Int32(LIBEVDEV_READ_STATUS_SUCCESS.rawValue) {
                if status == -EINTR { continue }
                logger.error(
                    "\(name) disappeared (\(Syscall.errorText(-status))); waiting for it to come back"
                )
                closeDevice()
                break
            }
            // SAFETY: `event` is a plain struct libevdev just filled in.
            let time = Instant(
                nanoseconds: Int64(cevdev_event_seconds(&event)) * 1_000_000_000
                    + Int64(cevdev_event_microseconds(&event)) * 1000
            )
            if let translated = translator.translate(
                type: UInt32(event.type),
                code: UInt32(event.code),
                value: event.value
            ) {
                out.append(TimedInputEvent(translated, at: time))
            }
        }
        return out
    }

    /// The positions of the configured switches, read from the device.
    private func switchStates() -> [InputEvent] {
        guard let device else { return [] }
        return configuration.roles.sorted { ($0.key.type, $0.key.code) < ($1.key.type, $1.key.code) }.compactMap {
            code,
            role in
            guard role.isSwitch else { return nil }
            var value: Int32 = 0
            guard libevdev_fetch_event_value(device, code.type, code.code, &value) == 1 else { return nil }
            return translator.switchState(role, value: value)
        }
    }

    /// Reads pending inotify records; true when something changed in the watched directory.
    private func drainInotify() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 4096)
        var changed = false
        while true {
            // SAFETY: read writes at most buffer.count bytes into the buffer.
            let count = buffer.withUnsafeMutableBytes { read(inotify, $0.baseAddress, $0.count) }
            if count <= 0 { break }
            changed = true
        }
        return changed
    }

    private func open() throws(HardwareError) {
        let path = try resolve()
        let descriptor = Syscall.open(path, O_RDONLY | O_NONBLOCK)
        guard descriptor >= 0 else { throw openError(path: path, code: -descriptor) }
        var handle: OpaquePointer?
        let result = libevdev_new_from_fd(descriptor, &handle)
        guard result == 0, let handle else {
            Syscall.close(descriptor)
            throw HardwareError(
                operation: "open input device",
                device: path,
                errno: -result,
                message: "not an evdev device (\(Syscall.errorText(-result)))"
            )
        }
        if libevdev_set_clock_id(handle, CLOCK_MONOTONIC) != 0 {
            logger.warning("\(path): cannot switch event timestamps to CLOCK_MONOTONIC; timing may drift")
        }
        if configuration.grab {
            let grab = libevdev_grab(handle, LIBEVDEV_GRAB)
            guard grab == 0 else {
                libevdev_free(handle)
                Syscall.close(descriptor)
                throw HardwareError(
                    operation: "grab input device",
                    device: path,
                    errno: -grab,
                    message: grab == -EBUSY
                        ? "another program has grabbed it (stop it, or set grab = false)"
                        : Syscall.errorText(-grab)
                )
            }
        }
        device = handle
        deviceDescriptor = descriptor
        devicePath = path
        name = "evdev device '\(String(cString: libevdev_get_name(handle)))' (\(path))"
        var event = epoll_event(events: EPOLLIN.rawValue, data: epoll_data_t(fd: descriptor))
        _ = epoll_ctl(epoll, EPOLL_CTL_ADD, descriptor, &event)
        logger.info("\(name): ready")
    }

    private func closeDevice() {
        guard let device else { return }
        _ = epoll_ctl(epoll, EPOLL_CTL_DEL, deviceDescriptor, nil)
        libevdev_free(device)
        Syscall.close(deviceDescriptor)
        self.device = nil
        deviceDescriptor = -1
        devicePath = nil
    }

    /// The node to open: the configured path, or the event node whose device has the configured name.
    private func resolve() throws(HardwareError) -> String {
        switch configuration.device {
        case .path(let path):
            return path
        case .name(let wanted):
            let present = Self.devices(in: configuration.watchDirectory)
            if let match = present.first(where: { $0.name == wanted }) { return match.path }
            let list = present.map { "'\($0.name)' (\($0.path))" }.joined(separator: ", ")
            throw HardwareError(
                operation: "find input device",
                device: "'\(wanted)'",
                errno: ENOENT,
                message: "no input device has that name; devices present: \(list.isEmpty ? "none" : list)"
            )
        }
    }

    private func openError(path: String, code: Int32) -> HardwareError {
        let message: String
        switch code {
        case ENOENT: message = "no such input device"
        case EACCES, EPERM: message = "permission denied: add the hush user to the input group"
        default: message = Syscall.errorText(code)
        }
        return HardwareError(operation: "open input device", device: path, errno: code, message: message)
    }

    /// The event devices in `directory` with their names.
    public static func devices(in directory: String = "/dev/input") -> [(path: String, name: String)] {
        (Syscall.directoryEntries(directory) ?? []).filter { $0.hasPrefix("event") }.compactMap { entry in
            let path = directory + "/" + entry
            let descriptor = Syscall.open(path, O_RDONLY | O_NONBLOCK)
            guard descriptor >= 0 else { return nil }
            defer { Syscall.close(descriptor) }
            var handle: OpaquePointer?
            guard libevdev_new_from_fd(descriptor, &handle) == 0, let handle else { return nil }
            defer { libevdev_free(handle) }
            return (path, String(cString: libevdev_get_name(handle)))
        }
    }
}
