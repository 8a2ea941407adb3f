#if canImport(Glibc)
import Glibc
#endif

/// Whole text files read and written with the system's calls, so the board binaries need no Foundation for them,
/// and a failure says why in the system's words (strerror), naming what was being done.
package enum TextFile {
    /// Why a file could not be read or written.
    package struct Failure: Error, CustomStringConvertible {
        /// What was being done: "open", "read", "create", "write", "rename".
        package var operation: String
        /// The errno, or 0 when the content was the problem (too large, not UTF-8).
        package var errno: Int32
        /// The content's problem, when errno is 0.
        package var problem: String
        package var description: String {
            errno != 0 ? "cannot \(operation) it: \(String(cString: strerror(errno)))" : problem
        }
    }

    /// The UTF-8 text of `path`, at most `limit` bytes (more is `tooLarge`, a mistake rather than a file to read).
    package static func read(_ path: String, limit: Int, tooLarge: String) throws(Failure) -> String {
        let descriptor = SystemCall.retrying { open(path, O_RDONLY | O_CLOEXEC) }
        guard descriptor >= 0 else { throw Failure(operation: "open", errno: errno, problem: "") }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16384)
        while true {
            let count = SystemCall.retrying {
                chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            }
            guard count >= 0 else { throw Failure(operation: "read", errno: errno, problem: "") }
            if count == 0 { break }
            bytes.append(contentsOf: chunk[..<count])
            guard bytes.count <= limit else { throw Failure(operation: "read", errno: 0, problem: tooLarge) }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw Failure(operation: "read", errno: 0, problem: "not UTF-8 text")
        }
        return text
    }

    /// Writes `text` to `path` whole or not at all: into a temporary file beside it, then renamed over it.
    package static func write(_ text: String, to path: String) throws(Failure) {
        let temporary = path + ".tmp-\(getpid())"
        let descriptor = SystemCall.retrying { open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644) }
        guard descriptor >= 0 else { throw Failure(operation: "create", errno: errno, problem: "") }
        var utf8 = Array(text.utf8)
        var done = 0
        while done < utf8.count {
            let count = SystemCall.retrying {
                utf8.withUnsafeMutableBytes { Glibc.write(descriptor, $0.baseAddress! + done, $0.count - done) }
            }
            guard count > 0 else {
                let failed = errno
                close(descriptor)
                unlink(temporary)
                throw Failure(operation: "write", errno: failed, problem: "")
            }
            done += count
        }
        guard close(descriptor) == 0 else {
            let failed = errno
            unlink(temporary)
            throw Failure(operation: "write", errno: failed, problem: "")
        }
        guard rename(temporary, path) == 0 else {
            let failed = errno
            unlink(temporary)
            throw Failure(operation: "rename", errno: failed, problem: "")
        }
    }
}
