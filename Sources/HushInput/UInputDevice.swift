import CEvdev
import HushCore

#if canImport(Glibc)
import Glibc
#endif

/// A virtual input device made through /dev/uinput: the kernel treats it like real hardware, so evdev readers
/// (hush's own among them) see its events on a /dev/input/eventN node.
///
/// The virtual board uses it to stand in for volume buttons, media keys and jack switches. It is gone when
/// ``destroy()`` is called or the object is released.
public final class UInputDevice {
    public let name: String
    private var device: OpaquePointer?
    private var uinput: OpaquePointer?

    /// Creates a device called `name` that can send `codes`, with switches starting in `switches` positions.
    public init(name: String, codes: [EvdevCode], switches: [EvdevCode: Int32] = [:]) throws(HardwareError) {
        self.name = name
        guard access("/dev/uinput", F_OK) == 0 else {
            throw HardwareError(
                operation: "create input device",
                device: "'\(name)'",
                errno: ENOENT,
                message: "no /dev/uinput: load the uinput module (modprobe uinput)"
            )
        }
        guard let device = libevdev_new() else {
            throw HardwareError(
                operation: "create input device",
                device: "'\(name)'",
                errno: ENOMEM,
                message: "out of memory"
            )
        }
        self.device = device
        libevdev_set_name(device, name)
        for code in codes {
            libevdev_enable_event_type(device, code.type)
            libevdev_enable_event_code(device, code.type, code.code, nil)
        }
        var uinput: OpaquePointer?
        let result = libevdev_uinput_create_from_device(device, LIBEVDEV_UINPUT_OPEN_MANAGED.rawValue, &uinput)
        guard result == 0, let uinput else {
            libevdev_free(device)
            self.device = nil
            throw HardwareError(
                operation: "create input device",
                device: "'\(name)'",
                errno: -result,
                message: result == -EACCES
                    ? "permission denied on /dev/uinput (run as root or add a udev rule)"
                    : Syscall.errorText(-result)
            )
        }
        self.uinput = uinput
        for (code, value) in switches.sorted(by: { $0.key.code < $1.key.code }) {
            try emit(code, value: value)
        }
        if !switches.isEmpty { try sync() }
    }

    deinit { destroy() }

    /// The device node the kernel made, e.g. "/dev/input/event3".
    public var devicePath: String? { uinput.flatMap { libevdev_uinput_get_devnode($0) }.map { String(cString: $0) } }

    /// Sends one event; call ``sync()`` to end a report.
    public func emit(_ code: EvdevCode, value: Int32) throws(HardwareError) {
        try write(type: code.type, code: code.code, value: value)
    }

    /// Ends a report (SYN_REPORT): readers see the events sent since the last one.
    public func sync() throws(HardwareError) {
        try write(type: UInt32(EV_SYN), code: UInt32(SYN_REPORT), value: 0)
    }

    /// Presses or releases a key and reports it.
    public func key(_ code: EvdevCode, pressed: Bool) throws(HardwareError) {
        try emit(code, value: pressed ? 1 : 0)
        try sync()
    }

    /// Removes the device from the system.
    public func destroy() {
        if let uinput { libevdev_uinput_destroy(uinput) }
        if let device { libevdev_free(device) }
        uinput = nil
        device = nil
    }

    private func write(type: UInt32, code: UInt32, value: Int32) throws(HardwareError) {
        guard let uinput else {
            throw HardwareError(
                operation: "send an event to",
                device: "'\(name)'",
                errno: ENODEV,
                message: "the device was destroyed"
            )
        }
        let result = libevdev_uinput_write_event(uinput, type, code, value)
        guard result == 0 else {
            throw HardwareError(
                operation: "send an event to",
                device: "'\(name)'",
                errno: -result,
                message: Syscall.errorText(-result)
            )
        }
    }
}
