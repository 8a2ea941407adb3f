import HushCore
import HushPolicy
import HushTesting
import Testing

/// Seeded random event sequences; after every event the engine's state must satisfy the policy's invariants.
@Suite("Invariants over random event sequences")
struct InvariantTests {
    static let seeds: [UInt64] = [1, 2, 3, 42, 2026, 0xDEAD_BEEF]
    static let eventsPerSeed = 4000
    static let lineout = Route("lineout")

    static func configuration() -> PolicyConfiguration {
        var configuration = PolicyConfiguration()
        configuration.routes = [.speaker, .headphones, lineout]
        return configuration
    }

    /// A random but plausible event: a small pool of ids and clients so sessions meet often.
    static func randomEvent(_ rng: inout SeededGenerator) -> PolicyEvent {
        let session = SessionID(UInt64.random(in: 1...8, using: &rng))
        switch Int.random(in: 0..<100, using: &rng) {
        case 0..<6: return .input(.silenceSwitch(Bool.random(using: &rng) ? .silent : .ring))
        case 6..<16:
            return .input(
                .volumeButton(
                    VolumeButton.allCases.randomElement(using: &rng)!,
                    Bool.random(using: &rng) ? .press : .release
                )
            )
        case 16..<21: return .input(.mediaKey(MediaKey.allCases.randomElement(using: &rng)!))
        case 21..<29:
            return .input(
                .headphones(
                    Bool.random(using: &rng) ? .plugged : .unplugged,
                    source: JackSource.allCases.randomElement(using: &rng)!
                )
            )
        case 29..<45:
            var options: CategoryOptions = []
            if Int.random(in: 0..<3, using: &rng) == 0 { options.insert(.mixWithOthers) }
            if Int.random(in: 0..<4, using: &rng) == 0 { options.insert(.duckOthers) }
            let configuration = SessionConfiguration(
                bus: Bus.allCases.randomElement(using: &rng)!,
                category: HushCore.Category.allCases.randomElement(using: &rng)!,
                options: options,
                transient: Int.random(in: 0..<5, using: &rng) == 0
            )
            return .activate(session, client: ClientID(UInt64.random(in: 1...4, using: &rng)), configuration)
        case 45..<53: return .deactivate(session, notifyOthers: Bool.random(using: &rng))
        case 53..<68: return .play(session)
        case 68..<74: return .pause(session)
        case 74..<78: return .stop(session)
        case 78..<80: return .finished(session)
        case 80..<83: return .clientGone(ClientID(UInt64.random(in: 1...4, using: &rng)))
        case 83..<88:
            return .setVolume(
                Bool.random(using: &rng) ? .system : .ringer,
                VolumeStep(clamping: Int.random(in: 0...16, using: &rng))
            )
        case 88..<92:
            return .setRouteOverride([nil, .speaker, .headphones, lineout, Route("hdmi")].randomElement(using: &rng)!)
        default: return .timePassed
        }
    }

    /// Runs one seeded sequence, checking the invariants after every event; returns every decision made.
    @discardableResult
    static func run(seed: UInt64, count: Int) -> [Decision] {
        var rng = SeededGenerator(seed: seed)
        var board = PolicyHarness(configuration: configuration())
        var all = board.last
        var pausedByUnplug: Set<SessionID> = []
        let explicitResume: Set<Rule> = [.r15, .r11, .m5]
        for step in 0..<count {
            let event = randomEvent(&rng)
            let decisions = board.send(event, after: .milliseconds(Int64.random(in: 0...300, using: &rng)))
            all += decisions
            let context = Comment(rawValue: "seed \(seed), event \(step): \(event)")

            // Every command carries a rule and a reason.
            #expect(decisions.allSatisfy { !$0.reason.isEmpty }, context)

            // Volumes stay in range, and the engine has the gains the curve gives them.
            let policy = board.policy
            let curve = policy.configuration.curve
            #expect(board.engine.busGains[.music] == curve.gain(at: policy.systemVolume), context)
            #expect(board.engine.busGains[.effect] == curve.gain(at: policy.systemVolume), context)
            #expect(board.engine.busGains[.ringer] == curve.gain(at: policy.ringerVolume), context)
            #expect(board.engine.busGains.values.allSatisfy { $0.linear >= 0 && $0.linear <= 1 }, context)

            // Clients' view of interruptions matches the policy's, and nothing interrupted plays.
            let interrupted = Set(policy.sessions.filter(\.isInterrupted).map(\.id))
            #expect(board.engine.interrupted == interrupted, context)
            #expect(board.engine.playing.isDisjoint(with: interrupted), context)
            #expect(board.engine.playing == Set(policy.sessions.filter(\.isPlaying).map(\.id)), context)

            // Every session's gain is exactly what silence and ducking make it (so silenced sessions are inaudible,
            // and every duck is undone once its ducker is gone).
            let silent = policy.silenceSwitch == .silent
            let duckers = policy.sessions.filter {
                $0.configuration.options.contains(.duckOthers)
                    && !(silent && $0.configuration.category.isSilencedBySwitch)
            }
            for session in policy.sessions {
                let silenced = silent && session.configuration.category.isSilencedBySwitch
                let ducked =
                    !session.configuration.options.contains(.duckOthers)
                    && duckers.contains { $0.id != session.id }
                let expected = silenced ? Gain.silent : ducked ? policy.configuration.duckDepth : .unity
                #expect(board.engine.gain(of: session.id) == expected, "\(session.id): \(context)")
            }

            // The alert light is lit exactly while a ring the switch mutes is playing (R16).
            let mutedRing = policy.sessions.contains {
                $0.configuration.bus == .ringer && $0.isPlaying && !$0.isInterrupted && silent
                    && $0.configuration.category.isSilencedBySwitch
            }
            #expect(board.engine.alertLight == mutedRing, context)

            // After an unplug no playback session plays until something resumes it explicitly.
            if case .input(.headphones(.unplugged, _)) = event, decisions.contains(where: { $0.rule == .r5 }) {
                let playback = policy.sessions.filter { $0.configuration.category == .playback }
                #expect(playback.allSatisfy { !board.engine.playing.contains($0.id) }, context)
                pausedByUnplug.formUnion(playback.map(\.id))
            }
            for decision in decisions {
                guard case .resume(let id) = decision.command, pausedByUnplug.contains(id) else { continue }
                #expect(explicitResume.contains(decision.rule), "\(decision): \(context)")
                pausedByUnplug.remove(id)
            }
            pausedByUnplug.formIntersection(policy.sessions.map(\.id))
        }
        return all
    }

    @Test("invariants hold after every event", arguments: seeds)
    func invariants(seed: UInt64) {
        let decisions = Self.run(seed: seed, count: Self.eventsPerSeed)
        // The sequences must actually reach the interesting rules, or the test proves little.
        let reached = Set(decisions.map(\.rule))
        for rule in [Rule.r1, .r3, .r4, .r5, .r6, .r7, .r8, .r9, .r10, .r11, .r13, .r14, .r15, .r16] {
            #expect(reached.contains(rule), "seed \(seed) never exercised \(rule)")
        }
    }

    @Test("the same events give the same decisions")
    func deterministic() {
        #expect(Self.run(seed: 7, count: 1500) == Self.run(seed: 7, count: 1500))
    }
}
