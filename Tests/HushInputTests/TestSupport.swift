#if canImport(Glibc)
import Glibc
#endif

/// A directory under /tmp that stands in for /dev/input, removed with everything in it when released.
final class ScratchDirectory {
    let path: String

    init() throws {
        var template = Array("/tmp/hush-input-test-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw ScratchError("mkdtemp: \(String(cString: strerror(errno)))") }
        path = String(cString: made)
    }

    deinit {
        if let directory = opendir(path) {
            while let entry = readdir(directory) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
                }
                if name != "." && name != ".." { unlink(path + "/" + name) }
            }
            closedir(directory)
        }
        rmdir(path)
    }

    /// Creates (or truncates) a file called `name` with mode `mode`; returns its path.
    @discardableResult
    func create(_ name: String, mode: mode_t = 0o644) throws -> String {
        let file = path + "/" + name
        let descriptor = open(file, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, mode)
        guard descriptor >= 0 else { throw ScratchError("cannot create \(file): \(String(cString: strerror(errno)))") }
        close(descriptor)
        return file
    }

    func remove(_ name: String) { unlink(path + "/" + name) }
}

struct ScratchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Whether `descriptor` is readable right now (poll with no timeout), as the daemon's loop would see it.
func isReadable(_ descriptor: Int32?) -> Bool {
    guard let descriptor else { return false }
    var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
    return poll(&entry, 1, 0) > 0 && entry.revents & Int16(POLLIN) != 0
}
