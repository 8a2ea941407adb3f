import HushCore

/// What hushctl prints for people: status that fits an 80×24 serial terminal, one line per event, short lines for
/// replies. Plain ASCII but for what the policy wrote (its reasons use an em dash); no colours.
public enum ControlText {
    /// The terminal size `status` is made for.
    public static let columns = 80
    public static let rows = 24

    // MARK: Status

    /// The full status in at most 24 lines of at most 80 columns. Sessions that do not fit are counted.
    public static func status(_ status: ControlStatus) -> [String] {
        let output = status.output
        var lines = [
            "hushd \(status.version), up \(duration(status.uptimeSeconds)), "
                + "\(status.clients) client\(status.clients == 1 ? "" : "s")",
            "silence switch   \(status.silenceSwitch)",
            "headphones       \(status.jack)",
            "route            \(status.route) " + (status.routeOverridden ? "(override)" : "(automatic)"),
            "system volume    \(volume(status.systemVolume, status.systemGainDecibels))",
            "ringer volume    \(volume(status.ringerVolume, status.ringerGainDecibels))",
            "buttons control  the \(status.buttonsControl) volume",
            "secondary audio  " + (status.secondaryAudioShouldBeSilenced ? "should be silenced" : "may play"),
            "output           \(output.pcm) "
                + (output.open ? (output.idle == true ? "(open, idle)" : "(open)") : "(LOST, retrying)"),
            "                 \(output.sampleRate) Hz, \(output.channels) ch, \(output.periods) x "
                + "\(output.periodFrames) frames (\(DecimalText.trimmed(output.latencyMilliseconds, places: 2)) ms), "
                + "\(output.xruns) xrun\(output.xruns == 1 ? "" : "s"), "
                + "\(output.losses) loss\(output.losses == 1 ? "" : "es")",
        ]
        if let period = output.period, period.ceiling > period.floor {
            let milliseconds = DecimalText.trimmed(Double(period.frames) * 1000 / Double(output.sampleRate), places: 1)
            lines.append(
                "period           \(period.frames) frames (\(milliseconds) ms; \(period.floor)…\(period.ceiling))"
                    + (period.ruled == period.frames ? "" : ", \(period.ruled) from the next")
                    + ": \(period.reason) [\(period.rule)]"
            )
        }
        if let pending = output.pending {
            lines.append(
                "waiting for      \(pending.pcm) (\(pending.route)): \(pending.attempts) "
                    + "tr\(pending.attempts == 1 ? "y" : "ies") in \(DecimalText.trimmed(pending.seconds, places: 2)) s"
            )
            lines.append("                 \(pending.error)")
        }
        lines.append("microphone       " + microphone(status))
        if let hearing = status.hearing, Self.showsHearing(hearing) {
            lines.append("hearing          " + self.hearing(hearing, route: status.route))
        }
        // The sessions and the streams share the rows left; each table keeps at least half of them when both are
        // long, and says how many rows it could not show.
        let sessions = status.sessions.map(sessionRow)
        let streams = status.streams.map(streamRow)
        let room = rows - lines.count - (sessions.isEmpty ? 1 : 2) - (streams.isEmpty ? 1 : 2)
        let streamRoom =
            sessions.count + streams.count <= room
            ? streams.count : min(streams.count, max(room / 2, room - sessions.count))
        lines += table("sessions", sessionHeader, sessions, room: room - streamRoom)
        lines += table("streams", streamHeader, streams, room: streamRoom)
        return lines.map(fit)
    }

    /// A labelled table: "none", or the count, the header and as many rows as `room` allows (the last one saying
    /// how many more there are when they do not all fit).
    static func table(_ label: String, _ header: String, _ rows: [String], room: Int) -> [String] {
        let title = pad(label, 17)
        guard !rows.isEmpty else { return [title + "none"] }
        let shown = rows.count <= room ? rows.count : max(0, room - 1)
        var lines = [title + "\(rows.count)", header] + rows.prefix(shown)
        if shown < rows.count {
            lines.append("  ... and \(rows.count - shown) more (hushctl --json status lists them all)")
        }
        return lines
    }

    static let sessionHeader =
        pad("ID", 4, right: true) + pad("CLIENT", 7, right: true) + pad("PID", 7, right: true)
        + pad("UID", 6, right: true) + "  " + pad("BUS", 7) + pad("CATEGORY", 14) + pad("OPTIONS", 9) + "STATE"

    static func sessionRow(_ session: ControlStatus.Session) -> String {
        var options: [String] = []
        if session.options.contains("duckOthers") {
            options.append("duck")
        } else if session.options.contains("mixWithOthers") {
            options.append("mix")
        }
        var optionText = options.isEmpty ? "-" : options.joined()
        if session.transient { optionText += "+tr" }
        var state = session.state
        if !session.interruptedBy.isEmpty {
            state = "interrupted by " + session.interruptedBy.map { "\($0)" }.joined(separator: ",")
        } else if let cause = session.pausedBy, state == "paused" {
            state += " (\(cause))"
        }
        if let mode = session.mode, mode != .default { state += ", \(mode)" }
        if let gain = session.gain { state += ", " + DecimalText.trimmed(gain, places: 1) + " dB" }
        switch session.microphoneBlocked {
        case "privacySwitch": state += ", mic muted"
        case "awaitingStart": state += ", mic waits for a start"
        default: break
        }
        let client = session.client == ClientID.hushd.rawValue ? "hushd" : "\(session.client)"
        return pad("\(session.id)", 4, right: true) + pad(client, 7, right: true)
            + pad(session.pid.map { "\($0)" } ?? "-", 7, right: true)
            + pad(session.uid.map { "\($0)" } ?? "-", 6, right: true) + "  " + pad(session.bus.rawValue, 7)
            + pad(session.category.rawValue, 14) + pad(optionText, 9) + state
    }

    static let streamHeader =
        pad("ID", 4, right: true) + pad("SESSION", 8, right: true) + pad("PID", 7, right: true) + "  "
        + pad("NAME", 10) + pad("DIR", 5) + pad("RATE", 6, right: true) + pad("CH", 3, right: true) + " "
        + pad("FORMAT", 9) + "STATE"

    /// "   4       7    123  aplay     play  44100  2 S16_LE   running, 0 underruns".
    static func streamRow(_ stream: ControlStatus.Stream) -> String {
        var state = stream.state.rawValue
        switch stream.direction {
        case .playback: state += ", " + count(stream.underruns, "underrun")
        case .capture: state += ", " + count(stream.overruns, "overrun")
        }
        if stream.violations > 0 { state += ", " + count(stream.violations, "violation") }
        return pad("\(stream.id)", 4, right: true) + pad("\(stream.session)", 8, right: true)
            + pad("\(stream.pid)", 7, right: true) + "  " + pad(printable(stream.name ?? "-"), 10)
            + pad(stream.direction == .playback ? "play" : "rec", 5) + pad("\(stream.rate)", 6, right: true)
            + pad("\(stream.channels)", 3, right: true) + " " + pad(stream.format.rawValue, 9) + state
    }

    /// Who hears the microphone: "hw:1,0 (open), heard by stream 5 (arecord, pid 77)", "... heard by nobody", or
    /// that there is none.
    /// Whether status gives hearing safety a line: while a private route is measured, or once the week has a dose.
    /// Otherwise (a public route and nothing heard on a private one this week) the row goes to the sessions.
    public static func showsHearing(_ hearing: ControlStatus.Hearing) -> Bool {
        !hearing.privateRoutes.isEmpty && (hearing.measuring || hearing.dosePercent > 0)
    }

    /// Hearing safety in one line (R27–R29): what the listener hears now on a private route, or that the route in use
    /// is not measured, and the week's dose. The console's status says it the same way.
    public static func hearing(_ hearing: ControlStatus.Hearing, route: String) -> String {
        let dose = "week's dose \(DecimalText.fixed(hearing.dosePercent, places: 1)) %"
        guard hearing.measuring else { return "\(route) is not private (not measured); " + dose }
        let level = hearing.decibelsA.map { $0 < 20 ? "quiet" : "\(DecimalText.fixed($0, places: 1)) dB(A)" }
        return "\(hearing.route ?? route): \(level ?? "measuring") at the ear"
            + (hearing.calibrated ? "" : " (assumed)") + ", " + dose
    }

    static func microphone(_ status: ControlStatus) -> String {
        let holders = status.microphone.map { id in
            guard let stream = status.streams.first(where: { $0.id == id }) else { return "stream \(id)" }
            let name = stream.name.map { printable(String($0.prefix(16))) + ", " } ?? ""
            return "stream \(id) (\(name)pid \(stream.pid))"
        }
        var heard = "heard by " + (holders.isEmpty ? "nobody" : holders.joined(separator: ", "))
        if status.microphoneSwitch == .muted { heard = "MUTED by the privacy switch: heard by nobody" }
        if let voice = status.voice, voice.active {
            heard += "; voice " + (voice.unavailable == nil ? "processed" : "UNPROCESSED")
            if let erle = voice.erleDecibels { heard += ", ERLE \(DecimalText.trimmed(erle, places: 1)) dB" }
            heard += ", delay \(voice.delayMilliseconds) ms"
        }
        guard let capture = status.capture else {
            return holders.isEmpty ? "none ([capture] pcm is not set): capture streams get silence" : heard
        }
        let drift = capture.driftPPM.map { ", \(DecimalText.trimmed($0, places: 0)) ppm off" } ?? ""
        let gaps = capture.gapFrames.flatMap { $0 > 0 ? ", \($0) frames of gaps (its reader late)" : nil } ?? ""
        return "\(capture.pcm) " + (capture.open ? "(open\(drift)\(gaps))" : "(closed)") + ", " + heard
    }

    /// A name a client chose, with control characters shown as "?" so it cannot break the terminal's lines.
    static func printable(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? "?" : $0 }))
    }

    /// "1 underrun", "3 underruns".
    static func count(_ number: Int, _ noun: String) -> String { "\(number) \(noun)" + (number == 1 ? "" : "s") }

    // MARK: Events

    /// One line per event, for `hushctl events` and the events `hushctl play` prints.
    public static func event(_ event: ControlEvent) -> String {
        switch event {
        case .interruptionBegan(let id, .session(let by)):
            "interruption began: session \(id.rawValue), by session \(by.rawValue)"
        case .interruptionBegan(let id, .microphoneMuted):
            "interruption began: session \(id.rawValue), the microphone privacy switch is on"
        case .interruptionEnded(let id, let shouldResume):
            "interruption ended: session \(id.rawValue), " + (shouldResume ? "should resume" : "should not resume")
        case .routeChanged(let change):
            "route: \(change.previous) -> \(change.current) (\(change.reason))"
        case .volumeChanged(let kind, let step, let route):
            "\(kind) volume: \(step)" + (route.map { " on \($0)" } ?? "")
        case .silenceChanged(let position):
            "silence switch: \(position)"
        case .secondaryAudioHint(let hint):
            "secondary audio: " + (hint ? "should be silenced" : "may play")
        case .buttonsControl(let kind):
            "volume buttons control: the \(kind) volume"
        case .remoteCommand(let id, let key):
            "remote command: \(key) for session \(id.rawValue)"
        case .sessionFinished(let id):
            "session \(id.rawValue) finished"
        case .hearingWarning(let warning):
            "hearing: \(warning)"
        case .decision(let report):
            (report.time.map { "at \(DecimalText.fixed($0, places: 3)) s: " } ?? "")
                + "[\(report.rule) \(report.title)] \(report.command) — " + report.reason
                + (report.cause.map { " (after: \($0))" } ?? "")
        }
    }

    // MARK: Replies

    /// "system volume 8/16 (-24.0 dB)".
    public static func volume(_ report: VolumeReport) -> String {
        "\(report.kind) volume \(volume(report.step, report.gainDecibels))"
    }

    /// "route speaker (automatic)".
    public static func route(_ report: RouteReport) -> String {
        "route \(report.current) " + (report.overridden ? "(override)" : "(automatic)")
    }

    /// "hushd 0.1.0, protocol 1, you are client 1003".
    public static func hello(_ report: HelloReport) -> String {
        "hushd \(report.version), protocol \(report.protocol), you are client \(report.client)"
    }

    // MARK: Pieces

    static func volume(_ step: Int, _ decibels: Double?) -> String {
        let level = decibels.map { DecimalText.fixed($0, places: 1, sign: true) + " dB" } ?? "silent"
        return "\(step)/\(VolumeStep.count) (\(level))"
    }

    /// "3 s", "12 min 5 s", "1 h 2 min", "3 d 4 h".
    static func duration(_ seconds: Double) -> String {
        let total = Int(seconds.rounded(.down))
        switch total {
        case ..<60: return "\(total) s"
        case ..<3600: return "\(total / 60) min \(total % 60) s"
        case ..<86_400: return "\(total / 3600) h \(total % 3600 / 60) min"
        default: return "\(total / 86_400) d \(total % 86_400 / 3600) h"
        }
    }

    static func pad(_ text: String, _ width: Int, right: Bool = false) -> String {
        guard text.count < width else { return String(text.prefix(width - 1)) + " " }
        let spaces = String(repeating: " ", count: width - text.count)
        return right ? spaces + text : text + spaces
    }

    /// Cuts a line to the terminal's width.
    public static func fit(_ line: String) -> String {
        line.count <= columns ? line : String(line.prefix(columns - 3)) + "..."
    }
}
