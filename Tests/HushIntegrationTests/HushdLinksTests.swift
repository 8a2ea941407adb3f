import Foundation
import HushAudioFile
import HushCore
import Testing

#if canImport(Glibc)
import Glibc
#endif

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

    /// The libraries mapped into a running process, by file name (/proc/PID/maps).
    static func mappedLibraries(_ pid: pid_t) throws -> Set<String> {
        // Read to the end: /proc files say their size is 0, and a long map comes in several reads.
        guard let handle = FileHandle(forReadingAtPath: "/proc/\(pid)/maps") else {
            throw HushdTestFailure("cannot open /proc/\(pid)/maps")
        }
        defer { try? handle.close() }
        let maps = String(decoding: try handle.readToEnd() ?? Data(), as: UTF8.self)
        return Set(
            maps.split(separator: "\n").compactMap { line in
                line.split(separator: " ", omittingEmptySubsequences: true).last.flatMap {
                    $0.hasPrefix("/") ? String($0.split(separator: "/").last ?? "") : nil
                }
            }
        )
    }

    /// libsndfile and its seven codecs are opened with dlopen when a sound file is first used, not at start
    /// (CSndfile.h), and webrtc-audio-processing when a call's first processor is made: on the real hushd,
    /// listening with no file played, none of them is mapped; after a `play` of a WAV file, libsndfile is.
    @Test("hushd maps libsndfile and its codecs only once a sound file is played, webrtc not at start")
    func soundFileLibraryOnFirstUse() throws {
        let hushd = try HushdProcess()
        let codecs = ["libsndfile", "libFLAC", "libvorbis", "libopus", "libogg", "libmpg123", "libmp3lame"]
        func mapped() throws -> [String] {
            try Self.mappedLibraries(hushd.pid).filter { name in codecs.contains { name.hasPrefix($0 + ".") } }.sorted()
        }
        let client = try hushd.connect()
        _ = try client.status()
        #expect(try mapped() == [], "hushd loaded them before any sound file was used")
        // Nor webrtc-audio-processing (CVoiceProcessing), opened when the first call's processor is made.
        let voice = try Self.mappedLibraries(hushd.pid).filter { $0.hasPrefix("libwebrtc") }
        #expect(voice.isEmpty, "hushd loaded webrtc-audio-processing before any call: \(voice)")
        let path = hushd.soundDirectory + "/tone.wav"
        try SoundFile.write(AudioBuffer(frameCount: 4800, channels: 1, sampleRate: 48000), to: path)
        let activated = try client.call(#""command":"activate","bus":"effect","category":"ambient""#)
        let session = try #require(activated["session"] as? Int, "\(activated)")
        let played = try client.call(#""command":"play","session":\#(session),"sound":"\#(path)""#)
        #expect(played["ok"] as? Bool == true, "\(played)")
        // The file may be opened after the reply: read the map again until libsndfile shows (or 5 s pass).
        var after = try mapped()
        for _ in 0..<100 where !after.contains(where: { $0.hasPrefix("libsndfile.") }) {
            usleep(50_000)
            after = try mapped()
        }
        #expect(after.contains { $0.hasPrefix("libsndfile.") }, "no libsndfile mapped after a play: \(after)")
    }

    /// When libsndfile cannot be opened (here a file that is no library, found first through LD_LIBRARY_PATH), a
    /// `play` is refused with the loader's reason and the package to install, not as a file libsndfile cannot
    /// read; hushd keeps serving.
    @Test("a libsndfile that cannot be loaded is named as such when a file is played, and hushd keeps serving")
    func soundFileLibraryMissing() throws {
        let base = try HushdProcess(start: false)
        let broken = base.directory + "/broken-lib"
        try FileManager.default.createDirectory(atPath: broken, withIntermediateDirectories: false)
        try "not a library\n".write(toFile: broken + "/libsndfile.so.1", atomically: true, encoding: .utf8)
        let path = base.soundDirectory + "/tone.wav"
        try SoundFile.write(AudioBuffer(frameCount: 4800, channels: 1, sampleRate: 48000), to: path)
        let hushd = try SpawnedHushd(
            arguments: ["--config", base.configPath, "--console", "none"],
            environment: ["PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": broken],
            logPath: base.directory + "/spawned.log",
            directory: base.directory
        )
        defer { _ = hushd.stop() }
        try hushd.waitForSocket(base.socket)
        let client = try HushdConnection(path: base.socket)
        let activated = try client.call(#""command":"activate","bus":"effect","category":"ambient""#)
        let session = try #require(activated["session"] as? Int, "\(activated)")
        let played = try client.call(#""command":"play","session":\#(session),"sound":"\#(path)""#)
        #expect(played["ok"] as? Bool == false, "\(played)")
        let message = try #require((played["error"] as? [String: Any])?["message"] as? String, "\(played)")
        #expect(message.contains("libsndfile.so.1 could not be loaded"), "\(message)")
        #expect(message.contains("libsndfile1 package"), "\(message)")
        #expect(!message.contains("not a sound file"), "the file is blamed: \(message)")
        #expect((try client.status())["systemVolume"] != nil, "hushd answers after the refusal")
    }
}
