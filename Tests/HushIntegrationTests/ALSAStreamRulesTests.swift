import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The policy's rules applied to applications' own audio: `aplay` streams through the `hush` ALSA device into a
/// real hushd, whose console (on a pipe) stands in for the switch, the jack, media keys and a ringtone's session.
/// Judged by hushd's mix (its WAV fallback, paced like a device), by the streams' states in `status`, and by how
/// long the applications took.
@Suite("Rules through the hush ALSA device", .serialized)
struct ALSAStreamRulesTests {
    typealias Application = ALSADeviceTests.Application
    static let rate = ALSADeviceTests.mixRate

    /// hushd with its console on a pipe (HushdProcess.swift); the ALSA tests need the built plugin too.
    static func consoleHushd() throws -> ConsoleHushd {
        try ALSADeviceTests.requireTools()
        return try ConsoleHushd()
    }

    /// 20 ms windows in which `hertz` is louder than `floor`.
    static func windows(of hertz: Double, in mix: [Float], above floor: Double = -60) -> Int {
        ALSADeviceTests.levels(of: hertz, in: mix).filter { $0 > floor }.count
    }

    @Test("a ringtone interrupts an aplay music stream: held (no frame lost), released by deactivate with notify")
    func interruptionHoldsAndReleases() throws {
        try ALSADeviceTests.retaking("an interrupted aplay stream") {
            let hushd = try Self.consoleHushd()
            let file = hushd.scratch.path + "/music.wav"
            try ALSADeviceTests.tone(file, hertz: 440, seconds: 3, rate: 44100)
            let aplay = try Application("/usr/bin/aplay", ["-q", "-D", "hush:music", file], socket: hushd.socket)
            try hushd.wait("the music running") { hushd.state(of: aplay) == "running" }
            usleep(500_000)
            hushd.type("activate ringer soloAmbient transient")
            try hushd.wait("the music held by the ringtone (R6)") { hushd.state(of: aplay) == "held" }
            let ringtone = try #require(hushd.newestConsoleSession())
            usleep(1_000_000)
            #expect(hushd.state(of: aplay) == "held", "held while the ringtone has the floor")
            hushd.type("deactivate \(ringtone) notify")
            try hushd.wait("the music released (R8, R9)") { hushd.state(of: aplay) == "running" }
            let result = try #require(aplay.finish(within: 15), "aplay hung: \(aplay.text)")
            #expect(result.status == 0, "aplay: \(aplay.text)")
            // The hold is a paused device: aplay took the hold's length longer, and every frame was played.
            #expect(result.seconds > 3.9, "aplay took \(result.seconds) s for 3 s of music held for 1 s")
            let mix = try hushd.finish()
            let heard = Self.windows(of: 440, in: mix)
            print("interrupted aplay: \(result.seconds) s, music heard \(heard * 20) ms of 3000")
            return ALSADeviceTests.judge(
                late: ALSADeviceTests.lateClient(pid: aplay.process.processIdentifier, log: hushd.log),
                [
                    (
                        heard >= 149 && heard <= 152,
                        "the music played \(heard * 20) ms of its 3000: none lost, none doubled"
                    )
                ]
            )
        }
    }

    @Test("without notifyOthers the interrupted stream stays held")
    func interruptionWithoutNotifyStaysHeld() throws {
        let hushd = try Self.consoleHushd()
        let file = hushd.scratch.path + "/music.wav"
        try ALSADeviceTests.tone(file, hertz: 440, seconds: 3, rate: 48000)
        let aplay = try Application("/usr/bin/aplay", ["-q", "-D", "hush:music", file], socket: hushd.socket)
        try hushd.wait("the music running") { hushd.state(of: aplay) == "running" }
        hushd.type("activate ringer soloAmbient transient")
        try hushd.wait("the music held") { hushd.state(of: aplay) == "held" }
        let ringtone = try #require(hushd.newestConsoleSession())
        hushd.type("deactivate \(ringtone)")
        try hushd.wait("the ringtone gone") { hushd.newestConsoleSession() == nil }
        usleep(1_500_000)
        #expect(hushd.state(of: aplay) == "held", "no notifyOthers: the music does not resume on its own (R8)")
        #expect(aplay.process.isRunning, "aplay waits like on a paused device")
    }

    @Test("the silence switch mutes an ambient stream, which still finishes on time")
    func silenceMutesAmbient() throws {
        let hushd = try Self.consoleHushd()
        hushd.type("silence on")
        try hushd.wait("silence on") { (try? hushd.status())?["silenceSwitch"] as? String == "silent" }
        let file = hushd.scratch.path + "/click.wav"
        try ALSADeviceTests.tone(file, hertz: 1000, seconds: 1, rate: 22050)
        let aplay = try Application(
            "/usr/bin/aplay",
            ["-q", "-D", "hush:CATEGORY=ambient", file],
            socket: hushd.socket
        )
        let result = try #require(aplay.finish(within: 15), "aplay hung: \(aplay.text)")
        #expect(result.status == 0, "aplay: \(aplay.text)")
        #expect(result.seconds > 0.9 && result.seconds < 6, "consumed at the real rate: \(result.seconds) s")
        let mix = try hushd.finish()
        let loudest = ALSADeviceTests.levels(of: 1000, in: mix).max() ?? -240
        print("ambient under silence: \(result.seconds) s, loudest \(loudest) dBFS")
        #expect(loudest < -90, "R1: silenced, \(loudest) dBFS")
    }

    @Test("a duckOthers stream lowers the music by the duck depth; kill -9 of its client undoes the duck")
    func duckAndClientDeath() throws {
        try ALSADeviceTests.retaking("a duck by an aplay stream") {
            let hushd = try Self.consoleHushd()
            let music = hushd.scratch.path + "/music.wav"
            let prompt = hushd.scratch.path + "/prompt.wav"
            try ALSADeviceTests.tone(music, hertz: 440, seconds: 4, rate: 48000)
            try ALSADeviceTests.tone(prompt, hertz: 2000, seconds: 10, rate: 16000)
            let player = try Application("/usr/bin/aplay", ["-q", "-D", "hush:music", music], socket: hushd.socket)
            try hushd.wait("the music running") { hushd.state(of: player) == "running" }
            usleep(700_000)
            let ducking = try Application(
                "/usr/bin/aplay",
                ["-q", "-D", "hush:CATEGORY=playback,OPTIONS=duckOthers,NAME=prompt", prompt],
                socket: hushd.socket
            )
            try hushd.wait("the prompt running") { hushd.state(of: ducking) == "running" }
            usleep(1_000_000)
            kill(ducking.process.processIdentifier, SIGKILL)
            _ = ducking.finish(within: 5)
            let result = try #require(player.finish(within: 15), "aplay hung: \(player.text)")
            #expect(result.status == 0)
            let mix = try hushd.finish()
            let levels = ALSADeviceTests.levels(of: 440, in: mix)
            let prompts = ALSADeviceTests.levels(of: 2000, in: mix)
            let promptWindows = prompts.indices.filter { prompts[$0] > -60 }
            let first = try #require(promptWindows.first)
            let last = try #require(promptWindows.last)
            // Full level before the prompt; ducked while it plays (after the 100 ms attack); back after the 500 ms
            // release that follows its client's death (R7, R10).
            let before = levels[max(0, first - 20)..<first].max() ?? -240
            let during = levels[(first + 10)..<last].max() ?? -240
            let after = levels[(last + 30)..<min(levels.count, last + 50)].min() ?? -240
            print("duck: before \(before), during \(during), after \(after) dBFS")
            return ALSADeviceTests.judge(
                late: ALSADeviceTests.lateClient(pid: player.process.processIdentifier, log: hushd.log),
                [
                    (abs((before - during) - 14) < 1.5, "ducked by \(before - during) dB, the depth is 14"),
                    (abs(after - before) < 1, "the duck undone after kill -9: \(after) vs \(before)"),
                ]
            )
        }
    }

    @Test("unplugging holds a playback stream; a media key releases it (R5, R11)")
    func unplugHolds() throws {
        try ALSADeviceTests.retaking("an unplugged aplay stream") {
            let hushd = try Self.consoleHushd()
            hushd.type("plug")
            try hushd.wait("plugged") { (try? hushd.status())?["jack"] as? String == "plugged" }
            let file = hushd.scratch.path + "/music.wav"
            try ALSADeviceTests.tone(file, hertz: 440, seconds: 2, rate: 48000)
            let aplay = try Application("/usr/bin/aplay", ["-q", "-D", "hush:music", file], socket: hushd.socket)
            try hushd.wait("the music running") { hushd.state(of: aplay) == "running" }
            hushd.type("unplug")
            try hushd.wait("the music held (R5)") { hushd.state(of: aplay) == "held" }
            usleep(500_000)
            #expect(hushd.state(of: aplay) == "held")
            hushd.type("key play")
            try hushd.wait("the music released by the key (R11)") { hushd.state(of: aplay) == "running" }
            let result = try #require(aplay.finish(within: 15), "aplay hung: \(aplay.text)")
            #expect(result.status == 0)
            let mix = try hushd.finish()
            let heard = Self.windows(of: 440, in: mix)
            return ALSADeviceTests.judge(
                late: ALSADeviceTests.lateClient(pid: aplay.process.processIdentifier, log: hushd.log),
                [(heard >= 99 && heard <= 102, "the music played \(heard * 20) ms of its 2000")]
            )
        }
    }
}
