import HushCore

/// How many frames hushd mixes per wake-up (R24 output-period): the longest period that every active session and
/// every open stream can live with, between the board profile's `period_frames` (the floor: what the board
/// sustains, and the latency of a sound that must be heard at once) and `[output] max_period_frames` (the
/// ceiling).
///
/// A wake-up costs the same whatever it mixes, so a music player alone — whose application gave its stream a
/// buffer of a tenth of a second or more — is mixed in long periods, and hushd sleeps between them. What must
/// sound at once, or is timed to the floor, brings the short period back; because the ruling changes when a
/// session is activated or a stream opens, before any of its frames is mixed, its first frame is already mixed
/// in a short period and nothing of a small buffer is consumed in one long gulp.
///
/// Pure: the daemon hands it the sessions and streams and carries out the period it returns.
///
/// ```swift
/// let ruling = OutputPeriod.ruling(floor: 64, ceiling: 2048, sessions: policy.sessions, streams: needs)
/// // [R24 output-period] 2048 — nothing asks for a shorter period: …
/// ```
public enum OutputPeriod {
    /// What hushd knows of an open stream of the `hush` device that bears on the period.
    public struct Stream: Hashable, Sendable {
        public var id: StreamID
        /// As status and the log name it: the program's name, or its process.
        public var name: String
        public var direction: StreamDirection
        /// The application's buffer, in frames at the mixer's rate.
        public var bufferFrames: Int
        /// The application's own period, when it chose one, in frames at the mixer's rate.
        public var periodFrames: Int?

        public init(id: StreamID, name: String, direction: StreamDirection, bufferFrames: Int, periodFrames: Int? = nil)
        {
            self.id = id
            self.name = name
            self.direction = direction
            self.bufferFrames = bufferFrames
            self.periodFrames = periodFrames
        }
    }

    /// The longest period a stream's application can live with: a quarter of its buffer, and no more than its own
    /// period. It refills the buffer a period of its own at a time (at most half of it, as ALSA programs do), and
    /// what is left must still cover hushd's period and the time the application takes to wake; and room must
    /// appear in its ring no coarser than its own period, as on a card with that period — a program that finds
    /// more room than its period after a write does not look at the device again before it next waits, and so
    /// would miss an underrun it is owed (R23).
    public static func longest(for stream: Stream) -> Int {
        min(stream.bufferFrames / 4, stream.periodFrames ?? Int.max)
    }

    /// The period for `sessions` (every active session: one declares its need from when it is activated, before it
    /// plays) and `streams` (every open stream), as `floor` × 2ⁿ up to `ceiling`. `sharedRoute`: the route in use
    /// when it is not the speaker and plays on the speaker's own device (a codec whose jack switches amplifiers):
    /// what is queued there reaches the speaker when the headphones come out, so the queue stays short (R5).
    public static func ruling(
        floor: Int,
        ceiling: Int,
        sessions: [SessionRecord],
        streams: [Stream],
        sharedRoute: Route? = nil
    ) -> Ruling<Int> {
        let floor = max(1, floor)
        let ceiling = max(floor, ceiling)
        if ceiling == floor {
            return Ruling(
                floor,
                rule: .r24,
                reason: "the period is fixed: [output] max_period_frames is the profile's period_frames"
            )
        }
        if let sharedRoute {
            return Ruling(
                floor,
                rule: .r24,
                reason: "\(sharedRoute) plays on the speaker's device: what is queued when they are unplugged would "
                    + "reach the speaker, so the queue stays short (R5)"
            )
        }
        for session in sessions {
            if let why = shortNeed(session.configuration) {
                return Ruling(floor, rule: .r24, reason: "\(session.id) (\(session.configuration)) \(why)")
            }
        }
        if let capture = streams.first(where: { $0.direction == .capture }) {
            return Ruling(
                floor,
                rule: .r24,
                reason: "\(capture.id) of \(capture.name) records: the microphone's path is timed to the short period"
            )
        }
        var period = ceiling
        var limiting: Stream?
        for stream in streams {
            let fits = fitting(longest(for: stream), floor: floor, ceiling: ceiling)
            if fits < period {
                period = fits
                limiting = stream
            }
        }
        if let limiting {
            let quarter = limiting.bufferFrames / 4
            let why =
                limiting.periodFrames.map { $0 < quarter } == true
                ? "has \(limiting.periodFrames!)-frame periods: hushd takes no more at once"
                : "has a buffer of \(limiting.bufferFrames) frames: hushd takes at most a quarter of it at once"
            return Ruling(period, rule: .r24, reason: "\(limiting.id) of \(limiting.name) \(why)")
        }
        let what = sessions.isEmpty && streams.isEmpty ? "nothing plays" : "nothing asks for a shorter period"
        return Ruling(
            ceiling,
            rule: .r24,
            reason: "\(what): the longest period, so that hushd wakes as seldom as it can"
        )
    }

    /// Why a session needs the floor, or nil when it can be mixed in long periods.
    static func shortNeed(_ configuration: SessionConfiguration) -> String? {
        if configuration.category.records {
            return "records: a call or a recording is timed to the short period (echo reference, microphone)"
        }
        switch configuration.bus {
        case .effect: return "plays effects: they must sound at once"
        case .ringer: return "rings: a ringtone or an alarm must start at once"
        case .music: break
        }
        if configuration.options.contains(.duckOthers) {
            return "ducks others: a prompt must be heard, and the others lowered, at once"
        }
        return nil
    }

    /// The largest `floor` × 2ⁿ no longer than `limit` and `ceiling`; the floor when even that is longer.
    static func fitting(_ limit: Int, floor: Int, ceiling: Int) -> Int {
        var period = floor
        while period * 2 <= min(limit, ceiling) { period *= 2 }
        return period
    }
}
