import Glibc
import HushALSA
import HushConfiguration
import HushConsole
import HushCore
import HushSystem
import Logging
import Testing

@testable import HushDaemon

/// The route's mixer switches and the alert light, driven by the daemon's decisions (the real ALSA controls and
/// GPIO line are checked on the virtual board: board/virtual/scenarios/e2e.sh).
@Suite("Route switches and the alert light", .serialized)
struct RouteSwitchAndAlertLightTests {
    /// A daemon on the WAV fallback, started with the headphones plugged.
    static func daemon(_ name: String, plugged: Bool = true) throws -> Daemon {
        var setup = Daemon.Setup()
        setup.output = PlaybackConfiguration(pcm: "hush-no-such-device", periodFrames: 480, periods: 2)
        setup.fallbackWAV = DaemonTests.temporary(name)
        setup.realtimePriority = 0
        let jack = ScriptedState(plugged ? [InputEvent.headphones(.plugged, source: .alsaControl)] : [])
        let daemon = Daemon(setup: setup, inputs: [jack], clock: SystemClock(), logger: Logger(label: "test"))
        try daemon.start()
        return daemon
    }

    static func mixerSwitch(_ control: String, _ value: Int, card: String = "Dummy") -> HushdConfiguration.MixerSwitch {
        .init(card: card, element: ALSAElementName(control, interface: .mixer), value: value)
    }

    @Test("the route's switches are set at start-up and on every route change, in order; a failure is reported")
    func switches() throws {
        let daemon = try Self.daemon("switches.wav")
        defer { daemon.shutDown() }
        var problems: [String] = []
        daemon.problemSinks.append { problems.append($0) }
        var set: [String] = []
        let routes: [Route: [HushdConfiguration.MixerSwitch]] = [
            .speaker: [Self.mixerSwitch("Speaker Playback Switch", 1), Self.mixerSwitch("Amp Gain", 3)],
            .headphones: [
                Self.mixerSwitch("Missing Switch", 0, card: "Gone"),
                Self.mixerSwitch("Speaker Playback Switch", 0),
            ],
        ]
        let switches = RouteSwitches(switches: routes, daemon: daemon) { (mixerSwitch) throws(HardwareError) in
            guard mixerSwitch.card != "Gone" else {
                throw HardwareError(operation: "find sound card", device: "'Gone'", message: "no such card")
            }
            set.append("\(mixerSwitch.element.name)=\(mixerSwitch.value)")
        }
        #expect(daemon.audio.policy.route == .headphones)
        #expect(set == ["Speaker Playback Switch=0"], "the headphones' switches at start-up")
        #expect(problems == ["route headphones: cannot find sound card 'Gone': no such card"])

        daemon.handle(.input(.headphones(.unplugged, source: .alsaControl)))
        #expect(set == ["Speaker Playback Switch=0", "Speaker Playback Switch=1", "Amp Gain=3"])
        daemon.handle(.setVolume(.system, VolumeStep(clamping: 3)))
        #expect(set.count == 3, "no route change, no switch")
        daemon.handle(.input(.headphones(.plugged, source: .alsaControl)))
        #expect(set.last == "Speaker Playback Switch=0")
        #expect(problems.count == 2, "tried again on the next selection")
        #expect(RouteSwitches.describe(Self.mixerSwitch("Amp Gain", 3)) == "set to 3")
        _ = switches
    }

    @Test("the light follows R16: lit while the switch mutes a ring, out when it ends; a failing line is logged once")
    func alertLight() throws {
        let daemon = try Self.daemon("light.wav", plugged: false)
        defer { daemon.shutDown() }
        let line = RecordingLine()
        let light = AlertLight(line: line, daemon: daemon)
        #expect(line.values == [false], "put out at start")
        daemon.handle(.input(.silenceSwitch(.silent)))
        let ring = daemon.newSessionID()
        daemon.handle(.activate(ring, client: ClientID(1), .init(bus: .ringer, category: .soloAmbient)))
        daemon.handle(.play(ring))
        #expect(line.values == [false, true])
        #expect(light.lit)
        daemon.handle(.input(.silenceSwitch(.ring)))
        #expect(line.values == [false, true, false], "the ring is heard: no light")
        daemon.handle(.input(.silenceSwitch(.silent)))
        line.failing = true
        daemon.handle(.deactivate(ring, notifyOthers: true))
        #expect(light.lit, "the line refused: still lit as far as anyone knows")
        line.failing = false
        light.set(false)
        #expect(!light.lit)
    }
}

/// hushd's parts register closures with the daemon; none may keep it alive (LeakSanitizer found such a cycle: a
/// closure capturing an initialiser's `daemon` parameter instead of the unowned property).
@Suite("The daemon and its participants free each other")
struct DaemonLifetimeTests {
    @Test("a daemon wired with its console, control socket, state file, switches and light is freed when dropped")
    func noCycle() throws {
        weak var freed: Daemon?
        var input: [Int32] = [0, 0]
        var output: [Int32] = [0, 0]
        #expect(pipe(&input) == 0 && pipe(&output) == 0)
        defer { for fd in input + output { close(fd) } }
        do {
            let daemon = try RouteSwitchAndAlertLightTests.daemon("lifetime.wav")
            var control = HushdConfiguration.Control()
            control.socket = DaemonTests.temporary("lifetime.sock")
            control.group = nil
            let participant = try ControlParticipant(configuration: control, daemon: daemon)
            let serial = try SerialConsole.standardIO(input: input[0], output: output[1], logger: Logger(label: "t"))
            let console = DaemonConsole(
                console: serial,
                daemon: daemon,
                standIns: true,
                banner: [],
                logLevel: LogLevelBox(.info)
            )
            let store = StateStore(
                path: DaemonTests.temporary("lifetime.state"),
                interval: .seconds(1),
                logger: Logger(label: "t")
            )
            daemon.participants += [participant, console, StateParticipant(store: store, daemon: daemon)]
            let switches = RouteSwitches(switches: [:], daemon: daemon) { _ in }
            let light = AlertLight(line: RecordingLine(), daemon: daemon)
            daemon.handle(.input(.silenceSwitch(.silent)))
            withExtendedLifetime((switches, light)) {}
            participant.close()
            serial.close()
            daemon.shutDown()
            freed = daemon
        }
        #expect(freed == nil, "the daemon outlived every reference to it")
    }
}

/// An input source that reports a fixed state at start and nothing after.
final class ScriptedState: InputSource {
    let state: [InputEvent]
    init(_ state: [InputEvent]) { self.state = state }
    var name: String { "scripted state" }
    var pollDescriptor: Int32? { nil }
    var nextDeadline: Instant? { nil }
    func currentState(now: Instant) throws(HardwareError) -> [TimedInputEvent] {
        state.map { TimedInputEvent($0, at: now) }
    }
    func readEvents(now: Instant) throws(HardwareError) -> [TimedInputEvent] { [] }
}

/// An output line that records what it was set to, and can be made to fail.
final class RecordingLine: OutputLine {
    var values: [Bool] = []
    var failing = false
    var name: String { "test line" }
    func set(_ active: Bool) throws(HardwareError) {
        guard !failing else {
            throw HardwareError(operation: "set", device: name, errno: 5, message: "Input/output error")
        }
        values.append(active)
    }
}

/// The microphone privacy switch carried out (R21): the capture router's own gate and the capture card's switch.
@Suite("The microphone privacy switch in the daemon", .serialized)
struct MicrophonePrivacyDaemonTests {
    @Test("the board's switch read at start-up closes the router's gate and turns the card's switch off, then back")
    func startsMuted() throws {
        var setup = Daemon.Setup()
        setup.output = PlaybackConfiguration(pcm: "hush-no-such-device", periodFrames: 480, periods: 2)
        setup.fallbackWAV = DaemonTests.temporary("privacy.wav")
        setup.realtimePriority = 0
        let privacy = ScriptedState([InputEvent.microphoneSwitch(.muted, source: .gpio)])
        let daemon = Daemon(setup: setup, inputs: [privacy], clock: SystemClock(), logger: Logger(label: "test"))
        try daemon.start()
        defer { daemon.shutDown() }
        #expect(daemon.audio.policy.microphoneSwitch == .muted)
        let closed = daemon.captureRouter.muted.load(ordering: .relaxed)
        #expect(closed, "closed from the audio thread's next period")

        var written: [Int] = []
        var value = 1
        let control = CaptureCardSwitch.Control(
            read: { () throws(HardwareError) -> Int? in value },
            write: { (new) throws(HardwareError) in
                written.append(new)
                value = new
            }
        )
        let cardSwitch = CaptureCardSwitch(
            card: "Mic",
            element: ALSAElementName("Capture Switch"),
            daemon: daemon,
            control: control
        )
        #expect(written == [0], "made after start-up, it still turns the card's switch off")
        let refused = daemon.handle(.input(.microphoneSwitch(.live, source: .console)))
        #expect(refused.contains { if case .reject = $0.command { true } else { false } })
        let stillClosed = daemon.captureRouter.muted.load(ordering: .relaxed)
        #expect(stillClosed && written == [0], "the console cannot open it")
        daemon.handle(.input(.microphoneSwitch(.live, source: .gpio)))
        let open = !daemon.captureRouter.muted.load(ordering: .relaxed)
        #expect(open)
        #expect(written == [0, 1], "put back as it was")
        _ = cardSwitch
    }

    @Test("a card without the control is said once and is no error; one that was off stays off")
    func missingOrOff() throws {
        let daemon = try RouteSwitchAndAlertLightTests.daemon("privacy-missing.wav", plugged: false)
        defer { daemon.shutDown() }
        var writes = 0
        let missing = CaptureCardSwitch(
            card: "USB",
            element: ALSAElementName("Capture Switch"),
            daemon: daemon,
            control: .init(
                read: { () throws(HardwareError) -> Int? in nil },
                write: { _ throws(HardwareError) in writes += 1 }
            )
        )
        var value = 0
        var written: [Int] = []
        let off = CaptureCardSwitch(
            card: "Mic",
            element: ALSAElementName("Capture Switch"),
            daemon: daemon,
            control: .init(
                read: { () throws(HardwareError) -> Int? in value },
                write: { (new) throws(HardwareError) in
                    written.append(new)
                    value = new
                }
            )
        )
        daemon.handle(.input(.microphoneSwitch(.muted, source: .evdev)))
        daemon.handle(.input(.microphoneSwitch(.live, source: .evdev)))
        daemon.handle(.input(.microphoneSwitch(.muted, source: .evdev)))
        #expect(writes == 0)
        #expect(written == [0, 0, 0], "off, back to what it was (off), off")
        _ = (missing, off)
    }
}
