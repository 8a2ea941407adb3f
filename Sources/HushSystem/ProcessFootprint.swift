import CLinux

#if canImport(Glibc)
import Glibc
#endif

/// What this process holds: resident memory, the malloc heap in use and open file descriptors.
///
/// `hush-render --soak` samples it over hours of simulated time to show that nothing grows per event or per
/// session (issue 6's soak, docs/reliability.md#soak). Read from /proc/self and glibc's malloc statistics.
package struct ProcessFootprint: Equatable, Sendable {
    /// The resident set (Rss of /proc/self/smaps_rollup), in KiB.
    package var residentKiB: Int
    /// Bytes malloc has handed out and not had back.
    package var heapBytes: Int
    /// Entries in /proc/self/fd, not counting the directory stream that reads them.
    package var descriptors: Int

    /// The footprint now. A value that cannot be read is -1 (no /proc), which a soak reports as a failure.
    package static func current() -> ProcessFootprint {
        ProcessFootprint(
            residentKiB: residentKiB(),
            heapBytes: Int(clinux_malloc_bytes_in_use()),
            descriptors: descriptorCount()
        )
    }

    /// The resident set from /proc/self/smaps_rollup, which the kernel counts by walking the page tables: exact.
    /// VmRSS in /proc/self/status is read from per-CPU counters that can lag by hundreds of KiB in a process with
    /// several threads (a 4 MiB block touched on one thread read +0 KiB), too coarse for a 64 KiB bound.
    private static func residentKiB() -> Int {
        kibibytes(of: "Rss:", in: "/proc/self/smaps_rollup") ?? kibibytes(of: "VmRSS:", in: "/proc/self/status") ?? -1
    }

    /// The number of KiB on the line of `path` that starts with `key`, as in "Rss:   26204 kB".
    private static func kibibytes(of key: String, in path: String) -> Int? {
        guard let file = fopen(path, "r") else { return nil }
        defer { fclose(file) }
        var buffer = [CChar](repeating: 0, count: 256)
        while fgets(&buffer, Int32(buffer.count), file) != nil {
            let line = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            guard line.hasPrefix(key) else { continue }
            return Int(line.dropFirst(key.count).filter(\.isNumber))
        }
        return nil
    }

    private static func descriptorCount() -> Int {
        guard let directory = opendir("/proc/self/fd") else { return -1 }
        defer { closedir(directory) }
        var count = 0
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { count += 1 }
        }
        // The stream reading the directory holds one descriptor of its own.
        return count - 1
    }
}
