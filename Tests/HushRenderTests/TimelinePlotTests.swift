import Foundation
import HushCore
import HushTesting
import Testing

#if canImport(FoundationXML)
import FoundationXML
@testable import HushRender
@testable import HushRenderTool
#endif

/// `hush-render --plot`: the timeline is what the engine reported, and the picture shows it where it should.
@Suite("hush-render --plot: the timeline picture")
struct TimelinePlotTests {
    /// Music (440 Hz) and an ambient effect (1000 Hz) on headphones; silence from 1 s to 2 s; unplugged at 3 s.
    static let scenario = TestScenarios.silenceThenUnplug

    /// A -6 dBFS tone at system volume 8 (-24 dB), as a linear peak.
    static let tonePeak = Float(0.5 * pow(10, -24.0 / 20))

    static func render(_ text: String = scenario) throws -> (timeline: ScenarioTimeline, svg: String) {
        let renderer = ScenarioRenderer(scenario: try Scenario.parse(text, file: "test.txt"))
        _ = try renderer.render()
        return (renderer.timeline, TimelinePlot.svg(renderer.timeline, title: "test.txt", source: text))
    }

    static func x(_ seconds: Double, end: Double = 4) -> Double {
        TimelinePlot.plotLeft + seconds / end * (TimelinePlot.plotRight - TimelinePlot.plotLeft)
    }

    /// The horizontal runs of a lane's level line ("M x y H x V y … H x"): from x, to x, at y.
    static func runs(of bus: Bus, in document: XMLDocument) throws -> [(from: Double, to: Double, y: Double)] {
        let paths = try document.nodes(forXPath: "//*[@class='lane'][@data-bus='\(bus.rawValue)']/*[@class='level']")
        let path = try #require(paths.first as? XMLElement)
        let d = try #require(Self.attribute(path, "d"))
        var runs: [(from: Double, to: Double, y: Double)] = []
        var number = ""
        var command: Character = "M"
        var values: [Double] = []
        var x = 0.0
        var y = 0.0
        func finish() {
            if let value = Double(number) { values.append(value) }
            number = ""
        }
        for character in d + "E" {
            if character.isLetter {
                finish()
                switch command {
                case _ where values.isEmpty: break  // the path's first letter
                case "M": (x, y) = (values[0], values[1])
                case "H":
                    runs.append((x, values[0], y))
                    x = values[0]
                case "V": y = values[0]
                default: break
                }
                command = character
                values = []
            } else if character == " " {
                finish()
            } else {
                number.append(character)
            }
        }
        return runs
    }

    /// An attribute's value (the elements are in the SVG namespace, which `attribute(forName:)` does not look in).
    static func attribute(_ element: XMLElement, _ name: String) -> String? {
        element.attributes?.first { $0.localName == name || $0.name == name }?.stringValue
    }

    static func lane(_ bus: Bus, in document: XMLDocument) throws -> (top: Double, bottom: Double) {
        let lanes = try document.nodes(forXPath: "//*[@class='lane'][@data-bus='\(bus.rawValue)']")
        let lane = try #require(lanes.first as? XMLElement)
        let top = try #require(Self.attribute(lane, "data-top").flatMap(Double.init))
        let bottom = try #require(Self.attribute(lane, "data-bottom").flatMap(Double.init))
        return (top, bottom)
    }

    @Test("the picture is well-formed SVG, 1000 px wide, titled with the scenario's name")
    func wellFormed() throws {
        let (_, svg) = try Self.render()
        let document = try XMLDocument(xmlString: svg, options: [])
        let root = try #require(document.rootElement())
        #expect(root.name == "svg")
        #expect(Self.attribute(root, "width") == "1000")
        #expect(
            try document.nodes(forXPath: "//*[local-name()='title']").first?.stringValue?.contains("test.txt") == true
        )
        #expect(try document.nodes(forXPath: "//*[@class='lane']").count == 3)
        #expect(try document.nodes(forXPath: "//*[@class='legend']").count == 1)
    }

    @Test("R5 in the engine's own levels: the music bus plays at its level, then nothing after the unplug")
    func musicDropsAfterUnplug() throws {
        let (timeline, svg) = try Self.render()
        let before = timeline.levels.filter { timeline.seconds($0.start) >= 0.2 && timeline.seconds($0.end) <= 3 }
        let after = timeline.levels.filter { timeline.seconds($0.start) >= 3.002 }
        #expect(!before.isEmpty && !after.isEmpty)
        #expect(before.allSatisfy { abs($0.music - Self.tonePeak) < 0.002 }, "the music plays before")
        #expect(after.allSatisfy { $0.music == 0 }, "not a sample of music after the unplug's period")
        // The picture: the music line is at -30 dBFS before the unplug and on the floor after it.
        let document = try XMLDocument(xmlString: svg, options: [])
        let lane = try Self.lane(.music, in: document)
        let level = lane.top + 30.0 / 60 * (lane.bottom - lane.top)
        let runs = try Self.runs(of: .music, in: document)
        let unplugX = Self.x(3)
        #expect(runs.filter { $0.from >= Self.x(0.2) && $0.to <= unplugX }.allSatisfy { abs($0.y - level) < 0.3 })
        #expect(runs.contains { $0.from < unplugX && $0.to > unplugX - 1 && abs($0.y - level) < 0.3 })
        #expect(runs.filter { $0.to > unplugX + 2 }.allSatisfy { $0.y == lane.bottom }, "silent after the unplug")
    }

    @Test("R1 in the engine's own levels: the effect bus is silent while silenced, the music is not")
    func effectSilentWhileSilenced() throws {
        let (timeline, svg) = try Self.render()
        // The switch ramps over 20 ms; from then until it is switched off not one effect sample plays.
        let silenced = timeline.levels.filter { timeline.seconds($0.start) >= 1.021 && timeline.seconds($0.end) <= 2 }
        #expect(silenced.count > 80)
        #expect(silenced.allSatisfy { $0.effect == 0 })
        #expect(silenced.allSatisfy { abs($0.music - Self.tonePeak) < 0.002 })
        let back = timeline.levels.filter { timeline.seconds($0.start) >= 2.03 && timeline.seconds($0.end) <= 3 }
        #expect(back.allSatisfy { abs($0.effect - Self.tonePeak) < 0.002 }, "the effect is back")
        let document = try XMLDocument(xmlString: svg, options: [])
        let lane = try Self.lane(.effect, in: document)
        let inside = try Self.runs(of: .effect, in: document).filter { $0.to > Self.x(1.03) && $0.from < Self.x(1.99) }
        #expect(!inside.isEmpty && inside.allSatisfy { $0.y == lane.bottom })
        // The state band says so too.
        let silent = try document.nodes(forXPath: "//*[@data-state='silence switch']/*[@data-value='silent']")
        let band = try #require(silent.first as? XMLElement)
        #expect(
            Self.attribute(band, "x").flatMap(Double.init).map { abs($0 - Self.x(1)) < 0.1 } == true
        )
    }

    @Test("each event has a marker at its time, labelled with its line and the rules it applied")
    func markers() throws {
        let (timeline, svg) = try Self.render()
        #expect(timeline.marks.map(\.line) == [1, 2, 3, 4, 5, 6, 7, 8])
        let document = try XMLDocument(xmlString: svg, options: [])
        let events = try document.nodes(forXPath: "//*[@class='event']").compactMap { $0 as? XMLElement }
        #expect(events.count == 8)
        func event(_ label: String) throws -> (x: Double, rules: String) {
            let found = try #require(events.first { $0.elements(forName: "text").first?.stringValue == label })
            let line = try #require(found.elements(forName: "line").first)
            let x = try #require(Self.attribute(line, "x1").flatMap(Double.init))
            let rules = found.elements(forName: "text").first { Self.attribute($0, "class") == "rules" }
            return (x, rules?.stringValue ?? "")
        }
        let silence = try event("silence on")
        #expect(abs(silence.x - Self.x(1)) < 0.06)
        #expect(silence.rules.split(separator: " ").contains("R1"))
        let unplug = try event("unplug")
        #expect(abs(unplug.x - Self.x(3)) < 0.06)
        #expect(unplug.rules.split(separator: " ").first == "R5", "the unplug's first decision is R5's pause")
        let plug = try event("plug")
        #expect(abs(plug.x - Self.x(0)) < 0.06)
        #expect(plug.rules.contains("R4"))
        #expect(try event("activate 1 music playback").rules.contains("R15"), "sound options are left out")
    }

    @Test("labels of events close together are staggered: none overlaps another or is crossed by a marker")
    func staggered() {
        var labels = [0.0, 0.0, 0.05, 0.1, 0.4, 3.9, 3.95, 3.99].enumerated().map { index, seconds in
            TimelinePlot.Label(
                x: Self.x(seconds),
                time: seconds,
                text: "activate \(index) music playback mix duck",
                rules: "R6 R7 R14 R15"
            )
        }
        let rows = TimelinePlot.stagger(&labels)
        #expect(rows >= 4)
        for (index, label) in labels.enumerated() {
            #expect(label.span.lowerBound >= 0 && label.span.upperBound <= TimelinePlot.width, "\(label.text)")
            for other in labels[..<index] {
                if other.row == label.row {
                    #expect(!label.span.overlaps(other.span), "\(label.text) overlaps \(other.text)")
                }
                // A marker's line runs from its label down; no label below it may straddle it.
                if other.row < label.row && other.x != label.x { #expect(!label.span.contains(other.x)) }
                if label.row < other.row && other.x != label.x { #expect(!other.span.contains(label.x)) }
            }
        }
    }

    @Test("random crowds of labels are always placed, none on top of another", arguments: 1...20)
    func crowds(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        let words = ["silence on", "unplug", "activate 3 ringer soloAmbient transient", "up", "deactivate 2 notify"]
        var labels = (0..<Int.random(in: 1...30, using: &random)).map { _ in
            let seconds = Double.random(in: 0...4, using: &random)
            return TimelinePlot.Label(
                x: Self.x(seconds),
                time: seconds,
                text: words.randomElement(using: &random)!,
                rules: ["", "R1", "R5 R14", "R15 R6 R8 R9 R14"].randomElement(using: &random)!
            )
        }
        labels.sort { $0.time < $1.time }
        let rows = TimelinePlot.stagger(&labels)
        #expect(rows <= labels.count)
        for (index, label) in labels.enumerated() {
            #expect(label.row < rows)
            for other in labels[..<index] where other.row == label.row {
                #expect(!label.span.overlaps(other.span), "seed \(seed): '\(label.text)' overlaps '\(other.text)'")
            }
        }
    }

    @Test("a sound that ends is an event when it changes something; start-up decisions are not marked")
    func engineEvents() throws {
        // One second of non-mixable music: while it sounds, others are told to silence secondary audio (R14);
        // when the engine reports its end, they are told they need not, and that is marked.
        let (timeline, svg) = try Self.render(
            """
            0 activate 1 music playback tone=440
            0.5 play 1
            3 end
            """
        )
        #expect(timeline.marks.count == 3)
        let finished = try #require(timeline.marks.last)
        #expect(finished.line == nil && finished.event.hasSuffix("finished"), "\(finished.event)")
        #expect(finished.rules == [.r14])
        let seconds = Double(finished.time.nanoseconds) / 1e9
        #expect(seconds >= 1.5 && seconds < 1.52, "a one-second tone played from 0.5 s ends at 1.5 s")
        #expect(!timeline.marks.contains { $0.event == "start-up" })
        // The engine's levels: nothing before the play, the tone for a second, nothing after.
        #expect(timeline.levels.filter { timeline.seconds($0.end) <= 0.5 }.allSatisfy { $0.music == 0 })
        let playing = timeline.levels.filter { timeline.seconds($0.start) >= 0.52 && timeline.seconds($0.end) <= 1.5 }
        #expect(!playing.isEmpty && playing.allSatisfy { abs($0.music - Self.tonePeak) < 0.002 })
        #expect(timeline.levels.filter { timeline.seconds($0.start) >= 1.511 }.allSatisfy { $0.music == 0 })
        let document = try XMLDocument(xmlString: svg, options: [])
        let events = try document.nodes(forXPath: "//*[@class='event']").compactMap { $0 as? XMLElement }
        let marker = try #require(events.last)
        #expect(marker.elements(forName: "text").first?.stringValue == finished.event)
        #expect(Self.attribute(marker, "data-rules") == "R14")
    }

    @Test("the same scenario draws the same bytes")
    func deterministic() throws {
        let text = try String(contentsOfFile: RenderTests.scenarioPath, encoding: .utf8)
        let first = try Self.render(text).svg
        let second = try Self.render(text).svg
        #expect(first == second)
        #expect(first.utf8.count > 5000)
    }

    @Test(
        "the pictures in docs/images are what make plots draws today",
        arguments: ["silence-switch", "unplug", "ringtone", "ducking", "silence-and-unplug", "session-level"]
    )
    func documentedPictures(name: String) throws {
        let docs = RenderTests.scenarioPath.replacingOccurrences(of: "/scenarios/silence-and-unplug.txt", with: "")
        let text = try String(contentsOfFile: docs + "/scenarios/\(name).txt", encoding: .utf8)
        let renderer = ScenarioRenderer(scenario: try Scenario.parse(text, file: docs + "/scenarios/\(name).txt"))
        _ = try renderer.render()
        let drawn = TimelinePlot.svg(renderer.timeline, title: "\(name).txt", source: text)
        let committed = try String(contentsOfFile: docs + "/images/timeline-\(name).svg", encoding: .utf8)
        #expect(drawn == committed, "docs/images/timeline-\(name).svg is out of date: run make plots")
    }
}
