import CEvdev
import HushCore

#if canImport(Glibc)
import Glibc
#endif

/// A virtual input device made through /dev/uinput with libevdev's uinput API.
///
/// The kernel treats it like real hardware: evdev readers, ``EvdevInputSource`` among them, see it as a
/// /dev/input/eventN node with the name given here. The virtual-board tests (`hush-vboard-check`, run inside a VM
/// with the uinput module loaded) use it to act as the hardware: volume buttons, media keys, the headphone jack
/// switch and the silence switch. It needs write access to /dev/uinput (root, or a udev rule).
///
/// The device disappears on ``close()`` or when the object is released, as unplugging it would.
package final class UInputDevice {
    /// The name readers see (EVIOCGNAME), which ``EvdevDeviceSelector/name(_:)`` matches.
    package let name: String
    /// The keys and switches the device can send.
    package let codes: [EvdevCode]
    private var uinput: OpaquePointer?

    /// Creates a device called `name` that can send `codes` (EV_KEY and EV_SW codes), its switches starting at the
    /// values in `switches`.
    ///
    /// - Throws: ``HushCore/HardwareError`` when /dev/uinput is missing (the uinput module is not loaded), not
    ///   permitted, or the kernel refuses the device.
    package init(name: String, codes: [EvdevCode], switches: [EvdevCode: Int32] = [:]) throws(HardwareError) {
        self.name = name
        self.codes = codes
        guard let template = libevdev_new() else {
            throw HardwareError(
                operation: "create input device",
                device: "'\(name)'",
                errno: ENOMEM,
                message: "out of memory"
            )
        }
        defer { libevdev_free(template) }  // the uinput device is a copy
        libevdev_set_name(template, name)
        libevdev_set_id_bustype(template, BUS_VIRTUAL)
        for code in Set(codes + switches.keys) {
            libevdev_enable_event_type(template, code.type)
            libevdev_enable_event_code(template, code.type, code.code, nil)
        }
        var created: OpaquePointer?
        let result = libevdev_uinput_create_from_device(template, LIBEVDEV_UINPUT_OPEN_MANAGED.rawValue, &created)
        guard result == 0, let created else {
            let message =
                switch -result {
                case ENOENT, ENODEV, ENXIO: "no /dev/uinput: load the uinput module (modprobe uinput)"
                case EACCES, EPERM:
                    "permission denied on /dev/uinput: run as root, or give the user access with a udev rule"
                default: Syscall.errorText(-result)
                }
            throw HardwareError(operation: "create input device", device: "'\(name)'", errno: -result, message: message)
        }
        uinput = created
        // uinput cannot set switch positions at creation; set them before any reader opens the node.
        for (code, value) in switches.sorted(by: { $0.key < $1.key }) {
            try emit(code, value: value)
        }
        if !switches.isEmpty { try sync() }
    }

    deinit { close() }

    /// The node the kernel made, e.g. "/dev/input/event3", while the device exists (nil if libevdev cannot tell).
    package var devicePath: String? {
        guard let uinput, let node = libevdev_uinput_get_devnode(uinput) else { return nil }
        return String(cString: node)
    }

    /// Sends one event; readers see it after the next ``sync()``.
    package func emit(type: UInt32, code: UInt32, value: Int32) throws(HardwareError) {
        guard let uinput else {
            throw HardwareError(
                operation: "send an event to",
                device: "'\(name)'",
                errno: ENODEV,
                message: "the device was closed"
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

    /// Sends one event for `code`: for keys 1 presses, 0 releases, 2 is an auto-repeat; for switches the position.
    package func emit(_ code: EvdevCode, value: Int32) throws(HardwareError) {
        try emit(type: code.type, code: code.code, value: value)
    }

    /// Ends a report (SYN_REPORT): readers see the events sent since the last one.
    package func sync() throws(HardwareError) {
        try emit(type: UInt32(EV_SYN), code: UInt32(SYN_REPORT), value: 0)
    }

    /// Presses or releases a key, and ends the report.
    package func key(_ code: EvdevCode, pressed: Bool) throws(HardwareError) {
        try emit(code, value: pressed ? 1 : 0)
        try sync()
    }

    /// Destroys the device: its node disappears and readers get ENODEV. Calling it again does nothing.
    package func close() {
        guard let uinput else { return }
        libevdev_uinput_destroy(uinput)  // also closes /dev/uinput, which libevdev opened
        self.uinput = nil
    }

    /// The same as ``close()``.
    package func destroy() { close() }
}
