import HushCore
import HushPolicy
import HushTesting
import Testing

// One suite per stream rule of docs/policy.md ("What an application sees"), through PolicyHarness as hushd's stream
// hub drives StreamPolicy: placement, transport, the state an application sees and the microphone gate.

private func placement(_ ruling: Ruling<StreamPolicy.Placement>) -> StreamPolicy.Placement { ruling.value }

@Suite("R17 stream-session")
struct R17StreamSession {
    @Test("a stream that names no session activates its own, with its own configuration")
    func ownSession() throws {
        var board = PolicyHarness()
        let placed = try board.openStream(1, .playback, .music, .playback)
        #expect(placed.rule == .r17)
        #expect(placement(placed) == .activate(SessionConfiguration(bus: .music, category: .playback)))
        #expect(board.policy.session(SessionID(101))?.client == ClientID(1001))
    }

    @Test("one process's playback and capture with the same category, bus, options and name are one session")
    func partnerShares() throws {
        var board = PolicyHarness()
        try board.openStream(1, .playback, .music, .playAndRecord, process: 7, name: "baresip")
        let capture = try board.openStream(2, .capture, .music, .playAndRecord, process: 7, name: "baresip")
        #expect(placement(capture) == .share(SessionID(101), group: ClientID(1001)))
        #expect(board.policy.sessions.count == 1, "a call is one session, not two interrupting each other")
    }

    @Test(
        "anything different makes a session of its own",
        arguments: [
            (StreamDirection.playback, Int32(7), "baresip", HushCore.Category.playAndRecord),  // same direction
            (.capture, 8, "baresip", .playAndRecord),  // another process
            (.capture, 7, "other", .playAndRecord),  // another name
            (.capture, 7, "baresip", .record),  // another category
        ]
    )
    func noPartner(direction: StreamDirection, process: Int32, name: String, category: HushCore.Category) throws {
        var board = PolicyHarness()
        try board.openStream(1, .playback, .music, .playAndRecord, process: 7, name: "baresip")
        let second = try board.openStream(2, direction, .music, category, process: process, name: name)
        guard case .activate = placement(second) else {
            Issue.record("expected a session of its own, got \(second)")
            return
        }
    }

    @Test("a third stream of a process finds no partner once both directions are taken")
    func pairIsFull() throws {
        var board = PolicyHarness()
        try board.openStream(1, .playback, .music, .playAndRecord, process: 7)
        try board.openStream(2, .capture, .music, .playAndRecord, process: 7)
        let third = try board.openStream(3, .capture, .music, .playAndRecord, process: 7)
        guard case .activate = placement(third) else {
            Issue.record("expected a session of its own, got \(third)")
            return
        }
    }

    @Test("a stream that names a session joins it with the session's configuration")
    func joinsNamed() throws {
        var board = PolicyHarness()
        board.activate(5, .ringer, .playAndRecord, client: 50)
        let placed = try board.openStream(1, .capture, .music, .record, session: 5, sessionOwner: 1000)
        #expect(placement(placed) == .join(SessionID(5), SessionConfiguration(bus: .ringer, category: .playAndRecord)))
    }

    @Test("refusals: no such session, another user's, a second playback, a capture of a non-recording session")
    func refusals() throws {
        var board = PolicyHarness()
        board.activate(5, .music, .playback, client: 50)
        #expect(throws: StreamPolicy.Refusal(.unknownSession, "there is no session 9", field: "session")) {
            try board.openStream(1, .playback, .music, .playback, session: 9)
        }
        #expect(throws: StreamPolicy.Refusal.self) {
            try board.openStream(1, .playback, .music, .playback, user: 1000, session: 5, sessionOwner: 1001)
        }
        // root may join anyone's session
        try board.openStream(1, .playback, .music, .playback, user: 0, session: 5, sessionOwner: 1001)
        do {
            try board.openStream(2, .playback, .music, .playback, session: 5, sessionOwner: 1000)
            Issue.record("a second playback stream joined session 5")
        } catch {
            #expect(error.code == .cannotStream && error.message.contains("one stream at a time"))
        }
        do {
            try board.openStream(3, .capture, .music, .record, session: 5, sessionOwner: 1000)
            Issue.record("a capture stream joined a playback session")
        } catch {
            #expect(error.code == .notPermitted && error.field == "session")
        }
    }

    @Test(
        "a capture stream must be of a recording category",
        arguments: [HushCore.Category.ambient, .soloAmbient, .playback]
    )
    func captureNeedsRecording(category: HushCore.Category) {
        var board = PolicyHarness()
        do {
            try board.openStream(1, .capture, .music, category)
            Issue.record("a \(category) stream was allowed to record")
        } catch {
            #expect(error.code == .notPermitted && error.field == "category" && error.rule == .r17)
        }
        #expect(board.policy.sessions.isEmpty, "a refused stream activates nothing")
    }

    @Test("the session of streams ends with its last stream, as its client's would (R10)")
    func endsWithLastStream() throws {
        var board = PolicyHarness()
        try board.openStream(1, .playback, .music, .playAndRecord, process: 7)
        try board.openStream(2, .capture, .music, .playAndRecord, process: 7)
        #expect(board.closeStream(1).value == .voiceLeaves(SessionID(101)))
        #expect(board.policy.session(SessionID(101)) != nil, "the call goes on with its capture")
        #expect(board.closeStream(2).value == .sessionEnds(ClientID(1001)))
        #expect(board.policy.session(SessionID(101)) == nil)
    }

    @Test("a stream that joined a session by id never ends it")
    func joinedNeverEnds() throws {
        var board = PolicyHarness()
        board.activate(5, .music, .playAndRecord, client: 50)
        try board.openStream(1, .playback, .music, .playback, session: 5, sessionOwner: 1000)
        try board.openStream(2, .capture, .music, .record, session: 5, sessionOwner: 1000)
        #expect(board.closeStream(1).value == .voiceLeaves(SessionID(5)))
        #expect(board.closeStream(2).value == .nothing)
        #expect(board.policy.session(SessionID(5)) != nil)
    }

    @Test("the last stream of a session that ducks others ends the duck with it (R7, R10)")
    func duckUndone() throws {
        var board = PolicyHarness()
        board.activate(1, .music, .playback)
        board.play(1)
        try board.openStream(1, .playback, .effect, .ambient, [.duckOthers])
        board.stream(1, .start)
        #expect(board.gain(1) < .unity)
        board.closeStream(1)
        #expect(board.gain(1) == .unity)
    }
}

@Suite("R18 stream-transport")
struct R18StreamTransport {
    @Test("starting plays the session; starting what plays asks nothing")
    func start() throws {
        var board = PolicyHarness()
        try board.openStream(1, .playback, .music, .playback)
        let started = board.stream(1, .start)
        #expect(started.value == .play(SessionID(101)) && started.rule == .r18)
        #expect(board.isPlaying(101))
        #expect(board.stream(1, .start).value == nil)
    }

    @Test("pausing is the person's pause (R15), which a media key may undo (R11)")
    func pause() throws {
        var board = PolicyHarness()
        try board.openStream(1, .playback, .music, .playback)
        board.stream(1, .start)
        #expect(board.stream(1, .pause).value == .pause(SessionID(101)))
        #expect(board.policy.session(SessionID(101))?.state == .paused(.user))
        board.input(.mediaKey(.playPause))
        #expect(board.isPlaying(101))
    }

    @Test("stopping one direction of a call leaves the call playing while the other runs")
    func stopShared() throws {
        var board = PolicyHarness()
        try board.openStream(1, .playback, .music, .playAndRecord, process: 7)
        try board.openStream(2, .capture, .music, .playAndRecord, process: 7)
        board.stream(1, .start)
        board.stream(2, .start)
        #expect(board.stream(1, .stop).value == nil)
        #expect(board.isPlaying(101))
        #expect(board.stream(2, .stop).value == .stop(SessionID(101)))
        #expect(!board.isPlaying(101))
    }

    @Test("preparing changes nothing in the session, and the stream is no longer started")
    func prepare() throws {
        var board = PolicyHarness()
        try board.openStream(1, .playback, .music, .playback)
        board.stream(1, .start)
        #expect(board.stream(1, .prepare).value == nil)
        #expect(board.streams.stream(StreamID(1))?.started == false)
        #expect(board.isPlaying(101))
        #expect(board.streamView(1)?.state.value == .prepared)
    }

    @Test("a start under a transient interruption is refused by the policy and the stream is held (M4)")
    func startHeldByRing() throws {
        var board = PolicyHarness()
        board.activate(9, .ringer, .soloAmbient)
        board.play(9)
        try board.openStream(1, .playback, .music, .playback)
        board.stream(1, .start)
        #expect(!board.isPlaying(101))
        #expect(board.lastCommands.contains { if case .reject = $0 { true } else { false } })
        #expect(board.streamView(1)?.state.value == .held)
    }
}

@Suite("R19 stream-state")
struct R19StreamState {
    @Test("running while the session plays and the stream is started; prepared before the start")
    func runningAndPrepared() throws {
        var board = PolicyHarness()
        try board.openStream(1, .playback, .music, .playback)
        #expect(board.streamView(1)?.state.value == .prepared)
        board.stream(1, .start)
        let view = try #require(board.streamView(1))
        #expect(view.state.value == .running && view.moves && view.state.rule == .r19)
    }

    @Test("held while interrupted (R6) and released when the interruption ends resumably (R9)")
    func heldWhileInterrupted() throws {
        var board = PolicyHarness()
        try board.openStream(1, .playback, .music, .playback)
        board.stream(1, .start)
        board.activate(9, .ringer, .soloAmbient, client: 90)
        board.play(9)
        let held = try #require(board.streamView(1))
        #expect(held.state.value == .held && !held.moves)
        #expect(held.state.reason.contains("interrupted"))
        board.deactivate(9, notifyOthers: true)
        #expect(board.streamView(1)?.state.value == .running)
    }

    @Test("held after an unplug (R5), and not released by the re-plug")
    func heldAfterUnplug() throws {
        var board = PolicyHarness()
        board.input(.headphones(.plugged, source: .alsaControl))
        try board.openStream(1, .playback, .music, .playback)
        board.stream(1, .start)
        board.input(.headphones(.unplugged, source: .alsaControl))
        #expect(board.streamView(1)?.state.value == .held)
        board.input(.headphones(.plugged, source: .alsaControl))
        #expect(board.streamView(1)?.state.value == .held)
    }

    @Test("paused when the person pauses, by the application or a media key (R15, R11)")
    func pausedByPerson() throws {
        var board = PolicyHarness()
        try board.openStream(1, .playback, .music, .playback)
        board.stream(1, .start)
        board.input(.mediaKey(.pause))
        #expect(board.streamView(1)?.state.value == .paused)
        board.input(.mediaKey(.play))
        #expect(board.streamView(1)?.state.value == .running)
    }

    @Test("closed once its session is gone", arguments: [true, false])
    func closedWhenGone(notify: Bool) throws {
        var board = PolicyHarness()
        board.activate(5, .music, .playback, client: 50)
        try board.openStream(1, .playback, .music, .playback, session: 5, sessionOwner: 1000)
        board.deactivate(5, notifyOthers: notify)
        #expect(board.streamView(1)?.state.value == .closed)
    }

    @Test(
        "the switch silences ambient and soloAmbient streams, which keep moving (R1)",
        // Every category that plays (a closure here crashes Swift 6.0.3's macro expansion: the arm64 build's).
        arguments: [HushCore.Category.ambient, .soloAmbient, .playback]
    )
    func silenced(category: HushCore.Category) throws {
        var board = PolicyHarness()
        board.input(.silenceSwitch(.silent))
        try board.openStream(1, .playback, .effect, category, [.mixWithOthers])
        board.stream(1, .start)
        let view = try #require(board.streamView(1))
        #expect(view.silenced.value == category.isSilencedBySwitch)
        #expect(view.moves, "a silenced stream is consumed at the real rate, so it ends on time")
        board.input(.silenceSwitch(.ring))
        #expect(board.streamView(1)?.silenced.value == false)
    }
}

@Suite("R20 microphone-gate")
struct R20MicrophoneGate {
    @Test("a started recorder whose session plays hears the microphone; before its start, silence")
    func hears() throws {
        var board = PolicyHarness()
        try board.openStream(1, .capture, .music, .record)
        #expect(board.streamView(1)?.hearsMicrophone == false)
        board.stream(1, .start)
        let view = try #require(board.streamView(1))
        #expect(view.hearsMicrophone && view.microphone?.rule == .r20)
    }

    @Test("with no microphone, silence")
    func noMicrophone() throws {
        var board = PolicyHarness()
        try board.openStream(1, .capture, .music, .record)
        board.stream(1, .start)
        #expect(board.streamView(1, microphonePresent: false)?.hearsMicrophone == false)
    }

    @Test("a playback stream has no microphone")
    func playbackHasNone() throws {
        var board = PolicyHarness()
        try board.openStream(1, .playback, .music, .playback)
        board.stream(1, .start)
        #expect(board.streamView(1)?.microphone == nil)
    }

    @Test(
        "after an interruption the microphone stays off until the application starts the stream again (R9)",
        arguments: [HushCore.Category.record, .playAndRecord]
    )
    func neverBehindTheBack(category: HushCore.Category) throws {
        var board = PolicyHarness()
        try board.openStream(1, .capture, .music, category)
        board.stream(1, .start)
        #expect(board.streamView(1)?.hearsMicrophone == true)
        // A ringtone: it interrupts a recorder and a call alike, resumably (R8), and neither resumes by itself.
        board.activate(9, .ringer, .soloAmbient, client: 90)
        board.play(9)
        #expect(board.streamView(1)?.hearsMicrophone == false, "interrupted: silence")
        board.deactivate(9, notifyOthers: true)
        #expect(board.streamView(1)?.hearsMicrophone == false, "the interruption ended; the person did not restart")
        board.stream(1, .prepare)
        board.stream(1, .start)
        #expect(board.streamView(1)?.hearsMicrophone == true)
    }

    @Test("the call's capture hears the microphone while the call plays, whichever direction started it")
    func callCapture() throws {
        var board = PolicyHarness()
        try board.openStream(1, .playback, .music, .playAndRecord, process: 7)
        try board.openStream(2, .capture, .music, .playAndRecord, process: 7)
        board.stream(1, .start)
        #expect(board.streamView(2)?.hearsMicrophone == false, "the capture is not started")
        board.stream(2, .start)
        #expect(board.streamView(2)?.hearsMicrophone == true)
    }
}

@Suite("R23 late-application")
struct R23LateApplication {
    @Test("a running playback stream is judged; prepared, paused and held ones are not")
    func playback() throws {
        var board = PolicyHarness()
        try board.openStream(1, .playback, .music, .playback)
        #expect(board.streamView(1)?.judged.value == false, "prepared: nothing moves")
        board.stream(1, .start)
        let running = try #require(board.streamView(1))
        #expect(running.judged.value && running.judged.rule == .r23)
        board.stream(1, .pause)
        #expect(board.streamView(1)?.judged.value == false, "paused by the application")
        board.stream(1, .resume)
        #expect(board.streamView(1)?.judged.value == true)
        board.activate(9, .ringer, .soloAmbient, client: 90)
        board.play(9)
        let held = try #require(board.streamView(1))
        #expect(held.state.value == .held && !held.judged.value, "an interruption is not the application's lateness")
        board.deactivate(9, notifyOthers: true)
        #expect(board.streamView(1)?.judged.value == true)
        board.stream(1, .prepare)
        #expect(board.streamView(1)?.judged.value == false, "prepared again (after an xrun): not judged until started")
    }

    @Test("a silenced stream is consumed at the real rate (R1): judged")
    func silenced() throws {
        var board = PolicyHarness()
        board.input(.silenceSwitch(.silent))
        try board.openStream(1, .playback, .effect, .ambient, [.mixWithOthers])
        board.stream(1, .start)
        let view = try #require(board.streamView(1))
        #expect(view.silenced.value && view.judged.value && view.judged.rule == .r23)
    }

    @Test("an unplug holds playback (R5): not judged")
    func unplug() throws {
        var board = PolicyHarness()
        board.input(.headphones(.plugged, source: .alsaControl))
        try board.openStream(1, .playback, .music, .playback)
        board.stream(1, .start)
        #expect(board.streamView(1)?.judged.value == true)
        board.input(.headphones(.unplugged, source: .alsaControl))
        #expect(board.streamView(1)?.judged.value == false)
    }

    @Test("a started capture stream is judged, held too (it still receives silence at the real rate); paused is not")
    func capture() throws {
        var board = PolicyHarness()
        try board.openStream(1, .capture, .music, .record)
        #expect(board.streamView(1)?.judged.value == false)
        board.stream(1, .start)
        #expect(board.streamView(1)?.judged.value == true)
        #expect(board.streamView(1)?.receivesFrames == true)
        board.stream(1, .pause)
        #expect(board.streamView(1)?.judged.value == false, "paused: nothing moves, as on a paused device")
        #expect(board.streamView(1)?.receivesFrames == false, "a paused capture stream is handed no frames (R19)")
        board.stream(1, .resume)
        #expect(board.streamView(1)?.judged.value == true)
        board.activate(9, .ringer, .soloAmbient, client: 90)
        board.play(9)
        let held = try #require(board.streamView(1))
        #expect(held.state.value == .held && held.judged.value && held.judged.rule == .r23)
        #expect(!held.hearsMicrophone && held.receivesFrames, "held, it receives silence at the real rate (R20)")
    }

    @Test("a closed stream is not judged")
    func closed() throws {
        var board = PolicyHarness()
        board.activate(5, .music, .playback, client: 50)
        try board.openStream(1, .playback, .music, .playback, session: 5, sessionOwner: 1000)
        board.stream(1, .start)
        board.deactivate(5, notifyOthers: true)
        let view = try #require(board.streamView(1))
        #expect(view.state.value == .closed && !view.judged.value)
    }
}
