import HushCore
import HushDaemon
import HushPolicy
import Testing

@Suite("Console commands")
struct ConsoleCommandTests {
    static func parse(_ line: String) throws -> ConsoleCommand? {
        try ConsoleCommand.parse(line) { SessionID(77) }
    }

    @Test(
        "lines a person types become events",
        arguments: [
            ("silence on", ConsoleCommand.event(.input(.silenceSwitch(.silent)))),
            ("silence off", .event(.input(.silenceSwitch(.ring)))),
            ("up", .tap(.up)),
            ("hold down", .event(.input(.volumeButton(.down, .press)))),
            ("release", .releaseHeld),
            ("release up", .event(.input(.volumeButton(.up, .release)))),
            ("key playpause", .event(.input(.mediaKey(.playPause)))),
            ("key NEXT", .event(.input(.mediaKey(.next)))),
            ("plug", .event(.input(.headphones(.plugged, source: .console)))),
            ("unplug evdev", .event(.input(.headphones(.unplugged, source: .evdev)))),
            (
                "activate music playback",
                .event(
                    .activate(
                        SessionID(77),
                        client: ClientID(77),
                        SessionConfiguration(bus: .music, category: .playback)
                    )
                )
            ),
            (
                "activate 3 ringer soloAmbient transient client=9",
                .event(
                    .activate(
                        SessionID(3),
                        client: ClientID(9),
                        SessionConfiguration(bus: .ringer, category: .soloAmbient, transient: true)
                    )
                )
            ),
            (
                "activate 4 effect playback duck mix",
                .event(
                    .activate(
                        SessionID(4),
                        client: ClientID(4),
                        SessionConfiguration(bus: .effect, category: .playback, options: [.duckOthers, .mixWithOthers])
                    )
                )
            ),
            ("play 3", .event(.play(SessionID(3)))),
            ("deactivate 3 notify", .event(.deactivate(SessionID(3), notifyOthers: true))),
            ("deactivate 3", .event(.deactivate(SessionID(3), notifyOthers: false))),
            ("gone 9", .event(.clientGone(ClientID(9)))),
            ("volume 12", .event(.setVolume(.system, VolumeStep(clamping: 12)))),
            ("ringer 0", .event(.setVolume(.ringer, .minimum))),
            ("route lineout", .event(.setRouteOverride(Route("lineout")))),
            ("route auto", .event(.setRouteOverride(nil))),
            ("wait 250", .wait(.milliseconds(250))),
            ("  status  ", .status),
        ]
    )
    func valid(line: String, expected: ConsoleCommand) throws {
        #expect(try Self.parse(line) == expected)
    }

    @Test("blank lines and comments are nothing")
    func nothing() throws {
        #expect(try Self.parse("") == nil)
        #expect(try Self.parse("   # a comment") == nil)
    }

    @Test(
        "bad lines get an error that says what to type instead",
        arguments: [
            ("silence maybe", "silence takes on or off, not 'maybe'"),
            ("volume 17", "volume must be between 0 and 16, not 17"),
            // Found by Fuzz/ (fuzz-scenario): a number past Int.max trapped in the conversion, on the console too.
            (
                "ringer 18446744073709551615",
                "ringer must be between 0 and 16, not 18446744073709551615"
            ),
            ("volume loud", "volume must be a whole number, not 'loud'"),
            ("activate bus playback", "unknown bus 'bus': use effect, music or ringer"),
            (
                "activate 2 music jazz",
                "unknown category 'jazz': use ambient, soloAmbient, playback, record or playAndRecord"
            ),
            ("activate music playback loud", "unknown option 'loud': use mix, duck, transient or client=N"),
            ("activate", "usage: activate [ID] BUS CATEGORY [mix] [duck] [transient] [client=N]"),
            ("deactivate 2 now", "deactivate takes 'notify' after the id, not 'now'"),
            ("plug usb", "unknown jack source 'usb': use alsa, evdev, gpio or console"),
            ("key stop", "unknown media key 'stop': use play, pause, playpause, next or previous"),
            ("hold", "usage: hold up|down"),
            ("dance", "unknown command 'dance': type help for the list"),
        ]
    )
    func invalid(line: String, message: String) {
        #expect {
            _ = try Self.parse(line)
        } throws: { error in
            (error as? ConsoleCommand.SyntaxError)?.message == message
        }
    }
}
