import Foundation
import HushTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// mpd, the music player products run, with its ALSA output on `hush:music` (the configuration docs/applications.md
/// shows): what it plays is mixed by hushd, a ringtone holds it, and mpd's own pause does what a person expects.
@Suite("mpd through the hush ALSA device", .serialized)
struct ALSAMusicPlayerTests {
    /// mpd on a configuration of its own in a scratch directory, its control socket there.
    final class MusicPlayer {
        let directory: String
        let process = Process()
        var socket: String { directory + "/mpd.socket" }

        init(directory: String, hushSocket: String) throws {
            for tool in ["/usr/bin/mpd", "/usr/bin/mpc"] where !FileManager.default.fileExists(atPath: tool) {
                throw HushdTestFailure("\(tool) is missing: make test installs mpd and mpc (board/virtual/setup.sh)")
            }
            self.directory = directory
            try FileManager.default.createDirectory(atPath: directory + "/music", withIntermediateDirectories: true)
            // The audio_output block is docs/applications.md's, word for word.
            try """
            music_directory "\(directory)/music"
            db_file "\(directory)/database"
            state_file "\(directory)/state"
            bind_to_address "\(socket)"
            audio_output {
                type "alsa"
                name "hush"
                device "hush:music"
                mixer_type "none"
            }
            """.write(toFile: directory + "/mpd.conf", atomically: true, encoding: .utf8)
            process.executableURL = URL(fileURLWithPath: "/usr/bin/mpd")
            process.arguments = ["--no-daemon", "--stderr", directory + "/mpd.conf"]
            var environment = ProcessInfo.processInfo.environment
            environment["ALSA_CONFIG_PATH"] = ALSADeviceTests.alsaConfig
            environment["HUSH_SOCKET"] = hushSocket
            process.environment = environment
            let log = FileHandle(forWritingAtPath: "/dev/null")
            process.standardOutput = log
            process.standardError = FileHandle(forWritingAtPath: "/dev/null")
            try process.run()
            let deadline = Date().addingTimeInterval(10)
            while (try? mpc(["status"]))?.status != 0 {
                guard Date() < deadline else { throw HushdTestFailure("mpd did not answer within 10 s") }
                usleep(50_000)
            }
        }

        deinit {
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
        }

        @discardableResult
        func mpc(_ arguments: [String]) throws -> (status: Int32, output: String) {
            try runToEnd(URL(fileURLWithPath: "/usr/bin/mpc"), ["-h", socket] + arguments)
        }
    }

    /// hushd with its mix in a scratch WAV, and mpd playing a song of 440 Hz `seconds` long through it, its stream
    /// running.
    static func playing(seconds: Double) throws -> (ScratchDirectory, HushdProcess, MusicPlayer) {
        let scratch = try ScratchDirectory(prefix: "hush-mpd")
        let hushd = try HushdProcess(fallback: scratch.path + "/mix.wav")
        let player = try MusicPlayer(directory: scratch.path + "/mpd", hushSocket: hushd.socket)
        try ALSADeviceTests.tone(player.directory + "/music/song.wav", hertz: 440, seconds: seconds, rate: 44100)
        try player.mpc(["update", "--wait"])
        try player.mpc(["add", "song.wav"])
        let play = try player.mpc(["play"])
        #expect(play.status == 0, "\(play.output)")
        try ALSADeviceTests.wait("mpd's stream running", hushd) {
            ALSADeviceTests.streams(hushd).first?["state"] as? String == "running"
        }
        return (scratch, hushd, player)
    }

    @Test("mpd plays through hush:music; a ringtone holds it and it goes on after")
    func mpdPlays() throws {
        try ALSADeviceTests.requireTools()
        try ALSADeviceTests.retaking("mpd through hush:music") {
            let (scratch, hushd, player) = try Self.playing(seconds: 3)
            let wav = scratch.path + "/mix.wav"
            func stream() -> [String: Any]? { ALSADeviceTests.streams(hushd).first }
            #expect(stream()?["name"] as? String == "mpd" || stream()?["name"] as? String == "output:hush")
            #expect(stream()?["rate"] as? Int == 44100, "mpd plays the file's rate; hushd converts")
            usleep(500_000)
            // A ringtone takes the floor: mpd's writes block, and it goes on where it was after the ring.
            let ringer = try hushd.connect()
            let ring = try ringer.call(
                #""command":"activate","bus":"ringer","category":"soloAmbient","transient":true"#
            )
            let ringSession = try #require(ring["session"] as? Int)
            try ALSADeviceTests.wait("mpd held", hushd) { stream()?["state"] as? String == "held" }
            usleep(700_000)
            _ = try ringer.call(#""command":"deactivate","session":\#(ringSession),"notifyOthers":true"#)
            try ALSADeviceTests.wait("mpd released", hushd) { stream()?["state"] as? String == "running" }
            // The hold was the policy's, not mpd's lateness (R23): no underrun, so mpd was told of none.
            let underrunsAfterHold = stream()?["underruns"] as? Int ?? -1
            try ALSADeviceTests.wait("the song's end", hushd, seconds: 15) {
                (try? player.mpc(["status"]))?.output.contains("[playing]") == false
            }
            _ = hushd.stop()
            let levels = ALSADeviceTests.levels(of: 440, in: try ALSADeviceTests.mix(wav))
            let heard = levels.filter { $0 > -60 }.count
            print("mpd through hush: the song heard \(heard * 20) ms of 3000, loudest \(levels.max() ?? -240) dBFS")
            // mpd lets the ring run dry for a moment after a song's last frame, before it drains (its silence
            // timer): an underrun after the song that hushd counts and nobody hears; it matters only if the song
            // came out short. mpd may pad a little; a ringtone's hold must not lose the song's middle.
            return ALSADeviceTests.judge(
                late: ALSADeviceTests.lateClient(pid: player.process.processIdentifier, log: hushd.logPath),
                [
                    (heard >= 149 && heard <= 153, "mpd's song in the mix: \(heard * 20) ms of 3000"),
                    (underrunsAfterHold == 0, "R23: a ringtone's hold is not an underrun: \(underrunsAfterHold)"),
                ]
            )
        }
    }

    @Test("mpd stopped for 1 s mid-song is told of the underrun (R23), recovers on its own and plays on")
    func mpdRecovers() throws {
        try ALSADeviceTests.requireTools()
        try ALSADeviceTests.retaking("mpd starved mid-song") {
            let (scratch, hushd, player) = try Self.playing(seconds: 4)
            let wav = scratch.path + "/mix.wav"
            func stream() -> [String: Any]? { ALSADeviceTests.streams(hushd).first }
            usleep(1_000_000)
            // mpd's whole process stops: its buffer (hush's ring) runs dry well before it goes on.
            kill(player.process.processIdentifier, SIGSTOP)
            usleep(1_000_000)
            kill(player.process.processIdentifier, SIGCONT)
            let underruns = (stream()?["underruns"] as? Int) ?? 0
            try ALSADeviceTests.wait("mpd to prepare its stream again", hushd) {
                ((try? String(contentsOfFile: hushd.logPath, encoding: .utf8)) ?? "").contains("prepared again after")
            }
            let playing = (try? player.mpc(["status"]))?.output.contains("[playing]") ?? false
            try ALSADeviceTests.wait("the song's end", hushd, seconds: 15) {
                (try? player.mpc(["status"]))?.output.contains("[playing]") == false
            }
            _ = hushd.stop()
            let levels = ALSADeviceTests.levels(of: 440, in: try ALSADeviceTests.mix(wav))
            // The song after the stop: from its first window, the gap the stop made, and what is heard after it.
            let first = levels.firstIndex { $0 > -60 } ?? levels.count
            let gap = levels[first...].firstIndex { $0 < -60 } ?? levels.count
            let before = gap - first
            let after = levels[gap...].filter { $0 > -60 }.count
            print(
                "mpd stopped 1 s mid-song: hushd counted \(underruns) underrun(s); mpd still playing: \(playing); "
                    + "\(before * 20) ms of the song before the gap, \(after * 20) ms after it"
            )
            #expect(underruns >= 1, "hushd counted the starvation")
            #expect(playing, "mpd recovered on its own and still plays")
            #expect(before * 20 < 2000, "the gap is where mpd stopped: \(before * 20) ms into the song")
            #expect(after * 20 >= 1500, "the song goes on after the gap: \(after * 20) ms")
            return nil
        }
    }
}
