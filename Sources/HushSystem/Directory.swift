#if canImport(Glibc)
import Glibc
#endif

/// Directories hushd makes for its files (the state file's, make run's WAV file's).
package enum Directory {
    /// Why a directory could not be made: what was being done, where, and the errno (ENOTDIR for a file in the way).
    package struct Failure: Error {
        package var operation: String
        package var path: String
        package var errno: Int32
    }

    /// The directory part of `path`: "." for a bare name, "/" for a file at the root.
    package static func name(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// Creates `directory` and its missing parents with mode 0755; an existing directory is fine.
    package static func make(_ directory: String) throws(Failure) {
        var status = stat()
        if stat(directory, &status) == 0 {
            guard status.st_mode & S_IFMT == S_IFDIR else {
                throw Failure(operation: "use", path: directory, errno: ENOTDIR)
            }
            return
        }
        guard errno == ENOENT else { throw Failure(operation: "look at directory", path: directory, errno: errno) }
        let parent = name(of: directory)
        if parent != directory { try make(parent) }
        guard mkdir(directory, 0o755) == 0 || errno == EEXIST else {
            throw Failure(operation: "create directory", path: directory, errno: errno)
        }
    }
}
