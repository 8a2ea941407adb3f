import Foundation
import HushAudioFile
import HushTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `[sounds] startup` on the real hushd (policy R25): the package's chime is played once when hushd is ready, on the
/// effect bus at the start-up volume, and its session ends with it; a file that cannot be played is a warning and
/// hushd serves on. The sound is read back from the fallback WAV, what hushd wrote for a speaker.
@Suite("hushd's start-up sound (R25)")
struct StartupSoundTests {
    static func wait(_ what: String, _ hushd: HushdProcess, seconds: Double = 10, _ condition: () -> Bool) throws {
        let deadline = Date().addingTimeInterval(seconds)
        while !condition() {
            guard Date() < deadline else { throw HushdTestFailure("\(what) within \(seconds) s; log:\n\(hushd.log)") }
            usleep(10_000)
        }
    }

    /// Adds `[sounds] startup = "PATH"` to the configuration of a hushd not started yet.
    static func configure(_ hushd: HushdProcess, startup path: String) throws {
        let directories = "directories = [\"\(hushd.soundDirectory)\"]"
        let config = try String(contentsOfFile: hushd.configPath, encoding: .utf8)
        try config.replacingOccurrences(of: directories, with: directories + "\nstartup = \"\(path)\"")
            .write(toFile: hushd.configPath, atomically: true, encoding: .utf8)
    }

    @Test("the chime plays once at start, at the start-up volume, and its session ends with it")
    func chimeAtStart() throws {
        let scratch = try ScratchDirectory(prefix: "hush-startup")
        let mix = scratch.path + "/mix.wav"
        let hushd = try HushdProcess(fallback: mix, packageSounds: ["startup": "startup.wav"])
        try Self.wait("the start-up sound finished", hushd) { hushd.log.contains("the start-up sound finished [R25]") }
        let status = try hushd.status()
        #expect((status["sessions"] as? [Any])?.isEmpty == true, "its session ended with it: \(status)")
        #expect(hushd.log.contains("is hushd's start-up sound"), "the R25 decision is logged:\n\(hushd.log)")
        #expect(hushd.stop() == 0)
        let (samples, channels, rate) = try SoundFile.readPCM16(mix)
        #expect(rate == 48000 && channels == 2)
        let loud = samples.indices.filter { abs(Int(samples[$0])) > 64 }
        let first = try #require(loud.first, "nothing audible in the mix")
        let last = try #require(loud.last)
        let seconds = Double(last - first) / Double(channels * rate)
        #expect(seconds > 0.5 && seconds < 0.6, "the chime is 0.55 s long; heard for \(seconds) s")
        // The system volume at start (the default 8 of 16, -24 dB: no state file) scales the chime's -6 dBFS notes
        // to about -30 dBFS, 0.032 of full scale.
        let peak = Double(samples.map { abs(Int($0)) }.max() ?? 0) / 32767
        #expect(peak > 0.025 && peak < 0.04, "peak \(peak): the chime at the system volume, not at full scale")
    }

    @Test("a start-up sound that cannot be played is a warning, and hushd serves on")
    func missingChime() throws {
        let hushd = try HushdProcess(start: false)
        try Self.configure(hushd, startup: hushd.soundDirectory + "/missing.wav")
        try hushd.start()
        try Self.wait("the warning", hushd) { hushd.log.contains("start-up sound not played") }
        let line = hushd.log.split(separator: "\n").first { $0.contains("start-up sound not played") } ?? ""
        #expect(
            line.contains("warning") && line.contains("missing.wav") && line.contains("[sounds] startup"),
            "\(line)"
        )
        let status = try hushd.status()
        #expect((status["sessions"] as? [Any])?.isEmpty == true, "no session left behind: \(status)")
    }
}
