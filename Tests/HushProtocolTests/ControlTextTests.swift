import HushCore
import Testing

@testable import HushProtocol

/// hushctl's text, compared byte for byte on fixed values (swift-argument-parser's habit for CLI output).
@Suite("control text")
struct ControlTextTests {
    static let output = ControlStatus.Output(
        pcm: "hw:CARD=Headphones,DEV=0",
        open: true,
        sampleRate: 48_000,
        channels: 2,
        periodFrames: 64,
        periods: 3,
        xruns: 2,
        losses: 1,
        latencyMilliseconds: 4
    )

    static func session(
        _ id: UInt64,
        _ bus: Bus,
        _ category: HushCore.Category,
        _ options: CategoryOptions = [],
        transient: Bool = false,
        level: Float = 0,
        state: String,
        pausedBy: String? = nil,
        interruptedBy: [SessionID] = []
    ) -> ControlStatus.Session {
        ControlStatus.Session(
            id: SessionID(id),
            client: ClientID(1000 + id),
            pid: Int32(4000 + id),
            uid: 1000,
            gid: 1000,
            configuration: SessionConfiguration(
                bus: bus,
                category: category,
                options: options,
                transient: transient,
                level: SessionLevel(decibels: level)!
            ),
            state: state,
            pausedBy: pausedBy,
            interruptedBy: interruptedBy
        )
    }

    static let status = ControlStatus(
        version: "0.1.0",
        uptimeSeconds: 3725.4,
        silenceSwitch: .ring,
        jack: .plugged,
        route: .headphones,
        routeOverridden: false,
        systemVolume: VolumeStep(clamping: 8),
        systemGainDecibels: -24,
        ringerVolume: VolumeStep(clamping: 0),
        ringerGainDecibels: -.infinity,
        buttonsControl: .system,
        secondaryAudioShouldBeSilenced: true,
        sessions: [
            session(1, .music, .playback, state: "paused", pausedBy: "interruption", interruptedBy: [SessionID(3)]),
            session(2, .effect, .ambient, [.mixWithOthers], level: -10, state: "playing"),
            session(3, .ringer, .playback, transient: true, state: "playing"),
            session(4, .effect, .playAndRecord, [.mixWithOthers, .duckOthers], state: "paused", pausedBy: "user"),
            ControlStatus.Session(
                id: SessionID(5),
                client: ClientID(0),
                configuration: SessionConfiguration(bus: .music, category: .soloAmbient),
                state: "idle"
            ),
        ],
        output: output,
        clients: 3
    )

    @Test("status fits an 80x24 terminal, byte for byte")
    func statusText() {
        let expected = """
            hushd 0.1.0, up 1 h 2 min, 3 clients
            silence switch   ring
            headphones       plugged
            route            headphones (automatic)
            system volume    8/16 (-24.0 dB)
            ringer volume    0/16 (silent)
            buttons control  the system volume
            secondary audio  should be silenced
            output           hw:CARD=Headphones,DEV=0 (open)
                             48000 Hz, 2 ch, 3 x 64 frames (4 ms), 2 xruns, 1 loss
            microphone       none ([capture] pcm is not set): capture streams get silence
            sessions         5
              ID CLIENT    PID   UID  BUS    CATEGORY      OPTIONS  STATE
               1   1001   4001  1000  music  playback      -        interrupted by 3
               2   1002   4002  1000  effect ambient       mix      playing, -10 dB
               3   1003   4003  1000  ringer playback      -+tr     playing
               4   1004   4004  1000  effect playAndRecord duck     paused (user)
               5      0      -     -  music  soloAmbient   -        idle
            streams          none
            """
        let lines = ControlText.status(Self.status)
        #expect(lines.joined(separator: "\n") == expected)
        #expect(lines.allSatisfy { $0.count <= 80 })
    }

    @Test("many sessions: the status still fits 24 lines and says how many are not shown")
    func manySessions() {
        var status = Self.status
        status.sessions = (1...30).map {
            Self.session(UInt64($0), .effect, .ambient, [.mixWithOthers], state: "playing")
        }
        status.output.open = false
        status.routeOverridden = true
        status.uptimeSeconds = 200_000
        let lines = ControlText.status(status)
        #expect(lines.count == 24)
        #expect(lines.allSatisfy { $0.count <= 80 })
        #expect(lines[0] == "hushd 0.1.0, up 2 d 7 h, 3 clients")
        #expect(lines[3] == "route            headphones (override)")
        #expect(lines[8] == "output           hw:CARD=Headphones,DEV=0 (LOST, retrying)")
        #expect(lines[21] == "   9   1009   4009  1000  effect ambient       mix      playing")
        #expect(lines[22] == "  ... and 21 more (hushctl --json status lists them all)")
        #expect(lines[23] == "streams          none")
    }

    static func stream(
        _ id: UInt64,
        session: UInt64,
        pid: Int32,
        name: String?,
        _ direction: StreamDirection,
        _ bus: Bus,
        _ category: HushCore.Category,
        rate: Int,
        channels: Int,
        format: StreamSampleFormat = .s16LE,
        ringFrames: Int,
        state: ControlStatus.Stream.State = .running,
        underruns: Int = 0,
        underrunFrames: Int = 0,
        overruns: Int = 0,
        overrunFrames: Int = 0,
        violations: Int = 0,
        microphone: Bool = false
    ) -> ControlStatus.Stream {
        ControlStatus.Stream(
            id: StreamID(id),
            session: SessionID(session),
            client: ClientID(1001 + id),
            pid: pid,
            name: name,
            direction: direction,
            configuration: SessionConfiguration(bus: bus, category: category),
            rate: rate,
            channels: channels,
            format: format,
            ringFrames: ringFrames,
            state: state,
            underruns: underruns,
            underrunFrames: underrunFrames,
            overruns: overruns,
            overrunFrames: overrunFrames,
            violations: violations,
            microphone: microphone
        )
    }

    /// Applications playing and recording through the `hush` ALSA device, one of them hearing the microphone.
    static let streaming = {
        var status = Self.status
        status.sessions = [
            session(6, .music, .playback, state: "playing"), session(7, .music, .record, state: "playing"),
        ]
        status.streams = [
            stream(
                4,
                session: 6,
                pid: 123,
                name: "aplay",
                .playback,
                .music,
                .playback,
                rate: 44_100,
                channels: 2,
                ringFrames: 22_050
            ),
            stream(
                5,
                session: 7,
                pid: 77,
                name: "arecord",
                .capture,
                .music,
                .record,
                rate: 16_000,
                channels: 1,
                ringFrames: 8000,
                overruns: 1,
                overrunFrames: 480,
                microphone: true
            ),
            stream(
                6,
                session: 8,
                pid: 4242,
                name: "gst-launch-1.0\nx",
                .playback,
                .effect,
                .ambient,
                rate: 48_000,
                channels: 2,
                format: .floatLE,
                ringFrames: 4096,
                state: .held,
                underruns: 1,
                underrunFrames: 64
            ),
            stream(
                7,
                session: 9,
                pid: 4243,
                name: nil,
                .playback,
                .music,
                .playback,
                rate: 8000,
                channels: 1,
                format: .s32LE,
                ringFrames: 256,
                state: .draining,
                underruns: 12,
                violations: 3
            ),
        ]
        status.microphone = [5]
        status.capture = ControlStatus.Capture(pcm: "hw:CARD=Mic,DEV=0", open: true)
        return status
    }()

    @Test("streams: one line each under the sessions, and who hears the microphone")
    func streamsText() {
        let expected = """
            microphone       hw:CARD=Mic,DEV=0 (open), heard by stream 5 (arecord, pid 77)
            sessions         2
              ID CLIENT    PID   UID  BUS    CATEGORY      OPTIONS  STATE
               6   1006   4006  1000  music  playback      -        playing
               7   1007   4007  1000  music  record        -        playing
            streams          4
              ID SESSION    PID  NAME      DIR    RATE CH FORMAT   STATE
               4       6    123  aplay     play  44100  2 S16_LE   running, 0 underruns
               5       7     77  arecord   rec   16000  1 S16_LE   running, 1 overrun
               6       8   4242  gst-launc play  48000  2 FLOAT_LE held, 1 underrun
               7       9   4243  -         play   8000  1 S32_LE   draining, 12 underruns...
            """
        let lines = ControlText.status(Self.streaming)
        #expect(lines[10...].joined(separator: "\n") == expected)
        #expect(lines.allSatisfy { $0.count <= 80 })
        // What fit cut off the last row: its violations.
        #expect(ControlText.streamRow(Self.streaming.streams[3]).hasSuffix("draining, 12 underruns, 3 violations"))
    }

    @Test("hearing: the level at the ear and the week's dose, or that the route is not measured (R27-R29)")
    func hearing() {
        func line(_ hearing: ControlStatus.Hearing?, route: String = "headphones") -> String? {
            var status = Self.status
            status.route = route
            status.hearing = hearing
            return ControlText.status(status).first { $0.hasPrefix("hearing") }
        }
        #expect(line(nil) == nil, "a board with no private route says nothing of hearing")
        let measured = ControlStatus.Hearing(
            privateRoutes: ["headphones"],
            measuring: true,
            decibelsA: 83.04,
            route: "headphones",
            dosePercent: 12.34,
            calibrated: true
        )
        #expect(line(measured) == "hearing          headphones: 83.0 dB(A) at the ear, week's dose 12.3 %")
        var assumed = measured
        assumed.calibrated = false
        assumed.decibelsA = -104
        #expect(
            line(assumed)
                == "hearing          headphones: quiet at the ear (assumed), week's dose 12.3 %"
        )
        var speaker = measured
        speaker.measuring = false
        #expect(
            line(speaker, route: "speaker")
                == "hearing          speaker is not private (not measured); week's dose 12.3 %"
        )
        speaker.dosePercent = 0
        #expect(line(speaker, route: "speaker") == nil, "a public route and no dose this week: no line")
        #expect(
            ControlText.status(
                {
                    var s = Self.status
                    s.hearing = measured
                    return s
                }()
            ).count <= 24
        )
    }

    @Test("the microphone: nobody, a closed device, several streams, a name that would break the line")
    func microphoneText() {
        var status = Self.streaming
        status.microphone = []
        status.capture?.open = false
        #expect(ControlText.microphone(status) == "hw:CARD=Mic,DEV=0 (closed), heard by nobody")
        status.microphone = [5, 6, 99]
        #expect(
            ControlText.microphone(status)
                == "hw:CARD=Mic,DEV=0 (closed), heard by stream 5 (arecord, pid 77), stream 6 (gst-launch-1.0?x, "
                + "pid 4242), stream 99"
        )
        status.capture = nil
        status.microphone = []
        #expect(ControlText.microphone(status) == "none ([capture] pcm is not set): capture streams get silence")
    }

    @Test("many sessions and many streams: both tables get rows, and the status still fits 24 lines")
    func manySessionsAndStreams() {
        var status = Self.streaming
        status.sessions = (1...30).map { Self.session(UInt64($0), .effect, .ambient, state: "playing") }
        status.streams = (1...30).map {
            Self.stream(
                UInt64($0),
                session: UInt64($0),
                pid: 100,
                name: "mpd",
                .playback,
                .music,
                .playback,
                rate: 48_000,
                channels: 2,
                ringFrames: 4096
            )
        }
        let lines = ControlText.status(status)
        #expect(lines.count == 24)
        #expect(lines.allSatisfy { $0.count <= 80 })
        #expect(lines[11] == "sessions         30")
        #expect(lines[17] == "  ... and 26 more (hushctl --json status lists them all)")
        #expect(lines[18] == "streams          30")
        #expect(lines[23] == "  ... and 27 more (hushctl --json status lists them all)")
        // A few streams and many sessions: every stream is shown, the sessions take the rest.
        status.streams = Array(status.streams.prefix(2))
        let few = ControlText.status(status)
        #expect(few.count == 24)
        #expect(few[19] == "  ... and 24 more (hushctl --json status lists them all)")
        #expect(few[20] == "streams          2")
        #expect(few[23].hasPrefix("   2       2    100  mpd"))
    }

    /// The status while the headphones' PCM is held by another program.
    static let waiting = {
        var status = Self.status
        status.output.pcm = "hw:Loopback,0,0"
        status.output.pending = .init(
            route: .headphones,
            pcm: "hw:Loopback,0,1",
            error: "the device is busy: another program uses it ('fuser -v /dev/snd/*' names it; stop it, or share "
                + "the card through a dmix PCM)",
            attempts: 4,
            seconds: 3.24
        )
        return status
    }()

    @Test("a route's PCM that will not open: two lines under the output, and the sessions still fit 24 lines")
    func waitingForRoutePCM() {
        var status = Self.waiting
        let lines = ControlText.status(status)
        #expect(
            lines[8...11].joined(separator: "\n") == """
                output           hw:Loopback,0,0 (open)
                                 48000 Hz, 2 ch, 3 x 64 frames (4 ms), 2 xruns, 1 loss
                waiting for      hw:Loopback,0,1 (headphones): 4 tries in 3.2 s
                                 the device is busy: another program uses it ('fuser -v /dev/...
                """
        )
        status.sessions = (1...30).map { Self.session(UInt64($0), .effect, .ambient, state: "playing") }
        let many = ControlText.status(status)
        #expect(many.count == 24 && many[22] == "  ... and 23 more (hushctl --json status lists them all)")
        #expect(many[23] == "streams          none")
        status.output.pending = nil
        #expect(ControlText.status(status).count == 24)
    }

    @Test("no sessions, a short uptime, a long PCM name cut to 80 columns")
    func quiet() {
        var status = Self.status
        status.sessions = []
        status.uptimeSeconds = 42.9
        status.output.pcm = "plug:" + String(repeating: "x", count: 80)
        status.output.latencyMilliseconds = 4.33
        status.output.xruns = 1
        status.output.losses = 0
        let lines = ControlText.status(status)
        #expect(lines.count == 13)
        #expect(lines[0] == "hushd 0.1.0, up 42 s, 3 clients")
        #expect(lines[8].count == 80 && lines[8].hasSuffix("xxx..."))
        #expect(lines[9] == "                 48000 Hz, 2 ch, 3 x 64 frames (4.33 ms), 1 xrun, 0 losses")
        #expect(lines[11] == "sessions         none")
        #expect(lines[12] == "streams          none")
    }

    @Test("one line per event, byte for byte")
    func eventText() {
        let expected = [
            "interruption began: session 3, by session 4",
            "interruption began: session 3, the microphone privacy switch is on",
            "interruption ended: session 3, should resume",
            "route: speaker -> headphones (newDeviceAvailable)",
            "system volume: 9/16 on speaker",
            "ringer volume: 5/16",
            "silence switch: silent",
            "secondary audio: should be silenced",
            "volume buttons control: the ringer volume",
            "remote command: next for session 3",
            "session 3 finished",
            "hearing: 101 dB(A) on headphones for several seconds; the week's dose 20 %",
            "hearing: the week's sound dose on handset is 500 % (88 dB(A) now); the volume stays down",
            "at 12.346 s: [R5 headphones-unplugged] pause session 3 — headphones unplugged: playback pauses "
                + "(after: headphones unplugged (reported by gpio))",
        ]
        #expect(ControlCodecTests.events.map(ControlText.event) == expected)
        #expect(
            ControlText.event(.decision(DecisionReport(Decision(.note("nothing"), rule: .m6, reason: "same jack"))))
                == "[M6 duplicate-jack-report] no change: nothing — same jack"
        )
    }

    @Test("replies as the shell prints them")
    func replyText() {
        #expect(ShellSyntax.describe(ControlReply(session: SessionID(7))) == ["session 7"])
        #expect(
            ShellSyntax.describe(ControlReply(volume: VolumeReport(kind: .ringer, step: .maximum, gainDecibels: 0)))
                == ["ringer volume 16/16 (+0.0 dB)"]
        )
        #expect(
            ShellSyntax.describe(ControlReply(route: RouteReport(current: .speaker, overridden: false)))
                == ["route speaker (automatic)"]
        )
        #expect(
            ShellSyntax.describe(ControlReply(hello: HelloReport(version: "0.1.0", client: ClientID(1001))))
                == ["hushd 0.1.0, protocol 1, you are client 1001"]
        )
        #expect(
            ShellSyntax.describe(ControlReply(events: [.routeChanged, .decision])) == [
                "subscribed: route-changed, decision"
            ]
        )
        #expect(ShellSyntax.describe(.ok()) == ["ok"])
        #expect(
            ShellSyntax.describe(.failure(ControlError(.unknownSession, "no session 9")))
                == ["error [unknown-session]: no session 9"]
        )
        #expect(ShellSyntax.describe(ControlReply(status: Self.status)).count == 19)
        #expect(
            ShellSyntax.describe(
                ControlReply(
                    stream: StreamReport(id: StreamID(4), session: SessionID(6), ringFrames: 22_050, periodFrames: 60)
                )
            ) == ["stream 4 in session 6: 22050-frame ring, 60-frame periods"]
        )
        #expect(ShellSyntax.describe(ControlReply(position: 96_000)) == ["position 96000"])
    }
}

@Suite("shell syntax")
struct ShellSyntaxTests {
    @Test("every shell command becomes its request")
    func commands() throws {
        let cases: [(String, ShellSyntax.Line)] = [
            ("", .nothing), ("  # a comment", .nothing), ("help", .help), ("quit", .quit), ("wait 250", .wait(250)),
            ("status", .request(.status)), ("version", .request(.version)), ("hello", .request(.hello(name: nil))),
            ("hello my app", .request(.hello(name: "my app"))),
            (
                "activate music playback",
                .request(.activate(SessionConfiguration(bus: .music, category: .playback), name: nil))
            ),
            (
                "activate effect ambient mix duck transient name=click",
                .request(
                    .activate(
                        SessionConfiguration(
                            bus: .effect,
                            category: .ambient,
                            options: [.mixWithOthers, .duckOthers],
                            transient: true
                        ),
                        name: "click"
                    )
                )
            ),
            (
                "activate effect ambient gain=-10dB",
                .request(
                    .activate(
                        SessionConfiguration(bus: .effect, category: .ambient, level: SessionLevel(decibels: -10)!),
                        name: nil
                    )
                )
            ),
            ("level 2 -3.5", .request(.setLevel(SessionID(2), SessionLevel(decibels: -3.5)!))),
            ("level 2 0dB", .request(.setLevel(SessionID(2), .unity))),
            ("play 2 /tmp/a.wav", .request(.play(SessionID(2), .file("/tmp/a.wav"), loop: false))),
            ("play 2 /tmp/a.wav loop", .request(.play(SessionID(2), .file("/tmp/a.wav"), loop: true))),
            ("tone 2 440", .request(.play(SessionID(2), .tone(440), loop: false))),
            ("pause 2", .request(.pause(SessionID(2)))), ("resume 2", .request(.resume(SessionID(2)))),
            ("stop 2", .request(.stop(SessionID(2)))),
            ("deactivate 2", .request(.deactivate(SessionID(2), notifyOthers: false))),
            ("deactivate 2 notify", .request(.deactivate(SessionID(2), notifyOthers: true))),
            ("volume", .request(.getVolume(.system))), ("volume ringer", .request(.getVolume(.ringer))),
            ("volume 9", .request(.setVolume(.system, .step(VolumeStep(clamping: 9))))),
            ("volume ringer +2", .request(.setVolume(.ringer, .delta(2)))),
            ("ringer down", .request(.setVolume(.ringer, .delta(-1)))),
            ("volume up", .request(.setVolume(.system, .delta(1)))),
            ("route", .request(.getRoute)), ("route auto", .request(.setRoute(nil))),
            ("route lineout", .request(.setRoute(Route("lineout")))),
            ("subscribe", .request(.subscribe(nil))),
            ("subscribe decision route-changed", .request(.subscribe([.decision, .routeChanged]))),
            ("unsubscribe", .request(.unsubscribe)),
            (#"  {"command":"status"}"#, .raw(#"{"command":"status"}"#)),
        ]
        for (text, expected) in cases { #expect(try ShellSyntax.parse(text).get() == expected, "\(text)") }
    }

    @Test("mistakes say what was expected")
    func mistakes() {
        let cases = [
            ("activate music", "activate BUS CATEGORY [mix] [duck] [transient] [mode=MODE] [gain=DB] [name=NAME]"),
            ("activate radio playback", "'radio' is not a bus; buses: effect, music, ringer"),
            (
                "activate music loud",
                "'loud' is not a category; categories: ambient, soloAmbient, playback, record, playAndRecord"
            ),
            (
                "activate music playback fast",
                "'fast' is not an option; options: mix, duck, transient, mode=MODE, gain=DB, name=NAME"
            ),
            ("play x a.wav", "'x' is not a session id; give the number activate replied with"),
            ("tone 1 99999", "'99999' is not a frequency; give Hz from 1 to 20000"),
            ("pause", "pause SESSION"), ("deactivate 1 now", "deactivate SESSION [notify]"),
            ("level 1", "level SESSION DB: a level from -96 to 0 dB"),
            ("level 1 +3", "'+3' is not a level; give dB from -96 to 0 (a session is never louder than its bus)"),
            (
                "activate effect ambient gain=loud",
                "'loud' is not a level; give dB from -96 to 0 (a session is never louder than its bus)"
            ),
            ("volume 17", "'17' is not a volume; give a step 0 to 16, +N, -N, up or down"),
            (
                "subscribe weather",
                "'weather' is not an event kind; kinds: interruption-began, interruption-ended, route-changed, volume-changed, silence-changed, secondary-audio-hint, buttons-control, remote-command, session-finished, hearing-warning, decision"
            ),
            ("status now", "status takes no arguments"), ("wait soon", "wait MS: a number of milliseconds"),
            ("dance", "unknown command 'dance'; type help for the commands"),
        ]
        for (text, message) in cases {
            guard case .failure(let error) = ShellSyntax.parse(text) else {
                Issue.record("accepted: \(text)")
                continue
            }
            #expect(error.description == message)
        }
    }
}
