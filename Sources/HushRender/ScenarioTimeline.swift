import FoundationEssentials
import HushConsole
import HushCore
import HushPolicy

#if canImport(Glibc)
import Glibc
#endif

/// What `hush-render --plot` draws, recorded while a scenario renders: each bus's level as the mixer reported it,
/// the silence switch, headphones and route after every change, and every event with the rules of the decisions
/// it caused.
///
/// The levels are the engine's own peaks telemetry — the loudest sample a bus's voices played in each interval,
/// after every gain and fade, before the limiter — not what the policy meant to happen.
public struct ScenarioTimeline: Sendable {
    /// How often the renderer asks the engine for peaks; reports land on period boundaries, so an interval is
    /// this rounded up to whole periods (10.67 ms with 64-frame periods at 48 kHz).
    public static let peakInterval: Duration = .milliseconds(10)

    /// The loudest sample of each bus (linear, 1 = full scale) over frames `start..<end`.
    public struct Levels: Sendable, Hashable {
        public var start: Int64
        public var end: Int64
        public var effect: Float
        public var music: Float
        public var ringer: Float

        public subscript(bus: Bus) -> Float {
            switch bus {
            case .effect: effect
            case .music: music
            case .ringer: ringer
            }
        }
    }

    /// The switch, the jack and the route from `time` on.
    public struct State: Sendable, Hashable {
        public var time: Instant
        public var silenceSwitch: SilenceSwitchPosition
        public var jack: JackState
        public var route: Route
    }

    /// An event — a scenario line, or something the engine reported (a sound that ended) — and the rules of the
    /// decisions it caused, in order.
    public struct Mark: Sendable, Hashable {
        public var time: Instant
        /// The scenario line, or nil for an event that came from the engine.
        public var line: Int?
        /// The event in words (the policy's description of it).
        public var event: String
        public var rules: [Rule]
    }

    public private(set) var levels: [Levels] = []
    public private(set) var states: [State] = []
    public private(set) var marks: [Mark] = []
    /// Where the render stopped.
    public private(set) var end: Instant = .zero
    public private(set) var sampleRate = 48000
    public private(set) var periodFrames = 64
    /// Whether a scenario line is being carried out: its decisions belong to its mark.
    private var inStep = false

    public init() {}

    public init(end: Instant, sampleRate: Int, periodFrames: Int) {
        self.end = end
        self.sampleRate = sampleRate
        self.periodFrames = periodFrames
    }

    /// `frame` in seconds.
    public func seconds(_ frame: Int64) -> Double { Double(frame) / Double(sampleRate) }

    /// Records a peaks report whose interval ended after `frames` frames (it began where the previous one ended).
    mutating func record(_ peaks: [Bus: Float], until frames: Int64) {
        let start = levels.last?.end ?? 0
        guard frames > start else { return }
        levels.append(
            Levels(
                start: start,
                end: frames,
                effect: peaks[.effect] ?? 0,
                music: peaks[.music] ?? 0,
                ringer: peaks[.ringer] ?? 0
            )
        )
    }

    /// Notes the switch, jack and route at `time` if they changed.
    mutating func note(_ policy: AudioPolicy, at time: Instant) {
        let state = State(time: time, silenceSwitch: policy.silenceSwitch, jack: policy.jack, route: policy.route)
        if let last = states.last,
            (last.silenceSwitch, last.jack, last.route) == (state.silenceSwitch, state.jack, state.route)
        {
            return
        }
        if let last = states.last, last.time == time {
            states[states.count - 1] = state
        } else {
            states.append(state)
        }
    }

    /// A scenario line begins: it gets a mark, and the decisions until ``end(_:state:)`` are its.
    mutating func begin(_ step: Scenario.Step, at time: Instant, state policy: AudioPolicy) {
        marks.append(Mark(time: time, line: step.line, event: Self.describe(step.request, policy), rules: []))
        inStep = true
    }

    /// A scenario line has been carried out.
    mutating func end(_ step: Scenario.Step, state policy: AudioPolicy) {
        inStep = false
        note(policy, at: step.time)
    }

    /// Records a batch of decisions: a scenario line's go to its mark; held-button repeats to the line that
    /// pressed the button; start-up's to none (they set the initial volumes, not a reaction to anything); the rest
    /// (a sound that ended) get a mark of their own.
    mutating func record(_ rules: [Rule], cause: String, at time: Instant, state policy: AudioPolicy) {
        defer { note(policy, at: time) }
        if cause == "start-up" { return }
        if !inStep && cause != PolicyEvent.timePassed.description {
            marks.append(Mark(time: time, line: nil, event: cause, rules: []))
        }
        guard !marks.isEmpty else { return }
        marks[marks.count - 1].rules.append(contentsOf: rules)
    }

    private static func describe(_ request: ConsoleRequest, _ policy: AudioPolicy) -> String {
        switch request {
        case .tap(let button): "tap \(button)"
        case .release(nil): "release"
        default:
            // A scenario's other commands are one policy event each (Scenario.parse refuses the rest).
            request.policyEvents(policy).flatMap(\.first).map(\.description) ?? ""
        }
    }
}
