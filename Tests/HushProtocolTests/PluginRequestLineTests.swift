import Foundation
import HushCore
import Testing

@testable import HushProtocol

/// The `hush` ALSA plugin is C and hushd is Swift: each has the device's table of names (`hush:music` is playback
/// on the music bus, …). `hush-request-lines` (Tests/alsa-plugin/request_lines.c, built by `make alsa-plugin`)
/// prints the plugin's table and the open-stream lines the plugin's own code builds from it; this suite parses each
/// line with hushd's parser and holds them to Swift's table, so the two cannot drift apart.
@Suite("the ALSA plugin's open-stream lines and hushd's parser")
struct PluginRequestLineTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let tool = root.appendingPathComponent(".build/alsa-plugin/hush-request-lines").path

    /// The tool's output lines, with `configurations` as extra cases.
    static func run(_ configurations: [String] = []) throws -> [String] {
        guard FileManager.default.fileExists(atPath: tool) else {
            Issue.record("\(tool) is missing: run `make alsa-plugin` (make test does) first")
            return []
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = configurations
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    /// The open-stream request a line parses to, or the parser's error.
    static func parse(_ line: String) -> Result<StreamRequest, ControlError> {
        switch ControlCodec().decodeRequest(Array(line.utf8)) {
        case .success(let request):
            guard case .openStream(let stream) = request.command else {
                return .failure(ControlError(.invalidValue, "not open-stream: \(request.command)"))
            }
            return .success(stream)
        case .failure(let failure):
            return .failure(failure.error)
        }
    }

    /// `line N DIRECTION JSON` lines of case N, by direction.
    static func lines(of number: Int, in output: [String]) -> [String: String] {
        var lines: [String: String] = [:]
        for line in output where line.hasPrefix("line \(number) ") {
            let words = line.split(separator: " ", maxSplits: 3)
            if words.count == 4 { lines[String(words[2])] = String(words[3]) }
        }
        return lines
    }

    /// What hushd takes: a capture stream in a category that records, a playback stream in any but `record`.
    static func allowed(_ direction: String, _ category: HushCore.Category) -> Bool {
        direction == "capture" ? category.records : category != .record
    }

    @Test("the plugin's table is Swift's: every name, its category and its bus")
    func tablesAgree() throws {
        let output = try Self.run()
        let table = output.filter { $0.hasPrefix("table ") }.map { line -> StreamRequest.DeviceName? in
            let words = line.split(separator: " ").map(String.init)
            guard words.count == 5, let category = HushCore.Category(rawValue: words[2]) else { return nil }
            return StreamRequest.DeviceName(
                name: words[1],
                category: category,
                bus: Bus(rawValue: words[3]),
                mode: SessionMode(rawValue: words[4]) ?? .default
            )
        }
        print(
            "the plugin's table: \(table.compactMap { $0.map { "\($0.name)=\($0.category)/\($0.bus?.rawValue ?? "-")" } })"
        )
        #expect(!table.isEmpty)
        #expect(table.allSatisfy { $0 != nil }, "every category and bus of the plugin's table is hushd's")
        #expect(table.compactMap { $0 } == StreamRequest.deviceNames)
    }

    @Test("each name's open-stream line parses to its category and bus; only what hushd refuses is refused")
    func linesParse() throws {
        let output = try Self.run()
        // Case 0 is the device with no arguments: the default category, playback, with hushd's bus.
        let cases = [StreamRequest.DeviceName(name: "", category: .playback, bus: nil)] + StreamRequest.deviceNames
        for (number, expected) in cases.enumerated() {
            let lines = Self.lines(of: number, in: output)
            #expect(lines.count == 2, "case \(number) (\(expected.name)): \(lines)")
            for (direction, line) in lines {
                switch Self.parse(line) {
                case .success(let request):
                    #expect(request.category == expected.category, "\(expected.name): \(line)")
                    #expect(request.bus == expected.bus, "\(expected.name): \(line)")
                    #expect(request.mode == expected.mode, "\(expected.name): \(line)")
                    #expect(request.options == [] && !request.transient && request.session == nil)
                    #expect(request.direction.rawValue == direction)
                    #expect(Self.allowed(direction, expected.category), "\(line) is not refused")
                    #expect(request.sessionConfiguration.bus == expected.bus ?? expected.category.defaultBus)
                case .failure(let error):
                    #expect(!Self.allowed(direction, expected.category), "\(line): \(error)")
                }
            }
        }
    }

    @Test("options, transient, a bus of one's own and a session reach hushd as the plugin was configured")
    func fieldsParse() throws {
        let configurations = [
            #"category "music" options "mixWithOthers|duckOthers" transient "yes" name "prompt""#,
            #"category "ambient" options "duckOthers" transient "no""#,
            #"category "ringtone" bus "music""#,
            #"category "RECORD" session "7""#,
            #"category "record" mode "MEASUREMENT""#,
            #"category "voice" mode "default""#,
        ]
        let output = try Self.run(configurations)
        let first = StreamRequest.deviceNames.count + 1
        let expected: [(HushCore.Category, Bus?, CategoryOptions, Bool, SessionID?, SessionMode)] = [
            (.playback, .music, [.mixWithOthers, .duckOthers], true, nil, .default),
            (.ambient, nil, [.duckOthers], false, nil, .default),
            (.soloAmbient, .music, [], false, nil, .default),
            (.record, nil, [], false, SessionID(7), .default),
            (.record, nil, [], false, nil, .measurement),
            (.playAndRecord, .music, [], false, nil, .default),
        ]
        for (offset, want) in expected.enumerated() {
            let direction = want.0 == .record ? "capture" : "playback"
            let line = try #require(Self.lines(of: first + offset, in: output)[direction], "\(configurations[offset])")
            guard case .success(let request) = Self.parse(line) else {
                Issue.record("\(line) does not parse")
                continue
            }
            #expect(request.category == want.0, "\(line)")
            #expect(request.bus == want.1, "\(line)")
            #expect(request.options == want.2, "\(line)")
            #expect(request.transient == want.3, "\(line)")
            #expect(request.session == want.4, "\(line)")
            #expect(request.mode == want.5, "\(line)")
        }
    }

    @Test("GAIN= reaches hushd as the session's own level, to a tenth of a dB; beyond -96…0 dB it is refused")
    func levelsParse() throws {
        let given = ["-10", "-3.55dB", "-0", " -6 dB", "-96", "-.5"]
        let output = try Self.run(given.map { #"category "ambient" gain "\#($0)""# })
        let first = StreamRequest.deviceNames.count + 1
        let expected: [Float] = [-10, -3.6, 0, -6, -96, -0.5]
        for (offset, want) in expected.enumerated() {
            let line = try #require(Self.lines(of: first + offset, in: output)["playback"], "\(given[offset])")
            guard case .success(let request) = Self.parse(line) else {
                Issue.record("\(line) does not parse")
                continue
            }
            #expect(request.level == SessionLevel(decibels: want), "\(given[offset]): \(line)")
            #expect(request.sessionConfiguration.level == request.level)
        }
        let refused = ["+3", "0.5", "-96.1", "-100", "abc", "-", "-10 dBFS"]
        let refusals = try Self.run(refused.map { #"category "ambient" gain "\#($0)""# })
        for (offset, text) in refused.enumerated() {
            #expect(refusals.contains("refused \(first + offset) \(EINVAL)"), "GAIN=\(text) should be refused")
        }
    }

    @Test("a mode the plugin does not know is refused at open, naming the modes")
    func unknownMode() throws {
        let output = try Self.run([#"category "record" mode "karaoke""#])
        let number = StreamRequest.deviceNames.count + 1
        #expect(output.contains("refused \(number) \(EINVAL)"), "\(output.suffix(3))")
    }

    @Test("docs/applications.md's table shows each alias with its category and bus")
    func documentationSaysTheSame() throws {
        let text = try String(
            contentsOf: Self.root.appendingPathComponent("docs/applications.md"),
            encoding: .utf8
        )
        for alias in StreamRequest.deviceNames where alias.bus != nil {
            let row = "| `hush:\(alias.name)` | `\(alias.category)` on \(alias.bus!) |"
            #expect(text.contains(row), "docs/applications.md should have the row \(row)")
        }
    }

    @Test("50-hush.conf's comment names the aliases of the table")
    func configurationSaysTheSame() throws {
        let text = try String(
            contentsOf: Self.root.appendingPathComponent("deploy/alsa/50-hush.conf"),
            encoding: .utf8
        )
        let comment = text.split(separator: "\n").filter { $0.hasPrefix("#") }.joined(separator: " ")
            .replacingOccurrences(of: "#", with: " ")
            .split(whereSeparator: { $0 == " " }).joined(separator: " ")
        for alias in StreamRequest.deviceNames where alias.bus != nil {
            let words = "\(alias.name) (\(alias.category) on \(alias.bus!))"
            #expect(comment.contains(words), "50-hush.conf should say \(words)")
        }
    }
}
