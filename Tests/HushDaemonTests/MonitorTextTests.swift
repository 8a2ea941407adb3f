import HushALSA
import HushCore
import HushPolicy
import HushSystem
import Logging
import Testing

@testable import HushDaemon

@Suite("the console's status line", .serialized)
struct MonitorTextTests {
    @Test("fits 80 columns however busy; shows which volume the buttons move only when it is the ringer")
    func statusLineFits() throws {
        let daemon = try RouteSwitchAndAlertLightTests.daemon("status-line.wav", plugged: false)
        defer { daemon.shutDown() }
        #expect(
            MonitorText.statusLine(of: daemon)
                == "ring | speaker | volume 8/16 | ringer 10/16 | 0 sessions, 0 playing | out ok"
        )
        daemon.handle(.input(.silenceSwitch(.silent)))
        daemon.handle(.input(.headphones(.plugged, source: .alsaControl)))
        daemon.handle(.setRouteOverride(.speaker))
        daemon.handle(.setVolume(.system, VolumeStep(clamping: 16)))
        let ring = daemon.newSessionID()
        daemon.handle(.activate(ring, client: ClientID(1), .init(bus: .ringer, category: .playback)))
        daemon.handle(.play(ring))
        for _ in 0..<11 {
            let id = daemon.newSessionID()
            daemon.handle(
                .activate(id, client: ClientID(2), .init(bus: .effect, category: .ambient, options: .mixWithOthers))
            )
            daemon.handle(.play(id))
        }
        let busy = MonitorText.statusLine(of: daemon)
        #expect(busy == "SILENT|speaker (ovr)|vol 16|ringer 10|btn: ringer|12/12 playing|out ok", "\(busy)")
        #expect(busy.count <= 80)
    }

    @Test("status says hearing safety's state: the route in use not measured, or the level at the ear, and the dose")
    func statusShowsHearing() throws {
        var setup = Daemon.Setup()
        setup.output = PlaybackConfiguration(pcm: "hush-no-such-device", periodFrames: 480, periods: 2)
        setup.fallbackWAV = DaemonTests.temporary("hearing-status.wav")
        setup.realtimePriority = 0
        setup.policy.hearing.privateRoutes = [.headphones]
        setup.policy.hearing.fullScale[.headphones] = 100
        let daemon = Daemon(setup: setup, inputs: [], clock: SystemClock(), logger: Logger(label: "test"))
        try daemon.start()
        defer { daemon.shutDown() }
        let tap = try #require(daemon.hearingTap, "a board with a private route has the tap")
        daemon.hearing = HearingParticipant(tap: tap, daemon: daemon, store: nil)
        func hearingLine() -> String? {
            MonitorText.status(of: daemon, version: "test").first { $0.hasPrefix("hearing") }
        }
        #expect(hearingLine() == nil, "a public route and no dose this week: the row goes to the sessions")
        daemon.handle(.setRouteOverride(.headphones))
        #expect(hearingLine() == "hearing         headphones: measuring at the ear, week's dose 0.0 %")
    }
}
