import HushCore
import HushOutput
import HushProtocol

/// What the person at the serial console reads: decisions as they happen and a one-line status, in lines that
/// fit 80 columns on a dumb terminal (plain ASCII punctuation but for the reason's dash, no colours).
package enum MonitorText {
    /// "  12.345  headphones unplugged (reported by alsaControl)" then one line per decision:
    /// "          [R5 headphones-unplugged] pause session 3 — headphones unplugged: …".
    package static func lines(for batch: Daemon.DecisionBatch) -> [String] {
        let seconds = DecimalText.fixed(batch.time, places: 3)
        let time = String(repeating: " ", count: max(0, 9 - seconds.count)) + seconds
        var lines = ["\(time)  \(batch.cause)"]
        for decision in batch.decisions {
            lines.append(
                "           [\(decision.rule.rawValue) \(decision.rule.title)] \(decision.command) — \(decision.reason)"
            )
        }
        return lines
    }

    /// "ring | speaker | volume 8/16 | ringer 10/16 | 2 sessions, 1 playing | out ok": one line of at most 80
    /// columns. "buttons: ringer" appears while the volume buttons move the ringer (R3), not for the usual system
    /// volume. A line that would be longer drops the "/16"s, shortens words and the separators
    /// ("SILENT|speaker (ovr)|vol 16|ringer 10|btn: ringer|12/12 playing|out ok"), and is cut as a last resort.
    package static func statusLine(of daemon: Daemon) -> String {
        let policy = daemon.audio.policy
        let playing = policy.sessions.filter(\.isPlaying).count
        let output = daemon.outputCounters
        var out = output.open ? (output.idle ? "out idle" : "out ok") : "OUT LOST"
        // The route's own PCM would not open: `status` says which and why.
        if daemon.pendingRoute != nil { out += ", ROUTE PCM WAITING" }
        if output.underruns > 0 { out += ", \(output.underruns) xruns" }
        func line(short: Bool) -> String {
            let route = "\(policy.route)" + (policy.routeOverride == nil ? "" : short ? " (ovr)" : " (override)")
            let steps = short ? "" : "/\(VolumeStep.count)"
            var parts = [
                policy.silenceSwitch == .silent ? "SILENT" : "ring", route,
                "\(short ? "vol" : "volume") \(policy.systemVolume.rawValue)\(steps)",
                "ringer \(policy.ringerVolume.rawValue)\(steps)",
            ]
            if policy.buttonTarget == .ringer { parts.append(short ? "btn: ringer" : "buttons: ringer") }
            if policy.microphoneSwitch == .muted { parts.append("MIC MUTED") }
            let count = policy.sessions.count
            parts.append(
                short ? "\(playing)/\(count) playing" : "\(count) session\(count == 1 ? "" : "s"), \(playing) playing"
            )
            parts.append(out)
            return parts.joined(separator: short ? "|" : " | ")
        }
        let full = line(short: false)
        if full.count <= 80 { return full }
        let short = line(short: true)
        return ControlText.fit(short)
    }

    /// The full status, for the console's `status` command: at most 24 lines of at most 80 columns.
    package static func status(of daemon: Daemon, version: String) -> [String] {
        let policy = daemon.audio.policy
        let curve = policy.configuration.curve
        let output = daemon.outputCounters
        var lines = [
            "hushd \(version), up \(Int(daemon.elapsed(daemon.clock.now()))) s",
            "silence switch  \(policy.silenceSwitch)",
            "headphones      \(policy.jack)",
            "route           \(policy.route)" + (policy.routeOverride == nil ? " (automatic)" : " (override)"),
            "system volume   \(policy.systemVolume) (\(curve.gain(at: policy.systemVolume)))",
            "ringer volume   \(policy.ringerVolume) (\(curve.gain(at: policy.ringerVolume)))",
            "buttons control the \(policy.buttonTarget) volume",
            "output          \(daemon.outputDescription): "
                + (output.open ? (output.idle ? "open, idle" : "open") : "LOST, retrying"),
            "                \(output.underruns) underruns, latency \(Int(daemon.latencyMilliseconds.rounded())) ms",
        ]
        if let pending = daemon.pendingRoute {
            lines.append(
                "waiting for     \(pending.pcm) (\(pending.route)): \(pending.attempts) tries in "
                    + OutputRouter.seconds(daemon.clock.now() - pending.since)
            )
            lines.append("                \(pending.error.message)")
        }
        let streams = daemon.streamSummary()
        let microphone =
            daemon.setup.capturePCM == nil
            ? "none configured" : daemon.microphone == nil ? "NOT OPEN (\(daemon.setup.capturePCM ?? ""))" : "nobody"
        lines.append("streams         \(streams.streams) from applications (the hush ALSA device)")
        lines.append(
            "microphone      "
                + (policy.microphoneSwitch == .muted
                    ? "MUTED by the privacy switch (\(daemon.setup.capturePCM ?? "none configured"))"
                    : streams.microphone.isEmpty ? microphone : streams.microphone.joined(separator: ", "))
        )
        if let hearing = daemon.hearing?.status(policy), ControlText.showsHearing(hearing) {
            lines.append("hearing         " + ControlText.hearing(hearing, route: policy.route.name))
        }
        if policy.sessions.isEmpty { lines.append("no sessions") }
        // 24 lines in all: the sessions that fit, or one line fewer and a count of the rest.
        let room = 24 - lines.count
        let shown = policy.sessions.count <= room ? policy.sessions.count : room - 1
        for session in policy.sessions.prefix(shown) {
            var line = "\(session.id) (\(session.client)): \(session.configuration), \(session.state)"
            if session.isInterrupted {
                line += ", interrupted by " + session.interrupters.map { "\($0.rawValue)" }.joined(separator: ", ")
            }
            if let block = session.microphoneBlock { line += ", microphone off: \(block)" }
            lines.append(line)
        }
        if shown < policy.sessions.count { lines.append("… and \(policy.sessions.count - shown) more sessions") }
        return lines.map(ControlText.fit)
    }
}
