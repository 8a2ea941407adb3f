import Foundation
import HushAudioFile
import HushTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Unmodified applications other than aplay through the `hush` ALSA device into a real hushd: espeak-ng's own
/// audio output (libpcaudio, which falls back to ALSA without a PulseAudio server and opens the device `-d`
/// names), GStreamer's alsasink, and Python's sounddevice on Debian's PortAudio. `make test-tools` installs them
/// (make test does). Judged by hushd's mix (its WAV fallback, paced like a device), by what `status` said about the
/// applications' streams while they ran, and by how long the applications took.
@Suite("Real applications through the hush ALSA device: espeak-ng, GStreamer, sounddevice", .serialized)
struct ALSAApplicationsTests {
    typealias Application = ALSADeviceTests.Application
    static let rate = ALSADeviceTests.mixRate
    static let text = "The quick brown fox jumps over the lazy dog."

    static func require(_ tool: String, from package: String) throws {
        guard FileManager.default.isExecutableFile(atPath: tool) else {
            throw HushdTestFailure("\(tool) is missing: `make test-tools` (make test does) installs \(package)")
        }
    }

    // MARK: What hushd saw

    /// What hushd's `status` said about an application's streams while it ran.
    struct StreamWatch {
        /// When a stream of the application was first seen running.
        var firstRunning: Date?
        /// Each stream seen, as "direction category bus".
        var streams: Set<String> = []
    }

    /// Polls hushd's status every 10 ms until `application` ends (at most `seconds`), then returns how it ended
    /// (nil if it had to be killed) and what hushd said about its streams meanwhile.
    static func watch(
        _ application: Application,
        on hushd: ConsoleHushd,
        seconds: Double
    ) -> (result: (status: Int32, seconds: Double)?, watch: StreamWatch) {
        var watch = StreamWatch()
        let pid = Int(application.process.processIdentifier)
        let deadline = Date().addingTimeInterval(seconds)
        while application.process.isRunning && Date() < deadline {
            for stream in hushd.streams where stream["pid"] as? Int == pid {
                let fields = ["direction", "category", "bus"].map { stream[$0] as? String ?? "?" }
                watch.streams.insert(fields.joined(separator: " "))
                if watch.firstRunning == nil && stream["state"] as? String == "running" { watch.firstRunning = Date() }
            }
            usleep(10_000)
        }
        return (application.finish(within: 0.1), watch)
    }

    // MARK: Speech

    /// A second-order filter (the Audio EQ Cookbook's high- and low-pass, Q = 1/√2).
    /// How closely the mix's speech follows espeak-ng's own WAV (SpeechAnalysis.envelopeCorrelation).
    static func envelopeCorrelation(_ speech: Speech) -> Double {
        SpeechAnalysis.envelopeCorrelation(
            reference: speech.reference,
            referenceRate: speech.referenceRate,
            mix: speech.mix,
            mixRate: Self.rate
        )
    }

    /// One espeak-ng run through hush.
    struct Speech {
        /// espeak-ng's own WAV of the text (`-w`), left channel, and its rate.
        var reference: [Float]
        var referenceRate: Int
        /// hushd's mix, left channel.
        var mix: [Float]
        /// How long `espeak-ng -d hush:...` ran.
        var seconds: Double
        var watch: StreamWatch
        /// hushd's word that espeak-ng was late (its ring ran dry), if it was: the take is measured again.
        var late: String?
        /// How long the speech is (its WAV's length).
        var duration: Double { Double(reference.count) / Double(referenceRate) }
    }

    /// espeak-ng speaking ``text`` into `hush:CATEGORY=ambient`, with hushd's silence switch on if `silenced`.
    static func speak(silenced: Bool) throws -> Speech {
        try Self.require("/usr/bin/espeak-ng", from: "espeak-ng")
        let hushd = try ALSAStreamRulesTests.consoleHushd()
        if silenced {
            hushd.type("silence on")
            try hushd.wait("silence on") { (try? hushd.status())?["silenceSwitch"] as? String == "silent" }
        }
        let wav = hushd.scratch.path + "/espeak.wav"
        let writer = try Application("/usr/bin/espeak-ng", ["-w", wav, text], socket: hushd.socket)
        let written = try #require(writer.finish(within: 15), "espeak-ng -w hung: \(writer.text)")
        #expect(written.status == 0, "espeak-ng -w: \(writer.text)")
        let (samples, channels, referenceRate) = try SoundFile.readPCM16(wav)
        let reference = ToneAnalysis.channel(0, of: samples.map { Float($0) / 32767 }, channels: channels)

        let device = "hush:CATEGORY=ambient"
        let speaker = try Application("/usr/bin/espeak-ng", ["-d", device, text], socket: hushd.socket)
        let (result, watch) = Self.watch(speaker, on: hushd, seconds: 20)
        let spoken = try #require(result, "espeak-ng hung: \(speaker.text)")
        #expect(spoken.status == 0, "espeak-ng: \(speaker.text)")
        return Speech(
            reference: reference,
            referenceRate: referenceRate,
            mix: try hushd.finish(),
            seconds: spoken.seconds,
            watch: watch,
            late: ALSADeviceTests.lateClient(pid: speaker.process.processIdentifier, log: hushd.log)
        )
    }

    @Test("espeak-ng speaks into hush:CATEGORY=ambient: its speech is in the mix, as long as its own WAV")
    func espeakIsHeard() throws {
        try ALSADeviceTests.retaking("espeak-ng through hush") {
            let run = try Self.speak(silenced: false)
            let referenceLevels = SpeechAnalysis.levels(run.reference, rate: run.referenceRate)
            let mixLevels = SpeechAnalysis.levels(run.mix, rate: Self.rate)
            let referenceSpeech = SpeechAnalysis.windows(referenceLevels)
            let mixSpeech = SpeechAnalysis.windows(mixLevels)
            let first = try #require(mixSpeech.first, "no speech in the mix")
            let last = try #require(mixSpeech.last)
            let referenceFirst = try #require(referenceSpeech.first)
            let referenceLast = try #require(referenceSpeech.last)
            let span = last - first + 1
            let referenceSpan = referenceLast - referenceFirst + 1
            let loudest = mixLevels.max() ?? -240
            let referenceLoudest = referenceLevels.max() ?? -240
            // The same speech: its envelope follows the WAV's.
            let correlation = Self.envelopeCorrelation(run)
            print(
                "espeak-ng through hush: ran \(run.seconds) s for \(run.duration) s of speech; speech in the mix for "
                    + "\(span * 20) ms (\(mixSpeech.count) windows), in its WAV \(referenceSpan * 20) ms "
                    + "(\(referenceSpeech.count)); loudest \(loudest) dBFS vs \(referenceLoudest) in the WAV; "
                    + "envelope correlation \(correlation); streams \(run.watch.streams.sorted())"
            )
            #expect(run.watch.streams == ["playback ambient effect"], "hushd's streams: \(run.watch.streams)")
            return ALSADeviceTests.judge(
                late: run.late,
                [
                    (abs(span - referenceSpan) <= 3, "speech for \(span * 20) ms, the WAV has \(referenceSpan * 20)"),
                    // The effect bus at the default system volume (step 8): −24 dB.
                    (
                        abs(loudest - referenceLoudest + 24) < 2,
                        "\(loudest) dBFS in the mix, \(referenceLoudest) in the WAV"
                    ),
                    (correlation > 0.9, "the mix's speech envelope against the WAV's: \(correlation)"),
                    (
                        run.seconds > run.duration - 0.1 && run.seconds < run.duration + 1,
                        "\(run.seconds) s for \(run.duration) s"
                    ),
                ]
            )
        }
    }

    @Test("with the silence switch on, espeak-ng's ambient speech is silent in the mix and ends on time (R1)")
    func espeakIsSilenced() throws {
        try ALSADeviceTests.retaking("espeak-ng under silence") {
            let run = try Self.speak(silenced: true)
            let loudest = SpeechAnalysis.levels(run.mix, rate: Self.rate).max() ?? -240
            print(
                "espeak-ng under silence: ran \(run.seconds) s for \(run.duration) s of speech; loudest \(loudest) dBFS"
            )
            #expect(run.watch.firstRunning != nil, "hushd never saw espeak-ng's stream running: \(run.watch.streams)")
            // Silence is silence however late the client was: only the timing can be disturbed.
            #expect(loudest < -90, "R1: silenced, \(loudest) dBFS")
            return ALSADeviceTests.judge(
                late: run.late,
                [
                    (
                        run.seconds > run.duration - 0.1 && run.seconds < run.duration + 1,
                        "\(run.seconds) s for \(run.duration) s"
                    )
                ]
            )
        }
    }

    // MARK: GStreamer

    @Test("GStreamer's alsasink on hush:music keeps time: the tone whole, without gaps, in real time")
    func gstreamerKeepsTime() throws {
        try Self.require("/usr/bin/gst-launch-1.0", from: "gstreamer1.0-tools")
        try Self.require("/usr/bin/gst-inspect-1.0", from: "gstreamer1.0-tools")
        // Also builds GStreamer's plugin registry if this is its first run, so start-up is not measured on that.
        for (element, package) in [
            ("audiotestsrc", "gstreamer1.0-plugins-base"), ("audioconvert", "gstreamer1.0-plugins-base"),
            ("audioresample", "gstreamer1.0-plugins-base"), ("alsasink", "gstreamer1.0-alsa"),
        ] {
            let inspect = try Application("/usr/bin/gst-inspect-1.0", ["--exists", element], socket: "")
            guard inspect.finish(within: 60)?.status == 0 else {
                throw HushdTestFailure("GStreamer has no \(element): `make test-tools` installs \(package)")
            }
        }
        try ALSADeviceTests.retaking("GStreamer through hush:music") {
            let hushd = try ALSAStreamRulesTests.consoleHushd()
            let log = hushd.scratch.path + "/gst.log"
            // 200 buffers of 441 frames at 44.1 kHz: 2 s of 1 kHz at half scale.
            let seconds = 2.0
            let gst = try Application(
                "/usr/bin/gst-launch-1.0",
                [
                    "-q", "audiotestsrc", "num-buffers=200", "samplesperbuffer=441", "freq=1000", "volume=0.5", "!",
                    "audio/x-raw,rate=44100,channels=1", "!", "audioconvert", "!", "audioresample", "!", "alsasink",
                    "device=hush:music", "sync=true",
                ],
                socket: hushd.socket,
                // The sink's clock, with the delay alsa-lib reports: "processed samples: raw R, delay D, ...".
                environment: ["GST_DEBUG": "audiobasesink:5", "GST_DEBUG_FILE": log, "GST_DEBUG_NO_COLOR": "1"]
            )
            let (finished, watch) = Self.watch(gst, on: hushd, seconds: 20)
            let result = try #require(finished, "gst-launch-1.0 hung: \(gst.text)")
            #expect(result.status == 0, "gst-launch-1.0: \(gst.text)")
            let running = try #require(watch.firstRunning, "hushd never saw GStreamer's stream running")
            let startUp = running.timeIntervalSince(gst.started)
            let playing = result.seconds - startUp

            let mix = try hushd.finish()
            let levels = ALSADeviceTests.levels(of: 1000, in: mix)
            let heard = levels.indices.filter { levels[$0] > -60 }
            let first = try #require(heard.first, "no tone in the mix")
            let last = try #require(heard.last)
            // The whole windows inside the tone, which a gap of a few milliseconds would lower by a decibel or
            // more; and its samples, where a gap of any length is a run of zeros (the tone, 1036 LSB at its peak,
            // steps by 4 LSB or more at its zero crossings: one sample at most is under 16 LSB in a row).
            let inside = levels[(first + 1)..<last].sorted()
            let median = inside[inside.count / 2]
            let deepest = median - (inside.first ?? -240)
            let window = Self.rate / 50
            let tone = mix[((first + 1) * window)..<(last * window)]
            let quietRun = ToneAnalysis.longestRun(in: tone) { abs($0) < 16.0 / 32767 }
            let delays = try Self.reportedDelays(log)
            print(
                "GStreamer through hush: \(result.seconds) s for \(seconds) s of tone (start-up \(startUp) s, then "
                    + "\(playing) s); tone heard \(heard.count * 20) ms at \(median) dBFS, deepest dip \(deepest) dB, "
                    + "longest run of quiet samples \(quietRun); snd_pcm_delay as GStreamer saw it: "
                    + "\(delays.min() ?? -1) to \(delays.max() ?? -1) frames at 44.1 kHz "
                    + "(\(Double(delays.min() ?? 0) / 44.1) to \(Double(delays.max() ?? 0) / 44.1) ms, "
                    + "\(delays.count) readings); streams \(watch.streams.sorted())"
            )
            #expect(watch.streams == ["playback playback music"], "hushd's streams: \(watch.streams)")
            // Its clock is hushd's consumption: once running it takes the tone's length, within 3 % and 100 ms for the
            // drain and close.
            // Half scale (−6 dBFS) on the music bus at the default volume (−24 dB).
            #expect(abs(median + 30) < 3, "the tone's level in the mix: \(median) dBFS")
            return ALSADeviceTests.judge(
                late: ALSADeviceTests.lateClient(pid: gst.process.processIdentifier, log: hushd.log),
                [
                    (abs(playing - seconds) < 0.03 * seconds + 0.1, "played \(playing) s of \(seconds) s once running"),
                    (startUp < 3, "GStreamer took \(startUp) s to start"),
                    (heard.count >= 98 && heard.count <= 102, "the tone lasted \(heard.count * 20) ms of 2000"),
                    (deepest < 1, "a window inside the tone is \(deepest) dB below the others: a gap"),
                    (quietRun <= 2, "\(quietRun) quiet samples in a row inside the tone: a gap"),
                ]
            )
        }
    }

    /// The delays GStreamer's audio sink logged with its clock readings ("delay D"), in frames.
    static func reportedDelays(_ log: String) throws -> [Int] {
        let text = try String(contentsOfFile: log, encoding: .utf8)
        return text.split(separator: "\n").compactMap { line in
            guard line.contains("processed samples"), let range = line.range(of: "delay ") else { return nil }
            return Int(line[range.upperBound...].prefix { $0.isNumber })
        }.filter { $0 > 0 }
    }

    // MARK: Python through PortAudio

    @Test("Python's sounddevice (PortAudio) plays 1 s of 1 kHz into hush:music and records 1 s of silence")
    func sounddevicePlaysAndRecords() throws {
        let python = ALSADeviceTests.root.appendingPathComponent(".build/python-venv/bin/python").path
        try Self.require(python, from: "Python's sounddevice in .build/python-venv")
        let script = ALSADeviceTests.root.appendingPathComponent(
            "Tests/HushIntegrationTests/Fixtures/python/play_and_record.py"
        )
        try ALSADeviceTests.retaking("sounddevice through hush") {
            let hushd = try ALSAStreamRulesTests.consoleHushd()
            // PortAudio lists ALSA's PCMs by name and cannot give a PCM arguments, so each category gets a name.
            // On hush_raw: PortAudio converts formats itself, and Debian 12's PortAudio 19.6 cannot probe `hush`'s
            // plug layer (its uninitialised `dir` in GropeDevice, PortAudio ticket #263, asks for a period that no
            // whole number of periods fits), so it would not list aliases of `hush:...`.
            let config = hushd.scratch.path + "/asound-portaudio.conf"
            try """
            <\(ALSADeviceTests.alsaConfig)>
            pcm.hush_music "hush_raw:music"
            pcm.hush_record "hush_raw:CATEGORY=record"
            """.write(toFile: config, atomically: true, encoding: .utf8)
            let application = try Application(
                python,
                [script.path, "hush_music", "hush_record", "--seconds", "1", "--hertz", "1000"],
                socket: hushd.socket,
                environment: ["ALSA_CONFIG_PATH": config]
            )
            let (finished, watch) = Self.watch(application, on: hushd, seconds: 30)
            let result = try #require(finished, "play_and_record.py hung: \(application.text)")
            #expect(result.status == 0, "play_and_record.py: \(application.text)")
            let line = try #require(application.text.split(separator: "\n").last, "no output")
            let report = try HushdConnection.object(String(line))
            let played = report["played"] as? Double ?? -1
            let recorded = report["recorded"] as? Double ?? -1
            let mix = try hushd.finish()
            let levels = ALSADeviceTests.levels(of: 1000, in: mix)
            let heard = levels.filter { $0 > -60 }
            let loudest = levels.max() ?? -240
            print(
                "sounddevice through hush: ran \(result.seconds) s; play took \(played) s, the tone heard "
                    + "\(heard.count * 20) ms at \(loudest) dBFS; rec took \(recorded) s for "
                    + "\(report["frames"] ?? "?") frames, peak \(report["peak"] ?? "?"); PortAudio listed "
                    + "\(report["devices"] ?? "?"); "
                    + "streams \(watch.streams.sorted())"
            )
            #expect(watch.streams == ["playback playback music", "capture record music"], "\(watch.streams)")
            #expect(abs(loudest + 30) < 3, "the tone's level in the mix: \(loudest) dBFS")
            // No microphone: silence, at the real rate.
            #expect(report["frames"] as? Int == 16000)
            #expect(report["peak"] as? Int == 0, "no microphone: silence")
            return ALSADeviceTests.judge(
                late: ALSADeviceTests.lateClient(pid: application.process.processIdentifier, log: hushd.log),
                [
                    (played > 0.95 && played < 2, "sounddevice.play took \(played) s for 1 s"),
                    (heard.count >= 47 && heard.count <= 53, "the tone lasted \(heard.count * 20) ms of 1000"),
                    (recorded > 0.95 && recorded < 2, "sounddevice.rec took \(recorded) s for 1 s"),
                ]
            )
        }
    }
}
