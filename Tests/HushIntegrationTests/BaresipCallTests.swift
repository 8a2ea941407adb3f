import Foundation
import HushAudioFile
import HushTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A SIP call end to end: two baresip user agents (Debian's, `make test-tools`) on the loopback network, no registrar.
/// Agent A is the device under test: baresip's ALSA module plays and records `hush:voice` and rings on
/// `hush:ringtone`, against a real hushd whose output is its WAV fallback (paced like a device) and whose console is
/// on a pipe (the privacy switch's stand-in). Agent B is the far end: it sends a tone file (`aufile`) and its
/// `sndfile` filter writes what it received. What counts is what reached hushd's mix, what A's ALSA source delivered
/// and what B received, and hushd's status while it happens.
@Suite("baresip: a SIP call through hush:voice", .serialized)
struct BaresipCallTests {
    static let baresip = "/usr/bin/baresip"
    /// G.722: 16 kHz mono, so both agents' audio devices and files run at 16 kHz.
    static let callRate = 16000
    static let music = 440.0
    static let ring = 1500.0
    static let farEnd = 1000.0

    /// One baresip process with a configuration directory of its own (`-f`), typed into through its `stdio` module.
    final class Agent {
        let name: String
        let directory: String
        let port: Int
        let process = Process()
        let input = Pipe()
        var logPath: String { directory + "/baresip.log" }
        var recordings: String { directory + "/recorded" }

        /// - Parameters:
        ///   - audio: the `audio_player`, `audio_source` and `audio_alert` lines and the audio modules they need.
        ///   - environment: added to the test's (the ALSA configuration and hushd's socket for agent A).
        init(
            name: String,
            in scratch: String,
            port: Int,
            audio: String,
            environment: [String: String] = [:]
        ) throws {
            self.name = name
            self.port = port
            directory = scratch + "/" + name
            try FileManager.default.createDirectory(atPath: directory + "/recorded", withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: directory + "/sounds", withIntermediateDirectories: true)
            // sip_listen takes the port for UDP and TCP and the next one for TLS; net_interface keeps the SDP on
            // 127.0.0.1. No echo canceller module: only hushd has the true reference and delay.
            try """
            poll_method     epoll
            sip_listen      127.0.0.1:\(port)
            net_interface   127.0.0.1
            audio_path      \(directory)/sounds
            \(audio)
            module_path     /usr/lib/baresip/modules
            module          stdio.so
            module          g722.so
            module          sndfile.so
            module_tmp      account.so
            module_app      menu.so
            snd_path        \(directory)/recorded

            """.write(toFile: directory + "/config", atomically: true, encoding: .utf8)
            try "<sip:\(name)@127.0.0.1:\(port)>;regint=0;answermode=manual;audio_codecs=G722\n"
                .write(toFile: directory + "/accounts", atomically: true, encoding: .utf8)
            _ = FileManager.default.createFile(atPath: logPath, contents: nil)
            let log = try #require(FileHandle(forWritingAtPath: logPath))
            process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            process.arguments = ["--pdeathsig", "KILL", BaresipCallTests.baresip, "-f", directory]
            var variables = ProcessInfo.processInfo.environment
            variables.merge(environment) { $1 }
            process.environment = variables
            process.standardInput = input
            process.standardOutput = log
            process.standardError = log
        }

        func start() throws {
            try process.run()
            try BaresipCallTests.wait("baresip \(name) ready") { self.log.contains("baresip is ready.") }
        }

        var pid: Int { Int(process.processIdentifier) }

        /// What it printed so far (its status line rewrites itself with carriage returns).
        var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

        /// Types a command (`/dial URI`, `/accept`, `/hangup`) on its console.
        func type(_ command: String) { input.fileHandleForWriting.write(Data((command + "\n").utf8)) }

        /// The WAV its `sndfile` filter wrote for `direction` (`enc`: what its source gave, before encoding;
        /// `dec`: what it received, decoded), as samples.
        func recording(_ direction: String) throws -> [Float] {
            let names = try FileManager.default.contentsOfDirectory(atPath: recordings)
            let name = try #require(names.first { $0.hasSuffix("-\(direction).wav") }, "\(self.name): \(names)")
            let (samples, channels, rate) = try SoundFile.readPCM16(recordings + "/" + name)
            #expect(rate == BaresipCallTests.callRate && channels == 1, "\(self.name)'s \(direction): \(rate) Hz")
            return samples.map { Float($0) / 32767 }
        }

        func quit() {
            guard process.processIdentifier != 0 else { return }  // never started
            if process.isRunning {
                type("/quit")
                let deadline = Date().addingTimeInterval(5)
                while process.isRunning && Date() < deadline { usleep(10_000) }
            }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }

        deinit {
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
        }
    }

    static func requireBaresip() throws {
        guard FileManager.default.isExecutableFile(atPath: baresip) else {
            throw HushdTestFailure("\(baresip) is missing: make test-tools installs Debian's baresip-core")
        }
    }

    /// A port free for SIP on 127.0.0.1: UDP and TCP on it, TCP on the next (baresip's TLS listener).
    static func freeSIPPort() throws -> Int {
        func bindable(_ port: Int, _ type: Int32) -> Bool {
            let fd = socket(AF_INET, type, 0)
            guard fd >= 0 else { return false }
            defer { close(fd) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = in_addr_t(0x7F00_0001).bigEndian
            return withUnsafePointer(to: &address) {
                // SAFETY: sockaddr_in begins with the sockaddr header; bind reads the size given.
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                }
            }
        }
        let udp = Int32(SOCK_DGRAM.rawValue)
        let tcp = Int32(SOCK_STREAM.rawValue)
        for _ in 0..<200 {
            let port = Int.random(in: 20_000...59_000) & ~1
            if bindable(port, udp) && bindable(port, tcp) && bindable(port + 1, tcp) { return port }
        }
        throw HushdTestFailure("no free pair of ports for SIP on 127.0.0.1")
    }

    static func wait(_ what: String, seconds: Double = 20, _ condition: () -> Bool) throws {
        let deadline = Date().addingTimeInterval(seconds)
        while !condition() {
            guard Date() < deadline else { throw HushdTestFailure("\(what) did not happen within \(seconds) s") }
            usleep(20_000)
        }
    }

    /// A mono 16-bit WAV of a sine, peak at half scale.
    static func tone(_ path: String, hertz: Double, seconds: Double, rate: Int) throws {
        try ALSADeviceTests.tone(path, hertz: hertz, seconds: seconds, rate: rate)
    }

    /// The level of `hertz` in 20 ms windows of `samples` at `rate`.
    static func levels(of hertz: Double, in samples: [Float], rate: Int) -> [Double] {
        let window = rate / 50
        return stride(from: 0, to: max(0, samples.count - window + 1), by: window).map {
            ToneAnalysis.level(of: hertz, in: samples[$0..<($0 + window)], sampleRate: rate)
        }
    }

    static func playAndRecordID(_ sessions: [[String: Any]]) -> Int? {
        sessions.first { $0["category"] as? String == "playAndRecord" }?["id"] as? Int
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? -240 : sorted[sorted.count / 2]
    }

    @Test(
        "an incoming call rings over music, runs through hush:voice both ways, the privacy switch holds, music resumes"
    )
    func callThroughHush() throws {
        try Self.requireBaresip()
        let hushd = try ConsoleHushd()
        let scratch = hushd.scratch.path
        try Self.tone(scratch + "/music.wav", hertz: Self.music, seconds: 120, rate: 48000)

        // Music plays first: aplay on hush:music.
        let aplay = try ALSADeviceTests.Application(
            "/usr/bin/aplay",
            ["-q", "-D", "hush:music", scratch + "/music.wav"],
            socket: hushd.socket
        )
        let musicPID = Int(aplay.process.processIdentifier)
        func musicState() -> String? {
            hushd.streams.first { $0["pid"] as? Int == musicPID }?["state"] as? String
        }
        try hushd.wait("the music running") { musicState() == "running" }

        // The device under test: baresip's ALSA module on hush, its ringtone (ring.wav in audio_path) on the ringer.
        let portA = try Self.freeSIPPort()
        var portB = try Self.freeSIPPort()
        while abs(portB - portA) < 2 { portB = try Self.freeSIPPort() }
        let a = try Agent(
            name: "a",
            in: scratch,
            port: portA,
            audio: """
                audio_player    alsa,hush:voice
                audio_source    alsa,hush:voice
                audio_alert     alsa,hush:ringtone
                module          alsa.so
                """,
            environment: ["ALSA_CONFIG_PATH": ALSADeviceTests.alsaConfig, "HUSH_SOCKET": hushd.socket]
        )
        try Self.tone(a.directory + "/sounds/ring.wav", hertz: Self.ring, seconds: 1, rate: Self.callRate)
        // The far end: a tone file out, what it receives written by sndfile; its player is an aubridge device no
        // source reads (nothing plays it: B has no sound card), so nothing but RTP paces what B records.
        try Self.tone(scratch + "/far.wav", hertz: Self.farEnd, seconds: 120, rate: Self.callRate)
        let b = try Agent(
            name: "b",
            in: scratch,
            port: portB,
            audio: """
                audio_player    aubridge,far
                audio_source    aufile,\(scratch)/far.wav
                audio_alert     aubridge,farAlert
                module          aufile.so
                module          aubridge.so
                """
        )
        try a.start()
        try b.start()
        defer {
            a.quit()
            b.quit()
        }

        func streamsOfA() -> [[String: Any]] { hushd.streams.filter { $0["pid"] as? Int == a.pid } }
        func sessionsOfA() -> [[String: Any]] {
            (((try? hushd.status())?["sessions"] as? [[String: Any]]) ?? []).filter { $0["pid"] as? Int == a.pid }
        }

        usleep(1_000_000)  // a second of music before the call, whatever starting the agents took

        // B calls A; A rings on hush:ringtone and the music is held.
        b.type("/dial sip:a@127.0.0.1:\(portA)")
        try Self.wait("A's ringtone stream running") {
            streamsOfA().contains { $0["bus"] as? String == "ringer" && $0["state"] as? String == "running" }
        }
        let ringing = Date()
        try? hushd.wait("the music held", seconds: 5) { musicState() == "held" }
        let heldByRing = musicState()
        usleep(1_500_000)

        // A answers: one playAndRecord session in voiceChat with both directions, the music still held.
        a.type("/accept")
        try Self.wait("A's call streams running") {
            let streams = streamsOfA().filter { $0["bus"] as? String != "ringer" }
            return streams.count == 2 && streams.allSatisfy { $0["state"] as? String == "running" }
        }
        let answered = Date()
        try? hushd.wait("the ringtone stopped", seconds: 5) {
            !streamsOfA().contains { $0["bus"] as? String == "ringer" }
        }
        let callStreams = streamsOfA()
        let callSessions = sessionsOfA()
        let heldByCall = musicState()
        usleep(2_000_000)

        // The privacy switch (the console's stand-in, R21) during the call, then off again.
        hushd.type("privacy on")
        let privacyOn = Date()
        var switched: [String: Any] = [:]
        var blocked: String?
        try hushd.wait("the privacy switch in force") {
            switched = (try? hushd.status()) ?? [:]
            blocked =
                sessionsOfA().first { $0["category"] as? String == "playAndRecord" }?["microphoneBlocked"]
                as? String
            return switched["microphoneSwitch"] as? String == "muted" && blocked == "privacySwitch"
        }
        usleep(2_000_000)
        hushd.type("privacy off")
        var blockedAfter: String?
        try hushd.wait("the privacy switch off") {
            blockedAfter =
                sessionsOfA().first { $0["category"] as? String == "playAndRecord" }?["microphoneBlocked"]
                as? String
            return (try? hushd.status())?["microphoneSwitch"] as? String == "live" && blockedAfter != "privacySwitch"
        }
        usleep(2_000_000)
        let streamsAfterPrivacy = streamsOfA()
        // The person starts the call's microphone again (baresip does not restart its stream): `play SESSION`.
        let callSession = Self.playAndRecordID(sessionsOfA())
        hushd.type("play \(callSession ?? -1)")
        let restarted = Date()
        var blockedAtRestart: String?
        try? hushd.wait("the call's session started again", seconds: 5) {
            blockedAtRestart =
                sessionsOfA().first { $0["category"] as? String == "playAndRecord" }?["microphoneBlocked"]
                as? String
            return blockedAtRestart == nil
        }
        usleep(2_000_000)

        // B hangs up: A's streams close, its session ends as by R10 (notifyOthers), the music resumes.
        b.type("/hangup")
        let hungUp = Date()
        try Self.wait("A's call streams closed") { streamsOfA().isEmpty }
        try hushd.wait("the music running again") { musicState() == "running" }
        usleep(2_000_000)
        let statusAfter = (try? hushd.status()) ?? [:]
        a.quit()
        b.quit()
        kill(aplay.process.processIdentifier, SIGTERM)
        _ = aplay.finish(within: 5)
        let mix = try hushd.finish()

        // What the agents sent and received.
        let sentByA = try a.recording("enc")
        let receivedByB = try b.recording("dec")
        let receivedByA = try a.recording("dec")
        let call = hungUp.timeIntervalSince(answered)
        let rate = Double(Self.callRate)
        let aSent = Double(sentByA.count) / rate
        let bReceived = Double(receivedByB.count) / rate
        let farLevels = Self.levels(of: Self.farEnd, in: receivedByA, rate: Self.callRate)
        let farInA = farLevels.filter { $0 > -40 }.count
        // Where the switch was, in A's recording (it began as the call did): its frames kept coming throughout.
        let privacyAt = privacyOn.timeIntervalSince(answered)
        let muted = restarted.timeIntervalSince(privacyOn)

        // The mix, in 20 ms windows: where the ringtone, the far end and the music are heard.
        let mixRate = ALSADeviceTests.mixRate
        let musicLevels = Self.levels(of: Self.music, in: mix, rate: mixRate)
        let ringLevels = Self.levels(of: Self.ring, in: mix, rate: mixRate)
        let farMixLevels = Self.levels(of: Self.farEnd, in: mix, rate: mixRate)
        let heard = -60.0
        let ringWindows = ringLevels.indices.filter { ringLevels[$0] > heard }
        let farWindows = farMixLevels.indices.filter { farMixLevels[$0] > heard }
        let firstRing = ringWindows.first ?? 0
        // The call ends where the far end was last heard near its level (about −30 dBFS): not at a window where
        // the music's end (its client killed, its last samples cut) splashes a little of everything.
        let lastFar = farMixLevels.indices.last { farMixLevels[$0] > -40 } ?? musicLevels.count
        let musicBefore = musicLevels[..<firstRing].filter { $0 > heard }.count
        let musicAfter = musicLevels[min(lastFar + 1, musicLevels.count)...].filter { $0 > heard }.count
        let musicOverRing = ringWindows.filter { musicLevels[$0] > heard }.count
        let musicOverCall = farWindows.filter { musicLevels[$0] > heard }.count
        let farLevel = Self.median(farWindows.map { farMixLevels[$0] })
        let ringDuration = answered.timeIntervalSince(ringing)

        print(
            """
            baresip call: rang \(String(format: "%.2f", ringDuration)) s, call \(String(format: "%.2f", call)) s; \
            privacy switch on at \(String(format: "%.2f", privacyAt)) s, \(String(format: "%.2f", muted)) s until \
            the restart; A sent \(String(format: "%.2f", aSent)) s (\(sentByA.filter { $0 != 0 }.count) non-zero \
            samples), \
            B received \(String(format: "%.2f", bReceived)) s, A received the far end in \(farInA) windows of 20 ms; \
            mix: ring in \(ringWindows.count) windows (music in \(musicOverRing) of them), far end in \
            \(farWindows.count) at \(String(format: "%.1f", farLevel)) dBFS (music in \(musicOverCall)), music \
            \(musicBefore) windows before the ring and \(musicAfter) after the call
            """
        )

        // The ringtone interrupted the music; the call kept it interrupted.
        #expect(heldByRing == "held", "the music while A rings: \(heldByRing ?? "gone")")
        #expect(heldByCall == "held", "the music during the call: \(heldByCall ?? "gone")")
        // The call: both directions of baresip's one process are one playAndRecord session in voiceChat (R17, R22).
        let playAndRecord = callSessions.filter { $0["category"] as? String == "playAndRecord" }
        #expect(playAndRecord.count == 1, "A's sessions: \(callSessions)")
        #expect(playAndRecord.first?["mode"] as? String == "voiceChat", "\(playAndRecord)")
        let call2 = callStreams.filter { $0["bus"] as? String != "ringer" }
        #expect(Set(call2.compactMap { $0["direction"] as? String }) == ["playback", "capture"], "\(call2)")
        #expect(Set(call2.compactMap { $0["session"] as? Int }).count == 1, "one session: \(call2)")
        #expect(call2.allSatisfy { $0["mode"] as? String == "voiceChat" }, "\(call2)")
        #expect(!callStreams.contains { $0["bus"] as? String == "ringer" }, "the ringtone stopped: \(callStreams)")
        // The privacy switch: in force, the call's session kept from the microphone; after it, waiting to be
        // started again (baresip does not restart its stream); the streams stayed open.
        #expect(switched["microphoneSwitch"] as? String == "muted")
        #expect(blocked == "privacySwitch")
        #expect(blockedAfter == "awaitingStart", "after the switch: \(blockedAfter ?? "nothing")")
        #expect(streamsAfterPrivacy.count == 2, "the call's streams stay open: \(streamsAfterPrivacy)")
        #expect(blockedAtRestart == nil, "after `play \(callSession ?? -1)`: \(blockedAtRestart ?? "")")

        // Audio both ways. A's source (hush:voice capture) gave silence — no microphone on this host — at the
        // real rate, privacy switch or not: the call's clock ran for the whole call, and B received it.
        #expect(sentByA.allSatisfy { $0 == 0 }, "no microphone: A sends silence")
        #expect(aSent > call * 0.95 && aSent < call + 1.5, "A's source gave \(aSent) s in a \(call) s call")
        #expect(bReceived > call * 0.95 && bReceived < call + 1.5, "B received \(bReceived) s of a \(call) s call")
        // The far end's tone reached A's player and hushd's mix, for the whole call, at the system volume
        // (half scale at step 8, −24 dB: about −30 dBFS).
        #expect(Double(farInA) > call * 50 * 0.9, "A received the far end in \(farInA) windows of a \(call) s call")
        #expect(Double(farWindows.count) > call * 50 * 0.9, "the far end in the mix for \(farWindows.count) windows")
        #expect(farLevel > -36 && farLevel < -24, "the far end in the mix at \(farLevel) dBFS")
        // The ringtone was heard while A rang, over held music; the music was not heard during the call, and
        // resumed after it (R8, R9, R10: the call's session ended with notifyOthers).
        #expect(Double(ringWindows.count) > ringDuration * 50 * 0.8, "the ring in \(ringWindows.count) windows")
        #expect(musicOverRing <= ringWindows.count / 10, "music under the ring in \(musicOverRing) windows")
        #expect(musicOverCall <= farWindows.count / 20, "music under the call in \(musicOverCall) windows")
        #expect(musicBefore >= 25, "music before the ring: \(musicBefore) windows")
        if musicAfter < 50 {
            // What hushd saw and did after the call, for whoever reads a failure.
            let log = (try? String(contentsOfFile: hushd.log, encoding: .utf8)) ?? ""
            let tail = musicLevels.suffix(150).map { String(format: "%.0f", $0) }.joined(separator: " ")
            let farTail = farMixLevels.suffix(20).map { String(format: "%.0f", $0) }.joined(separator: " ")
            Issue.record(
                """
                music after the call: \(musicAfter) windows; the mix is \(musicLevels.count) windows long, the far end \
                last near its level in window \(lastFar) (heard in \(farWindows.last ?? -1)); the music's level in its last 150 \
                windows: \(tail); the far end's in its last 20: \(farTail)
                status 2 s after the music ran again: sessions \(statusAfter["sessions"] ?? "none"), \
                streams \(statusAfter["streams"] ?? "none")
                hushd's log:
                \(log.split(separator: "\n").suffix(40).joined(separator: "\n"))
                """
            )
        }
    }
}
