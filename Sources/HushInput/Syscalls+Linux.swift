import HushCore

#if canImport(Glibc)
import Glibc
#endif

/// The raw system calls HushInput makes, in one place: EINTR is retried here, and failures come back as the
/// errno for the caller to phrase.
enum Syscall {
    /// Runs `call` until it does not fail with EINTR; returns its result, or -errno.
    static func retryingEINTR(_ call: () -> Int32) -> Int32 {
        while true {
            let result = call()
            if result >= 0 { return result }
            if errno != EINTR { return -errno }
        }
    }

    static func open(_ path: String, _ flags: Int32) -> Int32 {
        retryingEINTR { Glibc.open(path, flags | O_CLOEXEC) }
    }

    static func close(_ descriptor: Int32) {
        // Linux closes the descriptor even when close() reports EINTR: never retry it.
        _ = Glibc.close(descriptor)
    }

    static func errorText(_ code: Int32) -> String { String(cString: strerror(code)) }

    /// The entries of a directory (without . and ..), or nil when it cannot be read.
    static func directoryEntries(_ path: String) -> [String]? {
        guard let directory = opendir(path) else { return nil }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }
}
