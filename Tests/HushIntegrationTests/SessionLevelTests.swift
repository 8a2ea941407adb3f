import Foundation
import HushAudioFile
import HushTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A session's own level (policy R26) on the real hushd: set on the control socket and through the `hush` ALSA
/// device's `GAIN=`, measured on what hushd wrote for the speaker (its WAV fallback, paced like a device). The
/// level is a gain under the bus, and the system volume still moves the session by the curve's step.
@Suite("a session's own level on the real hushd (R26)", .serialized)
struct SessionLevelTests {
    /// A stretch of the mix at one steady level: where it starts (in frames) and its RMS level in dBFS.
    struct Plateau: CustomStringConvertible {
        var start: Int
        var frames: Int
        var decibels: Double
        var description: String { "\(start)+\(frames): \(String(format: "%.3f", decibels)) dBFS" }
    }

    /// The steady stretches of `samples` (interleaved, `channels`), at least `minimum` frames long: blocks of 480
    /// frames (10 ms) whose RMS stays within 0.02 dB of the stretch's first, silence left out. A stretch's level
    /// is the RMS over its blocks but the first and last (a ramp's tail may touch them).
    static func plateaus(_ samples: [Int16], channels: Int, minimum: Int = 9600) -> [Plateau] {
        let block = 480
        let blocks = samples.count / channels / block
        let levels = (0..<blocks).map { index -> Double in
            var sum = 0.0
            for frame in index * block..<(index + 1) * block {
                let value = Double(samples[frame * channels]) / 32768
                sum += value * value
            }
            return sum == 0 ? -.infinity : 10 * log10(sum / Double(block))
        }
        var found: [Plateau] = []
        var first = 0
        while first < blocks {
            var last = first
            while last + 1 < blocks, levels[first].isFinite, abs(levels[last + 1] - levels[first]) < 0.02 { last += 1 }
            let count = last - first + 1
            if levels[first].isFinite, count * block >= minimum, count > 2 {
                let inner = levels[(first + 1)...(last - 1)].map { pow(10, $0 / 10) }
                let mean = inner.reduce(0, +) / Double(inner.count)
                found.append(Plateau(start: first * block, frames: count * block, decibels: 10 * log10(mean)))
            }
            first = last + 1
        }
        return found
    }

    @Test("on the socket: -10 dB is 10.00 dB under, the volume moves it by the curve's step, 0 dB returns")
    func socketLevel() throws {
        let scratch = try ScratchDirectory(prefix: "hush-level")
        let mix = scratch.path + "/mix.wav"
        let hushd = try HushdProcess(fallback: mix)
        let app = try hushd.connect()
        let activated = try app.call(#""command":"activate","bus":"music","category":"playback","name":"levels""#)
        let session = try #require(activated["session"] as? Int, "\(activated)")
        #expect(try app.call(#""command":"play","session":\#(session),"tone":1000,"loop":true"#)["ok"] as? Bool == true)
        usleep(700_000)
        let down = try app.call(#""command":"level","session":\#(session),"gain":-10"#)
        #expect(down["ok"] as? Bool == true, "\(down)")
        let shown = try hushd.status()["sessions"] as? [[String: Any]]
        #expect(shown?.first?["gain"] as? Double == -10, "status shows the level: \(shown ?? [])")
        usleep(700_000)
        #expect(try app.call(#""command":"volume","step":12"#)["ok"] as? Bool == true)
        usleep(700_000)
        #expect(try app.call(#""command":"level","session":\#(session),"gain":0"#)["ok"] as? Bool == true)
        usleep(700_000)
        // Refused: above 0 dB, and another connection's session.
        let loud = try app.call(#""command":"level","session":\#(session),"gain":6"#)
        #expect((loud["error"] as? [String: Any])?["code"] as? String == "invalid-value", "\(loud)")
        let other = try hushd.connect()
        let foreign = try other.call(#""command":"level","session":\#(session),"gain":-20"#)
        #expect((foreign["error"] as? [String: Any])?["code"] as? String == "not-your-session", "\(foreign)")
        _ = try app.call(#""command":"deactivate","session":\#(session)"#)
        #expect(hushd.stop() == 0)
        #expect(hushd.log.contains("[R26]"), "the decision is logged:\n\(hushd.log)")

        let (samples, channels, rate) = try SoundFile.readPCM16(mix)
        #expect(rate == 48000)
        let found = Self.plateaus(samples, channels: channels)
        print("levels on the socket: \(found)")
        try #require(found.count == 4, "four steady levels (0 dB, -10 dB, volume 12, 0 dB): \(found)")
        // The default curve: step 8 is -24 dB, step 12 is -11 dB.
        let step = 13.0
        #expect(abs(found[1].decibels - found[0].decibels + 10) <= 0.05, "the level: \(found)")
        #expect(abs(found[2].decibels - found[1].decibels - step) <= 0.05, "the volume moves it by the step: \(found)")
        #expect(abs(found[3].decibels - found[2].decibels - 10) <= 0.05, "back to 0 dB: \(found)")
        #expect(abs(found[3].decibels - found[0].decibels - step) <= 0.05, "and the 0 dB session by the same step")
        // The tone is at half scale: -6.02 dBFS peak, -9.03 dBFS RMS, at -24 dB.
        #expect(abs(found[0].decibels - (-9.03 - 24)) <= 0.1, "absolute: \(found[0])")
    }

    @Test("through the hush device: aplay with GAIN=-10 plays 10.00 dB under the same file with no GAIN")
    func deviceLevel() throws {
        try ALSADeviceTests.requireTools()
        let scratch = try ScratchDirectory(prefix: "hush-level-alsa")
        let mix = scratch.path + "/mix.wav"
        let tone = scratch.path + "/tone.wav"
        try ALSADeviceTests.tone(tone, hertz: 1000, seconds: 1, rate: 48000)
        let hushd = try HushdProcess(fallback: mix)
        for device in ["hush:CATEGORY=ambient", "hush:CATEGORY=ambient,GAIN=-10", "hush:CATEGORY=ambient,GAIN=-0.5dB"] {
            let aplay = try ALSADeviceTests.Application(
                "/usr/bin/aplay",
                ["-q", "-D", device, tone],
                socket: hushd.socket
            )
            let finished = aplay.finish(within: 60)
            #expect(finished?.status == 0, "\(device): \(aplay.text)")
            usleep(300_000)  // a gap of silence between the plays
        }
        let refused = try ALSADeviceTests.Application(
            "/usr/bin/aplay",
            ["-q", "-D", "hush:CATEGORY=ambient,GAIN=3", tone],
            socket: hushd.socket
        )
        let ended = refused.finish(within: 60)
        #expect(ended?.status != 0, "GAIN=3 is refused")
        #expect(refused.text.contains("GAIN is the stream's own level in dB, from -96 to 0"), "\(refused.text)")
        #expect(hushd.stop() == 0)

        let (samples, channels, _) = try SoundFile.readPCM16(mix)
        let found = Self.plateaus(samples, channels: channels)
        print("levels through the hush device: \(found)")
        try #require(found.count == 3, "three plays at three levels: \(found)")
        #expect(abs(found[1].decibels - found[0].decibels + 10) <= 0.05, "GAIN=-10: \(found)")
        #expect(abs(found[2].decibels - found[0].decibels + 0.5) <= 0.05, "GAIN=-0.5dB: \(found)")
    }
}
