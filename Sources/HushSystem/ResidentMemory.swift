#if canImport(Glibc)
import Glibc
#endif

/// What hushd keeps in memory once it has started: the pages of its program and libraries that only start-up
/// needed (parsing the command line, the configuration and the board profile, opening devices) are handed back,
/// much as the kernel frees its `__init` code after boot.
///
/// A page handed back is a clean copy of a file's page in a private, read-only mapping (program text, read-only
/// data, symbol tables): it stays in the page cache, and the next touch maps it again from there (a minor fault,
/// no I/O), with the same bytes. A page the process wrote (relocated data made read-only afterwards, RELRO) is
/// anonymous, not a copy of its file, and is never touched; neither are shared mappings (stream rings, ALSA's
/// status pages) or writable ones. Locked mappings are skipped by the kernel (`EINVAL`), so this runs before
/// `mlockall`.
package enum ResidentMemory {
    /// What ``releaseCleanFilePages()`` did.
    package struct Release: Equatable, Sendable {
        /// Pages unmapped.
        package var pages: Int
        /// Their size in KiB.
        package var kibibytes: Int
        /// Mappings the kernel refused to advise (locked ones), which keep their pages.
        package var refusedMappings: Int
    }

    /// Unmaps every present page of the private, read-only, file-backed mappings of this process that is still a
    /// clean copy of its file (/proc/self/pagemap: present, and a file page rather than anonymous). Start-up
    /// only: a page the audio thread needs comes back with one minor fault.
    ///
    /// - Returns: what was released; zero pages when /proc/self/maps or /proc/self/pagemap cannot be read.
    package static func releaseCleanFilePages() -> Release {
        var release = Release(pages: 0, kibibytes: 0, refusedMappings: 0)
        let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
        guard pageSize > 0, let maps = try? TextFile.read("/proc/self/maps", limit: 4 << 20, tooLarge: "") else {
            return release
        }
        let pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC)
        guard pagemap >= 0 else { return release }
        defer { close(pagemap) }
        for line in maps.split(separator: "\n") {
            guard let mapping = Mapping(line), mapping.isCleanFileCandidate else { continue }
            var refused = false
            forEachCleanRun(of: mapping, pageSize: pageSize, pagemap: pagemap) { start, pages in
                if madvise(UnsafeMutableRawPointer(bitPattern: start), pages * pageSize, MADV_DONTNEED) == 0 {
                    release.pages += pages
                } else {
                    refused = true
                }
            }
            if refused { release.refusedMappings += 1 }
        }
        release.kibibytes = release.pages * pageSize / 1024
        return release
    }

    /// One line of /proc/self/maps: "start-end perms offset dev inode path".
    struct Mapping {
        var start: Int
        var end: Int
        var permissions: Substring
        var path: Substring

        init?(_ line: Substring) {
            let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
            guard fields.count >= 5 else { return nil }
            let range = fields[0].split(separator: "-")
            guard range.count == 2, let start = Int(range[0], radix: 16), let end = Int(range[1], radix: 16),
                end > start
            else { return nil }
            self.start = start
            self.end = end
            permissions = fields[1]
            path = fields.count == 6 ? Substring(fields[5].drop { $0 == " " }) : ""
        }

        /// Private ("p"), not writable, and backed by a file: the program, a library, the locale archive. Not
        /// "[vdso]" and the like (their names are bracketed), nor a deleted file.
        var isCleanFileCandidate: Bool {
            permissions.count == 4 && permissions.hasSuffix("p") && !permissions.contains("w")
                && path.hasPrefix("/") && !path.hasSuffix("(deleted)")
        }
    }

    /// Calls `body(start, pages)` for each run of pages of `mapping` that are present and file pages.
    private static func forEachCleanRun(
        of mapping: Mapping,
        pageSize: Int,
        pagemap: Int32,
        _ body: (Int, Int) -> Void
    ) {
        let present: UInt64 = 1 << 63
        let filePage: UInt64 = 1 << 61
        let chunk = 512
        var entries = [UInt64](repeating: 0, count: chunk)
        var runStart = -1
        var page = mapping.start / pageSize
        let endPage = mapping.end / pageSize
        while page < endPage {
            let count = min(chunk, endPage - page)
            let bytes = entries.withUnsafeMutableBytes {
                pread(pagemap, $0.baseAddress, count * 8, off_t(page * 8))
            }
            guard bytes == count * 8 else { break }
            for index in 0..<count {
                let clean = entries[index] & (present | filePage) == present | filePage
                if clean && runStart < 0 { runStart = page + index }
                if !clean && runStart >= 0 {
                    body(runStart * pageSize, page + index - runStart)
                    runStart = -1
                }
            }
            page += count
        }
        if runStart >= 0 { body(runStart * pageSize, page - runStart) }
    }
}
