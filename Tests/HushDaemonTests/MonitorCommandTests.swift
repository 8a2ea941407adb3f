import HushCore
import HushDaemon
import Logging
import Testing

@Suite("serial-console monitor commands")
struct MonitorCommandTests {
    static let valid: [(String, MonitorCommand)] = [
        ("help", .help),
        ("?", .help),
        ("status", .status),
        ("  STATUS  ", .status),
        ("sessions", .sessions),
        ("version", .version),
        ("volume", .volume(nil)),
        ("volume up", .volume(.up)),
        ("volume down", .volume(.down)),
        ("volume 0", .volume(.step(VolumeStep(rawValue: 0)!))),
        ("volume 16", .volume(.step(VolumeStep(rawValue: 16)!))),
        ("ringer", .ringer(nil)),
        ("ringer Up", .ringer(.up)),
        ("ringer 7", .ringer(.step(VolumeStep(rawValue: 7)!))),
        ("route", .route(nil)),
        ("route speaker", .route(.route(.speaker))),
        ("route headphones", .route(.route(.headphones))),
        ("route auto", .route(.automatic)),
        ("route hdmi", .route(.route(Route("hdmi")))),
        ("play song.flac", .play(.file("song.flac"), bus: nil, loop: false)),
        ("play ring.wav ringer loop", .play(.file("ring.wav"), bus: .ringer, loop: true)),
        ("play ring.wav loop effect", .play(.file("ring.wav"), bus: .effect, loop: true)),
        ("play \"My Song.flac\" music", .play(.file("My Song.flac"), bus: .music, loop: false)),
        ("play tone 440", .play(.tone(hertz: 440), bus: nil, loop: false)),
        ("play tone 1000 ringer", .play(.tone(hertz: 1000), bus: .ringer, loop: false)),
        ("stop", .stop(.lastPlayed)),
        ("stop 3", .stop(.session(SessionID(3)))),
        ("stop all", .stop(.all)),
        ("log level", .logLevel(nil)),
        ("log level trace", .logLevel(.trace)),
        ("log level notice", .logLevel(.notice)),
        ("log level ERROR", .logLevel(.error)),
        ("silence on", .silence(.on)),
        ("silence off", .silence(.off)),
        ("silence toggle", .silence(.toggle)),
        ("press up", .press(.up)),
        ("press down", .press(.down)),
        ("release", .release),
        ("tap up", .tap(.up)),
        ("tap down", .tap(.down)),
        ("plug", .jack(.plug)),
        ("unplug", .jack(.unplug)),
        ("jack toggle", .jack(.toggle)),
    ]

    @Test("every command parses", arguments: valid.indices)
    func parses(_ index: Int) throws {
        let (line, expected) = Self.valid[index]
        #expect(try MonitorCommand.parse(line) == expected)
    }

    @Test("blank lines and comments are nothing")
    func blank() throws {
        #expect(try MonitorCommand.parse("") == nil)
        #expect(try MonitorCommand.parse("   \t") == nil)
        #expect(try MonitorCommand.parse("# a note for the log") == nil)
    }

    static let invalid: [(String, String)] = [
        ("volumme up", "unknown command 'volumme'; did you mean 'volume'?"),
        ("frobnicate", "unknown command 'frobnicate'"),
        ("volume 17", "volume takes up, down or a step from 0 to 16, not '17'"),
        ("ringer loud", "ringer takes up, down or a step from 0 to 16, not 'loud'"),
        ("volume up down", "usage: volume [up|down|N]"),
        ("status now", "status takes no arguments (got 'now')"),
        ("play", "usage: play FILE"),
        ("play tone", "usage: play tone HZ [BUS]"),
        ("play tone 5", "a tone's frequency is a whole number of Hz from 20 to 20000, not '5'"),
        ("play a.wav speaker", "unexpected 'speaker' after play"),
        ("play a.wav loop loop", "unexpected 'loop' after play"),
        ("play \"a.wav", "a quote is not closed"),
        ("stop three", "stop takes a session number or 'all', not 'three'"),
        ("log", "usage: log level [trace|debug|info|notice|warning|error]"),
        ("log level loud", "unknown log level 'loud': use trace, debug, info, notice, warning, error"),
        ("silence maybe", "silence takes on, off or toggle, not 'maybe'"),
        ("press left", "press takes up or down, not 'left'"),
        ("tap", "usage: tap up|down"),
        ("plug now", "plug takes no arguments"),
        ("jack wiggle", "jack takes plug, unplug or toggle, not 'wiggle'"),
    ]

    @Test("anything else is refused with a message naming the word", arguments: invalid.indices)
    func refuses(_ index: Int) {
        let (line, expected) = Self.invalid[index]
        #expect {
            try MonitorCommand.parse(line)
        } throws: { error in
            (error as? MonitorCommand.SyntaxError)?.message.contains(expected) == true
        }
    }

    @Test("an unknown command lists every command")
    func unknownListsCommands() {
        do throws(MonitorCommand.SyntaxError) {
            _ = try MonitorCommand.parse("sesions")
            Issue.record("parsed")
        } catch {
            #expect(
                error.message
                    == "unknown command 'sesions'; did you mean 'sessions'? Commands: help, status, volume, ringer, "
                    + "route, sessions, play, stop, log, version, silence, press, release, tap, plug, unplug, jack"
            )
        }
    }

    @Test("every hot key stands for a command that parses, and none can begin a command word")
    func hotKeys() throws {
        #expect(MonitorCommand.hotKeys.count >= 6)
        for (key, command) in MonitorCommand.hotKeys {
            #expect(try MonitorCommand.parse(command) != nil, "\(key) → \(command)")
            #expect(!MonitorCommand.words.contains { $0.first == key })
            #expect(!key.isLetter && !key.isNumber && key != "#" && key != " ")
        }
        #expect(try MonitorCommand.parse(MonitorCommand.hotKeys["+"]!) == .tap(.up))
        #expect(try MonitorCommand.parse(MonitorCommand.hotKeys["-"]!) == .tap(.down))
        #expect(try MonitorCommand.parse(MonitorCommand.hotKeys["!"]!) == .silence(.toggle))
        #expect(try MonitorCommand.parse(MonitorCommand.hotKeys["*"]!) == .jack(.toggle))
    }

    @Test("help fits 80 columns and names every command word and every hot key")
    func help() {
        let lines = MonitorCommand.helpText.split(separator: "\n")
        #expect(lines.allSatisfy { $0.count <= 80 })
        #expect(lines.count <= 23, "a 24-row terminal shows it with a prompt")
        for word in MonitorCommand.words {
            #expect(MonitorCommand.helpText.contains(word), "\(word)")
        }
        for key in MonitorCommand.hotKeys.keys {
            #expect(MonitorCommand.helpText.contains(" \(key) "), "\(key)")
        }
    }

    @Test("completions follow the words typed so far")
    func completions() {
        #expect(MonitorCommand.completions(for: "") == MonitorCommand.words)
        #expect(MonitorCommand.completions(for: "vol") == MonitorCommand.words)
        #expect(MonitorCommand.completions(for: "volume ") == ["up", "down"])
        #expect(MonitorCommand.completions(for: "route h") == ["speaker", "headphones", "auto"])
        #expect(
            MonitorCommand.completions(for: "log level ") == ["trace", "debug", "info", "notice", "warning", "error"]
        )
        #expect(MonitorCommand.completions(for: "play song.flac ").contains("loop"))
        #expect(MonitorCommand.completions(for: "play tone ").isEmpty)
        #expect(MonitorCommand.completions(for: "status ").isEmpty)
    }
}
