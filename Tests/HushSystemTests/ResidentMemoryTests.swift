import Foundation
import Testing

@testable import HushSystem

#if canImport(Glibc)
import Glibc
#endif

/// hushd hands back, once started, the pages only start-up read: clean copies of file pages in private read-only
/// mappings. What it wrote, what it shares and what is locked must stay exactly as they are.
@Suite("handing back start-up pages")
struct ResidentMemoryTests {
    static let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))

    /// How many pages of `count` from `base` are present (/proc/self/pagemap bit 63).
    static func present(_ base: UnsafeRawPointer, pages count: Int) -> Int {
        let pagemap = open("/proc/self/pagemap", O_RDONLY)
        defer { close(pagemap) }
        var entries = [UInt64](repeating: 0, count: count)
        let first = Int(bitPattern: base) / pageSize
        let read = entries.withUnsafeMutableBytes { pread(pagemap, $0.baseAddress, count * 8, off_t(first * 8)) }
        #expect(read == count * 8)
        return entries.filter { $0 >> 63 == 1 }.count
    }

    /// A file of `pages` pages, page n filled with the byte n + 1, mapped with `protection` and `flags`.
    static func mapFile(pages: Int, protection: Int32, flags: Int32) throws -> (UnsafeMutableRawPointer, String) {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("hush-resident-\(UUID()).bin").path
        var bytes = [UInt8](repeating: 0, count: pages * pageSize)
        for page in 0..<pages { for index in 0..<pageSize { bytes[page * pageSize + index] = UInt8(page + 1) } }
        FileManager.default.createFile(atPath: path, contents: Data(bytes))
        let descriptor = open(path, O_RDWR)
        defer { close(descriptor) }
        let mapped = mmap(nil, pages * pageSize, protection, flags, descriptor, 0)
        return (try #require(mapped == MAP_FAILED ? nil : mapped), path)
    }

    /// Reads one byte of every page, as start-up reading code would.
    static func touch(_ base: UnsafeRawPointer, pages: Int) -> Int {
        (0..<pages).reduce(0) { $0 + Int(base.load(fromByteOffset: $1 * pageSize, as: UInt8.self)) }
    }

    @Test("clean file pages go and come back with their bytes; written, shared and locked pages stay")
    func releases() throws {
        let pages = 32
        let sum = (1...pages).reduce(0, +)
        // Read-only and private: program text, read-only data. Handed back.
        let (clean, cleanPath) = try Self.mapFile(pages: pages, protection: PROT_READ, flags: MAP_PRIVATE)
        // Written, then made read-only: relocated data under RELRO. Its written page is no copy of the file.
        let (relro, relroPath) = try Self.mapFile(pages: pages, protection: PROT_READ | PROT_WRITE, flags: MAP_PRIVATE)
        // Shared: a stream's ring. Not hushd's to drop.
        let (shared, sharedPath) = try Self.mapFile(pages: pages, protection: PROT_READ, flags: MAP_SHARED)
        // Read-only, private and locked: the kernel refuses; its pages stay.
        let (locked, lockedPath) = try Self.mapFile(pages: pages, protection: PROT_READ, flags: MAP_PRIVATE)
        defer {
            for (base, path) in [(clean, cleanPath), (relro, relroPath), (shared, sharedPath), (locked, lockedPath)] {
                munmap(base, pages * Self.pageSize)
                unlink(path)
            }
        }
        relro.storeBytes(of: 0xAB, toByteOffset: 0, as: UInt8.self)
        #expect(mprotect(relro, pages * Self.pageSize, PROT_READ) == 0)
        #expect(Self.touch(clean, pages: pages) == sum)
        #expect(Self.touch(relro, pages: pages) == sum - 1 + 0xAB)
        #expect(Self.touch(shared, pages: pages) == sum)
        let lockedHere = mlock(locked, pages * Self.pageSize) == 0
        #expect(Self.touch(locked, pages: pages) == sum)
        #expect(Self.present(clean, pages: pages) == pages)

        let release = ResidentMemory.releaseCleanFilePages()

        #expect(release.pages >= pages)
        #expect(release.kibibytes == release.pages * Self.pageSize / 1024)
        #expect(Self.present(clean, pages: pages) == 0, "every clean page of the read-only mapping is handed back")
        #expect(Self.touch(clean, pages: pages) == sum, "and comes back from the file with the same bytes")
        #expect(Self.present(relro, pages: 1) == 1, "the written page is the process's own: kept")
        #expect(relro.load(as: UInt8.self) == 0xAB)
        #expect(Self.present(relro.advanced(by: Self.pageSize), pages: pages - 1) == 0)
        #expect(Self.present(shared, pages: pages) == pages, "a shared mapping is not touched")
        if lockedHere {
            #expect(Self.present(locked, pages: pages) == pages, "a locked mapping keeps its pages")
            #expect(release.refusedMappings >= 1)
            munlock(locked, pages * Self.pageSize)
        }
    }

    @Test("a line of /proc/self/maps is read field by field; only private read-only file mappings qualify")
    func mappings() throws {
        let text = try #require(
            ResidentMemory.Mapping("55d0c1a00000-55d0c2000000 r-xp 00001000 fe:01 1234   /usr/sbin/hushd")
        )
        #expect(text.start == 0x55d0_c1a0_0000 && text.end == 0x55d0_c200_0000)
        #expect(text.path == "/usr/sbin/hushd" && text.isCleanFileCandidate)
        let spaced = try #require(ResidentMemory.Mapping("1000-2000 r--p 00000000 fe:01 9 /opt/a b/lib.so"))
        #expect(spaced.path == "/opt/a b/lib.so" && spaced.isCleanFileCandidate)
        for line in [
            "1000-2000 rw-p 00000000 fe:01 9 /usr/lib/libc.so.6",  // writable
            "1000-2000 r--s 00000000 00:01 9 /memfd:hush-stream (deleted)",  // shared
            "1000-2000 r-xp 00000000 00:00 0 [vdso]",  // not a file
            "1000-2000 r--p 00000000 00:00 0",  // anonymous
            "1000-2000 r-xp 00000000 fe:01 9 /usr/sbin/hushd (deleted)",  // replaced by an upgrade
        ] {
            #expect(ResidentMemory.Mapping(Substring(line))?.isCleanFileCandidate == false, "\(line)")
        }
        #expect(ResidentMemory.Mapping("not a mapping") == nil)
        #expect(ResidentMemory.Mapping("2000-1000 r--p 0 0 0 /x") == nil)
    }
}
