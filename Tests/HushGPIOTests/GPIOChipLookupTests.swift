import Foundation
import HushCore
import HushTesting
import Testing

@testable import HushGPIO

/// What HushGPIO does the same with libgpiod 1.6 and 2.x: finding a chip from a profile's descriptor (1.6's
/// lookup rules, which 2.x dropped) and the errors when there is none. These run on the machine that builds, which
/// has no GPIO chip; the virtual board runs the rest against gpio-sim with both libraries
/// (board/virtual/libgpiod2/run.sh).
@Suite("GPIO chip lookup")
struct GPIOChipLookupTests {
    @Test(
        "a descriptor is tried as libgpiod 1.6's gpiod_chip_open_lookup tried it",
        arguments: [
            ("0", [GPIOChipLookup.path("/dev/gpiochip0")]),
            ("12", [.path("/dev/gpiochip12")]),
            ("gpiochip4", [.label("gpiochip4"), .path("/dev/gpiochip4")]),
            ("/dev/gpiochip0", [.label("/dev/gpiochip0"), .path("/dev/gpiochip0")]),
            ("pinctrl-bcm2711", [.label("pinctrl-bcm2711"), .path("/dev/pinctrl-bcm2711")]),
            ("hush-sim", [.label("hush-sim"), .path("/dev/hush-sim")]),
            ("-1", [.label("-1"), .path("/dev/-1")]),
            ("", [.label(""), .path("/dev/")]),
        ]
    )
    func attempts(descriptor: String, expected: [GPIOChipLookup]) {
        #expect(GPIOChipLookup.attempts(for: descriptor) == expected)
    }

    @Test("chips are listed from /dev in byte order, as libgpiod 1.6's iterator did, and nothing else")
    func devicePaths() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hush-gpio-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        for name in ["gpiochip2", "gpiochip10", "gpiochip0", "gpiomem", "ttyS0", "gpiochip1"] {
            #expect(FileManager.default.createFile(atPath: directory.appendingPathComponent(name).path, contents: nil))
        }
        let paths = GPIOChipLookup.devicePaths(in: directory.path)
        #expect(
            paths
                == ["gpiochip0", "gpiochip1", "gpiochip10", "gpiochip2"].map {
                    directory.appendingPathComponent($0).path
                }
        )
        #expect(GPIOChipLookup.devicePaths(in: directory.appendingPathComponent("missing").path).isEmpty)
    }

    @Test(
        "a chip that is not there is named with the chips that are",
        arguments: ["gpiochip7", "7", "no-such-label", "/dev/null", "/dev/no-such-chip"]
    )
    func missingChip(descriptor: String) throws {
        try #require(GPIOChipLookup.devicePaths().isEmpty, "this test expects a machine without GPIO chips")
        let error = thrownError(HardwareError.self) { _ = try GPIOChip(descriptor) }
        #expect(error?.operation == "open GPIO chip")
        #expect(error?.device == "'\(descriptor)'")
        #expect(error?.message == "no such GPIO chip; chips present: none (is the GPIO driver loaded?)")
        // /dev/null is a character device but no GPIO chip: both libraries refuse it with ENODEV or ENOTTY.
        #expect([ENOENT, ENODEV, ENOTTY].contains(error?.errno ?? 0), "errno \(error?.errno ?? 0)")
    }

    @Test("the library loaded is the generation hush was compiled for")
    func libraryGeneration() {
        #expect([1, 2].contains(GPIOLibrary.apiGeneration))
        #expect(GPIOLibrary.version.hasPrefix("\(GPIOLibrary.apiGeneration)."), "libgpiod \(GPIOLibrary.version)")
    }
}
