import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A directory of its own under /tmp, removed with everything in it when the test lets it go.
public final class ScratchDirectory {
    public let path: String

    /// Makes /tmp/PREFIX-XXXXXX.
    public init(prefix: String) throws {
        var template = Array("/tmp/\(prefix)-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        guard made != nil else {
            throw TestFailure("cannot create a directory /tmp/\(prefix)-…: \(String(cString: strerror(errno)))")
        }
        path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    /// The names in the directory, sorted.
    public func entries() throws -> [String] { try FileManager.default.contentsOfDirectory(atPath: path).sorted() }
}
