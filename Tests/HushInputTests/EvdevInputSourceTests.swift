import HushCore
import HushTesting
import Logging
import Testing

@testable import HushInput

#if canImport(Glibc)
import Glibc
#endif

// This machine has no input devices and no /dev/uinput: these tests check what needs none (errors, the directory
// watch, the retry schedule) with a scratch directory standing in for /dev/input. Reading real devices is checked
// in the virtual board (hush-vboard-check evdev-*).
@Suite("evdev input source without a device")
struct EvdevInputSourceTests {
    static let wanted = "hush-test-keys"

    @Test("opening a path that does not exist says so")
    func missingPath() throws {
        let scratch = try ScratchDirectory()
        let error = thrownError(HardwareError.self) {
            try EvdevInputSource(
                EvdevInputConfiguration(device: .path("/nonexistent/event9"), watchDirectory: scratch.path),
                logger: RecordingLogHandler.logger().0
            )
        }
        #expect(error?.description == "cannot open input device /nonexistent/event9: no such input device [errno 2]")
        #expect(error?.errno == ENOENT)
    }

    @Test("a name no device has is an error that lists the devices present, in number order")
    func missingName() throws {
        let scratch = try ScratchDirectory()
        for name in ["event10", "event2", "js0", "event1"] { try scratch.create(name) }
        let error = thrownError(HardwareError.self) {
            try EvdevInputSource(
                EvdevInputConfiguration(device: .name("gpio-keys"), watchDirectory: scratch.path),
                logger: RecordingLogHandler.logger().0
            )
        }
        let present = ["event1", "event2", "event10"].map { "\(scratch.path)/\($0) (not an evdev input device)" }
        #expect(
            error?.description
                == "cannot find input device 'gpio-keys': no input device has that name; devices present: "
                + present.joined(separator: ", ") + " [errno 2]"
        )
    }

    @Test("with no devices at all, the error says none are present")
    func noDevices() throws {
        let scratch = try ScratchDirectory()
        let error = thrownError(HardwareError.self) {
            try EvdevInputSource(
                EvdevInputConfiguration(device: .name("gpio-keys"), watchDirectory: scratch.path),
                logger: RecordingLogHandler.logger().0
            )
        }
        #expect(
            error?.description
                == "cannot find input device 'gpio-keys': no input device has that name; devices present: none [errno 2]"
        )
    }

    @Test("a node that is not an evdev device is refused", arguments: ["scratch", "/dev/null"])
    func notEvdev(which: String) throws {
        let scratch = try ScratchDirectory()
        let path = which == "scratch" ? try scratch.create("event0") : which
        let error = thrownError(HardwareError.self) {
            try EvdevInputSource(
                EvdevInputConfiguration(device: .path(path), optional: true, watchDirectory: scratch.path),
                logger: RecordingLogHandler.logger().0
            )
        }
        #expect(error?.description == "cannot open input device \(path): not an evdev input device [errno 25]")
    }

    @Test("a node hush may not read says how to fix it", .enabled(if: geteuid() != 0))
    func permissionDenied() throws {
        let scratch = try ScratchDirectory()
        let path = try scratch.create("event0", mode: 0)
        let error = thrownError(HardwareError.self) {
            try EvdevInputSource(
                EvdevInputConfiguration(device: .path(path), optional: true, watchDirectory: scratch.path),
                logger: RecordingLogHandler.logger().0
            )
        }
        #expect(
            error?.description
                == "cannot open input device \(path): permission denied: add the hush user to the input group [errno 13]"
        )
    }

    @Test("an optional device missing at start-up is waited for, quietly")
    func optionalMissing() throws {
        let scratch = try ScratchDirectory()
        let (logger, log) = RecordingLogHandler.logger()
        let source = try EvdevInputSource(
            EvdevInputConfiguration(device: .name(Self.wanted), optional: true, watchDirectory: scratch.path),
            logger: logger
        )
        #expect(source.name == "evdev device '\(Self.wanted)'")
        #expect(source.openPath == nil)
        #expect(source.nextDeadline == nil, "the directory watch wakes the daemon; no timer is needed")
        #expect(!isReadable(source.pollDescriptor))
        #expect(try source.currentState(now: .zero).isEmpty)
        #expect(try source.readEvents(now: .zero).isEmpty)
        #expect(
            log.messages(at: .notice) == [
                "cannot find input device '\(Self.wanted)': no input device has that name; devices present: none [errno 2]; waiting for it to appear"
            ]
        )
    }

    @Test("a node appearing wakes the one poll descriptor; it is examined, and the descriptor is quiet again")
    func nodeAppears() throws {
        let scratch = try ScratchDirectory()
        let source = try EvdevInputSource(
            EvdevInputConfiguration(device: .name(Self.wanted), optional: true, watchDirectory: scratch.path),
            logger: RecordingLogHandler.logger().0
        )
        let descriptor = source.pollDescriptor
        #expect(descriptor != nil)
        try scratch.create("event0")
        #expect(isReadable(source.pollDescriptor))
        #expect(try source.readEvents(now: .milliseconds(1000)).isEmpty)
        #expect(!isReadable(source.pollDescriptor))
        #expect(source.openPath == nil)
        #expect(source.nextDeadline == nil, "a device by name is found by scanning; nothing to retry")
        scratch.remove("event0")
        #expect(isReadable(source.pollDescriptor))
        #expect(try source.readEvents(now: .milliseconds(1001)).isEmpty)
        #expect(source.pollDescriptor == descriptor)
    }

    @Test("a configured path that appears is opened, and what is wrong with it is logged, not thrown")
    func pathAppears() throws {
        let scratch = try ScratchDirectory()
        let (logger, log) = RecordingLogHandler.logger()
        let path = scratch.path + "/event5"
        let source = try EvdevInputSource(
            EvdevInputConfiguration(device: .path(path), optional: true, watchDirectory: scratch.path),
            logger: logger
        )
        try scratch.create("event5")
        #expect(try source.readEvents(now: .milliseconds(1000)).isEmpty)
        #expect(
            log.messages(at: .error) == [
                "cannot open input device \(path): not an evdev input device [errno 25]; waiting for the device to change"
            ]
        )
        #expect(source.nextDeadline == nil)
    }

    @Test("a configured path not there yet after a change is retried every 100 ms, 20 times, then waited for")
    func retrySchedule() throws {
        let scratch = try ScratchDirectory()
        let path = scratch.path + "/by-id-link"
        let source = try EvdevInputSource(
            EvdevInputConfiguration(device: .path(path), optional: true, watchDirectory: scratch.path),
            logger: RecordingLogHandler.logger().0
        )
        try scratch.create("event3")  // the node; the link it is reached by comes later
        var now = Instant.milliseconds(1000)
        #expect(try source.readEvents(now: now).isEmpty)
        var retries = 0
        while let deadline = source.nextDeadline {
            #expect(deadline == now + .milliseconds(100))
            now = deadline
            #expect(try source.readEvents(now: now).isEmpty)
            retries += 1
            if retries > 100 { break }
        }
        #expect(retries == 20)
    }

    @Test(
        "a node that appears before udev has set its permissions is tried again, and when they change",
        .enabled(if: geteuid() != 0)
    )
    func permissionsLater() throws {
        let scratch = try ScratchDirectory()
        let (logger, log) = RecordingLogHandler.logger()
        let path = scratch.path + "/event5"
        let source = try EvdevInputSource(
            EvdevInputConfiguration(device: .path(path), optional: true, watchDirectory: scratch.path),
            logger: logger
        )
        try scratch.create("event5", mode: 0)
        #expect(try source.readEvents(now: .milliseconds(1000)).isEmpty)
        #expect(source.nextDeadline == .milliseconds(1100))
        #expect(log.messages(at: .error).isEmpty, "not yet: udev sets permissions a moment after the node appears")
        chmod(path, 0o644)
        #expect(isReadable(source.pollDescriptor))
        #expect(try source.readEvents(now: .milliseconds(1050)).isEmpty)
        #expect(
            log.messages(at: .error) == [
                "cannot open input device \(path): not an evdev input device [errno 25]; waiting for the device to change"
            ]
        )
        #expect(source.nextDeadline == nil)
    }

    @Test("without a directory to watch, an optional device is looked for every second")
    func missingWatchDirectory() throws {
        let (logger, log) = RecordingLogHandler.logger()
        let source = try EvdevInputSource(
            EvdevInputConfiguration(device: .name(Self.wanted), optional: true, watchDirectory: "/nonexistent-input"),
            logger: logger
        )
        #expect(
            log.messages(at: .warning) == [
                "cannot watch /nonexistent-input for devices coming and going (No such file or directory); looking for evdev device '\(Self.wanted)' every second instead"
            ]
        )
        #expect(source.nextDeadline == .zero)
        #expect(try source.readEvents(now: .milliseconds(5000)).isEmpty)
        #expect(source.nextDeadline == .milliseconds(6000))
        #expect(try source.readEvents(now: .milliseconds(5500)).isEmpty)
        #expect(source.nextDeadline == .milliseconds(6000))
    }

    @Test("without a directory to watch, a required device is an error that says why")
    func missingDirectoryRequired() {
        let error = thrownError(HardwareError.self) {
            try EvdevInputSource(
                EvdevInputConfiguration(device: .name("gpio-keys"), watchDirectory: "/nonexistent-input"),
                logger: RecordingLogHandler.logger().0
            )
        }
        #expect(
            error?.description
                == "cannot find input device 'gpio-keys': no input device has that name: cannot read /nonexistent-input (No such file or directory) [errno 2]"
        )
    }

    @Test("listing devices: nodes in number order, each with its name or what stopped hush reading it")
    func listing() throws {
        let scratch = try ScratchDirectory()
        for name in ["event11", "event3", "mouse0"] { try scratch.create(name) }
        let nodes = try EvdevInputSource.devices(in: scratch.path)
        #expect(nodes.map(\.path) == [scratch.path + "/event3", scratch.path + "/event11"])
        #expect(nodes.allSatisfy { $0.name == nil && $0.openError == ENOTTY })
        #expect(
            EvdevDeviceNode(path: "/dev/input/event0", name: "gpio-keys").description
                == "'gpio-keys' (/dev/input/event0)"
        )
        #expect(
            EvdevDeviceNode(path: "/dev/input/event1", name: "Power Button", openError: EACCES).description
                == "'Power Button' (/dev/input/event1: permission denied)"
        )
        let error = thrownError(HardwareError.self) { try EvdevInputSource.devices(in: "/nonexistent-input") }
        #expect(
            error?.description == "cannot list input devices in /nonexistent-input: No such file or directory [errno 2]"
        )
    }

    @Test("inotify records are parsed as the kernel lays them out, a truncated tail ignored")
    func inotifyRecords() {
        func record(_ mask: UInt32, _ name: String, padTo length: Int) -> [UInt8] {
            var bytes: [UInt8] = []
            for field in [UInt32(1), mask, 0, UInt32(length)] { withUnsafeBytes(of: field) { bytes += $0 } }
            bytes += Array(name.utf8) + [UInt8](repeating: 0, count: length - name.utf8.count)
            return bytes
        }
        let bytes =
            record(UInt32(IN_CREATE), "event3", padTo: 16) + record(UInt32(IN_IGNORED), "", padTo: 0)
            + record(UInt32(IN_DELETE), "event12", padTo: 32)
        let records = bytes.withUnsafeBytes { InotifyRecord.parse($0) }
        #expect(
            records == [
                InotifyRecord(mask: UInt32(IN_CREATE), name: "event3"),
                InotifyRecord(mask: UInt32(IN_IGNORED), name: ""),
                InotifyRecord(mask: UInt32(IN_DELETE), name: "event12"),
            ]
        )
        #expect(bytes.dropLast(5).withUnsafeBytes { InotifyRecord.parse($0) }.count == 2)
        #expect(InotifyRecord.headerSize == 16)
    }

    @Test("uinput without the module is a clear error", .enabled(if: access("/dev/uinput", F_OK) != 0))
    func noUinput() {
        let error = thrownError(HardwareError.self) { try UInputDevice(name: "x", codes: [.volumeUp]) }
        #expect(error?.message == "no /dev/uinput: load the uinput module (modprobe uinput)")
        #expect(
            error?.description
                == "cannot create input device 'x': no /dev/uinput: load the uinput module (modprobe uinput) [errno 2]"
        )
    }
}
