import Foundation
import Testing

/// The board's hushd carries no plotter and no hush-render command line: they are HushRenderTool's, which only
/// hush-render links (docs/architecture.md). The release binary is checked by .ci/check-hushd-links.sh; this checks
/// the debug binaries the tests run, where nothing is dead-stripped: a dependency would show whole.
@Suite("what hushd links")
struct HushdLinksTests {
    /// The symbols of a built executable of the package, as nm lists them.
    static func symbols(_ program: String) throws -> [Substring] {
        let bundle = Bundle.main.bundleURL
        let path = try #require(
            [bundle, bundle.deletingLastPathComponent()].map { $0.appendingPathComponent(program).path }
                .first { FileManager.default.isExecutableFile(atPath: $0) },
            "\(program) is not built beside the tests"
        )
        let nm = Process()
        nm.executableURL = URL(fileURLWithPath: "/usr/bin/nm")
        nm.arguments = [path]
        let pipe = Pipe()
        nm.standardOutput = pipe
        try nm.run()
        let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        nm.waitUntilExit()
        #expect(nm.terminationStatus == 0, "nm \(path)")
        return text.split(separator: "\n")
    }

    static func plotter(_ symbol: Substring) -> Bool {
        symbol.contains("TimelinePlot") || symbol.contains("SVGWriter") || symbol.contains("14HushRenderTool")
    }

    @Test("hushd has the renderer (hushd play) and no symbol of the plotter; hush-render has both")
    func noPlotter() throws {
        let hushd = try Self.symbols("hushd")
        #expect(hushd.contains { $0.contains("16ScenarioRenderer") }, "nm read no renderer symbol: is hushd stripped?")
        let plotter = hushd.filter(Self.plotter)
        #expect(plotter.isEmpty, "hushd links the plotter: \(plotter.prefix(5))")
        #expect(try Self.symbols("hush-render").contains { $0.contains("12TimelinePlot") })
    }
}
