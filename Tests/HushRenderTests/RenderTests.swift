import Foundation
import HushAudioFile
import HushCore
import HushRender
import HushTesting
import Testing

/// `hush-render` over scenarios that exercise the policy's rules; every check listens to the rendered audio.
/// Tones: music 440 Hz, effect 1000 Hz, ringer 1500 Hz, a ducking prompt 2500 Hz, each at -6 dBFS.
@Suite("hush-render: the rules, heard")
struct RenderTests {
    struct Rendered {
        var left: [Float]
        var decisions: [ScenarioRenderer.LoggedDecision]
        var samples: [Int16]

        /// The level of `hz` between two times, in dBFS.
        func level(_ hz: Double, from start: Double, to end: Double) -> Double {
            ToneAnalysis.level(of: hz, in: left[Int(start * 48000)..<Int(end * 48000)], sampleRate: 48000)
        }
    }

    static func render(_ text: String) throws -> Rendered {
        let scenario = try Scenario.parse(text, file: "test.txt")
        let renderer = ScenarioRenderer(scenario: scenario)
        let samples = try renderer.render()
        let left = stride(from: 0, to: samples.count, by: 2).map { Float(samples[$0]) / 32767 }
        return Rendered(left: left, decisions: renderer.decisions, samples: samples)
    }

    static let system8 = -24.0 - 6.02  // a -6 dBFS tone at system volume 8 (-24 dB)

    @Test("R1: silence mutes the effect, not the music")
    func silence() throws {
        let out = try Self.render(
            """
            0 activate 1 music playback tone=440 loop
            0 activate 2 effect ambient tone=1000 loop
            0 play 1
            0 play 2
            1 silence on
            2 silence off
            3 end
            """
        )
        #expect(abs(out.level(440, from: 0.2, to: 0.9) - Self.system8) < 0.2)
        #expect(abs(out.level(1000, from: 0.2, to: 0.9) - Self.system8) < 0.2)
        #expect(out.level(1000, from: 1.03, to: 1.95) < -100, "the effect is silent")
        #expect(abs(out.level(440, from: 1.03, to: 1.95) - Self.system8) < 0.2, "the music is not")
        #expect(abs(out.level(1000, from: 2.1, to: 2.9) - Self.system8) < 0.2, "the effect is back")
    }

    @Test("R5: not one period of music after an unplug; it stays paused after re-plug")
    func unplug() throws {
        let out = try Self.render(
            """
            0 plug
            0 activate 1 music playback tone=440 loop
            0 play 1
            1 unplug
            1.5 plug
            2 end
            """
        )
        #expect(abs(out.level(440, from: 0.2, to: 0.99) - Self.system8) < 0.2)
        // The unplug lands on the period starting at 1.000 s; the 1 ms fade ends inside it.
        let unplug = 48000
        #expect(out.left[(unplug + 64)...].allSatisfy { $0 == 0 }, "music after the unplug's period")
        #expect(out.left[unplug..<(unplug + 64)].map { abs($0) }.max()! <= 0.04, "the fade starts at the old level")
        let pause = out.decisions.firstIndex { $0.rule == "R5" && $0.command.hasPrefix("pause") }
        let route = out.decisions.firstIndex { $0.rule == "R5" && $0.command.hasPrefix("select route") }
        #expect(pause != nil && route != nil && pause! < route!, "the pause is decided before the route moves")
    }

    @Test("R4: plugging keeps the music playing without a gap")
    func plug() throws {
        let out = try Self.render(
            """
            0 activate 1 music playback tone=440 loop
            0 play 1
            1 plug
            2 end
            """
        )
        let quietPeriods = stride(from: 4800, to: 96000 - 64, by: 64).filter { start in
            out.left[start..<(start + 64)].allSatisfy { $0 == 0 }
        }
        #expect(quietPeriods.isEmpty)
    }

    @Test("R2: the ringer level follows the ringer volume, and only it")
    func ringerVolume() throws {
        let out = try Self.render(
            """
            0 activate 1 ringer playback tone=1500 loop
            0 play 1
            1 ringer 16
            2 volume 3
            3 end
            """
        )
        #expect(abs(out.level(1500, from: 0.2, to: 0.95) - (-17.5 - 6.02)) < 0.2, "ringer 10 is -17.5 dB")
        #expect(abs(out.level(1500, from: 1.2, to: 1.95) - (-6.02)) < 0.2, "ringer 16 is 0 dB")
        #expect(abs(out.level(1500, from: 2.2, to: 2.95) - (-6.02)) < 0.2, "the system volume does not move it")
    }

    @Test("R3: holding volume up raises the music by the curve")
    func holdVolume() throws {
        let out = try Self.render(
            """
            0 activate 1 music playback tone=440 loop
            0 play 1
            1 press up
            2.05 release
            3 end
            """
        )
        // Held 1.05 s: one step at once, then at 0.5 s and every 100 ms after: 8 → 15 (-2.75 dB).
        #expect(abs(out.level(440, from: 2.2, to: 2.95) - (-2.75 - 6.02)) < 0.2)
        #expect(out.decisions.filter { $0.rule == "R3" && $0.command.hasPrefix("set music bus gain") }.count == 7)
    }

    @Test("R6, R8, R9: a ringtone interrupts the music; deactivate with notify brings it back")
    func ringtoneInterrupts() throws {
        let out = try Self.render(
            """
            0 activate 1 music playback tone=440 loop
            0 play 1
            1 activate 2 ringer soloAmbient tone=1500 loop
            1 play 2
            2 deactivate 2 notify
            3 end
            """
        )
        #expect(out.level(440, from: 1.05, to: 1.95) < -100, "the music is interrupted")
        #expect(abs(out.level(1500, from: 1.05, to: 1.95) - (-17.5 - 6.02)) < 0.2, "the ringtone sounds")
        #expect(abs(out.level(440, from: 2.1, to: 2.95) - Self.system8) < 0.2, "the music resumes")
        #expect(out.level(1500, from: 2.1, to: 2.95) < -100)
    }

    @Test("R7, R10: ducking lowers the music 14 dB; a vanished ducking client restores it")
    func duck() throws {
        let out = try Self.render(
            """
            0 activate 1 music playback tone=440 loop
            0 play 1
            1 activate 2 effect playback duck tone=2500 loop client=7
            1 play 2
            2 gone 7
            3 end
            """
        )
        let before = out.level(440, from: 0.2, to: 0.95)
        let ducked = out.level(440, from: 1.2, to: 1.95)
        #expect(abs((before - ducked) - 14) < 0.2, "ducked by \(before - ducked) dB")
        #expect(abs(out.level(440, from: 2.6, to: 2.95) - before) < 0.2, "restored after the 500 ms release")
    }

    @Test("R26: a session's own level sits under the other by its decibels; the volume moves both by the step")
    func sessionLevel() throws {
        let text = try String(
            contentsOfFile: Self.scenarioPath.replacingOccurrences(
                of: "silence-and-unplug.txt",
                with: "session-level.txt"
            ),
            encoding: .utf8
        )
        let out = try Self.render(text)
        let prompt = out.level(1000, from: 0.2, to: 0.95)
        let clicks = out.level(2500, from: 0.2, to: 0.95)
        #expect(abs(prompt - Self.system8) < 0.05, "the prompt at 0 dB: \(prompt) dBFS")
        #expect(abs(prompt - clicks - 10) < 0.05, "the clicks 10 dB under: \(prompt - clicks)")
        // Volume 12 is -11 dB on the default curve: 13 dB up from 8, for both.
        #expect(abs(out.level(1000, from: 1.2, to: 1.95) - prompt - 13) < 0.05)
        #expect(abs(out.level(2500, from: 1.2, to: 1.95) - clicks - 13) < 0.05)
        #expect(abs(out.level(2500, from: 2.2, to: 2.95) - (clicks + 13 - 10)) < 0.05, "level -20")
        #expect(abs(out.level(2500, from: 3.2, to: 3.95) - out.level(1000, from: 3.2, to: 3.95)) < 0.05, "level 0")
        #expect(out.decisions.filter { $0.rule == "R26" }.count == 3, "activation at -10 dB, then two changes")
    }

    @Test("the same scenario gives the same bytes, and the events name their rules")
    func deterministic() throws {
        let text = try String(contentsOfFile: Self.scenarioPath, encoding: .utf8)
        let first = try Self.render(text)
        let second = try Self.render(text)
        #expect(first.samples == second.samples)
        #expect(first.decisions == second.decisions)
        let rules = Set(first.decisions.map(\.rule))
        for rule in ["R1", "R4", "R5", "R6", "R7", "R8", "R9", "R12"] { #expect(rules.contains(rule), "\(rule)") }
    }

    static var scenarioPath: String {
        var path = #filePath
        for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }
        return path + "/docs/scenarios/silence-and-unplug.txt"
    }

    @Test("bad scenario lines are refused with file and line")
    func badLines() {
        let cases: [(String, String)] = [
            (
                "0 activate 1 music playback\nsoon play 1",
                "test.txt:2: a line starts with its time in seconds ('1.5', '+0.25'), not 'soon'"
            ),
            ("1 play 1\n0.5 play 1", "test.txt:2: time 0.500s is before the previous line's 1.000s"),
            ("0 play 1 loop", "test.txt:1: sound=, stream=, tone=, capture= and loop go with activate"),
            (
                "0 status",
                "test.txt:1: 'status' has no meaning in a scenario: a scenario's lines are what happens, at their times"
            ),
            ("0 volume 99", "test.txt:1: volume takes up, down or a step from 0 to 16, not '99'"),
            (
                "0 wait 100",
                "test.txt:1: a scenario's lines carry their times: write +0.5 before the next line instead of wait"
            ),
            (
                "0 play tone 440",
                "test.txt:1: in a scenario a sound goes with its session: activate ID BUS CATEGORY tone=HZ or "
                    + "sound=FILE"
            ),
            ("0 activate 1 music playback tone=99999", "test.txt:1: tone= takes a frequency in Hz below 20000"),
            // Found by Fuzz/ (fuzz-scenario): lines after 'end' were accepted and never rendered.
            (
                "0 activate 1 music playback\n2 end\n3 play 1",
                "test.txt:3: this line comes after 'end' on line 2; 'end' must be the last line"
            ),
            ("1 end\n1 end", "test.txt:2: this line comes after 'end' on line 1; 'end' must be the last line"),
            (
                "86000 up\n+400 down",
                "test.txt:2: time 86400.000s is a day or more after the start; a scenario lasts less than a day"
            ),
        ]
        for (text, message) in cases {
            #expect {
                _ = try Scenario.parse(text, file: "test.txt")
            } throws: { error in
                (error as? Scenario.ParseError)?.description == message
            }
        }
    }

    @Test("relative times that add up past Int64 nanoseconds are refused, not a trap")
    func relativeTimesOverflow() {
        // 110 000 lines of almost a day each: 9.5e18 ns in all, past Int64.max, before the fix a crash.
        let text = String(repeating: "+86399 up\n", count: 110_000)
        #expect {
            _ = try Scenario.parse(text, file: "long.txt")
        } throws: { error in
            (error as? Scenario.ParseError)?.line == 2
        }
    }

    @Test("a missing sound file stops the render naming the line and the file")
    func missingSound() throws {
        let scenario = try Scenario.parse("0 activate 1 music playback sound=/nonexistent/a.wav", file: "s.txt")
        #expect {
            _ = try ScenarioRenderer(scenario: scenario).render()
        } throws: { error in
            "\(error)" == "line 1: cannot use sound file '/nonexistent/a.wav': no such file"
        }
    }
}

@Suite("hush-render: streamed files")
struct StreamRenderTests {
    @Test("a streamed file plays at the bus level, ends, and a stop then play starts it from the top")
    func streamed() throws {
        let directory = NSTemporaryDirectory() + "hush-stream-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        // One second of 440 Hz, then one of 880 Hz, at 44.1 kHz: where the stream is can be heard.
        let rate = 44100
        let samples = (0..<(2 * rate)).map { n -> Float in
            0.5 * Float(sin(2 * Double.pi * (n < rate ? 440 : 880) * Double(n) / Double(rate)))
        }
        try SoundFile.write(
            AudioBuffer(interleaved: samples, channels: 1, sampleRate: rate),
            to: directory + "/music.wav"
        )
        let out = try RenderTests.render(
            """
            0 activate 1 music playback stream=\(directory)/music.wav
            0 play 1
            1.5 stop 1
            1.6 play 1
            4.5 end
            """
        )
        #expect(abs(out.level(440, from: 0.2, to: 0.9) - RenderTests.system8) < 0.3, "first second: 440 Hz")
        #expect(abs(out.level(880, from: 1.1, to: 1.45) - RenderTests.system8) < 0.3, "second second: 880 Hz")
        #expect(
            abs(out.level(440, from: 1.8, to: 2.5) - RenderTests.system8) < 0.3,
            "after stop and play: the top again"
        )
        #expect(out.level(440, from: 3.8, to: 4.4) < -100 && out.level(880, from: 3.8, to: 4.4) < -100, "it ended")
    }
}
