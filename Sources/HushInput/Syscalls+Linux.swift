import CEvdev

#if canImport(Glibc)
import Glibc
#endif

/// A system call that failed: which call, and the errno it returned.
///
/// The adapter phrases it as a ``HushCore/HardwareError`` for the person at the console; this type only carries
/// the facts across the boundary.
struct SystemCallError: Error, Hashable {
    var call: String
    var errno: Int32

    /// The C library's text for the errno ("No such file or directory").
    var text: String { Syscall.errorText(errno) }
}

/// Every raw system call HushInput makes, in one place (libevdev's own calls aside).
///
/// EINTR is retried here and nowhere else; EBADF and EFAULT mean hush passed a closed descriptor or a bad pointer,
/// which is a bug, so they stop the program instead of being reported as hardware trouble.
enum Syscall {
    /// Runs `body` until it does not fail with EINTR; a failure becomes a ``SystemCallError`` naming `call`.
    static func retryingEINTR<Result: SignedInteger>(
        _ call: String,
        _ body: () -> Result
    ) throws(SystemCallError) -> Result {
        while true {
            let result = body()
            if result >= 0 { return result }
            let code = Glibc.errno
            if code == EINTR { continue }
            precondition(code != EBADF && code != EFAULT, "\(call) failed with \(errorText(code)): a bug in hush")
            throw SystemCallError(call: call, errno: code)
        }
    }

    /// open(2). Pass O_CLOEXEC: hush never means to leak a descriptor into a child process.
    static func open(_ path: String, flags: Int32) throws(SystemCallError) -> Int32 {
        try retryingEINTR("open") { Glibc.open(path, flags) }
    }

    /// close(2). Linux releases the descriptor even when close reports EINTR, so it is never retried.
    static func close(_ descriptor: Int32) {
        _ = Glibc.close(descriptor)
    }

    /// A new epoll set, closed on exec.
    static func epollCreate() throws(SystemCallError) -> Int32 {
        try retryingEINTR("epoll_create1") { epoll_create1(Int32(EPOLL_CLOEXEC)) }
    }

    /// Adds `descriptor` to the epoll set, watched for readability (hang-ups and errors are always reported).
    static func epollAdd(_ epoll: Int32, _ descriptor: Int32) throws(SystemCallError) {
        var event = epoll_event(events: EPOLLIN.rawValue, data: epoll_data_t(fd: descriptor))
        _ = try retryingEINTR("epoll_ctl") { epoll_ctl(epoll, EPOLL_CTL_ADD, descriptor, &event) }
    }

    /// Removes `descriptor` from the epoll set; a descriptor that is not in it is left alone.
    static func epollRemove(_ epoll: Int32, _ descriptor: Int32) {
        _ = try? retryingEINTR("epoll_ctl") { epoll_ctl(epoll, EPOLL_CTL_DEL, descriptor, nil) }
    }

    /// A new non-blocking inotify instance, closed on exec.
    static func inotifyInit() throws(SystemCallError) -> Int32 {
        try retryingEINTR("inotify_init1") { inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC)) }
    }

    /// Watches `path` for `mask`; returns the watch descriptor.
    static func inotifyAddWatch(_ inotify: Int32, _ path: String, mask: UInt32) throws(SystemCallError) -> Int32 {
        try retryingEINTR("inotify_add_watch") { inotify_add_watch(inotify, path, mask) }
    }

    /// Every record waiting on a non-blocking inotify descriptor (none when nothing is pending).
    static func readInotify(_ inotify: Int32) -> [InotifyRecord] {
        // Big enough for many records; one record is at most the header plus NAME_MAX + 1 bytes.
        var buffer = [UInt8](repeating: 0, count: 8192)
        var records: [InotifyRecord] = []
        while true {
            // SAFETY: read writes at most buffer.count bytes into the array's own storage.
            let count = try? retryingEINTR("read") {
                buffer.withUnsafeMutableBytes { Glibc.read(inotify, $0.baseAddress, $0.count) }
            }
            guard let count, count > 0 else { return records }
            // SAFETY: the kernel wrote `count` bytes of whole records into the buffer.
            records += buffer.withUnsafeBytes { InotifyRecord.parse(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
        }
    }

    /// The canonical path of `path` with symbolic links resolved (/dev/input/by-id/… → /dev/input/event3).
    static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// The entries of a directory (without . and ..), or the errno when it cannot be read.
    static func directoryEntries(_ path: String) throws(SystemCallError) -> [String] {
        guard let directory = opendir(path) else { throw SystemCallError(call: "opendir", errno: Glibc.errno) }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            // SAFETY: d_name is a NUL-terminated array inside the entry readdir just returned.
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// The first line of a small text file such as a sysfs attribute, or nil when it cannot be read.
    static func readLine(_ path: String) -> String? {
        guard let descriptor = try? open(path, flags: O_RDONLY | O_CLOEXEC) else { return nil }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 512)
        // SAFETY: read writes at most buffer.count bytes into the array's own storage.
        let count = try? retryingEINTR("read") {
            buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
        }
        guard let count, count >= 0 else { return nil }
        return String(decoding: buffer.prefix(count).prefix { $0 != 10 }, as: UTF8.self)
    }

    /// The C library's text for an errno.
    static func errorText(_ code: Int32) -> String {
        guard let text = strerror(code) else { return "errno \(code)" }
        return String(cString: text)
    }
}

/// One inotify record: what happened (`IN_CREATE`, `IN_DELETE`, …) to which entry of the watched directory.
struct InotifyRecord: Hashable, Sendable {
    var mask: UInt32
    /// The entry's name, empty for records about the watched directory itself.
    var name: String

    /// The size of `struct inotify_event` before its name (wd, mask, cookie and len).
    static let headerSize = MemoryLayout<inotify_event>.size
    private static let maskOffset = MemoryLayout<inotify_event>.offset(of: \.mask) ?? 4
    private static let lengthOffset = MemoryLayout<inotify_event>.offset(of: \.len) ?? 12

    /// The records in `bytes` as read(2) returned them; a truncated tail is ignored.
    static func parse(_ bytes: UnsafeRawBufferPointer) -> [InotifyRecord] {
        var records: [InotifyRecord] = []
        var offset = 0
        while offset + headerSize <= bytes.count {
            // SAFETY: the loads read inside the header just checked to lie within the buffer.
            let mask = bytes.loadUnaligned(fromByteOffset: offset + maskOffset, as: UInt32.self)
            let length = Int(bytes.loadUnaligned(fromByteOffset: offset + lengthOffset, as: UInt32.self))
            let nameStart = offset + headerSize
            guard nameStart + length <= bytes.count else { break }
            // The name is padded with NULs to an aligned length.
            let name = String(decoding: bytes[nameStart..<nameStart + length].prefix { $0 != 0 }, as: UTF8.self)
            records.append(InotifyRecord(mask: mask, name: name))
            offset = nameStart + length
        }
        return records
    }
}
