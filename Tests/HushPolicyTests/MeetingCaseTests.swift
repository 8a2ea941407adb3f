import HushCore
import HushPolicy
import HushTesting
import Testing

// Where two rules meet: the cases M1–M9 of docs/policy.md, one suite each.

@Suite("M1 silenced-session-takes-no-floor")
struct M1SilencedSessionTakesNoFloor {
    @Test("a ringtone arriving while silenced leaves the music playing, silent itself")
    func ringtoneWhileSilenced() {
        var board = PolicyHarness()
        board.activate(1, .music, .playback)
        board.play(1)
        board.input(.silenceSwitch(.silent))
        let decisions = board.activate(2, .ringer, .soloAmbient)
        board.play(2)
        #expect(board.isPlaying(1) && board.gain(1) == .unity)
        #expect(board.isPlaying(2) && board.gain(2) == .silent)
        #expect(decisions.contains { $0.rule == .m1 })
        #expect(board.engine.interrupted.isEmpty)
    }

    @Test("silence off lets it be heard, mixed: the switch never stops what a person started")
    func silenceOffMixes() {
        var board = PolicyHarness()
        board.activate(1, .music, .playback)
        board.play(1)
        board.input(.silenceSwitch(.silent))
        board.activate(2, .ringer, .soloAmbient)
        board.play(2)
        board.input(.silenceSwitch(.ring))
        #expect(board.isPlaying(1) && board.isPlaying(2) && board.gain(2) == .unity)
    }

    @Test("played again after silence is off, it takes the floor then")
    func takesFloorOnPlay() {
        var board = PolicyHarness()
        board.activate(1, .music, .playback)
        board.play(1)
        board.input(.silenceSwitch(.silent))
        board.activate(2, .effect, .soloAmbient)
        board.input(.silenceSwitch(.ring))
        let decisions = board.play(2)
        #expect(decisions.contains { $0.command == .pause(SessionID(1)) && $0.rule == .r6 })
        #expect(board.isPlaying(2) && !board.isPlaying(1))
    }
}

@Suite("M2 silence-keeps-the-floor")
struct M2SilenceKeepsTheFloor {
    @Test("silence during a ringtone mutes it; the music stays interrupted until the ringtone ends")
    func silenceDuringRing() {
        var board = PolicyHarness()
        board.activate(1, .music, .playback)
        board.play(1)
        board.activate(2, .ringer, .soloAmbient)
        board.play(2)
        board.input(.silenceSwitch(.silent))
        #expect(board.gain(2) == .silent)
        #expect(!board.isPlaying(1) && board.engine.interrupted == [SessionID(1)])
        board.deactivate(2, notifyOthers: true)
        #expect(board.isPlaying(1))
    }
}

@Suite("M3 unplug-while-interrupted")
struct M3UnplugWhileInterrupted {
    @Test("music interrupted by a call, headphones unplugged: it does not resume on the speaker")
    func unplugDuringCall() {
        var board = PolicyHarness()
        board.input(.headphones(.plugged, source: .alsaControl))
        board.activate(1, .music, .playback)
        board.play(1)
        board.activate(2, .music, .playAndRecord)
        board.play(2)
        let unplug = board.input(.headphones(.unplugged, source: .alsaControl))
        #expect(unplug.contains { $0.rule == .m3 })
        #expect(board.isPlaying(2), "the call goes on, on the speaker")
        let end = board.deactivate(2, notifyOthers: true)
        #expect(end.contains { $0.command == .notify(.interruptionEnded(SessionID(1), shouldResume: true)) })
        #expect(!board.isPlaying(1))
        board.input(.mediaKey(.playPause))
        #expect(board.isPlaying(1), "paused by the unplug, so the media key brings it back")
    }
}

@Suite("M4 transient-holds-the-floor")
struct M4TransientHoldsTheFloor {
    @Test("music activated during a call starts interrupted; the call keeps sounding")
    func musicDuringCall() {
        var board = PolicyHarness()
        board.activate(1, .music, .playAndRecord)
        board.play(1)
        let decisions = board.activate(2, .music, .playback)
        #expect(
            decisions.contains {
                $0.command == .notify(.interruptionBegan(SessionID(2), cause: .session(SessionID(1)))) && $0.rule == .m4
            }
        )
        #expect(board.isPlaying(1))
        let play = board.play(2)
        #expect(play.contains { if case .reject = $0.command { true } else { false } })
        #expect(!board.isPlaying(2))
        board.deactivate(1, notifyOthers: true)
        #expect(board.engine.notifications.contains(.interruptionEnded(SessionID(2), shouldResume: true)))
        #expect(!board.isPlaying(2), "it was never playing, so it does not start by itself")
    }

    @Test("the newcomer still displaces other non-transient sessions")
    func displacesMusic() {
        var board = PolicyHarness()
        board.activate(1, .music, .playback)
        board.play(1)
        board.activate(2, .ringer, .soloAmbient)
        board.play(2)
        board.activate(3, .music, .playback)
        board.deactivate(2, notifyOthers: true)
        #expect(!board.isPlaying(1), "session 1 is still interrupted by the newer music session 3")
        #expect(board.policy.session(SessionID(1))?.interrupters == [SessionID(3)])
    }
}

@Suite("M5 play-while-interrupted")
struct M5PlayWhileInterrupted {
    @Test("playing a session displaced by other music takes the floor back")
    func takeBack() {
        var board = PolicyHarness()
        board.activate(1, .music, .playback)
        board.play(1)
        board.activate(2, .music, .playback)
        board.play(2)
        let decisions = board.play(1)
        #expect(board.isPlaying(1) && !board.isPlaying(2))
        #expect(decisions.contains { $0.command == .notify(.interruptionEnded(SessionID(1), shouldResume: false)) })
        #expect(
            decisions.contains {
                $0.command == .notify(.interruptionBegan(SessionID(2), cause: .session(SessionID(1)))) && $0.rule == .m5
            }
        )
    }

    @Test("playing a session interrupted by a ringtone is refused")
    func refusedDuringRing() {
        var board = PolicyHarness()
        board.activate(1, .music, .playback)
        board.play(1)
        board.activate(2, .ringer, .soloAmbient)
        board.play(2)
        let decisions = board.play(1)
        #expect(decisions.contains { if case .reject(let r) = $0.command { r.code == .interrupted } else { false } })
        #expect(decisions.map(\.rule) == [.m5])
        #expect(!board.isPlaying(1) && board.isPlaying(2))
    }
}

@Suite("M6 duplicate-jack-report")
struct M6DuplicateJackReport {
    @Test("two sources reporting the same plug change the route once", arguments: JackSource.allCases)
    func duplicate(second: JackSource) {
        var board = PolicyHarness()
        board.input(.headphones(.plugged, source: .alsaControl))
        let again = board.input(.headphones(.plugged, source: second))
        #expect(again.map(\.rule) == [.m6])
        #expect(board.engine.route == .headphones)
    }
}

@Suite("M7 unplug-during-duck")
struct M7UnplugDuringDuck {
    @Test("ducked music is paused by the unplug; when the duck ends its gain returns, still paused")
    func unplugDuringDuck() {
        var board = PolicyHarness()
        board.input(.headphones(.plugged, source: .alsaControl))
        board.activate(1, .music, .playback)
        board.play(1)
        board.activate(2, .effect, .playback, [.duckOthers])
        board.play(2)
        board.input(.headphones(.unplugged, source: .alsaControl))
        #expect(!board.isPlaying(1))
        #expect(board.isPlaying(2) == false, "the ducking prompt is playback too, and pauses as well")
        board.deactivate(2, notifyOthers: true)
        #expect(board.gain(1) == .unity)
        #expect(!board.isPlaying(1))
    }
}

@Suite("M8 buttons-follow-audible-ringer")
struct M8ButtonsFollowAudibleRinger {
    @Test("a silenced ringtone leaves the buttons on the system volume")
    func silencedRingtone() {
        var board = PolicyHarness()
        board.activate(1, .music, .playback)
        board.play(1)
        board.input(.silenceSwitch(.silent))
        board.activate(2, .ringer, .soloAmbient)
        board.play(2)
        #expect(board.policy.buttonTarget == .system)
        board.input(.volumeButton(.down, .press))
        #expect(board.policy.systemVolume == VolumeStep(clamping: 7) && board.policy.ringerVolume.rawValue == 10)
    }

    @Test("during an interruption by a ringtone the buttons move the ringer; by music, the system volume")
    func duringInterruption() {
        var board = PolicyHarness()
        board.activate(1, .music, .playback)
        board.play(1)
        board.activate(2, .ringer, .soloAmbient)
        board.play(2)
        #expect(board.policy.buttonTarget == .ringer)
        board.deactivate(2, notifyOthers: true)
        board.activate(3, .music, .playback)
        board.play(3)
        #expect(board.policy.buttonTarget == .system)
    }
}

@Suite("M9 silence-during-ducking")
struct M9SilenceDuringDucking {
    @Test("a silenced ducker no longer ducks; silence off brings the duck back")
    func silencedDucker() {
        var board = PolicyHarness()
        board.activate(1, .music, .playback)
        board.play(1)
        board.activate(2, .effect, .ambient, [.duckOthers])
        board.play(2)
        #expect(board.gain(1) == Gain(decibels: -14))
        let on = board.input(.silenceSwitch(.silent))
        #expect(
            on.contains {
                $0.command == .setSessionGain(SessionID(1), .unity, ramp: .milliseconds(500)) && $0.rule == .m9
            }
        )
        board.input(.silenceSwitch(.ring))
        #expect(board.gain(1) == Gain(decibels: -14))
    }
}
