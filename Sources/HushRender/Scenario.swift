import HushConfiguration
import HushConsole
import HushCore
import HushSystem

/// A scenario for `hush-render`: timed console commands, with sounds for the sessions.
///
/// ```
/// # comments start with #
/// 0.0   activate 1 music playback tone=440 loop     # a session with a sound
/// 0.5   play 1
/// +0.25 silence on                                  # + is relative to the previous line
/// 2.0   end                                         # render until here (default: 1 s after the last line)
/// ```
///
/// The commands are the console's (see `help`). `activate` also takes `sound=FILE` (relative to the scenario's
/// directory; `stream=FILE` decodes a long one while it plays), `tone=HZ` (a sine at -6 dBFS, generated) or
/// `capture=PCM` (a live ALSA capture device, for `hushd play`), and `loop`. docs/render.md documents the format.
public struct Scenario: Sendable {
    /// Where a session's sound comes from.
    public enum Sound: Hashable, Sendable {
        case file(String)
        case tone(frequency: Double)
        /// A live ALSA capture device (`hushd play` only).
        case capture(pcm: String)
        /// A long file, decoded while it plays instead of all at once.
        case stream(String)
    }

    /// One timed line.
    public struct Step: Sendable {
        public var time: Instant
        public var line: Int
        /// What the line says, in the console's grammar.
        public var request: ConsoleRequest
        public var sound: Sound?
        public var loop: Bool
    }

    /// A line that could not be understood, with where it is.
    public struct ParseError: Error, Hashable, Sendable, CustomStringConvertible {
        public var file: String
        public var line: Int
        public var message: String
        public var description: String { "\(file):\(line): \(message)" }
    }

    public var steps: [Step]
    /// When rendering stops.
    public var end: Instant

    /// Parses `text`, read from `file` (named in errors; sound paths are relative to its directory).
    public static func parse(_ text: String, file: String) throws(ParseError) -> Scenario {
        let directory = file.contains("/") ? String(file[..<file.lastIndex(of: "/")!]) : "."
        var steps: [Step] = []
        var previous = Instant.zero
        var end: (time: Instant, line: Int)?
        var nextSession: UInt64 = 1
        for (offset, rawLine) in text.tomlLines.enumerated() {
            let number = offset + 1
            let content = rawLine.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            var words = content.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            guard let first = words.first else { continue }
            words.removeFirst()
            guard let time = parseTime(first, after: previous) else {
                throw ParseError(
                    file: file,
                    line: number,
                    message: "a line starts with its time in seconds ('1.5', '+0.25'), not '\(first)'"
                )
            }
            guard time >= previous else {
                throw ParseError(
                    file: file,
                    line: number,
                    message: "time \(time) is before the previous line's \(previous)"
                )
            }
            // Relative times add up; a bound keeps the sum far from Int64's nanoseconds (a fuzzed file of
            // 100 000 '+86399' lines overflowed it).
            guard time < maximumTime else {
                throw ParseError(
                    file: file,
                    line: number,
                    message: "time \(time) is a day or more after the start; a scenario lasts less than a day"
                )
            }
            // The render stops at 'end': a line after it would be dropped without a word.
            if let end {
                throw ParseError(
                    file: file,
                    line: number,
                    message: "this line comes after 'end' on line \(end.line); 'end' must be the last line"
                )
            }
            previous = time
            if words == ["end"] {
                end = (time, number)
                continue
            }
            var sound: Sound?
            var loop = false
            var kept: [String] = []
            for word in words {
                if word.hasPrefix("sound=") {
                    sound = .file(resolve(String(word.dropFirst(6)), in: directory))
                } else if word.hasPrefix("tone=") {
                    guard let hz = Double(word.dropFirst(5)), hz > 0, hz < 20_000 else {
                        throw ParseError(file: file, line: number, message: "tone= takes a frequency in Hz below 20000")
                    }
                    sound = .tone(frequency: hz)
                } else if word.hasPrefix("stream=") {
                    sound = .stream(resolve(String(word.dropFirst(7)), in: directory))
                } else if word.hasPrefix("capture=") {
                    sound = .capture(pcm: String(word.dropFirst(8)))
                } else if word == "loop" {
                    loop = true
                } else {
                    kept.append(word)
                }
            }
            words = kept
            let parsed: ConsoleRequest?
            do {
                parsed = try ConsoleRequest.parse(words.joined(separator: " "))
            } catch {
                throw ParseError(file: file, line: number, message: error.message)
            }
            guard var request = parsed else { continue }
            if let reason = request.unavailability(in: .scenario) {
                throw ParseError(file: file, line: number, message: reason)
            }
            switch request {
            case .activate(let id, let client, let configuration):
                let session = id ?? SessionID(nextSession)
                nextSession = max(nextSession, session.rawValue + 1)
                request = .activate(session, client: client, configuration)
            default:
                if sound != nil || loop {
                    throw ParseError(
                        file: file,
                        line: number,
                        message: "sound=, stream=, tone=, capture= and loop go with activate"
                    )
                }
            }
            steps.append(Step(time: time, line: number, request: request, sound: sound, loop: loop))
        }
        return Scenario(steps: steps, end: end?.time ?? previous + .seconds(1))
    }

    /// A scenario file that could not be read.
    public struct ReadError: Error, CustomStringConvertible {
        public var description: String
    }

    /// Reads and parses the scenario file at `path`, for `hush-render` and `hushd play`.
    public static func load(_ path: String) throws -> Scenario {
        let text: String
        do throws(TextFile.Failure) {
            text = try TextFile.read(path, limit: 16 << 20, tooLarge: "larger than 16 MiB: is this a scenario?")
        } catch {
            throw ReadError(description: "cannot read scenario '\(path)': \(error)")
        }
        return try parse(text, file: path)
    }

    /// Scenarios last less than a day.
    static let maximumTime = Instant(nanoseconds: 86_400_000_000_000)

    private static func parseTime(_ word: String, after previous: Instant) -> Instant? {
        let relative = word.hasPrefix("+")
        let digits = word.dropFirst(relative ? 1 : 0).replacing("s", with: "")
        guard let seconds = Double(digits), seconds >= 0, seconds < 86_400 else { return nil }
        let offset = Instant(nanoseconds: Int64((seconds * 1e9).rounded()))
        return relative ? Instant(nanoseconds: previous.nanoseconds + offset.nanoseconds) : offset
    }

    private static func resolve(_ path: String, in directory: String) -> String {
        path.hasPrefix("/") ? path : directory + "/" + path
    }
}
