import Foundation
import HushAudioFile
import HushTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Hearing safety on the real hushd (policy R27, R29, R30): its mix measured as it leaves for a private route,
/// turned into dB(A) at the ear by the route's calibration; a level over the limit warns (an event, a warning in the
/// log, the package's warning sound) and brings the volume down no faster than 1 dB/s, heard in what hushd wrote (its
/// WAV fallback, paced like a device: the headphones' own PCM does not open here, so their sound stays on the
/// fallback).
@Suite("hearing safety on the real hushd (R27, R29, R30)", .serialized)
struct HearingSafetyTests {
    @Test("a 94 dB(A) tone over a 90 dB(A) limit: warned within seconds, then down to 85 dB(A), never a jump")
    func loudHeadphones() throws {
        let scratch = try ScratchDirectory(prefix: "hush-hearing")
        let mix = scratch.path + "/mix.wav"
        // Headphones at 100 dB(A) full scale: a half-scale 1 kHz tone at volume 16 is 94 dB(A) at the ear.
        let hushd = try Self.hushd(
            hearing: "momentary_limit_dba = 90\nmomentary_seconds = 2",
            fallback: mix,
            packageSounds: ["hearing_warning": "hearing-warning.wav"]
        )
        let app = try hushd.connect()
        _ = try app.call(#""command":"subscribe","events":["hearing-warning","volume-changed"]"#)
        #expect(try app.call(#""command":"route","override":"headphones""#)["ok"] as? Bool == true)
        // R27: the headphones start at no more than 85 dB(A): step 10 at most (the default 8 is under it).
        #expect(try hushd.status()["systemVolume"] as? Int == 8)
        #expect(try app.call(#""command":"volume","step":16"#)["ok"] as? Bool == true)
        let activated = try app.call(#""command":"activate","bus":"music","category":"playback""#)
        let session = try #require(activated["session"] as? Int)
        _ = try app.call(#""command":"play","session":\#(session),"tone":1000,"loop":true"#)
        // More than 2 s over 90 dB(A), measured a second at a time: the warning, then the reduction to step 12
        // (0 dB - 11 dB: 94 - 11 = 83 dB(A), the first step at or under 85).
        let deadline = Date().addingTimeInterval(60)
        var volume = 16
        while Date() < deadline {
            volume = try hushd.status()["systemVolume"] as? Int ?? -1
            if volume == 12 { break }
            usleep(250_000)
        }
        // The last step's ramp began when the volume read 12 and takes 3.9 s; then a whole second is measured, and
        // hushd's loop hears of it within another.
        sleep(7)
        let status = try hushd.status()
        let hearing = status["hearing"] as? [String: Any] ?? [:]
        _ = try app.call(#""command":"deactivate","session":\#(session)"#)
        #expect(hushd.stop() == 0)
        #expect(volume == 12, "the volume came down to step 12: \(volume); log:\n\(hushd.log.suffix(3000))")
        let warnings = app.events.filter { $0.contains(#""event":"hearing-warning""#) }
        #expect(warnings.count == 1, "one warning: \(app.events)")
        #expect(warnings.first?.contains(#""kind":"loud""#) == true && warnings.first?.contains("headphones") == true)
        #expect(hushd.log.contains("warning: hearing:") || hushd.log.contains("hearing: "), "logged as a warning")
        #expect(hearing["measuring"] as? Bool == true && hearing["calibrated"] as? Bool == true, "\(hearing)")
        let level = hearing["decibelsA"] as? Double ?? 0
        #expect(abs(level - 83) <= 0.5, "status: the last second at the ear \(level) dB(A), 83 at step 12")
        #expect((hearing["dosePercent"] as? Double ?? 0) > 0)

        // What was heard: 100 ms windows never fall more than 0.1 dB (1 dB/s) from one to the next.
        let (samples, channels, rate) = try SoundFile.readPCM16(mix)
        let levels = Self.meanSquares(samples, channels: channels, rate: rate).map { $0 > 0 ? 10 * log10($0) : -200 }
        let loud = levels.indices.filter { levels[$0] > -40 }
        let first = try #require(loud.first, "the tone at volume 16 is in the mix")
        let last = try #require(loud.last)
        // Leave out the tone's fade-in and the deactivation's fade-out at the two ends.
        let steady = levels[(first + 2)...(last - 2)]
        let steps = zip(steady, steady.dropFirst()).map { $1 - $0 }
        let steepest = steps.min() ?? 0
        let total = levels[first + 5] - levels[last - 5]
        print(
            "hearing on the real hushd: \(String(format: "%.2f", total)) dB down, steepest 100 ms \(String(format: "%.3f", steepest)) dB"
        )
        #expect(steepest >= -0.1 - 0.02, "no faster than 1 dB/s: a 100 ms window fell \(steepest) dB")
        #expect(abs(total - 11) <= 0.5, "from step 16 to 12: 11 dB down, heard \(total)")

        // R30: the warning's sound, once, over the music: its notes (G6 1568 Hz, D6 1175 Hz, -24 dBFS in the file)
        // in the mix at the ringer volume, and its session ended with it. The windows where the tone starts and
        // stops are left out: an onset splatters energy at every frequency, G6's too.
        #expect(hushd.log.contains("is the hearing warning sound"), "the R30 decision is logged")
        #expect(hushd.log.contains("the hearing warning sound finished [R30]"), "its session ended with the sound")
        let ringer = status["ringerVolume"] as? Int ?? -1
        let edges = Set([first - 1, first, first + 1, last - 1, last, last + 1])
        let high = Self.toneWindows(samples, channels: channels, rate: rate, frequency: 1568)
            .filter { !edges.contains($0.window) }
        let low = Self.toneWindows(samples, channels: channels, rate: rate, frequency: 1175)
            .filter { !edges.contains($0.window) }
        let heard = high.filter { $0.amplitude > 1e-4 }
        #expect(heard.count >= 2 && low.filter { $0.amplitude > 1e-4 }.count >= 2, "the warning's notes in the mix")
        let loudest = high.map(\.amplitude).max() ?? 0
        print(
            "hearing warning sound: \(heard.count) windows of G6, loudest \(String(format: "%.4f", loudest)) at ringer \(ringer)"
        )
        // The ringer volume is its default, 10: -17.5 dB on the curve, so the file's 0.063 becomes 0.0084 — the
        // reduction of the system volume (to 12, -11 dB) did not take it down.
        #expect(ringer == 10, "the ringer volume at start")
        #expect(abs(loudest / 0.0084 - 1) < 0.1, "the notes at the ringer volume, not the system's: \(loudest)")

        // The week's dose survives the restart: written beside the volumes at the clean stop, read at the start.
        let dose = hearing["dosePercent"] as? Double ?? -1
        let state = try String(contentsOfFile: hushd.statePath, encoding: .utf8)
        #expect(state.contains("sound_dose = \""), "the state file keeps the dose:\n\(state)")
        try hushd.start()
        let restored = try hushd.status()["hearing"] as? [String: Any] ?? [:]
        #expect(abs((restored["dosePercent"] as? Double ?? -9) - dose) <= 0.05, "\(dose) % before, \(restored) after")
        #expect(hushd.log.contains("the week's sound dose restored from"), "said at start")
        #expect(hushd.stop() == 0)
    }

    @Test("headphones picked again start at 85 dB(A) (R27); presses never take them over a 90 dB(A) ceiling (R28)")
    func startLevelAndCeiling() throws {
        let scratch = try ScratchDirectory(prefix: "hush-ceiling")
        let mix = scratch.path + "/mix.wav"
        // Headphones at 100 dB(A) full scale and a toy's ceiling of 90: the highest step whose full-scale sine is at
        // most 90 dB(A) is 12 (-11 dB), the start limit's (85) is 10 (-17.5 dB).
        let hushd = try Self.hushd(hearing: "ceiling_dba = 90", fallback: mix)
        let app = try hushd.connect()
        func volume() throws -> Int { try hushd.status()["systemVolume"] as? Int ?? -1 }
        #expect(try app.call(#""command":"route","override":"headphones""#)["ok"] as? Bool == true)
        _ = try app.call(#""command":"volume","step":16"#)
        #expect(try volume() == 12, "R28: 16 asked, held at the ceiling's step")
        // The speaker and back: the remembered 12 comes down to the start limit's 10 before the first sample (R27).
        _ = try app.call(#""command":"route","override":"speaker""#)
        _ = try app.call(#""command":"route","override":"headphones""#)
        #expect(try volume() == 10, "R27: headphones start at step 10")
        let activated = try app.call(#""command":"activate","bus":"music","category":"playback""#)
        let session = try #require(activated["session"] as? Int)
        _ = try app.call(#""command":"play","session":\#(session),"tone":1000,"loop":true"#)
        usleep(1_500_000)
        // A person holds volume-up: a press every 100 ms, eight of them; the ceiling stops it at 12.
        var answers: [String] = []
        for _ in 0..<8 {
            let answer = try app.call(#""command":"volume","delta":1"#)
            answers.append("\((answer["volume"] as? [String: Any])?["step"] ?? answer["error"] ?? "?")")
            usleep(100_000)
        }
        usleep(1_500_000)
        _ = try app.call(#""command":"deactivate","session":\#(session)"#)
        #expect(try volume() == 12, "held at the ceiling: \(answers)")
        #expect(hushd.stop() == 0)
        #expect(hushd.log.contains("[R27]") && hushd.log.contains("[R28]"), "both decisions are logged")

        // What reached the headphones: the -6 dBFS tone at the volume's gain. Never above the ceiling's step; the
        // start limit's step heard first, then the ceiling's.
        let (samples, channels, rate) = try SoundFile.readPCM16(mix)
        // A sine's mean square is half its amplitude squared; the tone's amplitude is 0.5 times the volume's gain.
        let gains = Self.meanSquares(samples, channels: channels, rate: rate).map {
            $0 > 0 ? 20 * log10((2 * $0).squareRoot() / 0.5) : -200
        }
        let heard = gains.filter { $0 > -60 }
        let loudest = heard.max() ?? -200
        let atStart = heard.filter { abs($0 + 17.5) < 0.1 }.count
        let atCeiling = heard.filter { abs($0 + 11) < 0.1 }.count
        print(
            "ceiling on the real hushd: loudest gain \(String(format: "%.2f", loudest)) dB (a full-scale sine "
                + "\(String(format: "%.1f", 100 + loudest)) dB(A) at the ear, ceiling 90); \(atStart) windows at the "
                + "start limit's step, \(atCeiling) at the ceiling's"
        )
        #expect(loudest <= -11 + 0.05, "never above the ceiling's step (-11 dB): \(loudest)")
        #expect(
            atStart >= 10 && atCeiling >= 10,
            "the start limit's step, then the ceiling's: \(atStart), \(atCeiling)"
        )
    }

    /// hushd with headphones of 100 dB(A) full scale (neither route's PCM opens: the sound goes to `fallback`) and
    /// `hearing`'s keys in its `[hearing]` table.
    static func hushd(hearing: String, fallback: String, packageSounds: [String: String] = [:]) throws -> HushdProcess {
        try HushdProcess(
            extra: """
                [routes.speaker]
                pcm = "hw:CARD=HushNoSuchCard,DEV=0"

                [routes.headphones]
                pcm = "hw:CARD=HushNoHeadphones,DEV=0"
                full_scale_dba = 100

                [hearing]
                \(hearing)
                """,
            fallback: fallback,
            packageSounds: packageSounds
        )
    }

    /// The first channel's mean square in each 100 ms window.
    static func meanSquares(_ samples: [Int16], channels: Int, rate: Int) -> [Double] {
        let window = rate / 10
        return stride(from: 0, to: samples.count / channels - window + 1, by: window).map { start in
            var sum = 0.0
            for frame in start..<start + window {
                let value = Double(samples[frame * channels]) / 32768
                sum += value * value
            }
            return sum / Double(window)
        }
    }

    /// The amplitude of a sine at `frequency` in each 100 ms window of the first channel (Hann-windowed Goertzel).
    static func toneWindows(
        _ samples: [Int16],
        channels: Int,
        rate: Int,
        frequency: Double
    ) -> [(window: Int, amplitude: Double)] {
        let length = rate / 10
        let coefficient = 2 * cos(2 * Double.pi * frequency / Double(rate))
        var windows: [(Int, Double)] = []
        var window = 0
        while (window + 1) * length * channels <= samples.count {
            var (s1, s2, weights) = (0.0, 0.0, 0.0)
            for n in 0..<length {
                let hann = 0.5 - 0.5 * cos(2 * Double.pi * Double(n) / Double(length))
                let x = Double(samples[(window * length + n) * channels]) / 32768 * hann
                (s1, s2) = (x + coefficient * s1 - s2, s1)
                weights += hann
            }
            let power = s1 * s1 + s2 * s2 - coefficient * s1 * s2
            windows.append((window, 2 * power.squareRoot() / weights))
            window += 1
        }
        return windows
    }
}
