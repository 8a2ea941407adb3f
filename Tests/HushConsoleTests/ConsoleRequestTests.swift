import HushConsole
import HushCore
import HushPolicy
import Logging
import Testing

/// The one command grammar: hushd's console, `hushd console` and scenarios parse with it.
@Suite("Console commands")
struct ConsoleRequestTests {
    static let valid: [(String, ConsoleRequest)] = [
        ("help", .help),
        ("?", .help),
        ("status", .status),
        ("  STATUS  ", .status),
        ("sessions", .sessions),
        ("version", .version),
        ("quit", .quit),
        ("volume", .volume(.system, nil)),
        ("volume up", .volume(.system, .up)),
        ("volume down", .volume(.system, .down)),
        ("volume 0", .volume(.system, .step(VolumeStep(rawValue: 0)!))),
        ("volume 16", .volume(.system, .step(VolumeStep(rawValue: 16)!))),
        ("ringer", .volume(.ringer, nil)),
        ("ringer Up", .volume(.ringer, .up)),
        ("ringer 7", .volume(.ringer, .step(VolumeStep(rawValue: 7)!))),
        ("route", .route(nil)),
        ("route speaker", .route(.route(.speaker))),
        ("route auto", .route(.automatic)),
        ("route hdmi", .route(.route(Route("hdmi")))),
        ("play song.flac", .playSound(.file("song.flac"), bus: nil, loop: false)),
        ("play ring.wav ringer loop", .playSound(.file("ring.wav"), bus: .ringer, loop: true)),
        ("play ring.wav loop effect", .playSound(.file("ring.wav"), bus: .effect, loop: true)),
        ("play \"My Song.flac\" music", .playSound(.file("My Song.flac"), bus: .music, loop: false)),
        ("play ./7", .playSound(.file("./7"), bus: nil, loop: false)),
        ("play tone 440", .playSound(.tone(hertz: 440), bus: nil, loop: false)),
        ("play tone 1000 ringer loop", .playSound(.tone(hertz: 1000), bus: .ringer, loop: true)),
        ("play 3", .play(SessionID(3))),
        ("pause 3", .pause(SessionID(3))),
        ("finished 3", .finished(SessionID(3))),
        ("stop", .stop(.lastPlayed)),
        ("stop 3", .stop(.session(SessionID(3)))),
        ("stop all", .stop(.all)),
        ("log level", .logLevel(nil)),
        ("log level trace", .logLevel(.trace)),
        ("log level ERROR", .logLevel(.error)),
        ("silence on", .silence(.on)),
        ("silence off", .silence(.off)),
        ("silence toggle", .silence(.toggle)),
        ("press up", .press(.up)),
        ("press down", .press(.down)),
        ("release", .release(nil)),
        ("release up", .release(.up)),
        ("tap up", .tap(.up)),
        ("tap down", .tap(.down)),
        ("up", .tap(.up)),
        ("down", .tap(.down)),
        ("plug", .jack(.plug, source: .console)),
        ("unplug", .jack(.unplug, source: .console)),
        ("unplug evdev", .jack(.unplug, source: .evdev)),
        ("plug alsa", .jack(.plug, source: .alsaControl)),
        ("jack toggle", .jack(.toggle, source: .console)),
        ("key playpause", .key(.playPause)),
        ("key NEXT", .key(.next)),
        (
            "activate music playback",
            .activate(nil, client: nil, SessionConfiguration(bus: .music, category: .playback))
        ),
        (
            "activate 3 ringer soloAmbient transient client=9",
            .activate(
                SessionID(3),
                client: ClientID(9),
                SessionConfiguration(bus: .ringer, category: .soloAmbient, transient: true)
            )
        ),
        (
            "activate 4 effect playback duck mix",
            .activate(
                SessionID(4),
                client: nil,
                SessionConfiguration(bus: .effect, category: .playback, options: [.duckOthers, .mixWithOthers])
            )
        ),
        (
            "activate 5 effect ambient gain=-10dB",
            .activate(
                SessionID(5),
                client: nil,
                SessionConfiguration(bus: .effect, category: .ambient, level: SessionLevel(decibels: -10)!)
            )
        ),
        ("level 5 -3.5", .level(SessionID(5), SessionLevel(decibels: -3.5)!)),
        ("level 5 0", .level(SessionID(5), .unity)),
        ("deactivate 3 notify", .deactivate(SessionID(3), notifyOthers: true)),
        ("deactivate 3", .deactivate(SessionID(3), notifyOthers: false)),
        ("gone 9", .clientGone(ClientID(9))),
        ("wait 250", .wait(.milliseconds(250))),
    ]

    @Test("every command parses", arguments: valid.indices)
    func parses(_ index: Int) throws {
        let (line, expected) = Self.valid[index]
        #expect(try ConsoleRequest.parse(line) == expected)
    }

    @Test("blank lines and comments are nothing")
    func blank() throws {
        #expect(try ConsoleRequest.parse("") == nil)
        #expect(try ConsoleRequest.parse("   \t") == nil)
        #expect(try ConsoleRequest.parse("# a note for the log") == nil)
    }

    static let invalid: [(String, String)] = [
        ("volumme up", "unknown command 'volumme'; did you mean 'volume'?"),
        ("frobnicate", "unknown command 'frobnicate'"),
        ("hold up", "unknown command 'hold'"),
        ("volume 17", "volume takes up, down or a step from 0 to 16, not '17'"),
        // Found by Fuzz/ (fuzz-scenario): a number past Int.max trapped in the conversion.
        ("ringer 18446744073709551615", "ringer takes up, down or a step from 0 to 16, not '18446744073709551615'"),
        ("ringer loud", "ringer takes up, down or a step from 0 to 16, not 'loud'"),
        ("volume up down", "usage: volume [up|down|N]"),
        ("status now", "status takes no arguments (got 'now')"),
        ("up 2", "up takes no arguments (got '2')"),
        ("play", "usage: play FILE"),
        ("play tone", "usage: play tone HZ [BUS] [loop]"),
        ("play tone 5", "a tone's frequency is a whole number of Hz from 20 to 20000, not '5'"),
        ("play a.wav speaker", "unexpected 'speaker' after play"),
        ("play a.wav loop loop", "unexpected 'loop' after play"),
        ("play \"a.wav", "a quote is not closed"),
        ("pause", "usage: pause ID"),
        ("pause x", "pause takes a session number, not 'x'"),
        ("stop three", "stop takes a session number or 'all', not 'three'"),
        ("log", "usage: log level [trace|debug|info|notice|warning|error]"),
        ("log level loud", "unknown log level 'loud': use trace, debug, info, notice, warning, error"),
        ("silence maybe", "silence takes on, off or toggle, not 'maybe'"),
        ("press left", "press takes up or down, not 'left'"),
        ("tap", "usage: tap up|down"),
        ("plug usb", "unknown jack source 'usb': use alsa, evdev, gpio or console"),
        ("jack wiggle", "jack takes plug, unplug or toggle, not 'wiggle'"),
        ("key stop", "unknown media key 'stop': use play, pause, playpause, next or previous"),
        ("activate bus playback", "unknown bus 'bus': use effect, music or ringer"),
        (
            "activate 2 music jazz",
            "unknown category 'jazz': use ambient, soloAmbient, playback, record or playAndRecord"
        ),
        ("activate music playback loud", "unknown option 'loud': use mix, duck, transient, gain=DB or client=N"),
        ("activate", "usage: activate [ID] BUS CATEGORY [mix] [duck] [transient] [gain=DB] [client=N]"),
        (
            "activate music playback gain=6",
            "a level is dB from -96 to 0 (a session is never louder than its bus), not '6'"
        ),
        ("level 1", "usage: level ID DB (a level from -96 to 0 dB)"),
        ("level 1 loud", "a level is dB from -96 to 0 (a session is never louder than its bus), not 'loud'"),
        ("level x -10", "level takes a session number, not 'x'"),
        ("deactivate 2 now", "deactivate takes 'notify' after the id, not 'now'"),
        ("gone me", "gone takes a client number, not 'me'"),
        ("wait soon", "wait takes milliseconds, not 'soon'"),
    ]

    @Test("anything else is refused with a message naming the word", arguments: invalid.indices)
    func refuses(_ index: Int) {
        let (line, expected) = Self.invalid[index]
        #expect {
            try ConsoleRequest.parse(line)
        } throws: { error in
            (error as? ConsoleRequest.SyntaxError)?.message.contains(expected) == true
        }
    }

    @Test("an unknown command lists the commands of hushd's console")
    func unknownListsCommands() {
        do throws(ConsoleRequest.SyntaxError) {
            _ = try ConsoleRequest.parse("sesions")
            Issue.record("parsed")
        } catch {
            #expect(
                error.message
                    == "unknown command 'sesions'; did you mean 'sessions'? Commands: status, sessions, volume, "
                    + "ringer, route, log, version, play, stop, activate, level, pause, deactivate, silence, press, release, "
                    + "tap, up, down, plug, unplug, jack, key, privacy, help, quit"
            )
        }
    }

    /// A line and where it has no meaning.
    static let unavailable: [(String, ConsoleRequest.Context, String)] = [
        ("wait 100", .monitor, "'wait' is for scripts of hushd console"),
        ("wait 100", .scenario, "write +0.5 before the next line instead of wait"),
        ("finished 2", .monitor, "a running hushd sees that itself"),
        ("gone 2", .monitor, "a running hushd sees that on its socket"),
        ("activate 5 music playback client=3", .monitor, "sessions made here belong to the console"),
        ("log level debug", .policy, "has no log"),
        ("log level debug", .scenario, "has no log"),
        ("status", .scenario, "'status' has no meaning in a scenario"),
        ("quit", .scenario, "'quit' has no meaning in a scenario"),
        ("volume", .scenario, "give the value to set"),
        ("play tone 440", .scenario, "activate ID BUS CATEGORY tone=HZ"),
        ("stop all", .scenario, "stop takes a session number"),
    ]

    @Test("a command with no meaning where it is typed says so and what to do", arguments: unavailable.indices)
    func unavailability(_ index: Int) throws {
        let (line, context, expected) = Self.unavailable[index]
        let command = try #require(try ConsoleRequest.parse(line))
        let reason = try #require(command.unavailability(in: context))
        #expect(reason.contains(expected), "\(reason)")
        let elsewhere = ConsoleRequest.Context.allCases.filter { $0 != context }
        #expect(elsewhere.contains { command.unavailability(in: $0) == nil }, "\(line) has a meaning somewhere")
    }

    @Test("every hot key stands for a command that parses, and none can begin a command word")
    func hotKeys() throws {
        #expect(ConsoleRequest.hotKeys.count >= 6)
        for (key, command) in ConsoleRequest.hotKeys {
            let parsed = try #require(try ConsoleRequest.parse(command), "\(key) → \(command)")
            #expect(parsed.unavailability(in: .monitor) == nil)
            #expect(!ConsoleRequest.words.contains { $0.first == key })
            #expect(!key.isLetter && !key.isNumber && key != "#" && key != " ")
        }
        #expect(try ConsoleRequest.parse(ConsoleRequest.hotKeys["+"]!) == .tap(.up))
        #expect(try ConsoleRequest.parse(ConsoleRequest.hotKeys["-"]!) == .tap(.down))
        #expect(try ConsoleRequest.parse(ConsoleRequest.hotKeys["!"]!) == .silence(.toggle))
        #expect(try ConsoleRequest.parse(ConsoleRequest.hotKeys["*"]!) == .jack(.toggle, source: .console))
    }

    @Test(
        "help fits a 80x24 terminal and names every word its context takes",
        arguments: [
            ConsoleRequest.Context.monitor, .policy,
        ]
    )
    func help(_ context: ConsoleRequest.Context) {
        let text = ConsoleRequest.helpText(for: context)
        let lines = text.split(separator: "\n")
        for line in lines { #expect(line.count <= 80, "\(line)") }
        #expect(lines.count <= 23, "a 24-row terminal shows it with a prompt")
        for word in ConsoleRequest.words(for: context) {
            #expect(text.contains(word), "\(word)")
        }
        for word in ConsoleRequest.words where !ConsoleRequest.words(for: context).contains(word) {
            #expect(!text.contains(word + " "), "\(word) is not for \(context)")
        }
        if context == .monitor {
            for key in ConsoleRequest.hotKeys.keys { #expect(text.contains(" \(key) "), "\(key)") }
            // The virtual board's e2e check looks for this heading on the serial console.
            #expect(text.contains("Stand-ins for the board's controls:"))
        }
    }

    @Test("every word a context takes parses into a command it accepts")
    func wordsAreAccepted() throws {
        let examples = [
            "status", "sessions", "volume 3", "ringer 3", "route auto", "log level info", "version", "play 1",
            "stop 1", "activate 1 music playback", "level 1 -10", "pause 1", "deactivate 1", "finished 1", "gone 1",
            "silence on",
            "press up", "release", "tap up", "up", "down", "plug", "unplug", "jack toggle", "key play", "privacy on",
            "wait 5",
            "help", "quit",
        ]
        #expect(Set(examples.map { String($0.split(separator: " ")[0]) }) == Set(ConsoleRequest.words))
        for context in ConsoleRequest.Context.allCases {
            for example in examples {
                let command = try #require(try ConsoleRequest.parse(example))
                let word = String(example.split(separator: " ")[0])
                #expect(
                    (command.unavailability(in: context) == nil) == ConsoleRequest.words(for: context).contains(word),
                    "\(example) in \(context)"
                )
            }
        }
    }

    @Test("commands become the policy's events, following its state")
    func events() throws {
        var policy = AudioPolicy(configuration: PolicyConfiguration(), persisted: nil)
        _ = policy.start(at: Instant.zero)
        let volume = policy.systemVolume
        #expect(
            try ConsoleRequest.parse("volume up")?.policyEvents(policy) == [.setVolume(.system, volume.moved(by: 1))]
        )
        #expect(try ConsoleRequest.parse("silence toggle")?.policyEvents(policy) == [.input(.silenceSwitch(.silent))])
        #expect(
            try ConsoleRequest.parse("jack toggle")?.policyEvents(policy)
                == [.input(.headphones(.plugged, source: .console))]
        )
        #expect(try ConsoleRequest.parse("release")?.policyEvents(policy) == [])
        _ = policy.handle(PolicyEvent.input(.volumeButton(.down, .press)), at: Instant.zero)
        #expect(try ConsoleRequest.parse("release")?.policyEvents(policy) == [.input(.volumeButton(.down, .release))])
        #expect(
            try ConsoleRequest.parse("tap up")?.policyEvents(policy)
                == [.input(.volumeButton(.up, .press)), .input(.volumeButton(.up, .release))]
        )
        #expect(try ConsoleRequest.parse("status")?.policyEvents(policy) == nil)
        #expect(try ConsoleRequest.parse("play tone 440")?.policyEvents(policy) == nil)
    }

    @Test("completions follow the words typed so far")
    func completions() {
        #expect(ConsoleRequest.completions(for: "") == ConsoleRequest.words(for: .monitor))
        #expect(ConsoleRequest.completions(for: "vol") == ConsoleRequest.words(for: .monitor))
        #expect(ConsoleRequest.completions(for: "volume ") == ["up", "down"])
        #expect(ConsoleRequest.completions(for: "route h") == ["speaker", "headphones", "auto"])
        #expect(
            ConsoleRequest.completions(for: "log level ") == ["trace", "debug", "info", "notice", "warning", "error"]
        )
        #expect(ConsoleRequest.completions(for: "play song.flac ").contains("loop"))
        #expect(ConsoleRequest.completions(for: "play tone ").isEmpty)
        #expect(ConsoleRequest.completions(for: "status ").isEmpty)
        #expect(ConsoleRequest.completions(for: "key ").contains("playpause"))
        #expect(ConsoleRequest.completions(for: "activate music ").contains("soloAmbient"))
    }
}
