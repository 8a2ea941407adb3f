import Foundation
import HushAudioFile
import HushCore
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// One bad request and what hushd must answer. `SOUNDS` in a line stands for the sound directory, `OTHER` for the
/// session of another client, `OWN` for one of the sending client's own.
struct BadRequest: CustomTestStringConvertible, Sendable {
    /// The kind counted in docs/reliability.md ("malformed", "sound path", …).
    let kind: String
    let name: String
    /// Lines sent, each ended by a newline unless it is raw bytes; every reply but the last must be ok.
    let lines: [[UInt8]]
    let code: String
    /// Words the error message must contain: what was wrong and where.
    let words: [String]
    let field: String?
    /// The sending client activates a session of its own first.
    let ownSession: Bool

    init(
        _ kind: String,
        _ name: String,
        _ lines: [String],
        _ code: String,
        _ words: [String],
        field: String? = nil,
        ownSession: Bool = false
    ) {
        self.init(kind, name, raw: lines.map { Array(($0 + "\n").utf8) }, code, words, field: field, own: ownSession)
    }

    init(
        _ kind: String,
        _ name: String,
        raw lines: [[UInt8]],
        _ code: String,
        _ words: [String],
        field: String? = nil,
        own: Bool = false
    ) {
        self.kind = kind
        self.name = name
        self.lines = lines
        self.code = code
        self.words = words
        self.field = field
        ownSession = own
    }

    var testDescription: String { "\(kind): \(name)" }

    static func play(_ path: String) -> String { #"{"command":"play","session":OWN,"sound":"\#(path)"}"# }

    /// Bytes that are not UTF-8 and hold no newline, the same every run.
    static var garbage: [UInt8] {
        var state: UInt32 = 0x2545_F491
        return (0..<4096).map { _ in
            state ^= state << 13
            state ^= state >> 17
            state ^= state << 5
            let byte = UInt8(truncatingIfNeeded: state)
            return byte == 0x0A ? 0xFF : byte
        } + [0x0A]
    }

    static let all: [BadRequest] = [
        // Lines that are not requests.
        BadRequest("malformed", "not JSON", ["{nope"], "malformed-json", ["not a JSON object"]),
        BadRequest("malformed", "JSON cut short", [#"{"command":"status""#], "malformed-json", ["not a JSON object"]),
        BadRequest("malformed", "an array", ["[1,2,3]"], "not-an-object", ["object"]),
        BadRequest("malformed", "a bare string", [#""status""#], "not-an-object", ["object"]),
        BadRequest("malformed", "NUL and control bytes", ["\u{0}\u{1}\u{7}\u{0}"], "malformed-json", ["JSON"]),
        BadRequest("malformed", "binary garbage", raw: [garbage], "malformed-json", ["not valid UTF-8"]),
        BadRequest(
            "malformed",
            "60000 unclosed brackets",
            [String(repeating: "[", count: 60_000)],
            "malformed-json",
            ["not a JSON object"]
        ),
        BadRequest(
            "malformed",
            "arrays nested 32000 deep",
            [String(repeating: "[", count: 32_000) + String(repeating: "]", count: 32_000)],
            "malformed-json",
            ["JSON"]
        ),
        BadRequest(
            "malformed",
            "a line over the 65536-byte limit",
            [#"{"command":"status","name":""# + String(repeating: "x", count: 70_000) + #""}"#],
            "line-too-long",
            ["70", "65536", "discarded"]
        ),
        // Requests hushd does not know.
        BadRequest("unknown", "an unknown command", [#"{"command":"dance"}"#], "unknown-command", ["dance"]),
        BadRequest("unknown", "no command", [#"{"id":1}"#], "missing-field", ["command"], field: "command"),
        BadRequest(
            "unknown",
            "an unknown field",
            [#"{"command":"status","verbose":true}"#],
            "unknown-field",
            ["verbose"],
            field: "verbose"
        ),
        // Fields of the wrong type or out of range.
        BadRequest(
            "wrong type",
            "a step in quotes",
            [#"{"command":"volume","step":"9"}"#],
            "wrong-type",
            ["step"],
            field: "step"
        ),
        BadRequest(
            "wrong type",
            "a session as a string",
            [#"{"command":"pause","session":"one"}"#],
            "wrong-type",
            ["session"],
            field: "session"
        ),
        BadRequest(
            "wrong type",
            "options not an array",
            [#"{"command":"activate","bus":"music","category":"playback","options":"duckOthers"}"#],
            "wrong-type",
            ["options"],
            field: "options"
        ),
        BadRequest(
            "wrong type",
            "a step of 1e400",
            [#"{"command":"volume","step":1e400}"#],
            "malformed-json",
            ["step"]
        ),
        BadRequest(
            "impossible value",
            "volume step 17",
            [#"{"command":"volume","step":17}"#],
            "invalid-value",
            ["step", "17"],
            field: "step"
        ),
        BadRequest(
            "impossible value",
            "a delta of -99",
            [#"{"command":"volume","kind":"ringer","delta":-99}"#],
            "invalid-value",
            ["delta", "-99"],
            field: "delta"
        ),
        BadRequest(
            "impossible value",
            "a misspelt bus",
            [#"{"command":"activate","bus":"musik","category":"playback"}"#],
            "invalid-value",
            ["bus", "musik", "did you mean"],
            field: "bus"
        ),
        BadRequest(
            "impossible value",
            "a tone of 30 kHz",
            [#"{"command":"play","session":OWN,"tone":30000}"#],
            "invalid-value",
            ["tone", "30000"],
            field: "tone",
            ownSession: true
        ),
        BadRequest(
            "impossible value",
            "sound and tone together",
            [#"{"command":"play","session":OWN,"tone":440,"sound":"SOUNDS/a.wav"}"#],
            "conflicting-fields",
            ["sound", "tone"],
            ownSession: true
        ),
        BadRequest(
            "impossible value",
            "an unknown route",
            [#"{"command":"route","override":"bluetooth"}"#],
            "unknown-route",
            ["bluetooth"]
        ),
        // Sessions that are not there or not the sender's.
        BadRequest(
            "session",
            "an unknown session",
            [#"{"command":"pause","session":999}"#],
            "unknown-session",
            ["999"],
            field: "session"
        ),
        BadRequest(
            "session",
            "session 0",
            [#"{"command":"stop","session":0}"#],
            "wrong-type",
            ["session", "above 0"],
            field: "session"
        ),
        BadRequest(
            "session",
            "a negative session",
            [#"{"command":"resume","session":-1}"#],
            "wrong-type",
            ["session", "-1"],
            field: "session"
        ),
        BadRequest(
            "session",
            "a session past 2^64",
            [#"{"command":"pause","session":18446744073709551616}"#],
            "wrong-type",
            ["session"],
            field: "session"
        ),
        BadRequest(
            "session",
            "pausing another client's session",
            [#"{"command":"pause","session":OTHER}"#],
            "not-your-session",
            ["another client"],
            field: "session"
        ),
        BadRequest(
            "session",
            "deactivating another client's session",
            [#"{"command":"deactivate","session":OTHER,"notifyOthers":true}"#],
            "not-your-session",
            ["another client"],
            field: "session"
        ),
        BadRequest(
            "session",
            "playing into another client's session",
            [#"{"command":"play","session":OTHER,"tone":880}"#],
            "not-your-session",
            ["another client"],
            field: "session"
        ),
        BadRequest(
            "session",
            "a ninth session on one connection",
            Array(repeating: #"{"command":"activate","bus":"effect","category":"ambient"}"#, count: 9),
            "too-many-sessions",
            ["8 sessions", "max_sessions_per_client"]
        ),
        // Sound paths outside the sound directories, however spelt.
        BadRequest(
            "sound path",
            "../ out of the directory",
            [play("SOUNDS/../hushd.toml")],
            "cannot-play",
            ["SOUNDS/../hushd.toml", "outside the sound directories"],
            field: "sound",
            ownSession: true
        ),
        BadRequest(
            "sound path",
            "an absolute path elsewhere",
            [play("/etc/passwd")],
            "cannot-play",
            ["/etc/passwd", "outside the sound directories"],
            field: "sound",
            ownSession: true
        ),
        BadRequest(
            "sound path",
            "a relative path",
            [play("sounds/tone.wav")],
            "cannot-play",
            ["sounds/tone.wav", "outside the sound directories"],
            field: "sound",
            ownSession: true
        ),
        BadRequest(
            "sound path",
            "a symlink pointing out",
            [play("SOUNDS/passwd.wav")],
            "cannot-play",
            ["SOUNDS/passwd.wav", "outside the sound directories"],
            field: "sound",
            ownSession: true
        ),
        BadRequest(
            "sound path",
            "through a symlinked directory",
            [play("SOUNDS/etc/passwd")],
            "cannot-play",
            ["SOUNDS/etc/passwd", "outside the sound directories"],
            field: "sound",
            ownSession: true
        ),
        BadRequest(
            "sound path",
            "a symlink to /dev/zero",
            [play("SOUNDS/zero.wav")],
            "cannot-play",
            ["SOUNDS/zero.wav", "outside the sound directories"],
            field: "sound",
            ownSession: true
        ),
        BadRequest(
            "sound path",
            "a missing file elsewhere says no more than outside",
            [play("/root/secret/missing.wav")],
            "cannot-play",
            ["/root/secret/missing.wav", "outside the sound directories"],
            field: "sound",
            ownSession: true
        ),
        BadRequest(
            "sound path",
            "a missing file inside via ..",
            [play("SOUNDS/../nothing/x.wav")],
            "cannot-play",
            ["outside the sound directories"],
            field: "sound",
            ownSession: true
        ),
        BadRequest(
            "sound path",
            "a 5000-byte path inside",
            [play("SOUNDS/" + String(repeating: "a", count: 5000))],
            "cannot-play",
            ["File name too long"],
            field: "sound",
            ownSession: true
        ),
        BadRequest(
            "sound path",
            "a 6000-byte path elsewhere",
            [play(String(repeating: "/b", count: 3000))],
            "cannot-play",
            ["outside the sound directories"],
            field: "sound",
            ownSession: true
        ),
        BadRequest(
            "sound path",
            "the sound directory itself",
            [play("SOUNDS")],
            "cannot-play",
            ["outside the sound directories"],
            field: "sound",
            ownSession: true
        ),
        // Files inside that are not sounds.
        BadRequest(
            "sound file",
            "a missing file",
            [play("SOUNDS/missing.wav")],
            "cannot-play",
            ["SOUNDS/missing.wav", "No such file"],
            field: "sound",
            ownSession: true
        ),
        BadRequest(
            "sound file",
            "a directory",
            [play("SOUNDS/folder")],
            "cannot-play",
            ["SOUNDS/folder", "not a regular file"],
            field: "sound",
            ownSession: true
        ),
        BadRequest(
            "sound file",
            "a FIFO (would block hushd's loop)",
            [play("SOUNDS/fifo.wav")],
            "cannot-play",
            ["SOUNDS/fifo.wav", "not a regular file"],
            field: "sound",
            ownSession: true
        ),
        BadRequest(
            "sound file",
            "a text file",
            [play("SOUNDS/text.wav")],
            "cannot-play",
            ["SOUNDS/text.wav", "not a sound file libsndfile can read"],
            field: "sound",
            ownSession: true
        ),
        BadRequest(
            "sound file",
            "an empty file",
            [play("SOUNDS/empty.wav")],
            "cannot-play",
            ["SOUNDS/empty.wav", "not a sound file libsndfile can read"],
            field: "sound",
            ownSession: true
        ),
        BadRequest(
            "sound file",
            "a header cut at 20 bytes",
            [play("SOUNDS/truncated.wav")],
            "cannot-play",
            ["SOUNDS/truncated.wav", "not a sound file libsndfile can read"],
            field: "sound",
            ownSession: true
        ),
        BadRequest(
            "sound file",
            "a header that says 7 Hz",
            [play("SOUNDS/rate7.wav")],
            "cannot-play",
            ["SOUNDS/rate7.wav", "7 Hz"],
            field: "sound",
            ownSession: true
        ),
        BadRequest(
            "sound file",
            "a header with no channels",
            [play("SOUNDS/nochannels.wav")],
            "cannot-play",
            ["SOUNDS/nochannels.wav", "not a sound file libsndfile can read"],
            field: "sound",
            ownSession: true
        ),
    ]
}

/// The bad-input corpus (issue 6 §2) against a real hushd over its real socket: each bad request gets an error
/// naming what and where; the connection stays usable; another client's playing session keeps working; hushd
/// stays up; volumes and the state file do not change.
@Suite("bad input to a real hushd", .serialized)
struct BadInputTests {
    /// The sound directory's contents: good and damaged files, a FIFO, links pointing out.
    static func populate(_ hushd: HushdProcess) throws {
        let sounds = hushd.soundDirectory
        try SoundFile.write(AudioBuffer(frameCount: 800, channels: 1, sampleRate: 8000), to: sounds + "/tone.wav")
        let good = Array(try Data(contentsOf: URL(fileURLWithPath: sounds + "/tone.wav")))
        func write(_ name: String, _ bytes: [UInt8]) {
            FileManager.default.createFile(atPath: sounds + "/" + name, contents: Data(bytes))
        }
        func patched(_ offset: Int, _ value: UInt32, bytes: Int) -> [UInt8] {
            var copy = good
            for i in 0..<bytes { copy[offset + i] = UInt8(truncatingIfNeeded: value >> (8 * UInt32(i))) }
            return copy
        }
        write("text.wav", Array("this is not audio\n".utf8))
        write("empty.wav", [])
        write("truncated.wav", Array(good.prefix(20)))
        // The canonical 44-byte header: channels at 22, rate at 24, the data chunk's size at 40.
        write("rate7.wav", patched(24, 7, bytes: 4))
        write("nochannels.wav", patched(22, 0, bytes: 2))
        write("lying.wav", patched(40, 0xFFFF_FFF0, bytes: 4))
        mkfifo(sounds + "/fifo.wav", 0o644)
        mkdir(sounds + "/folder", 0o755)
        symlink("/etc/passwd", sounds + "/passwd.wav")
        symlink("/etc", sounds + "/etc")
        symlink("/dev/zero", sounds + "/zero.wav")
    }

    /// A client that owns a playing session, to show others are unaffected.
    struct Bystander {
        let connection: HushdConnection
        let session: Int

        init(_ hushd: HushdProcess) throws {
            connection = try hushd.connect()
            let activated = try connection.call(
                #""command":"activate","bus":"music","category":"playback","options":["mixWithOthers"]"#
            )
            session = try #require(activated["session"] as? Int)
            let played = try connection.call(#""command":"play","session":\#(session),"tone":440"#)
            #expect(played["ok"] as? Bool == true)
        }

        /// Pauses and resumes its session, and finds it playing.
        func stillWorks() throws {
            for command in ["pause", "resume"] {
                let reply = try connection.request(#"{"command":"\#(command)","session":\#(session)}"#)
                #expect(reply == #"{"ok":true}"#, "the bystander's \(command)")
            }
            let sessions = try #require(try connection.status()["sessions"] as? [[String: Any]])
            let mine = sessions.first { $0["id"] as? Int == session }
            #expect(mine?["state"] as? String == "playing")
        }
    }

    /// What must not change: volumes, route, switch, and the state file's bytes.
    static func snapshot(_ hushd: HushdProcess) throws -> [String] {
        let status = try hushd.status()
        let state = (try? String(contentsOfFile: hushd.statePath, encoding: .utf8)) ?? "(no state file)"
        return ["systemVolume", "ringerVolume", "route", "silenceSwitch", "routeOverridden"].map {
            "\($0)=\(status[$0] ?? "-")"
        } + [state]
    }

    @Test("each bad request is answered with an error naming what and where", arguments: BadRequest.all)
    func badRequest(_ bad: BadRequest) throws {
        let hushd = try HushdProcess()
        try Self.populate(hushd)
        let bystander = try Bystander(hushd)
        let before = try Self.snapshot(hushd)
        let client = try hushd.connect()
        var own = 0
        if bad.ownSession {
            own = try #require(
                try client.call(#""command":"activate","bus":"effect","category":"ambient""#)["session"] as? Int
            )
        }
        var replies: [String] = []
        for line in bad.lines {
            let text = String(decoding: line, as: UTF8.self)
                .replacingOccurrences(of: "SOUNDS", with: hushd.soundDirectory)
                .replacingOccurrences(of: "OTHER", with: String(bystander.session))
                .replacingOccurrences(of: "OWN", with: String(own))
            // Raw bytes go as they are: a replacement would turn invalid UTF-8 into valid text.
            let bytes = String(validating: line, as: UTF8.self) == nil ? line : Array(text.utf8)
            try client.send(bytes)
            replies.append(try client.reply())
        }
        for earlier in replies.dropLast() { #expect(earlier.contains(#""ok":true"#), "\(earlier)") }
        let reply = try HushdConnection.object(try #require(replies.last))
        #expect(reply["ok"] as? Bool == false)
        let error = try #require(reply["error"] as? [String: Any], "no error in \(reply)")
        #expect(error["code"] as? String == bad.code, "\(error)")
        let message = try #require(error["message"] as? String)
        for word in bad.words {
            let expected = word.replacingOccurrences(of: "SOUNDS", with: hushd.soundDirectory)
            #expect(message.contains(expected), "'\(expected)' not in: \(message)")
        }
        if let field = bad.field { #expect(error["field"] as? String == field) }

        // The same connection answers the next request; the bystander's session plays on; nothing changed.
        #expect(try client.request(#"{"command":"version","id":"after"}"#).contains(#""id":"after","ok":true"#))
        try bystander.stillWorks()
        #expect(hushd.isRunning)
        #expect(try Self.snapshot(hushd) == before)
        client.close()
        bystander.connection.close()
        let status = hushd.stop()
        #expect(status == 0, "hushd's exit status after SIGTERM: \(status); its log:\n\(hushd.log)")
    }

    @Test("an output card that is not there: hushd starts, says why once, keeps trying quietly and serves clients")
    func missingCardAtStart() throws {
        // Real alsa-lib with no such card: what a board sees when its DAC's driver comes up after hushd.
        let hushd = try HushdProcess(fallback: nil)
        let output = try #require(try hushd.status()["output"] as? [String: Any])
        #expect(output["open"] as? Bool == false, "\(output)")
        #expect(output["pcm"] as? String == "hw:CARD=HushNoSuchCard,DEV=0")
        let client = try hushd.connect()
        let session = try client.call(#""command":"activate","bus":"music","category":"playback""#)["session"]
        #expect(session as? Int != nil, "a client can still activate a session")
        // The audio thread tries every 250 ms at most: a second is four tries or more.
        usleep(1_200_000)
        #expect(hushd.isRunning)
        let lines = hushd.log.split(separator: "\n")
        let why = lines.filter { $0.contains("hushd runs without sound") }
        #expect(why.count == 1, "said once, not at every try: \(why)")
        // ENODEV under the system's alsa.conf, ENOENT under the file another suite may have set: either names
        // the cards there are.
        #expect(why.first?.contains("cards present: ") == true, "\(why)")
        #expect(!lines.contains { $0.contains("ALSA lib") }, "alsa-lib's own lines stay off:\n\(hushd.log)")
        client.close()
        #expect(hushd.stop() == 0)
    }

    @Test("a WAV whose header claims 4 GB plays what the file holds and finishes")
    func lyingHeaderPlays() throws {
        let hushd = try HushdProcess()
        try Self.populate(hushd)
        let client = try hushd.connect()
        let session = try #require(
            try client.call(#""command":"activate","bus":"effect","category":"ambient""#)["session"] as? Int
        )
        let path = hushd.soundDirectory + "/lying.wav"
        #expect(try client.request(#"{"command":"play","session":\#(session),"sound":"\#(path)"}"#) == #"{"ok":true}"#)
        // 800 frames at 8 kHz: 0.1 s, then the session's own connection hears it finished.
        let deadline = Date().addingTimeInterval(5)
        while !client.events.contains(where: { $0.contains("session-finished") }) && Date() < deadline {
            if let line = try? client.line(milliseconds: 200) { client.events.append(line) }
        }
        #expect(client.events.contains(#"{"event":"session-finished","session":\#(session)}"#))
        #expect(hushd.isRunning)
    }

    @Test("a client that sends a request a byte every 10 ms holds no one up, and is answered at its newline")
    func slowClient() throws {
        let hushd = try HushdProcess()
        let bystander = try Bystander(hushd)
        let slow = try hushd.connect()
        let request = Array(#"{"command":"dance","id":7}"#.utf8) + [0x0A]
        var slowest = 0.0
        for (index, byte) in request.enumerated() {
            try slow.send([byte])
            usleep(10_000)
            if index % 5 == 0 {
                let started = Date()
                _ = try bystander.connection.request(#"{"command":"volume"}"#)
                slowest = max(slowest, Date().timeIntervalSince(started))
            }
        }
        let reply = try slow.reply()
        #expect(reply.hasPrefix(#"{"error":{"code":"unknown-command","field":"command","message":"unknown command"#))
        #expect(reply.hasSuffix(#""id":7,"ok":false}"#))
        // Generous: the point is that the slow client never makes others wait for its newline.
        #expect(slowest < 1.0, "the bystander waited \(slowest) s for a reply")
        try bystander.stillWorks()
    }

    @Test("a client that shuts its write side mid-request is dropped; its sessions end; others play on")
    func halfOpenMidRequest() throws {
        let hushd = try HushdProcess()
        let bystander = try Bystander(hushd)
        let before = try Self.snapshot(hushd)
        let client = try hushd.connect()
        let session = try #require(
            try client.call(#""command":"activate","bus":"effect","category":"ambient""#)["session"] as? Int
        )
        try client.send(#"{"command":"pause","sess"#)
        shutdown(client.fd, Int32(SHUT_WR))
        // The partial request is not answered; hushd closes its side.
        #expect(try client.closedByPeer())
        #expect(client.takeLines().isEmpty)
        let sessions = try #require(try hushd.status()["sessions"] as? [[String: Any]])
        #expect(sessions.map { $0["id"] as? Int } == [bystander.session], "session \(session) should have ended")
        #expect(hushd.log.contains("disconnected"))
        try bystander.stillWorks()
        #expect(try Self.snapshot(hushd) == before)
    }

    @Test("a client that sends whole requests and then shuts its write side still gets every reply")
    func halfOpenAfterRequests() throws {
        let hushd = try HushdProcess()
        let client = try hushd.connect()
        try client.send(#"{"command":"version","id":1}"# + "\n" + #"{"command":"volume","id":2}"# + "\n")
        shutdown(client.fd, Int32(SHUT_WR))
        #expect(try client.closedByPeer())
        let lines = client.takeLines()
        #expect(lines.count == 2)
        #expect(lines.first?.contains(#""id":1,"ok":true"#) == true)
        #expect(lines.last?.hasPrefix(#"{"id":2,"ok":true,"volume":{"#) == true)
        #expect(hushd.isRunning)
    }
}
