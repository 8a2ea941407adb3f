import HushGPIO

#if canImport(Glibc)
import Glibc
#endif

/// The gpio-sim chip the virtual board creates (board/virtual/guest-lib.sh), and a line on it driven from sysfs.
package let simChip = "hush-sim"

package final class SimLine {
    package let pullPath: String
    package let valuePath: String
    /// Kept open so a bounce train is a run of single writes, fast enough even under TCG.
    private let pull: Int32

    package init(_ name: String) throws {
        let location = try GPIOLineLocation(chip: simChip, line: .name(name))
        guard
            let directory = globPaths("/sys/devices/platform/gpio-sim.*/\(location.chip)/sim_gpio\(location.offset)")
                .first
        else { throw CheckFailure("no sysfs directory for \(location) (is gpio-sim live?)") }
        pullPath = directory + "/pull"
        valuePath = directory + "/value"
        pull = open(pullPath, O_WRONLY)
        guard pull >= 0 else { throw CheckFailure("cannot open \(pullPath): \(String(cString: strerror(errno)))") }
    }

    deinit { close(pull) }

    /// Drives the simulated input: pull-down is "switch closed to ground", i.e. active for active-low wiring.
    package func set(active: Bool) throws {
        let text = active ? "pull-down" : "pull-up"
        let written = text.withCString { pwrite(pull, $0, strlen($0), 0) }
        guard written == text.utf8.count else {
            throw CheckFailure("cannot write '\(text)' to \(pullPath): \(String(cString: strerror(errno)))")
        }
    }

    package var value: String? { readFile(valuePath) }
}
