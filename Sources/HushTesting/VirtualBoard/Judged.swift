// How the check programs judge a take (hush-vboard-streams, hush-vboard-voice): what a take found, what disturbed
// it, and the rule that takes it again (at most `takes` times) only when a stall of the emulated machine could have
// caused everything it found.

/// A take's outcome: what to print, what is wrong, and what disturbed it.
package struct Judged {
    package var report: [String] = []
    package var problems: [String] = []
    /// Whether every problem is one a stall of the emulated machine can cause (a level or a gap in what should
    /// sound, a length): only then does a disturbance excuse the take.
    package var onlyStallProblems = true
    package var disturbances: [String] = []

    package init(disturbances: [String] = []) { self.disturbances = disturbances }

    /// Notes `message` as a problem unless `condition` holds. `stall`: a stall of the machine could cause it (a
    /// dip in a level, a gap, a late end); it cannot make a silence sound, a light stay lit or a status lie.
    package mutating func expect(_ condition: Bool, _ message: @autoclosure () -> String, stall: Bool = false) {
        guard !condition else { return }
        problems.append(message())
        if !stall { onlyStallProblems = false }
    }
}

/// Runs `take` (which sets up what it needs each time) at most `takes` times, prints the last take's report and
/// fails with its first problem. A take is taken again only when its problems are all ones a stall can cause and
/// it was disturbed: a stall can spoil a level or a length, never make a wrong one right.
package func judge(_ what: String, _ take: () throws -> Judged) throws {
    var reasons: [String] = []
    for attempt in 1...takes {
        let judged = try take()
        let excused = !judged.problems.isEmpty && judged.onlyStallProblems && !judged.disturbances.isEmpty
        if !excused || attempt == takes {
            for line in judged.report { print(line) }
            guard let problem = judged.problems.first else { return }
            if excused {
                reasons.append(judged.disturbances.joined(separator: "; "))
                throw CheckFailure(
                    "\(what): none of \(takes) takes could be judged (\(reasons.joined(separator: " | "))); the last "
                        + "one: \(judged.problems.joined(separator: "; "))"
                )
            }
            throw CheckFailure(problem)
        }
        let reason = judged.disturbances.joined(separator: "; ")
        reasons.append(reason)
        print(
            "  re-measuring \(what) (take \(attempt) of \(takes) not judged: \(reason); it found: \(judged.problems))"
        )
        // Stalls come in bursts (a host compiling, the translation cache refilling): let one pass.
        sleep(.seconds(Int64(attempt)))
    }
}
