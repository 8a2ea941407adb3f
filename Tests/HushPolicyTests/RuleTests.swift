import HushCore
import HushPolicy
import HushTesting
import Testing

// One suite per rule of docs/policy.md. Each suite is named after its rule; each checks what the engine was told.

private let duck = Gain(decibels: -14)

private func rules(_ decisions: [Decision], for command: (Command) -> Bool) -> [Rule] {
    decisions.filter { command($0.command) }.map(\.rule)
}

@Suite("R1 silence-switch")
struct R1SilenceSwitch {
    static let cases: [(Bus, HushCore.Category, Bool)] = Bus.allCases.flatMap { bus in
        HushCore.Category.allCases.map { ($0 == .ambient || $0 == .soloAmbient) ? (bus, $0, true) : (bus, $0, false) }
    }

    @Test("silence silences ambient and soloAmbient on every bus, nothing else", arguments: cases)
    func silence(bus: Bus, category: HushCore.Category, silenced: Bool) {
        var board = PolicyHarness()
        board.activate(1, bus, category, [.mixWithOthers])
        board.play(1)
        let on = board.input(.silenceSwitch(.silent))
        #expect(board.gain(1) == (silenced ? .silent : .unity))
        #expect(board.isPlaying(1), "silenced sessions keep running, muted, as on iOS")
        if silenced {
            let ramp = on.compactMap { d -> Duration? in
                if case .setSessionGain(_, _, let ramp) = d.command { return ramp } else { return nil }
            }
            #expect(ramp.count == 1 && ramp[0] > .zero && ramp[0] <= .milliseconds(20))
            #expect(rules(on) { if case .setSessionGain = $0 { true } else { false } } == [.r1])
        }
        #expect(on.contains { $0.command == .notify(.silenceChanged(.silent)) && $0.rule == .r1 })
        board.input(.silenceSwitch(.ring))
        #expect(board.gain(1) == .unity)
        #expect(board.isPlaying(1))
    }

    @Test("a session activated while silenced starts silent, with no ramp to leak sound")
    func activatedSilenced() {
        var board = PolicyHarness()
        board.input(.silenceSwitch(.silent))
        let decisions = board.activate(1, .effect, .ambient)
        #expect(decisions.contains { $0.command == .setSessionGain(SessionID(1), .silent, ramp: .zero) })
    }

    @Test("the same position twice changes nothing")
    func repeatedPosition() {
        var board = PolicyHarness()
        board.input(.silenceSwitch(.silent))
        let again = board.input(.silenceSwitch(.silent))
        #expect(again.allSatisfy { if case .note = $0.command { true } else { false } })
    }
}

@Suite("R2 volume-scales-buses")
struct R2VolumeScalesBuses {
    @Test("the curve: silent at 0, about -50 dB at 1, 0 dB at 16, rising")
    func curve() {
        let curve = VolumeCurve.default
        #expect(curve.gain(at: .minimum) == .silent)
        #expect(abs(curve.decibels(at: VolumeStep(clamping: 1)) + 50) < 0.01)
        #expect(curve.decibels(at: .maximum) == 0)
        for step in 1..<VolumeStep.count {
            #expect(curve.decibels(at: VolumeStep(clamping: step)) < curve.decibels(at: VolumeStep(clamping: step + 1)))
        }
    }

    @Test("system volume scales effect and music; ringer volume scales the ringer bus", arguments: 0...16)
    func busGains(step: Int) {
        var board = PolicyHarness()
        let expected = VolumeCurve.default.gain(at: VolumeStep(clamping: step))
        board.send(.setVolume(.system, VolumeStep(clamping: step)))
        #expect(board.engine.busGains[.effect] == expected)
        #expect(board.engine.busGains[.music] == expected)
        let ringerBefore = board.engine.busGains[.ringer]
        #expect(ringerBefore == VolumeCurve.default.gain(at: VolumeStep(clamping: 10)))
        board.send(.setVolume(.ringer, VolumeStep(clamping: 16 - step)))
        #expect(board.engine.busGains[.ringer] == VolumeCurve.default.gain(at: VolumeStep(clamping: 16 - step)))
        #expect(board.engine.busGains[.music] == expected, "the ringer volume never moves the music bus")
    }

    @Test("a volume change is ramped, reported and persisted")
    func rampedReportedPersisted() {
        var board = PolicyHarness()
        let decisions = board.send(.setVolume(.system, VolumeStep(clamping: 11)))
        #expect(
            decisions.contains {
                $0.command
                    == .setBusGain(
                        .music,
                        VolumeCurve.default.gain(at: VolumeStep(clamping: 11)),
                        ramp: .milliseconds(30)
                    )
            }
        )
        #expect(board.engine.notifications.last == .volumeChanged(.system, VolumeStep(clamping: 11), route: .speaker))
        #expect(board.engine.persisted?.system[.speaker] == VolumeStep(clamping: 11))
    }
}

@Suite("R3 volume-buttons")
struct R3VolumeButtons {
    @Test("a press is one step")
    func press() {
        var board = PolicyHarness()
        board.input(.volumeButton(.up, .press))
        board.input(.volumeButton(.up, .release), after: .milliseconds(80))
        #expect(board.policy.systemVolume == VolumeStep(clamping: 9))
        board.input(.volumeButton(.down, .press), after: .milliseconds(300))
        board.input(.volumeButton(.down, .release), after: .milliseconds(80))
        #expect(board.policy.systemVolume == VolumeStep(clamping: 8))
    }

    @Test(
        "holding repeats after 500 ms, every 100 ms",
        arguments: [
            (held: 450, steps: 1), (held: 500, steps: 2), (held: 1000, steps: 7), (held: 1050, steps: 7),
        ]
    )
    func hold(held: Int, steps: Int) {
        var board = PolicyHarness(
            persisted: PersistedVolumes(
                system: [.speaker: VolumeStep(clamping: 1)],
                ringer: VolumeStep(clamping: 1)
            )
        )
        board.input(.volumeButton(.up, .press))
        var t = 0
        while t + 50 <= held {
            board.wait(.milliseconds(50))
            t += 50
        }
        board.input(.volumeButton(.up, .release), after: .milliseconds(held - t))
        #expect(board.policy.systemVolume == VolumeStep(clamping: 1 + steps))
        board.wait(.seconds(2))
        #expect(board.policy.systemVolume == VolumeStep(clamping: 1 + steps), "no repeats after release")
    }

    @Test("repeat timing is configurable")
    func configurableRepeat() {
        var configuration = PolicyConfiguration()
        configuration.repeatDelay = .milliseconds(300)
        configuration.repeatInterval = .milliseconds(50)
        var board = PolicyHarness(configuration: configuration)
        board.input(.volumeButton(.down, .press))
        board.wait(.milliseconds(400))
        #expect(board.policy.systemVolume == VolumeStep(clamping: 8 - 1 - 3))
        #expect(board.policy.nextDeadline == .milliseconds(450))
    }

    @Test("while a ringer session sounds the buttons move the ringer volume; with media, the system volume")
    func target() {
        var board = PolicyHarness()
        #expect(board.engine.notifications.last == .buttonsControl(.system))
        board.activate(1, .music, .playback)
        board.play(1)
        board.activate(2, .ringer, .soloAmbient)
        board.play(2)
        #expect(board.engine.notifications.contains(.buttonsControl(.ringer)))
        board.input(.volumeButton(.up, .press))
        #expect(board.policy.ringerVolume == VolumeStep(clamping: 11))
        #expect(board.policy.systemVolume == VolumeStep(clamping: 8))
        board.input(.volumeButton(.up, .release))
        let end = board.deactivate(2, notifyOthers: true)
        #expect(end.contains { $0.command == .notify(.buttonsControl(.system)) && $0.rule == .r3 })
        board.input(.volumeButton(.up, .press))
        #expect(board.policy.systemVolume == VolumeStep(clamping: 9))
    }

    @Test("when idle the buttons move the configured target", arguments: VolumeKind.allCases)
    func idleTarget(kind: VolumeKind) {
        var configuration = PolicyConfiguration()
        configuration.idleButtonTarget = kind
        var board = PolicyHarness(configuration: configuration)
        #expect(board.engine.notifications == [.buttonsControl(kind)])
        board.input(.volumeButton(.down, .press))
        #expect(kind == .ringer ? board.policy.ringerVolume.rawValue == 9 : board.policy.systemVolume.rawValue == 7)
    }

    @Test("at the end of the range a press changes nothing and says so")
    func endOfRange() {
        var board = PolicyHarness(persisted: PersistedVolumes(system: [.speaker: .maximum], ringer: .maximum))
        board.send(.setVolume(.system, .maximum))
        let decisions = board.input(.volumeButton(.up, .press))
        #expect(decisions.map(\.rule) == [.r3])
        #expect(decisions.allSatisfy { if case .note = $0.command { true } else { false } })
    }
}

@Suite("R4 headphones-plugged")
struct R4HeadphonesPlugged {
    @Test("plugging routes to headphones with no pause, at the headphones' remembered volume")
    func plug() {
        var board = PolicyHarness(
            persisted: PersistedVolumes(
                system: [.speaker: VolumeStep(clamping: 10), .headphones: VolumeStep(clamping: 5)],
                ringer: VolumeStep(clamping: 10)
            )
        )
        board.activate(1, .music, .playback)
        board.play(1)
        let decisions = board.input(.headphones(.plugged, source: .alsaControl))
        #expect(board.isPlaying(1))
        #expect(!decisions.contains { if case .pause = $0.command { true } else { false } })
        #expect(board.engine.route == .headphones)
        #expect(
            board.engine.notifications.contains(
                .routeChanged(RouteChange(previous: .speaker, current: .headphones, reason: .newDeviceAvailable))
            )
        )
        #expect(board.engine.busGains[.music] == VolumeCurve.default.gain(at: VolumeStep(clamping: 5)))
        // The new route's volume is in force before the route switches: gain first, at once.
        let gainIndex = decisions.firstIndex {
            $0.command
                == .setBusGain(
                    .music,
                    VolumeCurve.default.gain(at: VolumeStep(clamping: 5)),
                    ramp: .zero
                )
        }
        let routeIndex = decisions.firstIndex { $0.command == .selectRoute(.headphones) }
        #expect(gainIndex != nil && routeIndex != nil && gainIndex! < routeIndex!)
        #expect(decisions.filter { $0.command == .selectRoute(.headphones) }.map(\.rule) == [.r4])
    }
}

@Suite("R5 headphones-unplugged")
struct R5HeadphonesUnplugged {
    @Test("unplugging pauses playback before the route moves, and only playback")
    func unplug() {
        var board = PolicyHarness()
        board.input(.headphones(.plugged, source: .gpio))
        board.activate(1, .music, .playback)
        board.play(1)
        board.activate(2, .effect, .ambient)
        board.play(2)
        board.activate(3, .music, .playAndRecord, [.mixWithOthers])
        board.play(3)
        board.activate(4, .ringer, .playback, [.mixWithOthers])
        board.play(4)
        let decisions = board.input(.headphones(.unplugged, source: .gpio))
        let pauses = decisions.filter { if case .pause = $0.command { true } else { false } }
        #expect(pauses.map(\.command) == [.pause(SessionID(1)), .pause(SessionID(4))])
        #expect(pauses.allSatisfy { $0.rule == .r5 })
        let lastPause = decisions.lastIndex { if case .pause = $0.command { true } else { false } }!
        let firstOther = decisions.firstIndex { if case .pause = $0.command { false } else { true } }!
        #expect(lastPause < firstOther, "every pause comes before anything else")
        #expect(board.isPlaying(2) && board.isPlaying(3))
        #expect(board.engine.route == .speaker)
        #expect(
            board.engine.notifications.contains(
                .routeChanged(RouteChange(previous: .headphones, current: .speaker, reason: .oldDeviceUnavailable))
            )
        )
    }

    @Test("the speaker's remembered volume returns; re-plugging does not resume")
    func volumeAndReplug() {
        var board = PolicyHarness()
        board.send(.setVolume(.system, VolumeStep(clamping: 6)))
        board.input(.headphones(.plugged, source: .evdev))
        board.send(.setVolume(.system, VolumeStep(clamping: 12)))
        board.activate(1, .music, .playback)
        board.play(1)
        board.input(.headphones(.unplugged, source: .evdev))
        #expect(board.policy.systemVolume == VolumeStep(clamping: 6))
        #expect(board.engine.busGains[.music] == VolumeCurve.default.gain(at: VolumeStep(clamping: 6)))
        board.input(.headphones(.plugged, source: .evdev))
        #expect(!board.isPlaying(1))
        #expect(board.policy.systemVolume == VolumeStep(clamping: 12))
    }
}

@Suite("R6 non-mixable-interrupts")
struct R6NonMixableInterrupts {
    struct Case: Sendable, CustomStringConvertible {
        var category: HushCore.Category
        var options: CategoryOptions
        var interrupts: Bool
        var description: String { "\(category) \(options) interrupts: \(interrupts)" }
    }

    static let cases: [Case] = [
        Case(category: .ambient, options: [], interrupts: false),
        Case(category: .soloAmbient, options: [], interrupts: true),
        Case(category: .playback, options: [], interrupts: true),
        Case(category: .playback, options: [.mixWithOthers], interrupts: false),
        Case(category: .playback, options: [.duckOthers], interrupts: false),
        Case(category: .record, options: [], interrupts: true),
        Case(category: .playAndRecord, options: [], interrupts: true),
        Case(category: .playAndRecord, options: [.mixWithOthers], interrupts: false),
    ]

    @Test("activation interrupts other non-mixable sessions; mixable ones keep playing", arguments: cases)
    func activation(c: Case) {
        var board = PolicyHarness()
        board.activate(1, .music, .playback)
        board.play(1)
        board.activate(2, .effect, .ambient)
        board.play(2)
        board.activate(3, .music, .playback, [.mixWithOthers])
        board.play(3)
        let decisions = board.activate(4, .effect, c.category, c.options)
        #expect(board.isPlaying(1) == !c.interrupts)
        #expect(board.isPlaying(2) && board.isPlaying(3), "mixable sessions keep playing")
        if c.interrupts {
            #expect(
                decisions.contains {
                    $0.command == .notify(.interruptionBegan(SessionID(1), cause: .session(SessionID(4))))
                        && $0.rule == .r6
                }
            )
            #expect(decisions.contains { $0.command == .pause(SessionID(1)) && $0.rule == .r6 })
            #expect(board.engine.interrupted == [SessionID(1)])
        } else {
            #expect(board.engine.interrupted.isEmpty)
        }
    }

    @Test("an idle session is interrupted too, without a pause")
    func idle() {
        var board = PolicyHarness()
        board.activate(1, .music, .playback)
        let decisions = board.activate(2, .music, .playback)
        #expect(
            decisions.contains {
                $0.command == .notify(.interruptionBegan(SessionID(1), cause: .session(SessionID(2))))
            }
        )
        #expect(!decisions.contains { if case .pause = $0.command { true } else { false } })
    }
}

@Suite("R7 duck-others")
struct R7DuckOthers {
    @Test("a duckOthers session lowers every other audible session by 14 dB, attack 100 ms, release 500 ms")
    func duckAndRelease() {
        var board = PolicyHarness()
        board.activate(1, .music, .playback)
        board.play(1)
        board.activate(2, .effect, .ambient)
        board.play(2)
        board.activate(3, .ringer, .playback, [.mixWithOthers])
        let on = board.activate(4, .effect, .playback, [.duckOthers])
        #expect(board.isPlaying(1), "duckOthers mixes: it does not interrupt")
        for id: UInt64 in [1, 2, 3] {
            #expect(on.contains { $0.command == .setSessionGain(SessionID(id), duck, ramp: .milliseconds(100)) })
        }
        #expect(board.gain(4) == .unity, "the ducker is not ducked")
        #expect(
            on.filter { if case .setSessionGain = $0.command { true } else { false } }.allSatisfy { $0.rule == .r7 }
        )
        let off = board.deactivate(4, notifyOthers: false)
        for id: UInt64 in [1, 2, 3] {
            #expect(off.contains { $0.command == .setSessionGain(SessionID(id), .unity, ramp: .milliseconds(500)) })
        }
    }

    @Test("a session activated during a duck starts ducked, at once")
    func newcomerStartsDucked() {
        var board = PolicyHarness()
        board.activate(1, .music, .playback, [.duckOthers])
        let decisions = board.activate(2, .effect, .ambient)
        #expect(decisions.contains { $0.command == .setSessionGain(SessionID(2), duck, ramp: .zero) })
    }

    @Test("the duck is undone when the ducking client vanishes")
    func clientVanishes() {
        var board = PolicyHarness()
        board.activate(1, .music, .playback)
        board.play(1)
        board.activate(2, .effect, .playback, [.duckOthers], client: 7)
        #expect(board.gain(1) == duck)
        board.send(.clientGone(ClientID(7)))
        #expect(board.gain(1) == .unity)
    }

    @Test("the duck depth and ramps are configurable")
    func configurable() {
        var configuration = PolicyConfiguration()
        configuration.duckDepth = Gain(decibels: -20)
        configuration.duckAttack = .milliseconds(40)
        var board = PolicyHarness(configuration: configuration)
        board.activate(1, .music, .playback)
        let decisions = board.activate(2, .effect, .playback, [.duckOthers])
        #expect(
            decisions.contains {
                $0.command == .setSessionGain(SessionID(1), Gain(decibels: -20), ramp: .milliseconds(40))
            }
        )
    }
}

@Suite("R8 interruption-end")
struct R8InterruptionEnd {
    struct Case: Sendable, CustomStringConvertible {
        var name: String
        var bus: Bus
        var category: HushCore.Category
        var transient: Bool
        var resumable: Bool
        var description: String { name }
    }

    static let cases: [Case] = [
        Case(name: "ringtone", bus: .ringer, category: .soloAmbient, transient: false, resumable: true),
        Case(name: "alarm", bus: .ringer, category: .playback, transient: false, resumable: true),
        Case(name: "call", bus: .music, category: .playAndRecord, transient: false, resumable: true),
        Case(name: "transient prompt", bus: .effect, category: .playback, transient: true, resumable: true),
        Case(name: "new music", bus: .music, category: .playback, transient: false, resumable: false),
        Case(name: "game", bus: .effect, category: .soloAmbient, transient: false, resumable: false),
        Case(name: "recorder", bus: .music, category: .record, transient: false, resumable: false),
    ]

    @Test("deactivation with notifyOthers ends the interruption with shouldResume = resumable", arguments: cases)
    func withNotify(c: Case) {
        var board = PolicyHarness()
        board.activate(1, .music, .playback)
        board.play(1)
        board.activate(2, c.bus, c.category, transient: c.transient)
        let decisions = board.deactivate(2, notifyOthers: true)
        #expect(
            decisions.contains {
                $0.command == .notify(.interruptionEnded(SessionID(1), shouldResume: c.resumable)) && $0.rule == .r8
            }
        )
        #expect(board.engine.interrupted.isEmpty)
    }

    @Test("without notifyOthers the interruption ends without shouldResume", arguments: cases)
    func withoutNotify(c: Case) {
        var board = PolicyHarness()
        board.activate(1, .music, .playback)
        board.play(1)
        board.activate(2, c.bus, c.category, transient: c.transient)
        let decisions = board.deactivate(2, notifyOthers: false)
        #expect(decisions.contains { $0.command == .notify(.interruptionEnded(SessionID(1), shouldResume: false)) })
        #expect(!board.isPlaying(1))
    }

    @Test("an interruption lasts until the last interrupter ends, and is resumable only if all were")
    func severalInterrupters() {
        var board = PolicyHarness()
        board.activate(1, .music, .playback)
        board.play(1)
        board.activate(2, .ringer, .soloAmbient)
        board.activate(3, .music, .playAndRecord)
        let first = board.deactivate(2, notifyOthers: true)
        #expect(
            !first.contains {
                if case .notify(.interruptionEnded(SessionID(1), _)) = $0.command { true } else { false }
            }
        )
        let second = board.deactivate(3, notifyOthers: true)
        #expect(second.contains { $0.command == .notify(.interruptionEnded(SessionID(1), shouldResume: true)) })
        #expect(board.isPlaying(1))
    }
}

@Suite("R9 resume-after-interruption")
struct R9ResumeAfterInterruption {
    struct Case: Sendable, CustomStringConvertible {
        var category: HushCore.Category
        var shouldResume: Bool
        var resumes: Bool
        var description: String { "\(category) shouldResume \(shouldResume) → resumes \(resumes)" }
    }

    static let cases: [Case] = [
        Case(category: .soloAmbient, shouldResume: true, resumes: true),
        Case(category: .soloAmbient, shouldResume: false, resumes: true),
        Case(category: .playback, shouldResume: true, resumes: true),
        Case(category: .playback, shouldResume: false, resumes: false),
        Case(category: .record, shouldResume: true, resumes: false),
        Case(category: .playAndRecord, shouldResume: true, resumes: false),
    ]

    @Test("who resumes on their own when an interruption ends", arguments: cases)
    func resume(c: Case) {
        var board = PolicyHarness()
        board.activate(1, .music, c.category)
        board.play(1)
        board.activate(2, .ringer, .playback)
        #expect(!board.isPlaying(1))
        let decisions = board.deactivate(2, notifyOthers: c.shouldResume)
        #expect(board.isPlaying(1) == c.resumes)
        if c.resumes { #expect(decisions.contains { $0.command == .resume(SessionID(1)) && $0.rule == .r9 }) }
    }

    @Test("a session that was not playing when interrupted does not resume")
    func notPlaying() {
        var board = PolicyHarness()
        board.activate(1, .music, .playback)
        board.play(1)
        board.pause(1)
        board.activate(2, .ringer, .playback)
        board.deactivate(2, notifyOthers: true)
        #expect(!board.isPlaying(1))
    }
}

@Suite("R10 client-gone")
struct R10ClientGone {
    @Test("a vanished client's sessions end as if deactivated with notifyOthers")
    func gone() {
        var board = PolicyHarness()
        board.activate(1, .music, .playback)
        board.play(1)
        board.activate(2, .ringer, .soloAmbient, client: 9)
        board.play(2)
        board.activate(3, .effect, .ambient, [.duckOthers], client: 9)
        #expect(board.gain(1) == duck)
        let decisions = board.send(.clientGone(ClientID(9)))
        #expect(decisions.contains { $0.command == .stop(SessionID(2)) && $0.rule == .r10 })
        #expect(decisions.contains { $0.command == .notify(.interruptionEnded(SessionID(1), shouldResume: true)) })
        #expect(board.isPlaying(1) && board.gain(1) == .unity)
        #expect(board.policy.sessions.map(\.id) == [SessionID(1)])
    }
}

@Suite("R11 media-keys")
struct R11MediaKeys {
    @Test("play/pause toggles the most recent playback session")
    func toggle() {
        var board = PolicyHarness()
        board.activate(1, .music, .playback, [.mixWithOthers])
        board.play(1)
        board.activate(2, .music, .playback, [.mixWithOthers])
        board.play(2)
        board.input(.mediaKey(.playPause))
        #expect(!board.isPlaying(2) && board.isPlaying(1))
        #expect(board.last.contains { $0.command == .pause(SessionID(2)) && $0.rule == .r11 })
        board.input(.mediaKey(.playPause))
        #expect(board.isPlaying(2))
    }

    @Test("a session paused by an unplug is resumed by the key")
    func afterUnplug() {
        var board = PolicyHarness()
        board.input(.headphones(.plugged, source: .alsaControl))
        board.activate(1, .music, .playback)
        board.play(1)
        board.input(.headphones(.unplugged, source: .alsaControl))
        board.input(.mediaKey(.play))
        #expect(board.isPlaying(1))
    }

    @Test("with no playback session the key is ignored and halts nothing", arguments: MediaKey.allCases)
    func ignored(key: MediaKey) {
        var board = PolicyHarness()
        board.activate(1, .effect, .ambient)
        board.play(1)
        board.activate(2, .music, .playAndRecord)
        board.play(2)
        board.activate(3, .music, .playback, [.mixWithOthers])
        board.play(3)
        board.send(.stop(SessionID(3)))
        let decisions = board.input(.mediaKey(key))
        #expect(decisions.map(\.rule) == [.r11])
        #expect(decisions.allSatisfy { if case .note = $0.command { true } else { false } })
        #expect(board.isPlaying(1) && board.isPlaying(2))
    }

    @Test("an interrupted session is not the key's target")
    func notInterrupted() {
        var board = PolicyHarness()
        board.activate(1, .music, .playback)
        board.play(1)
        board.activate(2, .ringer, .soloAmbient)
        board.play(2)
        let decisions = board.input(.mediaKey(.playPause))
        #expect(decisions.allSatisfy { if case .note = $0.command { true } else { false } })
    }

    @Test("next and previous go to the session's client", arguments: [MediaKey.next, .previous])
    func remote(key: MediaKey) {
        var board = PolicyHarness()
        board.activate(1, .music, .playback)
        board.play(1)
        board.input(.mediaKey(key))
        #expect(board.engine.notifications.last == .remoteCommand(SessionID(1), key))
        #expect(board.isPlaying(1))
    }
}

@Suite("R12 start-up")
struct R12StartUp {
    @Test("volumes come from persisted state, capped at the start-up maximum")
    func capped() {
        var configuration = PolicyConfiguration()
        configuration.startupMaximum = VolumeStep(clamping: 10)
        let board = PolicyHarness(
            configuration: configuration,
            persisted: PersistedVolumes(
                system: [.speaker: VolumeStep(clamping: 15), .headphones: VolumeStep(clamping: 4)],
                ringer: VolumeStep(clamping: 16),
                routeOverride: .headphones
            )
        )
        #expect(board.policy.systemVolumes[.speaker] == VolumeStep(clamping: 10))
        #expect(board.policy.systemVolumes[.headphones] == VolumeStep(clamping: 4))
        #expect(board.policy.ringerVolume == VolumeStep(clamping: 10))
        #expect(board.engine.route == .headphones, "the route override survives a restart")
        #expect(board.engine.busGains[.music] == VolumeCurve.default.gain(at: VolumeStep(clamping: 4)))
        #expect(board.engine.busGains[.ringer] == VolumeCurve.default.gain(at: VolumeStep(clamping: 10)))
        #expect(board.last.allSatisfy { $0.rule == .r12 || $0.rule == .r3 })
    }

    @Test("without persisted state the defaults apply; an unknown remembered route is dropped")
    func defaults() {
        let board = PolicyHarness(
            persisted: PersistedVolumes(
                system: [:],
                ringer: VolumeStep(clamping: 3),
                routeOverride: Route("hdmi")
            )
        )
        #expect(board.policy.systemVolume == VolumeStep(clamping: 8))
        #expect(board.policy.routeOverride == nil && board.engine.route == .speaker)
    }
}

@Suite("R13 route-override")
struct R13RouteOverride {
    static func board() -> PolicyHarness {
        var configuration = PolicyConfiguration()
        configuration.routes = [.speaker, .headphones, Route("lineout")]
        return PolicyHarness(configuration: configuration)
    }

    @Test("an override moves the route; plug does not move it; unplug still pauses; clearing goes back")
    func override() {
        var board = Self.board()
        board.send(.setRouteOverride(Route("lineout")))
        #expect(board.engine.route == Route("lineout"))
        #expect(board.engine.persisted?.routeOverride == Route("lineout"))
        board.activate(1, .music, .playback)
        board.play(1)
        board.input(.headphones(.plugged, source: .alsaControl))
        #expect(board.engine.route == Route("lineout") && board.isPlaying(1))
        board.input(.headphones(.unplugged, source: .alsaControl))
        #expect(board.engine.route == Route("lineout"))
        #expect(!board.isPlaying(1), "R5 still pauses under an override")
        board.input(.headphones(.plugged, source: .alsaControl))
        let cleared = board.send(.setRouteOverride(nil))
        #expect(board.engine.route == .headphones)
        #expect(
            cleared.contains {
                $0.command
                    == .notify(
                        .routeChanged(
                            RouteChange(
                                previous: Route("lineout"),
                                current: .headphones,
                                reason: .override
                            )
                        )
                    )
            }
        )
    }

    @Test("an unknown route is refused, naming the routes there are")
    func unknown() {
        var board = Self.board()
        let decisions = board.send(.setRouteOverride(Route("hdmi")))
        #expect(
            board.engine.rejections.map(\.message) == [
                "no route named 'hdmi'; routes are: speaker, headphones, lineout"
            ]
        )
        #expect(decisions.map(\.rule) == [.r13])
    }

    @Test("each route keeps its own volume")
    func perRouteVolume() {
        var board = Self.board()
        board.send(.setVolume(.system, VolumeStep(clamping: 3)))
        board.send(.setRouteOverride(Route("lineout")))
        board.send(.setVolume(.system, VolumeStep(clamping: 14)))
        board.send(.setRouteOverride(nil))
        #expect(board.policy.systemVolume == VolumeStep(clamping: 3))
    }
}

@Suite("R14 secondary-audio-hint")
struct R14SecondaryAudioHint {
    @Test("the hint is on while non-mixable playback sounds")
    func hint() {
        var board = PolicyHarness()
        board.activate(1, .music, .playback)
        board.play(1)
        #expect(board.engine.notifications.last == .secondaryAudioShouldBeSilenced(true))
        board.pause(1)
        #expect(board.engine.notifications.last == .secondaryAudioShouldBeSilenced(false))
        board.activate(2, .music, .playback, [.mixWithOthers])
        board.play(2)
        #expect(board.engine.notifications.last == .secondaryAudioShouldBeSilenced(false))
    }
}

@Suite("R15 session-requests")
struct R15SessionRequests {
    @Test("play, pause and stop are carried out")
    func requests() {
        var board = PolicyHarness()
        board.activate(1, .music, .playback)
        #expect(board.play(1).contains { $0.command == .resume(SessionID(1)) && $0.rule == .r15 })
        #expect(board.pause(1).contains { $0.command == .pause(SessionID(1)) })
        #expect(board.send(.stop(SessionID(1))).contains { $0.command == .stop(SessionID(1)) })
        #expect(!board.isPlaying(1))
    }

    @Test("requests naming an unknown session are refused; so is a second activation of the same id")
    func refused() {
        var board = PolicyHarness()
        board.play(5)
        #expect(board.engine.rejections.last?.code == .unknownSession)
        board.activate(1, .music, .playback)
        board.activate(1, .effect, .ambient)
        #expect(board.engine.rejections.last?.code == .duplicateSession)
        #expect(board.policy.session(SessionID(1))?.configuration.bus == .music)
    }

    @Test("deactivating a playing session stops it")
    func deactivateStops() {
        var board = PolicyHarness()
        board.activate(1, .music, .playback)
        board.play(1)
        #expect(board.deactivate(1, notifyOthers: false).contains { $0.command == .stop(SessionID(1)) })
        #expect(board.policy.sessions.isEmpty)
    }
}

@Suite("R16 silent-alert-light")
struct R16SilentAlertLight {
    /// The alert light's commands, in order.
    static func lights(_ decisions: [Decision]) -> [Bool] {
        decisions.compactMap { if case .setAlertLight(let on) = $0.command, $0.rule == .r16 { on } else { nil } }
    }

    @Test("a ringtone muted by the switch lights it; stopping the ring puts it out")
    func mutedRing() {
        var board = PolicyHarness()
        board.input(.silenceSwitch(.silent))
        board.activate(1, .ringer, .soloAmbient)
        #expect(Self.lights(board.play(1)) == [true])
        #expect(board.engine.alertLight)
        #expect(Self.lights(board.send(.stop(SessionID(1)))) == [false])
        #expect(!board.engine.alertLight)
    }

    @Test("the switch moved during the ring: on when silenced, off when heard again")
    func switchDuringRing() {
        var board = PolicyHarness()
        board.activate(1, .ringer, .soloAmbient)
        #expect(Self.lights(board.play(1)).isEmpty)
        #expect(Self.lights(board.input(.silenceSwitch(.silent))) == [true])
        let off = board.input(.silenceSwitch(.ring))
        #expect(Self.lights(off) == [false])
        #expect(off.contains { $0.rule == .r16 && $0.reason.contains("heard again") })
    }

    @Test(
        "what never lights it",
        arguments: [
            ("an alarm (playback on the ringer bus)", Bus.ringer, HushCore.Category.playback),
            ("music", Bus.music, HushCore.Category.playback),
            ("an effect", Bus.effect, HushCore.Category.ambient),
        ]
    )
    func neverLit(_ what: String, bus: Bus, category: HushCore.Category) {
        var board = PolicyHarness()
        board.input(.silenceSwitch(.silent))
        board.activate(1, bus, category)
        #expect(Self.lights(board.play(1)).isEmpty, "\(what)")
        #expect(!board.engine.alertLight, "\(what)")
    }

    @Test("a paused, deactivated or vanished ring puts it out")
    func endings() {
        for ending in 0..<3 {
            var board = PolicyHarness()
            board.input(.silenceSwitch(.silent))
            board.activate(1, .ringer, .soloAmbient)
            board.play(1)
            let decisions: [Decision]
            switch ending {
            case 0: decisions = board.pause(1)
            case 1: decisions = board.deactivate(1, notifyOthers: true)
            default: decisions = board.send(.clientGone(ClientID(1)))
            }
            #expect(Self.lights(decisions) == [false], "ending \(ending)")
        }
    }
}

@Suite("R24 output-period")
struct R24OutputPeriod {
    static func period(_ board: PolicyHarness, streams: [OutputPeriod.Stream] = [], floor: Int = 64) -> Ruling<Int> {
        OutputPeriod.ruling(floor: floor, ceiling: 2048, sessions: board.policy.sessions, streams: streams)
    }

    static func stream(_ id: UInt64, _ direction: StreamDirection = .playback, buffer: Int) -> OutputPeriod.Stream {
        OutputPeriod.Stream(id: StreamID(id), name: "aplay", direction: direction, bufferFrames: buffer)
    }

    @Test("music alone, or nothing, is mixed in the longest period")
    func musicAlone() {
        var board = PolicyHarness()
        let idle = Self.period(board)
        #expect(idle.value == 2048 && idle.rule == .r24 && idle.reason.hasPrefix("nothing plays"))
        board.activate(1, .music, .playback)
        board.play(1)
        // aplay's default buffer is half a second: 24000 frames.
        let music = Self.period(board, streams: [Self.stream(1, buffer: 24000)])
        #expect(music.value == 2048 && music.reason.hasPrefix("nothing asks for a shorter period"))
        board.activate(2, .music, .soloAmbient)
        #expect(Self.period(board).value == 2048, "a soundtrack on the music bus mixes in long periods too")
    }

    static let short: [(Bus, HushCore.Category, CategoryOptions, String)] = [
        (.effect, .ambient, [], "plays effects"),
        (.ringer, .playback, [], "rings"),
        (.music, .playAndRecord, [], "records"),
        (.music, .record, [], "records"),
        (.music, .playback, [.duckOthers], "ducks others"),
    ]

    @Test(
        "an effect, a ringtone, a call, a recording or a prompt brings the floor from its activation",
        arguments: short
    )
    func shortNeeds(bus: Bus, category: HushCore.Category, options: CategoryOptions, why: String) {
        var board = PolicyHarness()
        board.activate(1, .music, .playback)
        board.play(1)
        #expect(Self.period(board).value == 2048)
        // Activated, not yet played: the period is short before the session's first frame.
        board.activate(2, bus, category, options.union(.mixWithOthers))
        let ruling = Self.period(board)
        #expect(ruling.value == 64 && ruling.rule == .r24)
        #expect(ruling.reason.contains("session 2") && ruling.reason.contains(why), "\(ruling)")
        board.deactivate(2, notifyOthers: false)
        #expect(Self.period(board).value == 2048, "the long period comes back when the last need ends")
    }

    @Test("a stream allows a quarter of its buffer, as floor × 2ⁿ; the smallest buffer decides")
    func buffers() {
        let board = PolicyHarness()
        // 100 ms (4800 frames): 1200 allowed, so 1024.
        #expect(Self.period(board, streams: [Self.stream(1, buffer: 4800)]).value == 1024)
        // aplay -B 20000 at 48 kHz: 960 frames, 240 allowed, so 128.
        let small = Self.period(board, streams: [Self.stream(1, buffer: 24000), Self.stream(2, buffer: 960)])
        #expect(small.value == 128 && small.reason.contains("stream 2") && small.reason.contains("960 frames"))
        // Smaller than the floor allows: the floor, which is what the board sustains.
        #expect(Self.period(board, streams: [Self.stream(1, buffer: 100)]).value == 64)
        // With a floor of 256 the steps are 256, 512, 1024, 2048.
        #expect(Self.period(board, streams: [Self.stream(1, buffer: 3000)], floor: 256).value == 512)
    }

    @Test("no period longer than the application's own: room appears as often as on a card with its period")
    func ownPeriod() {
        let board = PolicyHarness()
        // GStreamer's alsasink: 200 ms of buffer in 10 ms periods (9600 and 480 frames): 256, not 2048.
        var stream = Self.stream(4, buffer: 9600)
        stream.periodFrames = 480
        let ruling = Self.period(board, streams: [stream])
        #expect(ruling.value == 256 && ruling.reason.contains("480-frame periods"), "\(ruling)")
        // aplay's default: 500 ms in 125 ms periods: the ceiling.
        stream.bufferFrames = 24000
        stream.periodFrames = 6000
        #expect(Self.period(board, streams: [stream]).value == 2048)
    }

    @Test("any capture stream keeps the floor: the microphone's path is timed to it")
    func capture() {
        let board = PolicyHarness()
        let ruling = Self.period(board, streams: [Self.stream(3, .capture, buffer: 24000)])
        #expect(ruling.value == 64 && ruling.reason.contains("records"))
    }

    @Test("headphones on the speaker's own device keep the queue short: an unplug must not reach the speaker (R5)")
    func sharedDevice() {
        var board = PolicyHarness()
        board.activate(1, .music, .playback)
        board.play(1)
        let ruling = OutputPeriod.ruling(
            floor: 64,
            ceiling: 2048,
            sessions: board.policy.sessions,
            streams: [],
            sharedRoute: .headphones
        )
        #expect(ruling.value == 64 && ruling.reason.contains("headphones") && ruling.reason.contains("R5"))
    }

    @Test("a ceiling equal to the floor fixes the period")
    func fixed() {
        var board = PolicyHarness()
        board.activate(1, .music, .playback)
        let ruling = OutputPeriod.ruling(floor: 256, ceiling: 256, sessions: board.policy.sessions, streams: [])
        #expect(ruling.value == 256 && ruling.reason.contains("fixed"))
    }
}

@Suite("R25 start-up-sound")
struct R25StartupSound {
    @Test("the start-up sound is hushd's own ambient session on the effect bus, mixed, and it plays")
    func plays() {
        var board = PolicyHarness()
        let decisions = board.send(.startupSound(SessionID(1)))
        let session = board.policy.session(SessionID(1))
        #expect(session?.client == .hushd)
        #expect(session?.configuration == AudioPolicy.startupSoundConfiguration)
        #expect(session?.configuration.bus == .effect && session?.configuration.category == .ambient)
        #expect(board.isPlaying(1))
        #expect(board.gain(1) == .unity)
        #expect(decisions.contains { $0.rule == .r25 && $0.command == .resume(SessionID(1)) })
        #expect(decisions.contains { $0.rule == .r25 && $0.reason.contains("system sound") })
    }

    @Test("with the silence switch on it plays silenced, as every ambient sound (R1)")
    func silenced() {
        var board = PolicyHarness()
        board.input(.silenceSwitch(.silent))
        let decisions = board.send(.startupSound(SessionID(1)))
        #expect(board.gain(1) == .silent)
        #expect(decisions.contains { $0.rule == .r25 && $0.reason.contains("silence switch is on") })
    }

    @Test("it interrupts nothing: music that already plays goes on")
    func mixes() {
        var board = PolicyHarness()
        board.activate(2, .music, .playback)
        board.play(2)
        let decisions = board.send(.startupSound(SessionID(1)))
        #expect(board.isPlaying(2) && board.isPlaying(1))
        #expect(!decisions.contains { if case .notify(.interruptionBegan) = $0.command { true } else { false } })
    }

    @Test("an id already in use is refused, and that session is left as it was")
    func duplicate() {
        var board = PolicyHarness()
        board.activate(1, .music, .playback)
        let decisions = board.send(.startupSound(SessionID(1)))
        #expect(board.policy.session(SessionID(1))?.client != .hushd)
        #expect(!board.isPlaying(1))
        #expect(decisions.contains { if case .reject = $0.command { true } else { false } })
    }
}

@Suite("R26 session-level")
struct R26SessionLevel {
    private func gainCommands(_ decisions: [Decision], _ id: UInt64) -> [(Gain, Duration, Rule)] {
        decisions.compactMap { decision in
            guard case .setSessionGain(let session, let gain, let ramp) = decision.command, session == SessionID(id)
            else { return nil }
            return (gain, ramp, decision.rule)
        }
    }

    private func near(_ gain: Gain, _ decibels: Float) -> Bool { abs(gain.decibels - decibels) < 0.001 }

    @Test("a session activated at -10 dB starts there, with no ramp; the bus's volume is untouched")
    func activatedAtLevel() {
        var board = PolicyHarness()
        let decisions = board.activate(1, .effect, .ambient, level: SessionLevel(decibels: -10)!)
        let gains = gainCommands(decisions, 1)
        #expect(gains.count == 1 && near(gains[0].0, -10) && gains[0].1 == .zero && gains[0].2 == .r26)
        #expect(!decisions.contains { if case .setBusGain = $0.command { true } else { false } })
        #expect(board.policy.session(SessionID(1))?.configuration.level == SessionLevel(decibels: -10))
    }

    @Test("setting the level ramps to it over the volume ramp, and back to 0 dB")
    func setAndBack() {
        var board = PolicyHarness()
        board.activate(1, .music, .playback)
        board.play(1)
        let down = board.setLevel(1, -10)
        let gains = gainCommands(down, 1)
        #expect(gains.count == 1 && near(gains[0].0, -10) && gains[0].1 == .milliseconds(30) && gains[0].2 == .r26)
        #expect(down.contains { $0.rule == .r26 && $0.reason.contains("-10 dB") })
        let up = board.setLevel(1, 0)
        #expect(gainCommands(up, 1).map(\.0) == [.unity])
        #expect(board.gain(1) == .unity)
    }

    @Test("the level multiplies the duck: a ducked session at -6 dB sits at -20 dB")
    func underDuck() {
        var board = PolicyHarness()
        board.activate(1, .music, .playback, [.mixWithOthers], level: SessionLevel(decibels: -6)!)
        board.activate(2, .effect, .playback, [.duckOthers])
        #expect(near(board.gain(1), -20))
        board.setLevel(1, -3)
        #expect(near(board.gain(1), -17))
        board.send(.deactivate(SessionID(2), notifyOthers: true))
        #expect(near(board.gain(1), -3))
    }

    @Test("the silence switch silences a session whatever its level, and its level returns after")
    func underSilence() {
        var board = PolicyHarness()
        board.activate(1, .effect, .ambient, level: SessionLevel(decibels: -12)!)
        board.input(.silenceSwitch(.silent))
        #expect(board.gain(1) == .silent)
        let set = board.setLevel(1, -4)
        #expect(gainCommands(set, 1).isEmpty, "silenced: the new level waits")
        #expect(board.gain(1) == .silent)
        board.input(.silenceSwitch(.ring))
        #expect(near(board.gain(1), -4))
    }

    @Test("a session is never louder than its bus: levels above 0 dB do not exist")
    func neverAbove() {
        #expect(SessionLevel(decibels: 0.1) == nil)
        #expect(SessionLevel(decibels: -96.5) == nil)
        #expect(SessionLevel(decibels: .nan) == nil)
        #expect(SessionLevel(decibels: -96)?.gain.linear ?? 1 < 0.0001)
        var board = PolicyHarness()
        board.activate(1, .music, .playback)
        board.setLevel(1, 0)
        #expect(board.gain(1) == .unity)
    }

    @Test("the same level again changes nothing; an unknown session is refused")
    func repeatedAndUnknown() {
        var board = PolicyHarness()
        board.activate(1, .music, .playback, level: SessionLevel(decibels: -10)!)
        let again = board.setLevel(1, -10)
        #expect(gainCommands(again, 1).isEmpty && again.contains { $0.rule == .r26 })
        let unknown = board.setLevel(9, -10)
        #expect(unknown.contains { if case .reject = $0.command { true } else { false } })
    }

    @Test("the volume still scales a session at its own level: the bus gain moves by the curve, the level stays")
    func volumeGoverns() {
        var board = PolicyHarness()
        board.activate(1, .music, .playback, level: SessionLevel(decibels: -10)!)
        board.play(1)
        let before = board.engine.busGains[.music]
        let step = board.send(.setVolume(.system, VolumeStep(rawValue: 12)!))
        #expect(gainCommands(step, 1).isEmpty)
        #expect(board.engine.busGains[.music] != before)
        #expect(near(board.gain(1), -10))
    }
}

/// Hearing safety's boards: headphones whose full scale is 100 dB(A) at the ear (the start limit of 85 dB(A) is
/// then step 10, -17.5 dB), a speaker left uncalibrated.
private func hearingBoard(ceiling: Double? = nil, speaker: Double? = nil, headphones: Double? = 100) -> PolicyHarness {
    var configuration = PolicyConfiguration()
    configuration.hearing.privateRoutes = [.headphones]
    configuration.hearing.fullScale[.headphones] = headphones
    configuration.hearing.fullScale[.speaker] = speaker
    configuration.hearing.ceiling = ceiling
    return PolicyHarness(configuration: configuration)
}

private func hearingWarnings(_ decisions: [Decision]) -> [HearingWarning] {
    decisions.compactMap { if case .notify(.hearingWarning(let warning)) = $0.command { warning } else { nil } }
}

@Suite("R27 hearing-start-level")
struct R27HearingStartLevel {
    @Test("plugged headphones start at no more than 85 dB(A): the remembered 12 becomes 10, said with R27")
    func plugCaps() {
        var board = hearingBoard()
        board.send(.setRouteOverride(.headphones))
        board.send(.setVolume(.system, VolumeStep(clamping: 12)))
        board.send(.setRouteOverride(nil))
        let plugged = board.input(.headphones(.plugged, source: .alsaControl))
        #expect(board.policy.systemVolume == VolumeStep(clamping: 10))
        #expect(plugged.contains { $0.rule == .r27 && $0.reason.contains("85 dB(A)") })
        #expect(board.engine.busGains[.music] == VolumeCurve.default.gain(at: VolumeStep(clamping: 10)))
        // The cap is in force before the route moves: the first sample on headphones is at the capped volume.
        let capIndex = plugged.firstIndex { $0.rule == .r27 }
        let routeIndex = plugged.firstIndex { if case .selectRoute = $0.command { true } else { false } }
        #expect(capIndex! < routeIndex!)
    }

    @Test("uncalibrated headphones are assumed at 110 dB(A) full scale: they start at step 7, and it says so")
    func assumed() {
        var board = hearingBoard(headphones: nil)
        let plugged = board.input(.headphones(.plugged, source: .alsaControl))
        #expect(board.policy.systemVolume == VolumeStep(clamping: 7))
        #expect(plugged.contains { $0.rule == .r27 && $0.reason.contains("not calibrated") })
    }

    @Test("a volume already under the limit is kept; the speaker (public) is never capped")
    func underAndPublic() {
        var board = hearingBoard()
        let plugged = board.input(.headphones(.plugged, source: .alsaControl))
        #expect(board.policy.systemVolume == VolumeStep(clamping: 8) && !plugged.contains { $0.rule == .r27 })
        board.input(.headphones(.unplugged, source: .alsaControl))
        board.send(.setVolume(.system, VolumeStep(clamping: 16)))
        #expect(board.policy.systemVolume == .maximum, "the speaker goes to 16")
    }

    @Test("a board that powers up on picked headphones starts capped")
    func startUp() {
        var configuration = PolicyConfiguration()
        configuration.hearing.privateRoutes = [.headphones]
        configuration.hearing.fullScale[.headphones] = 100
        let persisted = PersistedVolumes(
            system: [.headphones: VolumeStep(clamping: 12)],
            ringer: VolumeStep(clamping: 10),
            routeOverride: .headphones
        )
        let board = PolicyHarness(configuration: configuration, persisted: persisted)
        #expect(board.policy.route == .headphones && board.policy.systemVolume == VolumeStep(clamping: 10))
        #expect(board.last.contains { $0.rule == .r27 })
    }
}

@Suite("R28 hearing-ceiling")
struct R28HearingCeiling {
    @Test("a toy's ceiling of 80 dB(A): headphones never above step 9, whatever is pressed; the ringer too")
    func ceiling() {
        var board = hearingBoard(ceiling: 80)
        board.input(.headphones(.plugged, source: .alsaControl))
        var pressed: [Decision] = []
        for _ in 0..<10 {
            pressed += board.input(.volumeButton(.up, .press))
            board.input(.volumeButton(.up, .release))
        }
        #expect(board.policy.systemVolume == VolumeStep(clamping: 9))
        #expect(pressed.contains { $0.rule == .r28 && $0.reason.contains("80 dB(A)") })
        let set = board.send(.setVolume(.system, .maximum))
        #expect(board.policy.systemVolume == VolumeStep(clamping: 9) && set.contains { $0.rule == .r28 })
        #expect(board.policy.ringerVolume <= VolumeStep(clamping: 9), "the ringer rings into the ears too")
        let reference = board.policy.referenceLevel(at: board.policy.systemVolume, on: .headphones) ?? 999
        #expect(reference <= 80)
    }

    @Test("a calibrated speaker is held to the ceiling too; an uncalibrated one has nothing to hold to")
    func speaker() {
        var calibrated = hearingBoard(ceiling: 80, speaker: 95)
        calibrated.send(.setVolume(.system, .maximum))
        #expect(calibrated.policy.systemVolume == VolumeStep(clamping: 10))
        var uncalibrated = hearingBoard(ceiling: 80)
        uncalibrated.send(.setVolume(.system, .maximum))
        #expect(uncalibrated.policy.systemVolume == .maximum)
    }
}

@Suite("R29 hearing-exposure")
struct R29HearingExposure {
    /// Headphones plugged and turned up to 16 by the person: 100 dB(A) full scale, so music near full scale is loud.
    static func loudHeadphones() -> PolicyHarness {
        var board = hearingBoard()
        board.input(.headphones(.plugged, source: .alsaControl))
        board.send(.setVolume(.system, .maximum))
        return board
    }

    /// The bus gain ramps R29 sent for the music bus: (from dB, to dB, seconds).
    static func ramps(_ decisions: [Decision], from start: Float) -> [(Float, Float, Double)] {
        var level = start
        return decisions.compactMap { decision in
            guard decision.rule == .r29, case .setBusGain(.music, let gain, let ramp) = decision.command else {
                return nil
            }
            defer { level = gain.decibels }
            return (level, gain.decibels, Double(ramp.milliseconds) / 1000)
        }
    }

    @Test("over 100 dB(A) for more than 5 s: a warning within a second, then down at no more than 1 dB/s to 85")
    func loud() {
        var board = Self.loudHeadphones()
        var decisions: [Decision] = []
        for second in 1...6 {
            let got = board.send(.exposure(Exposure(route: .headphones, decibelsA: 101, dose: 0.2)), after: .seconds(1))
            if second < 6 { #expect(hearingWarnings(got).isEmpty, "second \(second)") }
            decisions += got
        }
        let warning = hearingWarnings(decisions).first
        #expect(warning?.kind == .loud && warning?.enforced == false && warning?.dosePercent == 20)
        #expect(decisions.contains { $0.rule == .r29 && $0.reason.contains("may turn it up again") })
        // The reduction began in the same second: 16 -> 15 already.
        #expect(board.policy.systemVolume == VolumeStep(clamping: 15))
        for _ in 0..<40 { decisions += board.wait(.seconds(1)) }
        // 16 dB over the start limit: down to step 10 (-17.5 dB), the first step whose level is 85 dB(A) or less.
        #expect(board.policy.systemVolume == VolumeStep(clamping: 10))
        let ramps = Self.ramps(decisions, from: 0)
        #expect(ramps.count == 6)
        for (from, to, seconds) in ramps {
            // The engine ramps amplitude in a straight line: the level falls fastest at the end, 20/ln10 × (1-r)/r.
            let ratio = Double(Gain(decibels: to).linear / Gain(decibels: from).linear)
            let fastest = 8.6859 * (1 - ratio) / ratio / seconds
            #expect(fastest <= 1.0001, "\(from) -> \(to) dB over \(seconds) s: at most \(fastest) dB/s")
        }
        #expect(
            decisions.contains {
                $0.command == .notify(.volumeChanged(.system, VolumeStep(clamping: 10), route: .headphones))
            }
        )
    }

    @Test("after the warning the person may turn it up again; it warns again only after 10 minutes under the limit")
    func personOverrides() {
        var board = Self.loudHeadphones()
        for _ in 1...6 {
            board.send(.exposure(Exposure(route: .headphones, decibelsA: 101, dose: 0.2)), after: .seconds(1))
        }
        board.send(.setVolume(.system, .maximum))
        #expect(board.policy.systemVolume == .maximum, "allowed: the reduction ends")
        var again: [Decision] = []
        for _ in 1...20 {
            again += board.send(.exposure(Exposure(route: .headphones, decibelsA: 101, dose: 0.2)), after: .seconds(1))
        }
        #expect(hearingWarnings(again).isEmpty && board.policy.systemVolume == .maximum)
        for _ in 1...601 {
            board.send(.exposure(Exposure(route: .headphones, decibelsA: 80, dose: 0.2)), after: .seconds(1))
        }
        for _ in 1...6 {
            again += board.send(.exposure(Exposure(route: .headphones, decibelsA: 101, dose: 0.2)), after: .seconds(1))
        }
        #expect(hearingWarnings(again).count == 1, "a new listening: warned again")
    }

    @Test("the dose warns at each 100 %; at 500 % the volume comes down and stays at the start limit's step")
    func dose() {
        var board = Self.loudHeadphones()
        var warnings: [HearingWarning] = []
        for dose in [0.5, 0.99, 1.0, 1.5, 2.01, 2.5] {
            warnings += hearingWarnings(
                board.send(.exposure(Exposure(route: .headphones, decibelsA: 90, dose: dose)), after: .seconds(1))
            )
            board.send(.setVolume(.system, .maximum))  // the person turns it up again each time
        }
        #expect(warnings.map(\.dosePercent) == [100, 201], "\(warnings)")
        #expect(warnings.allSatisfy { $0.kind == .dose && !$0.enforced })
        let enforced = hearingWarnings(
            board.send(.exposure(Exposure(route: .headphones, decibelsA: 90, dose: 5.0)), after: .seconds(1))
        )
        #expect(enforced.first?.enforced == true)
        for _ in 0..<60 { board.wait(.seconds(1)) }
        #expect(board.policy.systemVolume == VolumeStep(clamping: 10))
        let refused = board.send(.setVolume(.system, .maximum))
        #expect(board.policy.systemVolume == VolumeStep(clamping: 10), "not optional at 500 %")
        #expect(refused.contains { $0.rule == .r29 && $0.reason.contains("500 %") })
    }

    @Test("the alert light shows a warning for 10 s, said with R29; a muted ring's light stays R16's")
    func light() {
        var board = Self.loudHeadphones()
        var decisions: [Decision] = []
        for _ in 1...6 {
            decisions += board.send(
                .exposure(Exposure(route: .headphones, decibelsA: 101, dose: 0.2)),
                after: .seconds(1)
            )
        }
        #expect(decisions.contains { $0.command == .setAlertLight(true) && $0.rule == .r29 })
        #expect(board.policy.alertLight)
        board.wait(.seconds(9))
        #expect(board.policy.alertLight, "still shown at 9 s")
        let off = board.wait(.seconds(2))
        #expect(!board.policy.alertLight)
        #expect(off.contains { $0.command == .setAlertLight(false) && $0.rule == .r29 })
        #expect(board.policy.nextDeadline == nil || board.policy.nextDeadline! > board.now)
    }

    @Test("the speaker (public) and another route's report are not judged")
    func notJudged() {
        var board = hearingBoard()
        board.send(.setVolume(.system, .maximum))
        var decisions: [Decision] = []
        for _ in 1...10 {
            decisions += board.send(.exposure(Exposure(route: .speaker, decibelsA: 110, dose: 3)), after: .seconds(1))
        }
        for _ in 1...10 {
            decisions += board.send(
                .exposure(Exposure(route: .headphones, decibelsA: 110, dose: 3)),
                after: .seconds(1)
            )
        }
        #expect(hearingWarnings(decisions).isEmpty && board.policy.systemVolume == .maximum)
    }
}

@Suite("R30 hearing-warning-sound")
struct R30HearingWarningSound {
    /// Headphones at 16 with a warning sound configured, and loud for 6 s: the momentary warning.
    static func warned(silent: Bool = false) -> (PolicyHarness, [Decision]) {
        var configuration = PolicyConfiguration()
        configuration.hearing.privateRoutes = [.headphones]
        configuration.hearing.fullScale[.headphones] = 100
        configuration.hearing.warningSound = true
        var board = PolicyHarness(configuration: configuration)
        if silent { board.input(.silenceSwitch(.silent)) }
        board.input(.headphones(.plugged, source: .alsaControl))
        board.send(.setVolume(.system, .maximum))
        board.activate(1, .music, .playback)
        board.play(1)
        var decisions: [Decision] = []
        for _ in 1...6 {
            decisions += board.send(
                .exposure(Exposure(route: .headphones, decibelsA: 101, dose: 0.2)),
                after: .seconds(1)
            )
        }
        return (board, decisions)
    }

    @Test("a warning asks for its sound, said with R30; without one configured it does not")
    func asks() {
        let (_, decisions) = Self.warned()
        #expect(decisions.filter { $0.command == .playWarningSound }.count == 1)
        #expect(decisions.contains { $0.command == .playWarningSound && $0.rule == .r30 })
        var quiet = R29HearingExposure.loudHeadphones()
        var plain: [Decision] = []
        for _ in 1...6 {
            plain += quiet.send(.exposure(Exposure(route: .headphones, decibelsA: 101, dose: 0.2)), after: .seconds(1))
        }
        #expect(plain.contains { if case .notify(.hearingWarning) = $0.command { true } else { false } })
        #expect(!plain.contains { $0.command == .playWarningSound })
    }

    @Test("it plays as hushd's ambient session on the ringer bus, mixed: the music goes on, neither ducked nor paused")
    func plays() {
        var (board, _) = Self.warned()
        let decisions = board.send(.warningSound(SessionID(9)))
        let session = board.policy.session(SessionID(9))
        #expect(session?.client == .hushd)
        #expect(session?.configuration == AudioPolicy.warningSoundConfiguration)
        #expect(session?.configuration.bus == .ringer && session?.configuration.category == .ambient)
        #expect(board.isPlaying(9) && board.gain(9) == .unity)
        #expect(board.isPlaying(1) && board.gain(1) == .unity, "the music is not ducked: only the reduction lowers it")
        #expect(decisions.contains { $0.rule == .r30 && $0.command == .resume(SessionID(9)) })
        #expect(!decisions.contains { if case .notify(.interruptionBegan) = $0.command { true } else { false } })
    }

    @Test("the volume buttons still move the system volume while it sounds: a press lowers what is loud")
    func buttons() {
        var (board, _) = Self.warned()
        board.send(.warningSound(SessionID(9)))
        #expect(board.policy.buttonTarget == .system)
        // A ringtone is still a ring: the buttons move the ringer volume (R3, M8).
        board.activate(3, .ringer, .soloAmbient, [.mixWithOthers])
        board.play(3)
        #expect(board.policy.buttonTarget == .ringer)
    }

    @Test("with the silence switch on it plays silenced, as every alert (R1); the light warns")
    func silenced() {
        var (board, decisions) = Self.warned(silent: true)
        #expect(decisions.contains { $0.command == .playWarningSound })
        let played = board.send(.warningSound(SessionID(9)))
        #expect(board.gain(9) == .silent)
        #expect(played.contains { $0.rule == .r30 && $0.reason.contains("silence switch is on") })
        #expect(board.policy.alertLight)
    }

    @Test("one at a time: a warning while the last one's sound plays does not ask for another")
    func oneAtATime() {
        var (board, _) = Self.warned()
        board.send(.warningSound(SessionID(9)))
        // The dose passes 100 % while the sound still plays: a warning, no second sound.
        let again = board.send(.exposure(Exposure(route: .headphones, decibelsA: 90, dose: 1.0)), after: .seconds(1))
        #expect(again.contains { if case .notify(.hearingWarning) = $0.command { true } else { false } })
        #expect(!again.contains { $0.command == .playWarningSound })
        #expect(again.contains { $0.rule == .r30 && $0.reason.contains("one warning sound at a time") })
        // Once it ended, the next warning has its sound.
        board.send(.deactivate(SessionID(9), notifyOthers: true))
        let later = board.send(.exposure(Exposure(route: .headphones, decibelsA: 90, dose: 2.0)), after: .seconds(1))
        #expect(later.contains { $0.command == .playWarningSound })
        // One stopped (the console may stop any session) does not sound: no reason to stay quiet.
        board.send(.warningSound(SessionID(10)))
        board.send(.stop(SessionID(10)))
        let stopped = board.send(.exposure(Exposure(route: .headphones, decibelsA: 90, dose: 3.0)), after: .seconds(1))
        #expect(stopped.contains { $0.command == .playWarningSound })
    }
}
