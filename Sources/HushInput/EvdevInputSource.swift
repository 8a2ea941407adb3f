import CEvdev
import HushCore
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// Keys and switches from an evdev device (a gpio-keys overlay, a USB remote, a uinput test device), read with
/// libevdev.
///
/// - Event timestamps are CLOCK_MONOTONIC, hush's ``HushCore/Instant`` timeline.
/// - Switch positions are read from the device at start-up and whenever it is (re)opened, never assumed.
/// - When the kernel drops events (SYN_DROPPED), libevdev's sync mode replays what changed, so a release lost in the
///   flood still arrives and the final switch positions are right; a warning says it happened.
/// - The device may come and go. ``pollDescriptor`` is one epoll set for the source's whole life, holding an inotify
///   watch on ``EvdevInputConfiguration/watchDirectory`` and the device while it is open. When the device
///   disappears it is closed (volume buttons still held are released) and hush waits; when a matching node
///   appears it is reopened and its switch positions reported again.
///
/// - Important: not thread-safe; the daemon's input loop owns it.
package final class EvdevInputSource: InputSource {
    package let configuration: EvdevInputConfiguration
    /// "evdev device 'gpio-keys' (/dev/input/event3)" once opened; "evdev device 'gpio-keys'" before.
    package private(set) var name: String
    /// How many times the kernel dropped events (SYN_DROPPED) and the state was resynchronised.
    package private(set) var resynchronisations = 0

    private let logger: Logger
    private let watch: DirectoryWatch
    private var device: OpenDevice?
    private var translator: EvdevEventTranslator
    /// When to try opening the device again (permissions not set yet, or no directory watch to wake us).
    private var retryAt: Instant?
    private var retriesLeft = 0
    private var everOpened = false

    /// Attempts at opening a node that appeared but refused us, ``EvdevInputConfiguration/retryInterval`` apart.
    private static let retryAttempts = 20
    /// How often to look for the device when its directory cannot be watched.
    private static let fallbackInterval = Duration.seconds(1)
    /// The most events one ``readEvents(now:)`` takes, so a device that never stops cannot starve the daemon's loop;
    /// the rest stay readable for the next call.
    private static let readBudget = 1024

    /// Opens the device, or waits for it when it is missing and ``EvdevInputConfiguration/optional`` is set.
    ///
    /// - Throws: ``HushCore/HardwareError`` when the device is missing (and not optional), is not an evdev device,
    ///   cannot be opened for lack of permission, or is grabbed by another program; its message says what to do.
    package init(_ configuration: EvdevInputConfiguration, logger: Logger) throws(HardwareError) {
        self.configuration = configuration
        self.logger = logger
        translator = EvdevEventTranslator(roles: configuration.roles)
        name = "evdev device \(configuration.device)"
        do {
            watch = try DirectoryWatch(directory: configuration.watchDirectory)
        } catch {
            throw HardwareError(
                operation: "watch for input devices in",
                device: configuration.watchDirectory,
                errno: error.errno,
                message: "\(error.call): \(error.text)"
            )
        }
        if configuration.silenceSwitch != nil && configuration.keyMap.values.contains(.muteKey) {
            logger.debug("\(name): a silence switch is configured, so mute keys are ignored")
        }
        startWatching()
        do {
            try open()
            logger.info("\(name): opened\(grabbed)")
        } catch let error where configuration.optional && error.errno == ENOENT {
            logger.notice("\(error.description); waiting for it to appear")
            if watch.descriptor == nil { retryAt = .zero }
        }
    }

    package var pollDescriptor: Int32? { watch.epoll }

    package var nextDeadline: Instant? { device == nil ? retryAt : nil }

    /// The node the device was opened from, while it is open.
    package var openPath: String? { device?.path }

    /// The positions of the configured switches, read from the device; empty while it is absent. Keys held now are
    /// not reported.
    package func currentState(now: Instant) throws(HardwareError) -> [TimedInputEvent] {
        guard let device else { return [] }
        return translator.currentState(switchValues: switchValues(of: device)).map { TimedInputEvent($0, at: now) }
    }

    /// The events since the last call, with the kernel's timestamps; also notices the device leaving and coming
    /// back. Never throws: a device that goes away is waited for, and the reason logged.
    package func readEvents(now: Instant) throws(HardwareError) -> [TimedInputEvent] {
        var out: [TimedInputEvent] = []
        if let device { read(device, now: now, into: &out) }
        var changed = false
        for record in Syscall.readInotify(watch.inotify) {
            if record.mask & UInt32(IN_IGNORED) != 0 {
                watch.descriptor = nil
                retryAt = nil
                logger.warning(
                    "\(configuration.watchDirectory) is no longer watched (was it removed?); looking for \(name) every second instead"
                )
                continue
            }
            if let device, record.mask & UInt32(IN_DELETE) != 0, record.name == device.node {
                lose(device, now: now, into: &out)
            }
            let appeared = record.mask & UInt32(IN_CREATE | IN_ATTRIB | IN_Q_OVERFLOW) != 0
            if appeared && isCandidate(record.name) { changed = true }
        }
        guard device == nil else { return out }
        let due = retryAt.map { $0 <= now } ?? false
        if watch.descriptor == nil && (due || retryAt == nil) {
            // No inotify watch to wake us: look every second, and watch again as soon as the directory is back.
            startWatching(quietly: true)
            reopen(now: now, into: &out)
        } else if changed {
            retriesLeft = Self.retryAttempts
            reopen(now: now, into: &out)
        } else if due {
            reopen(now: now, into: &out)
        }
        return out
    }

    // MARK: Reading

    /// Drains the device: translated events in order, SYN_DROPPED resynchronised, a vanished device closed.
    private func read(_ device: OpenDevice, now: Instant, into out: inout [TimedInputEvent]) {
        var event = input_event()
        // Drain a copy: the closures below read `self` (switch codes), which must not overlap with a mutation of
        // `self.translator` (Swift's exclusivity rule). The copy goes back when the drain is done.
        var translator = self.translator
        let switchCodes = translator.switchCodes
        let result = translator.drain(
            budget: Self.readBudget,
            read: { mode in
                let flags = mode == .normal ? LIBEVDEV_READ_FLAG_NORMAL.rawValue : LIBEVDEV_READ_FLAG_SYNC.rawValue
                while true {
                    let status = libevdev_next_event(device.handle, flags, &event)
                    switch status {
                    case Int32(LIBEVDEV_READ_STATUS_SUCCESS.rawValue), Int32(LIBEVDEV_READ_STATUS_SYNC.rawValue):
                        let time = timestamp(&event, of: device, now: now)
                        if mode == .normal && status == Int32(LIBEVDEV_READ_STATUS_SYNC.rawValue) {
                            return .dropped(time: time)
                        }
                        return .event(
                            EvdevCode(type: UInt32(event.type), code: UInt32(event.code)),
                            value: event.value,
                            time: time
                        )
                    case -EAGAIN: return .exhausted
                    case -EINTR: continue
                    default: return .failed(errno: -status)
                    }
                }
            },
            switchValues: { Self.switchValues(of: device, codes: switchCodes) }
        )
        self.translator = translator
        out += result.events
        for changes in result.resynchronisations {
            resynchronisations += 1
            logger.warning(
                "\(name): the kernel dropped events (SYN_DROPPED); resynchronised from the device's state (\(changes) change(s) replayed)"
            )
        }
        guard let failure = result.failure else { return }
        if failure != ENODEV { logger.error("\(name): reading failed (\(Syscall.errorText(failure))); closing it") }
        lose(device, now: now, into: &out)
    }

    /// The event's kernel timestamp on hush's timeline, or `now` when the kernel could not use CLOCK_MONOTONIC.
    private func timestamp(_ event: inout input_event, of device: OpenDevice, now: Instant) -> Instant {
        guard device.monotonicTimestamps else { return now }
        // SAFETY: the shim reads two fields of the event libevdev just filled in; the pointer lives for the call.
        let seconds = Int64(cevdev_event_seconds(&event))
        let microseconds = Int64(cevdev_event_microseconds(&event))
        // libevdev stamps the changes it replays after SYN_DROPPED with the last time it read; zero means none.
        guard seconds != 0 || microseconds != 0 else { return now }
        return Instant(nanoseconds: seconds * 1_000_000_000 + microseconds * 1000)
    }

    /// The values of the configured switches the device has.
    private func switchValues(of device: OpenDevice) -> [EvdevCode: Int32] {
        Self.switchValues(of: device, codes: translator.switchCodes)
    }

    private static func switchValues(of device: OpenDevice, codes: [EvdevCode]) -> [EvdevCode: Int32] {
        var values: [EvdevCode: Int32] = [:]
        for code in codes {
            var value: Int32 = 0
            if libevdev_fetch_event_value(device.handle, code.type, code.code, &value) != 0 { values[code] = value }
        }
        return values
    }

    // MARK: Coming and going

    /// Closes a device that went away and releases the volume buttons it held.
    private func lose(_ lost: OpenDevice, now: Instant, into out: inout [TimedInputEvent]) {
        guard device === lost else { return }
        Syscall.epollRemove(watch.epoll, lost.descriptor)
        device = nil
        out += translator.deviceLost().map { TimedInputEvent($0, at: now) }
        logger.warning("\(name) disappeared; waiting for it to come back")
        retryAt = watch.descriptor == nil ? now + Self.fallbackInterval : nil
    }

    /// Tries to open the device again after a change in the watched directory or at a retry deadline.
    private func reopen(now: Instant, into out: inout [TimedInputEvent]) {
        let wasOpened = everOpened
        do {
            try open()
        } catch {
            let permission = error.errno == EACCES || error.errno == EPERM
            // A stable link (/dev/input/by-id/…) appears a moment after the node it points to.
            let linkNotYet = error.errno == ENOENT && isPathSelector
            if (permission || linkNotYet) && retriesLeft > 0 {
                retriesLeft -= 1
                retryAt = now + configuration.retryInterval
                logger.debug("\(error.description); trying again in \(configuration.retryInterval)")
                return
            }
            retryAt = watch.descriptor == nil ? now + Self.fallbackInterval : nil
            if error.errno != ENOENT { logger.error("\(error.description); waiting for the device to change") }
            return
        }
        logger.notice(wasOpened ? "\(name) is back\(grabbed)" : "\(name) appeared\(grabbed)")
        retryAt = nil
        guard let device else { return }
        out += translator.deviceOpened(switchValues: switchValues(of: device)).map { TimedInputEvent($0, at: now) }
    }

    /// Starts the inotify watch; says so when it cannot (and `quietly` is not set: the fallback retries silently).
    private func startWatching(quietly: Bool = false) {
        do {
            try watch.start()
        } catch {
            guard !quietly else { return }
            logger.warning(
                "cannot watch \(configuration.watchDirectory) for devices coming and going (\(error.text)); looking for \(name) every second instead"
            )
        }
    }

    /// Said after "opened" or "is back" when hush has the device to itself.
    private var grabbed: String { configuration.grab ? " (grabbed)" : "" }

    private var isPathSelector: Bool {
        if case .path = configuration.device { true } else { false }
    }

    /// Whether a directory entry could be the configured device.
    private func isCandidate(_ entry: String) -> Bool {
        switch configuration.device {
        case .name: entry.hasPrefix("event")
        // The configured path may be a link elsewhere; trying it costs one open.
        case .path: true
        }
    }

    // MARK: Opening

    /// Finds, opens and sets up the device, and adds it to the epoll set.
    private func open() throws(HardwareError) {
        let path = try resolve()
        let opened = try OpenDevice(path: path, watchDirectory: configuration.watchDirectory)
        let title = "evdev device '\(opened.kernelName)' (\(path))"
        if libevdev_set_clock_id(opened.handle, CLOCK_MONOTONIC) != 0 {
            opened.monotonicTimestamps = false
            logger.warning(
                "\(title): the kernel cannot timestamp events on CLOCK_MONOTONIC; using the time they are read"
            )
        }
        if configuration.grab {
            let result = libevdev_grab(opened.handle, LIBEVDEV_GRAB)
            guard result == 0 else {
                throw HardwareError(
                    operation: "grab input device",
                    device: path,
                    errno: -result,
                    message: -result == EBUSY
                        ? "another program has grabbed it (stop that program, or set grab = false)"
                        : Syscall.errorText(-result)
                )
            }
        }
        do {
            try Syscall.epollAdd(watch.epoll, opened.descriptor)
        } catch {
            throw HardwareError(
                operation: "watch input device",
                device: path,
                errno: error.errno,
                message: "\(error.call): \(error.text)"
            )
        }
        device = opened
        name = title
        for code in translator.switchCodes where libevdev_has_event_code(opened.handle, code.type, code.code) == 0 {
            if case .silenceSwitch = translator.roles[code] {
                logger.warning("\(name) has no \(code); the silence switch cannot be read from it")
            } else {
                logger.debug("\(name) has no \(code)")
            }
        }
        everOpened = true
    }

    /// The node to open: the configured path, or the event node whose device has the configured name.
    private func resolve() throws(HardwareError) -> String {
        switch configuration.device {
        case .path(let path):
            return path
        case .name(let wanted):
            let nodes: [EvdevDeviceNode]
            do {
                nodes = try Self.devices(in: configuration.watchDirectory)
            } catch {
                throw HardwareError(
                    operation: "find input device",
                    device: "'\(wanted)'",
                    errno: ENOENT,
                    message:
                        "no input device has that name: cannot read \(configuration.watchDirectory) (\(error.message))"
                )
            }
            if let match = nodes.first(where: { $0.name == wanted }) {
                guard let code = match.openError else { return match.path }
                throw OpenDevice.openError(path: match.path, code: code)
            }
            let present = nodes.isEmpty ? "none" : nodes.map(\.description).joined(separator: ", ")
            let denied = nodes.contains { $0.openError == EACCES || $0.openError == EPERM }
            throw HardwareError(
                operation: "find input device",
                device: "'\(wanted)'",
                errno: ENOENT,
                message: "no input device has that name; devices present: \(present)"
                    + (denied ? " (to read the others, add the hush user to the input group)" : "")
            )
        }
    }

    /// The event nodes in `directory` (event0, event1, … in number order) and the names of their devices.
    ///
    /// A node that cannot be opened is listed with the reason; under /dev/input its name still comes from sysfs.
    package static func devices(in directory: String = "/dev/input") throws(HardwareError) -> [EvdevDeviceNode] {
        let entries: [String]
        do {
            entries = try Syscall.directoryEntries(directory)
        } catch {
            throw HardwareError(
                operation: "list input devices in",
                device: directory,
                errno: error.errno,
                message: error.text
            )
        }
        let sysfs = Syscall.realPath(directory) == "/dev/input"
        return entries.filter { $0.hasPrefix("event") }.sorted {
            (Int($0.dropFirst(5)) ?? .max, $0) < (Int($1.dropFirst(5)) ?? .max, $1)
        }
        .map { entry in
            let path = directory + "/" + entry
            let descriptor: Int32
            do throws(SystemCallError) {
                descriptor = try Syscall.open(path, flags: O_RDONLY | O_NONBLOCK | O_CLOEXEC)
            } catch {
                let name = sysfs ? Syscall.readLine("/sys/class/input/\(entry)/device/name") : nil
                return EvdevDeviceNode(path: path, name: name, openError: error.errno)
            }
            defer { Syscall.close(descriptor) }
            var handle: OpaquePointer?
            let result = libevdev_new_from_fd(descriptor, &handle)
            guard result == 0, let handle else { return EvdevDeviceNode(path: path, name: nil, openError: -result) }
            defer { libevdev_free(handle) }
            return EvdevDeviceNode(path: path, name: libevdev_get_name(handle).map { String(cString: $0) } ?? "")
        }
    }
}

/// An event node and the name of the device behind it, as ``EvdevInputSource/devices(in:)`` lists them.
package struct EvdevDeviceNode: Hashable, Sendable, CustomStringConvertible {
    /// "/dev/input/event3".
    package var path: String
    /// The device's name, or nil when it is not known.
    package var name: String?
    /// The errno that stopped hush opening the node, or nil when it could.
    package var openError: Int32?

    package init(path: String, name: String?, openError: Int32? = nil) {
        self.path = path
        self.name = name
        self.openError = openError
    }

    /// "'gpio-keys' (/dev/input/event3)", "'Power Button' (/dev/input/event1: permission denied)".
    package var description: String {
        switch (name, openError) {
        case (let name?, let code?): "'\(name)' (\(path): \(OpenDevice.reason(code)))"
        case (let name?, nil): "'\(name)' (\(path))"
        case (nil, let code?): "\(path) (\(OpenDevice.reason(code)))"
        case (nil, nil): path
        }
    }
}

/// An open evdev device: the descriptor and libevdev's handle, released together.
private final class OpenDevice {
    let handle: OpaquePointer
    let descriptor: Int32
    let path: String
    /// The device's name as the kernel reports it.
    let kernelName: String
    /// The node's name in the watched directory, if it is there (a deletion of it means the device is gone).
    let node: String?
    var monotonicTimestamps = true

    /// Opens `path` non-blocking and hands it to libevdev.
    init(path: String, watchDirectory: String) throws(HardwareError) {
        let descriptor: Int32
        do {
            descriptor = try Syscall.open(path, flags: O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        } catch {
            throw Self.openError(path: path, code: error.errno)
        }
        var handle: OpaquePointer?
        let result = libevdev_new_from_fd(descriptor, &handle)
        guard result == 0, let handle else {
            Syscall.close(descriptor)
            throw Self.openError(path: path, code: -result)
        }
        self.handle = handle
        self.descriptor = descriptor
        self.path = path
        kernelName = libevdev_get_name(handle).map { String(cString: $0) } ?? ""
        let real = Syscall.realPath(path) ?? path
        let directory = Syscall.realPath(watchDirectory) ?? watchDirectory
        if let slash = real.lastIndex(of: "/"), real[..<slash] == directory {
            node = String(real[real.index(after: slash)...])
        } else {
            node = nil
        }
    }

    deinit {
        libevdev_free(handle)
        Syscall.close(descriptor)  // also ends a grab and leaves the epoll set
    }

    /// What an errno from opening an input device means, for a person.
    static func reason(_ code: Int32) -> String {
        switch code {
        case ENOENT: "no such input device"
        case EACCES, EPERM: "permission denied"
        case ENOTTY, EINVAL: "not an evdev input device"
        case ENODEV, ENXIO: "the device is gone"
        default: Syscall.errorText(code)
        }
    }

    static func openError(path: String, code: Int32) -> HardwareError {
        let message =
            switch code {
            case EACCES, EPERM: "permission denied: add the hush user to the input group"
            default: reason(code)
            }
        return HardwareError(operation: "open input device", device: path, errno: code, message: message)
    }
}

/// The epoll set the daemon polls and the inotify watch on the device directory inside it.
private final class DirectoryWatch {
    let epoll: Int32
    let inotify: Int32
    let directory: String
    /// The inotify watch descriptor, nil while the directory is not watched.
    var descriptor: Int32?

    init(directory: String) throws(SystemCallError) {
        let epoll = try Syscall.epollCreate()
        let inotify: Int32
        do throws(SystemCallError) {
            inotify = try Syscall.inotifyInit()
            do {
                try Syscall.epollAdd(epoll, inotify)
            } catch {
                Syscall.close(inotify)
                throw error
            }
        } catch {
            Syscall.close(epoll)
            throw error
        }
        self.epoll = epoll
        self.inotify = inotify
        self.directory = directory
    }

    deinit {
        Syscall.close(inotify)
        Syscall.close(epoll)
    }

    /// Watches the directory for nodes created, changed (udev setting permissions) and deleted.
    func start() throws(SystemCallError) {
        guard descriptor == nil else { return }
        descriptor = try Syscall.inotifyAddWatch(inotify, directory, mask: UInt32(IN_CREATE | IN_ATTRIB | IN_DELETE))
    }
}
