import Foundation
import HushAudioFile
import HushTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The `hush` ALSA device with real applications: the built plugin (Makefile: `make alsa-plugin`), alsa-utils'
/// `aplay` and `arecord`, and a real hushd whose output is its WAV fallback (paced like a device). What counts is
/// what reached hushd's mix, and how the applications behaved: on time, no hang, a clear error when hushd dies.
@Suite("The hush ALSA device with aplay and arecord", .serialized)
struct ALSADeviceTests {
    static let mixRate = 48000
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    /// An alsa configuration that loads the freshly built plugin (written by `make alsa-plugin`).
    static let alsaConfig = root.appendingPathComponent(".build/alsa-plugin/asound-test.conf").path

    static func requireTools() throws {
        guard FileManager.default.fileExists(atPath: alsaConfig) else {
            throw HushdTestFailure("\(alsaConfig) is missing: run `make alsa-plugin` (make test does) first")
        }
        for tool in ["/usr/bin/aplay", "/usr/bin/arecord"] where !FileManager.default.fileExists(atPath: tool) {
            throw HushdTestFailure("\(tool) is missing: make test installs alsa-utils (board/virtual/setup.sh)")
        }
    }

    /// A running ALSA application with the test's alsa configuration and hushd's socket; `environment` adds to or
    /// replaces those variables.
    final class Application {
        let process = Process()
        let output = Pipe()
        let started = Date()
        private(set) var text = ""

        init(_ tool: String, _ arguments: [String], socket: String, environment extra: [String: String] = [:]) throws {
            process.executableURL = URL(fileURLWithPath: tool)
            process.arguments = arguments
            var environment = ProcessInfo.processInfo.environment
            environment["ALSA_CONFIG_PATH"] = ALSADeviceTests.alsaConfig
            environment["HUSH_SOCKET"] = socket
            environment.merge(extra) { $1 }
            process.environment = environment
            process.standardOutput = output
            process.standardError = output
            try process.run()
        }

        /// Waits up to `seconds` for the application to end; returns its status and the seconds it ran, or nil
        /// if it still runs (it is then killed).
        func finish(within seconds: Double) -> (status: Int32, seconds: Double)? {
            let deadline = Date().addingTimeInterval(seconds)
            while process.isRunning && Date() < deadline { usleep(5000) }
            let ended = Date()
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                return nil
            }
            process.waitUntilExit()
            text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            return (process.terminationStatus, ended.timeIntervalSince(started))
        }

        deinit {
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
        }
    }

    /// A mono 16-bit WAV of a sine at `hertz`, `seconds` long, at `rate`, peak at half scale.
    static func tone(_ path: String, hertz: Double, seconds: Double, rate: Int) throws {
        let frames = Int(seconds * Double(rate))
        let samples = (0..<frames).map { Int16(16383 * sin(2 * Double.pi * hertz * Double($0) / Double(rate))) }
        try SoundFile.writePCM16(samples, channels: 1, sampleRate: rate, to: path)
    }

    /// hushd's mix, left channel, as floats.
    static func mix(_ wav: String) throws -> [Float] {
        let (samples, channels, rate) = try SoundFile.readPCM16(wav)
        #expect(rate == mixRate)
        return ToneAnalysis.channel(0, of: samples.map { Float($0) / 32767 }, channels: channels)
    }

    /// The level of `hertz` in 20 ms windows.
    static func levels(of hertz: Double, in mix: [Float]) -> [Double] {
        let window = mixRate / 50
        return stride(from: 0, to: max(0, mix.count - window), by: window).map {
            ToneAnalysis.level(of: hertz, in: mix[$0..<($0 + window)], sampleRate: mixRate)
        }
    }

    static func streams(_ hushd: HushdProcess) -> [[String: Any]] {
        ((try? hushd.status())?["streams"] as? [[String: Any]]) ?? []
    }

    /// Why a take was disturbed: hushd's log says, when a stream ends, whether its client was late (its ring ran
    /// dry: the machine stalled the client, which only that stream hears). A late client's gap is not hush's doing,
    /// so such a take is measured again; nil when the application with `pid` was never late.
    static func lateClient(pid: Int32, log path: String) -> String? {
        let log = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return log.split(separator: "\n").first {
            $0.contains("(pid \(pid)) ended") && $0.contains("the client was late")
        }
        .map(String.init)
    }

    /// Judges a take: nil when every check holds. When one fails and the client was `late`, the take is disturbed
    /// (the machine stalled the application, so what it sounded like says nothing about hush): returns the reason,
    /// for ``retaking(_:attempts:_:)`` to measure again. When one fails and the client was never late, hush did
    /// the wrong thing: each failure is recorded, and nil is returned.
    static func judge(
        late: String?,
        _ checks: [(holds: Bool, message: String)],
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> String? {
        let failed = checks.filter { !$0.holds }
        guard !failed.isEmpty else { return nil }
        if let late { return late + "; it missed: " + failed.map(\.message).joined(separator: "; ") }
        for failure in failed { Issue.record(Comment(rawValue: failure.message), sourceLocation: sourceLocation) }
        return nil
    }

    /// Runs `take` until it is undisturbed (it returns nil), at most `attempts` times; each disturbed take says why.
    /// A take judges (records its expectations) only when it is not disturbed. If every take is, the test fails
    /// saying the machine was too busy to measure, never that hush was wrong.
    static func retaking(_ what: String, attempts: Int = 3, _ take: () throws -> String?) throws {
        var reasons: [String] = []
        for attempt in 1...attempts {
            guard let reason = try take() else { return }
            print("\(what): take \(attempt) disturbed (\(reason)); measuring again")
            reasons.append(reason)
        }
        Issue.record("\(what): the machine was too busy to measure in \(attempts) takes: \(reasons)")
    }

    static func wait(_ what: String, _ hushd: HushdProcess, seconds: Double = 10, _ condition: () -> Bool) throws {
        let deadline = Date().addingTimeInterval(seconds)
        while !condition() {
            guard Date() < deadline else {
                let log = (try? String(contentsOfFile: hushd.logPath, encoding: .utf8)) ?? ""
                throw HushdTestFailure("\(what) did not happen within \(seconds) s; hushd's log:\n\(log)")
            }
            usleep(10_000)
        }
    }

    @Test("aplay of a 44.1 kHz mono file through hush:music is heard in the mix, for as long as it lasts")
    func aplayIsMixed() throws {
        try Self.requireTools()
        try Self.retaking("aplay through hush:music") {
            let scratch = try ScratchDirectory(prefix: "hush-alsa")
            let wav = scratch.path + "/mix.wav"
            let hushd = try HushdProcess(fallback: wav)
            let file = scratch.path + "/tone.wav"
            try Self.tone(file, hertz: 1000, seconds: 1.0, rate: 44100)
            let aplay = try Application("/usr/bin/aplay", ["-q", "-D", "hush:music", file], socket: hushd.socket)
            let result = try #require(aplay.finish(within: 15), "aplay hung: \(aplay.text)")
            _ = hushd.stop()
            #expect(result.status == 0, "aplay: \(aplay.text)")
            let levels = Self.levels(of: 1000, in: try Self.mix(wav))
            let heard = levels.filter { $0 > -60 }
            let loudest = levels.max() ?? -240
            print("aplay through hush: \(result.seconds) s, the tone in \(heard.count) windows of 20 ms, \(loudest) dB")
            return Self.judge(
                late: Self.lateClient(pid: aplay.process.processIdentifier, log: hushd.logPath),
                [
                    // It played at the real rate: not faster than the file, not stuck (generous for a busy machine).
                    (result.seconds > 0.9 && result.seconds < 6, "aplay took \(result.seconds) s for a 1 s file"),
                    // Half scale at the default system volume (step 8, −24 dB): about −30 dBFS.
                    (loudest > -36 && loudest < -24, "the tone's level in the mix: \(loudest) dBFS"),
                    (heard.count >= 49 && heard.count <= 52, "the tone lasted \(heard.count * 20) ms of 1000"),
                ]
            )
        }
    }

    /// A beep shorter than aplay's buffer never reaches the start threshold: the stream starts in drain, and
    /// drain must wait until it has been heard. (It once returned at once: hushd's "played" count wrapped below
    /// zero while the stream's first frames were still behind the output queue, and aplay stopped the stream.)
    @Test("a 0.2 s beep, shorter than aplay's buffer, is heard whole and aplay waits for it")
    func shortSoundPlaysWhole() throws {
        try Self.requireTools()
        try Self.retaking("a short beep through hush:music") {
            let scratch = try ScratchDirectory(prefix: "hush-alsa")
            let wav = scratch.path + "/mix.wav"
            let hushd = try HushdProcess(fallback: wav)
            let file = scratch.path + "/beep.wav"
            try Self.tone(file, hertz: 1000, seconds: 0.2, rate: 48000)
            let aplay = try Application("/usr/bin/aplay", ["-q", "-D", "hush:music", file], socket: hushd.socket)
            let result = try #require(aplay.finish(within: 15), "aplay hung: \(aplay.text)")
            _ = hushd.stop()
            #expect(result.status == 0, "aplay: \(aplay.text)")
            let heard = Self.levels(of: 1000, in: try Self.mix(wav)).filter { $0 > -60 }
            print(
                "a 0.2 s beep through hush: aplay took \(result.seconds) s, the tone in \(heard.count) windows of 20 ms"
            )
            return Self.judge(
                late: Self.lateClient(pid: aplay.process.processIdentifier, log: hushd.logPath),
                [
                    (result.seconds > 0.19, "aplay ended after \(result.seconds) s, before its 0.2 s beep was heard"),
                    (heard.count >= 9 && heard.count <= 12, "the beep lasted \(heard.count * 20) ms of 200"),
                ]
            )
        }
    }

    @Test("arecord from hush:CATEGORY=record without a microphone gets silence at the real rate")
    func arecordGetsSilence() throws {
        try Self.requireTools()
        let scratch = try ScratchDirectory(prefix: "hush-alsa")
        let hushd = try HushdProcess(fallback: scratch.path + "/mix.wav")
        let out = scratch.path + "/recorded.wav"
        let arecord = try Application(
            "/usr/bin/arecord",
            ["-q", "-D", "hush:CATEGORY=record", "-f", "S16_LE", "-r", "16000", "-c", "1", "-d", "1", out],
            socket: hushd.socket
        )
        let result = try #require(arecord.finish(within: 15), "arecord hung: \(arecord.text)")
        #expect(result.status == 0, "arecord: \(arecord.text)")
        #expect(result.seconds > 0.9 && result.seconds < 6, "arecord took \(result.seconds) s for 1 s")
        let (samples, channels, rate) = try SoundFile.readPCM16(out)
        #expect(rate == 16000 && channels == 1)
        #expect(samples.count == 16000, "arecord got \(samples.count) frames")
        #expect(samples.allSatisfy { $0 == 0 }, "no microphone: silence")
    }

    @Test("status shows a playing stream with who opened it")
    func statusShowsTheStream() throws {
        try Self.requireTools()
        let scratch = try ScratchDirectory(prefix: "hush-alsa")
        let hushd = try HushdProcess(fallback: scratch.path + "/mix.wav")
        let file = scratch.path + "/tone.wav"
        try Self.tone(file, hertz: 440, seconds: 3, rate: 48000)
        let aplay = try Application("/usr/bin/aplay", ["-q", "-D", "hush:ringtone", file], socket: hushd.socket)
        try Self.wait("aplay's stream running", hushd) {
            Self.streams(hushd).first?["state"] as? String == "running"
        }
        let stream = try #require(Self.streams(hushd).first)
        #expect(stream["name"] as? String == "aplay")
        #expect(stream["bus"] as? String == "ringer")
        #expect(stream["category"] as? String == "soloAmbient")
        #expect(stream["direction"] as? String == "playback")
        #expect(stream["pid"] as? Int == Int(aplay.process.processIdentifier))
        _ = aplay.finish(within: 10)
        try Self.wait("the stream gone", hushd) { Self.streams(hushd).isEmpty }
    }

    @Test(
        "hushd killed (-9) or stopped (TERM): aplay and arecord fail with ENODEV within a second, not hang",
        arguments: [SIGKILL, SIGTERM]
    )
    func hushdDeathFailsTheApplications(signal: Int32) throws {
        try Self.requireTools()
        let scratch = try ScratchDirectory(prefix: "hush-alsa")
        let hushd = try HushdProcess(fallback: scratch.path + "/mix.wav")
        let file = scratch.path + "/tone.wav"
        try Self.tone(file, hertz: 440, seconds: 10, rate: 48000)
        // The music mixes with others, so the recorder (non-mixable) does not interrupt it (R6).
        let aplay = try Application(
            "/usr/bin/aplay",
            ["-q", "-D", "hush:CATEGORY=playback,OPTIONS=mixWithOthers", file],
            socket: hushd.socket
        )
        let arecord = try Application(
            "/usr/bin/arecord",
            ["-q", "-D", "hush:CATEGORY=record", "-f", "S16_LE", "-r", "16000", "-c", "1", "-d", "10", "/dev/null"],
            socket: hushd.socket
        )
        try Self.wait("both streams running", hushd) {
            Self.streams(hushd).filter { $0["state"] as? String == "running" }.count == 2
        }
        let killed = Date()
        _ = hushd.stop(signal)
        var ended: [String: Double] = [:]
        let deadline = killed.addingTimeInterval(10)
        while ended.count < 2 && Date() < deadline {
            if !aplay.process.isRunning && ended["aplay"] == nil { ended["aplay"] = Date().timeIntervalSince(killed) }
            if !arecord.process.isRunning && ended["arecord"] == nil {
                ended["arecord"] = Date().timeIntervalSince(killed)
            }
            usleep(2000)
        }
        let played = try #require(aplay.finish(within: 0.1), "aplay still runs 10 s after hushd died: \(aplay.text)")
        let recorded = try #require(arecord.finish(within: 0.1), "arecord still runs 10 s after: \(arecord.text)")
        print("signal \(signal): aplay ended \(ended["aplay"] ?? -1) s, arecord \(ended["arecord"] ?? -1) s after")
        #expect(played.status != 0 && recorded.status != 0, "both report the loss: \(aplay.text) \(arecord.text)")
        #expect(aplay.text.contains("No such device") && arecord.text.contains("No such device"))
        #expect((ended["aplay"] ?? 99) < 1.5 && (ended["arecord"] ?? 99) < 1.5, "they took \(ended) s to notice")
    }
}

/// An application that knows hush: it activates a session on the control socket and attaches aplay's stream to it
/// (`SESSION=`), so it hears of the interruption its audio suffers, and closing the stream leaves its session.
@Suite("The hush ALSA device with a session of the application's own", .serialized)
struct ALSANamedSessionTests {
    @Test("aplay -D hush:SESSION=N plays in the application's session; its events reach the application")
    func streamInNamedSession() throws {
        try ALSADeviceTests.requireTools()
        let scratch = try ScratchDirectory(prefix: "hush-alsa")
        let hushd = try HushdProcess(fallback: scratch.path + "/mix.wav")
        let app = try hushd.connect()
        let activated = try app.call(#""command":"activate","bus":"music","category":"playback","name":"radio""#)
        let session = try #require(activated["session"] as? Int, "\(activated)")
        let file = scratch.path + "/tone.wav"
        try ALSADeviceTests.tone(file, hertz: 440, seconds: 3, rate: 48000)
        let aplay = try ALSADeviceTests.Application(
            "/usr/bin/aplay",
            ["-q", "-D", "hush:SESSION=\(session)", file],
            socket: hushd.socket
        )
        try ALSADeviceTests.wait("the stream running in session \(session)", hushd) {
            ALSADeviceTests.streams(hushd).first { $0["session"] as? Int == session }?["state"] as? String == "running"
        }
        // A ringtone from another client: the application's own connection hears its session was interrupted.
        let ringer = try hushd.connect()
        let ring = try ringer.call(#""command":"activate","bus":"ringer","category":"soloAmbient","transient":true"#)
        let ringSession = try #require(ring["session"] as? Int, "\(ring)")
        try ALSADeviceTests.wait("the stream held", hushd) {
            ALSADeviceTests.streams(hushd).first?["state"] as? String == "held"
        }
        _ = try app.call(#""command":"version""#)
        #expect(
            app.events.contains { $0.contains("interruption-began") && $0.contains("\"session\":\(session)") },
            "the application hears of it: \(app.events)"
        )
        _ = try ringer.call(#""command":"deactivate","session":\#(ringSession),"notifyOthers":true"#)
        let result = try #require(aplay.finish(within: 15), "aplay hung: \(aplay.text)")
        #expect(result.status == 0, "aplay: \(aplay.text)")
        // The stream is gone; the application's session stays until it deactivates it.
        try ALSADeviceTests.wait("the stream gone", hushd) { ALSADeviceTests.streams(hushd).isEmpty }
        let sessions = (try hushd.status()["sessions"] as? [[String: Any]]) ?? []
        #expect(sessions.contains { $0["id"] as? Int == session }, "closing the stream does not end session \(session)")
        // Another user's session cannot be joined by someone else's stream; a missing one is named.
        let missing = try ALSADeviceTests.Application(
            "/usr/bin/aplay",
            ["-q", "-D", "hush:SESSION=999", file],
            socket: hushd.socket
        )
        let refused = try #require(missing.finish(within: 10))
        #expect(refused.status != 0)
        #expect(missing.text.contains("there is no session 999"), "\(missing.text)")
    }
}

/// One process playing and recording with one category — a call — is one session, not two that interrupt each
/// other: alsaloop captures from `hush:voice` and plays to `hush:voice`.
@Suite("The hush ALSA device: a call's two directions are one session", .serialized)
struct ALSACallTests {
    @Test("alsaloop -C hush:voice -P hush:voice: two streams, one playAndRecord session, neither held")
    func bothDirectionsOneSession() throws {
        try ALSADeviceTests.requireTools()
        let scratch = try ScratchDirectory(prefix: "hush-alsa")
        let hushd = try HushdProcess(fallback: scratch.path + "/mix.wav")
        let loop = try ALSADeviceTests.Application(
            "/usr/bin/alsaloop",
            ["-C", "hush:voice", "-P", "hush:voice", "-r", "16000", "-c", "1", "-f", "S16_LE", "-t", "50000"],
            socket: hushd.socket
        )
        try ALSADeviceTests.wait("both of alsaloop's streams running", hushd) {
            ALSADeviceTests.streams(hushd).filter { $0["state"] as? String == "running" }.count == 2
        }
        let streams = ALSADeviceTests.streams(hushd)
        let sessions = Set(streams.compactMap { $0["session"] as? Int })
        #expect(sessions.count == 1, "one session for the call: \(streams)")
        #expect(Set(streams.compactMap { $0["direction"] as? String }) == ["playback", "capture"])
        let status = try hushd.status()
        let records = (status["sessions"] as? [[String: Any]]) ?? []
        #expect(records.count == 1 && records.first?["category"] as? String == "playAndRecord", "\(records)")
        #expect(records.first?["pid"] as? Int == Int(loop.process.processIdentifier), "status names the process")
        // hush:voice is voiceChat (R22): the session and both streams say so.
        #expect(records.first?["mode"] as? String == "voiceChat", "\(records)")
        #expect(streams.allSatisfy { $0["mode"] as? String == "voiceChat" }, "\(streams)")
        kill(loop.process.processIdentifier, SIGTERM)
        _ = loop.finish(within: 5)
        try ALSADeviceTests.wait("the call's session over", hushd) {
            ((try? hushd.status())?["sessions"] as? [[String: Any]])?.isEmpty == true
        }
    }
}
