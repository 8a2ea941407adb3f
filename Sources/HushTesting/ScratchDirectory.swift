import Foundation
import HushConfiguration
import HushConsole
import HushControlServer
import HushOutput
import HushRender
import HushSystem
import Testing

/// A directory of its own under /tmp, removed with everything in it when the test lets it go.
final class ScratchDirectory {
    let path: String

    /// Makes /tmp/PREFIX-XXXXXX.
    init(prefix: String) throws {
        var template = Array("/tmp/\(prefix)-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        try #require(made != nil, "cannot create a directory /tmp/\(prefix)-…: \(String(cString: strerror(errno)))")
        path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    /// The names in the directory, sorted.
    func entries() throws -> [String] { try FileManager.default.contentsOfDirectory(atPath: path).sorted() }
}
