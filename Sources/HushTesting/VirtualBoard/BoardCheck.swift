import HushCore

#if canImport(Glibc)
import Glibc
#endif

// What the programs that run inside the virtual board (hush-vboard-check, hush-vboard-streams, hush-vboard-voice,
// hush-vboard-latency; board/virtual) share: named checks and their selection, the clock, files and shell commands.
// docs/virtual-board.md.

/// One named check against real drivers.
package struct Check: Sendable {
    package let name: String
    package let run: @Sendable () throws -> Void

    package init(name: String, run: @escaping @Sendable () throws -> Void) {
        self.name = name
        self.run = run
    }
}

/// Why a check failed, in words.
package struct CheckFailure: Error, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}

package func require(_ condition: Bool, _ message: @autoclosure () -> String) throws {
    if !condition { throw CheckFailure(message()) }
}

/// Runs `checks`, printing PASS/FAIL per check and the summary line; true when all passed.
package func runChecks(_ checks: [Check]) -> Bool {
    var passed = 0
    var failed = 0
    for check in checks {
        let start = monotonicNow()
        do {
            try check.run()
            passed += 1
            print("PASS \(check.name) (\((monotonicNow() - start).milliseconds) ms)")
        } catch {
            failed += 1
            print("FAIL \(check.name): \(error)")
        }
        fflush(nil)
    }
    print("\(passed) passed, \(failed) failed")
    return failed == 0
}

/// The checks a program's arguments select, for the programs whose checks build on each other (hush-vboard-streams,
/// hush-vboard-voice: `[CHECK ...]`): every check without names; with names, the first (which starts hushd) and the
/// ones named, in their order. `--list` prints every name and exits; an unknown name exits 64, saying which.
package func selectChecks(_ checks: [Check], by arguments: [String]) -> [Check] {
    if arguments == ["--list"] {
        for check in checks { print(check.name) }
        exit(0)
    }
    let unknown = arguments.filter { name in !checks.contains { $0.name == name } }
    guard unknown.isEmpty else {
        print("unknown check(s): \(unknown.joined(separator: ", ")); --list shows them")
        exit(64)
    }
    return arguments.isEmpty ? checks : [checks[0]] + checks.dropFirst().filter { arguments.contains($0.name) }
}

package func monotonicNow() -> Instant {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Instant(nanoseconds: Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec))
}

package func sleep(_ duration: Duration) {
    var request = timespec(
        tv_sec: Int(duration.nanoseconds / 1_000_000_000),
        tv_nsec: Int(duration.nanoseconds % 1_000_000_000)
    )
    var left = timespec()
    while nanosleep(&request, &left) == -1 && errno == EINTR { request = left }
}

/// Everything left in a C stream (a file, or a pipe from `popen`), as text.
package func readAll(_ stream: UnsafeMutablePointer<FILE>) -> String {
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while case let count = fread(&buffer, 1, buffer.count, stream), count > 0 { bytes += buffer[..<count] }
    return String(decoding: bytes, as: UTF8.self)
}

/// The whole text of a file, as it is; nil when it cannot be opened.
package func readWholeFile(_ path: String) -> String? {
    guard let file = fopen(path, "r") else { return nil }
    defer { fclose(file) }
    return readAll(file)
}

/// The whole text of a sysfs or procfs file (or a log), without its final newline; nil when it cannot be opened.
/// Whole, not its first line: /proc/asound/cards lists the Loopback card first, and a check that read one line
/// saw the Dummy card gone the moment it started waiting (the removal checks' "gone after 0 ms").
package func readFile(_ path: String) -> String? {
    guard var text = readWholeFile(path) else { return nil }
    if text.hasSuffix("\n") { text.removeLast() }
    return text
}

/// Writes `text` to a sysfs file in one write, as the kernel expects.
package func writeFile(_ path: String, _ text: String) throws {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    guard fd >= 0 else { throw CheckFailure("cannot open \(path): \(String(cString: strerror(errno)))") }
    defer { close(fd) }
    let written = text.withCString { write(fd, $0, strlen($0)) }
    guard written == text.utf8.count else {
        throw CheckFailure("cannot write '\(text)' to \(path): \(String(cString: strerror(errno)))")
    }
}

/// The paths matching a shell pattern.
package func globPaths(_ pattern: String) -> [String] {
    var result = glob_t()
    defer { globfree(&result) }
    guard glob(pattern, 0, nil, &result) == 0 else { return [] }
    return (0..<Int(result.gl_pathc)).compactMap { result.gl_pathv[$0].map { String(cString: $0) } }
}

/// Runs a shell command and returns its standard output (and its exit status).
@discardableResult
package func shell(_ command: String) -> (output: String, status: Int32) {
    guard let pipe = popen(command + " 2>&1", "r") else { return ("popen failed", -1) }
    let text = readAll(pipe)
    let status = pclose(pipe)
    return (text, (status >> 8) & 0xff)
}
