import HushCore
import HushPolicy
import HushTesting
import Testing

// The microphone's rules: R21 (the privacy switch) and R22 (what each capture gets, by its session's mode), with a
// property test over random sequences of switch flips, streams and interruptions.

@Suite("R21 microphone-privacy")
struct R21MicrophonePrivacy {
    /// A call (playback and capture of one process) and a recorder, all started and hearing the microphone.
    static func callAndRecorder() throws -> PolicyHarness {
        var board = PolicyHarness()
        try board.openStream(1, .playback, .music, .playAndRecord, mode: .voiceChat, process: 7, name: "baresip")
        try board.openStream(2, .capture, .music, .playAndRecord, mode: .voiceChat, process: 7, name: "baresip")
        try board.openStream(3, .capture, .music, .record, [.mixWithOthers], process: 8, name: "arecord")
        for stream: UInt64 in [1, 2, 3] { board.stream(stream, .start) }
        return board
    }

    @Test("on: every recording session is interrupted for microphoneMuted, receives silence, and plays on")
    func on() throws {
        var board = try Self.callAndRecorder()
        #expect(board.streamView(2)?.hearsMicrophone == true && board.streamView(3)?.hearsMicrophone == true)
        let decisions = board.input(.microphoneSwitch(.muted, source: .gpio))
        #expect(decisions.first?.command == .muteMicrophone(true) && decisions.first?.rule == .r21)
        let interrupted = decisions.compactMap { decision -> SessionID? in
            guard case .notify(.interruptionBegan(let id, .microphoneMuted)) = decision.command else { return nil }
            #expect(decision.rule == .r21)
            return id
        }
        #expect(Set(interrupted) == [SessionID(101), SessionID(103)])
        for stream: UInt64 in [2, 3] {
            let view = try #require(board.streamView(stream))
            #expect(!view.hearsMicrophone && view.microphone?.rule == .r21, "\(view)")
            #expect(view.state.value == .running, "silence at the real rate: the call's clock goes on")
        }
        #expect(board.streamView(1)?.state.value == .running, "the far end is still heard")
        #expect(board.policy.session(SessionID(101))?.isPlaying == true)
        #expect(board.engine.microphoneMuted)
    }

    @Test("off: the interruption ends, not resumable, and the microphone waits for a start")
    func off() throws {
        var board = try Self.callAndRecorder()
        board.input(.microphoneSwitch(.muted, source: .gpio))
        let decisions = board.input(.microphoneSwitch(.live, source: .gpio))
        #expect(decisions.first?.command == .muteMicrophone(false))
        let ended = decisions.filter {
            if case .notify(.interruptionEnded(_, shouldResume: false)) = $0.command { $0.rule == .r21 } else { false }
        }
        #expect(ended.count == 2)
        #expect(board.streamView(2)?.hearsMicrophone == false && board.streamView(3)?.hearsMicrophone == false)
        #expect(board.engine.microphoneInterrupted.isEmpty && !board.engine.microphoneMuted)
        // The call's application stops and starts its capture stream: that is the start the microphone waits for.
        board.stream(2, .stop)
        #expect(board.policy.session(SessionID(101))?.isPlaying == true, "its playback stream still runs")
        board.stream(2, .prepare)
        let start = board.stream(2, .start)
        #expect(start.value == .play(SessionID(101)) && start.rule == .r18)
        #expect(board.streamView(2)?.hearsMicrophone == true)
        #expect(board.streamView(3)?.hearsMicrophone == false, "the recorder was not started again")
    }

    @Test("nothing a client asks opens a microphone the switch closed")
    func noOverride() throws {
        var board = try Self.callAndRecorder()
        board.input(.microphoneSwitch(.muted, source: .gpio))
        board.play(101)
        board.stream(3, .stop)
        board.stream(3, .prepare)
        board.stream(3, .start)
        board.send(.pause(SessionID(103)))
        board.send(.play(SessionID(103)))
        board.input(.mediaKey(.play))
        try board.openStream(4, .capture, .music, .record, mode: .measurement, process: 9)
        board.stream(4, .start)
        for stream: UInt64 in [2, 3, 4] {
            #expect(board.streamView(stream)?.hearsMicrophone == false, "stream \(stream)")
        }
        let started = try #require(board.policy.session(SessionID(104)))
        #expect(started.microphoneBlock == .privacySwitch, "a session activated while muted is blocked too")
    }

    @Test("the person's play — the console's, or a media key — is a start")
    func personStarts() throws {
        var board = try Self.callAndRecorder()
        board.input(.microphoneSwitch(.muted, source: .gpio))
        board.input(.microphoneSwitch(.live, source: .gpio))
        board.play(103)
        #expect(board.streamView(3)?.hearsMicrophone == true)
        #expect(
            board.last.contains { $0.rule == .r21 && $0.command == .note("session 103 may hear the microphone again") }
        )
        board.input(.mediaKey(.playPause))
        #expect(board.streamView(2)?.hearsMicrophone == true)
        #expect(board.policy.session(SessionID(101))?.isPlaying == true, "the key started the call's microphone")
    }

    @Test("a playback session is not interrupted, and a repeated report changes nothing")
    func playbackAndRepeats() throws {
        var board = PolicyHarness()
        board.activate(1, .music, .playback)
        board.play(1)
        let on = board.input(.microphoneSwitch(.muted, source: .gpio))
        #expect(!on.contains { if case .notify = $0.command { true } else { false } })
        #expect(board.isPlaying(1))
        let again = board.input(.microphoneSwitch(.muted, source: .gpio))
        #expect(again.map(\.command) == [.note("the board's microphone switch is already muted")])
    }

    @Test("the console mutes on its own, but never unmutes what the board's switch muted")
    func console() throws {
        var board = try Self.callAndRecorder()
        board.input(.microphoneSwitch(.muted, source: .evdev))
        let refused = board.input(.microphoneSwitch(.live, source: .console))
        #expect(board.engine.rejections.last?.code == .notPermitted && refused.first?.rule == .r21)
        #expect(board.policy.microphoneSwitch == .muted)
        board.input(.microphoneSwitch(.live, source: .evdev))
        #expect(board.policy.microphoneSwitch == .live)
        // The console's own mute: a repeated report of the board's (live) switch does not lift it; the console does.
        board.input(.microphoneSwitch(.muted, source: .console))
        #expect(board.policy.microphoneSwitch == .muted)
        board.input(.microphoneSwitch(.live, source: .evdev))
        #expect(board.policy.microphoneSwitch == .muted)
        board.input(.microphoneSwitch(.live, source: .console))
        #expect(board.policy.microphoneSwitch == .live && !board.engine.microphoneMuted)
    }
}

@Suite("R22 capture-mode")
struct R22CaptureMode {
    @Test("each capture stream gets its own session's mode: a measurement beside a call stays raw")
    func ownMode() throws {
        var board = PolicyHarness()
        try board.openStream(1, .capture, .music, .playAndRecord, mode: .voiceChat, process: 7)
        try board.openStream(2, .capture, .music, .record, [.mixWithOthers], mode: .measurement, process: 8)
        try board.openStream(3, .capture, .music, .record, [.mixWithOthers], process: 9)
        for stream: UInt64 in [1, 2, 3] { board.stream(stream, .start) }
        #expect(board.streamView(1)?.processing?.value == .voiceChat)
        #expect(board.streamView(2)?.processing?.value == .measurement)
        #expect(board.streamView(3)?.processing?.value == .default)
        #expect(board.streamView(2)?.processing?.rule == .r22)
        #expect([1, 2, 3].allSatisfy { board.streamView($0)?.hearsMicrophone == true }, "all three hear at once")
    }

    @Test("a stream that joins a session by its id gets the session's mode, and playback has none")
    func joined() throws {
        var board = PolicyHarness()
        board.activate(5, .music, .playAndRecord, mode: .voiceChat, client: 50)
        try board.openStream(1, .capture, .music, .record, session: 5, sessionOwner: 1000)
        try board.openStream(2, .playback, .music, .playback, process: 8)
        #expect(board.streamView(1)?.processing?.value == .voiceChat)
        #expect(board.streamView(2)?.processing == nil)
    }
}

/// Random sequences of switch flips, streams opened, started, stopped and closed, sessions played and interrupted:
/// after every step, no capture stream hears the microphone while the switch is on, and none hears it after the
/// switch went off unless it (or its session) was started since.
@Suite("R21 over random sequences")
struct MicrophonePrivacyProperty {
    static let seeds: [UInt64] = [7, 21, 2026, 0xC0FFEE]
    static let steps = 3000

    @Test("not one period of microphone while muted, and none behind the person's back", arguments: seeds)
    func property(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        var board = PolicyHarness()
        var open: Set<UInt64> = []
        var next: UInt64 = 1
        // Streams whose microphone the switch took, and that were not started since it went off.
        var waiting: Set<UInt64> = []
        var heard = 0
        let categories: [HushCore.Category] = [.record, .playAndRecord, .playback]
        for step in 0..<Self.steps {
            let roll = Int.random(in: 0..<100, using: &rng)
            let pick = open.sorted().randomElement(using: &rng)
            var started: Set<UInt64> = []
            let blockedBefore = Set(board.policy.sessions.filter { $0.microphoneBlock != nil }.map(\.id))
            switch roll {
            case 0..<8:
                let position: MicrophoneSwitchPosition = Bool.random(using: &rng) ? .muted : .live
                if position == .muted, board.policy.microphoneSwitch == .live {
                    waiting.formUnion(open.filter { board.streams.stream(StreamID($0))?.direction == .capture })
                }
                board.input(
                    .microphoneSwitch(position, source: MicrophoneSwitchSource.allCases.randomElement(using: &rng)!)
                )
            case 8..<28 where open.count < 12:
                let category = categories.randomElement(using: &rng)!
                let direction: StreamDirection =
                    category == .playback ? .playback : (Bool.random(using: &rng) ? .capture : .playback)
                let id = next
                next += 1
                let process = Int32.random(in: 1...4, using: &rng)
                if (try? board.openStream(
                    id,
                    direction,
                    .music,
                    category,
                    Bool.random(using: &rng) ? [.mixWithOthers] : [],
                    mode: SessionMode.allCases.randomElement(using: &rng)!,
                    process: process
                )) != nil {
                    open.insert(id)
                    if direction == .capture && board.policy.microphoneSwitch == .muted { waiting.insert(id) }
                }
            case 28..<50:
                guard let pick else { break }
                let action = StreamAction.allCases.randomElement(using: &rng)!
                board.stream(pick, action)
                if action == .start || action == .resume { started.insert(pick) }
            case 50..<56:
                guard let pick else { break }
                board.closeStream(pick)
                open.remove(pick)
                waiting.remove(pick)
            case 56..<64:
                board.activate(900, .ringer, .soloAmbient, transient: true, client: 900)
                board.play(900)
            case 64..<70:
                board.deactivate(900, notifyOthers: Bool.random(using: &rng))
            case 70..<80:
                guard let pick, let stream = board.streams.stream(StreamID(pick)) else { break }
                board.send(.play(stream.session))
                started.formUnion(open.filter { board.streams.stream(StreamID($0))?.session == stream.session })
            case 80..<84:
                guard let pick, let stream = board.streams.stream(StreamID(pick)) else { break }
                board.send(.pause(stream.session))
            case 84..<90:
                board.input(.mediaKey(MediaKey.allCases.randomElement(using: &rng)!))
            default:
                board.wait(.milliseconds(100))
            }
            // A start reaches the microphone only when the switch is off.
            if board.policy.microphoneSwitch == .live {
                // Sessions whose block a person's media key lifted count as started.
                let lifted = blockedBefore.filter { board.policy.session($0)?.microphoneBlock == nil }
                started.formUnion(
                    open.filter { id in lifted.contains { board.streams.stream(StreamID(id))?.session == $0 } }
                )
                waiting.subtract(started)
            }
            for id in open {
                guard let view = board.streamView(id), view.microphone != nil else { continue }
                let context = Comment(rawValue: "seed \(seed), step \(step): stream \(id): \(view)")
                if board.policy.microphoneSwitch == .muted {
                    #expect(!view.hearsMicrophone, context)
                } else if waiting.contains(id) {
                    #expect(!view.hearsMicrophone, "heard behind the person's back — \(context)")
                }
                if view.hearsMicrophone { heard += 1 }
            }
        }
        // The sequences are not vacuous: streams did hear the microphone between the switch's flips.
        #expect(heard > 100, "only \(heard) stream-steps heard the microphone")
    }
}
