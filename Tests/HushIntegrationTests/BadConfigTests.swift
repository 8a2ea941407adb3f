import Foundation
import Testing

/// The bad-configuration corpus (issue 6 §2): every file in Fixtures/bad-configs is checked by the real
/// `hushd check-config`, which must exit 1 and print, for each `# expect:X` line of the file (its last lines, so
/// they move no line numbers), `FILE:X` — the file, the line, the section and key, and what is wrong. `DIR` in an
/// expectation stands for the corpus's directory. Add a case by adding a file.
@Suite("bad configurations through hushd check-config")
struct BadConfigTests {
    static var directory: URL? { Bundle.module.url(forResource: "Fixtures/bad-configs", withExtension: nil) }

    static var files: [String] {
        guard let directory else { return [] }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.filter { $0.hasSuffix(".toml") }.sorted()
    }

    @Test("the corpus is there and large enough to mean something")
    func corpus() {
        #expect(Self.files.count >= 25, "bad-configs holds \(Self.files.count) files")
    }

    @Test("each bad configuration is refused with file:line, the key and the problem", arguments: files)
    func refused(_ name: String) throws {
        let directory = try #require(Self.directory).path
        let path = directory + "/" + name
        // Bytes, not text: one case is deliberately not UTF-8.
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        let expectations = bytes.split(separator: 0x0A).map { String(decoding: $0, as: UTF8.self) }
            .filter { $0.hasPrefix("# expect:") }
            .map { $0.dropFirst("# expect:".count).replacingOccurrences(of: "DIR", with: directory) }
        #expect(!expectations.isEmpty, "\(name) says nothing about what to expect")

        let process = Process()
        process.executableURL = HushdTranscriptTests.hushd
        process.arguments = ["check-config", "--config", path]
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let printed = output.fileHandleForReading.readDataToEndOfFile()
        let complaint = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 1)
        #expect(printed.isEmpty, "check-config printed a configuration for a bad file")
        for expected in expectations {
            #expect(complaint.contains(path + ":" + expected), "\(path):\(expected)\nnot in:\n\(complaint)")
        }
        #expect(complaint.hasSuffix("in the configuration: hushd would not start\n"))
    }
}
