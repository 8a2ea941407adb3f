import FoundationEssentials
import HushCore
import HushRender
import HushSystem

#if canImport(Glibc)
import Glibc
#endif

/// Draws a ``ScenarioTimeline`` as a hand-written SVG picture: one lane per bus with its level in dBFS over time,
/// bands for the silence switch, headphones and route, a dashed marker per event labelled with the event and the
/// rules it applied, a time axis and a legend. The same timeline always gives the same bytes.
///
/// Geometry others rely on (the tests, docs/render.md): the picture is ``width`` wide; time runs from ``plotLeft``
/// (0 s) to ``plotRight`` (the end); each bus lane maps 0 dBFS to its top and ``floorDecibels`` to its bottom.
package enum TimelinePlot {
    package static let width = 1000.0
    package static let plotLeft = 118.0
    package static let plotRight = 978.0
    /// Levels at or below this (silence included) sit on a lane's bottom line.
    package static let floorDecibels = -60.0

    /// Okabe–Ito colours: told apart with every common colour-vision deficiency.
    static let busColours: [(Bus, String)] = [(.effect, "#E69F00"), (.music, "#0072B2"), (.ringer, "#CC79A7")]
    static let laneHeight = 64.0
    static let laneGap = 16.0
    static let rowHeight = 26.0
    static let bandHeight = 16.0
    static let bandGap = 4.0

    /// Why a plot could not be written.
    package struct PlotError: Error, CustomStringConvertible {
        package var description: String
    }

    /// Writes the picture of `timeline`, rendered from the scenario at `scenarioPath`, to `path` (an .svg file).
    package static func write(_ timeline: ScenarioTimeline, scenarioPath: String, to path: String) throws(PlotError) {
        try check(path)
        // The labels quote the scenario's own lines; without the file they fall back to the policy's words.
        let source = try? TextFile.read(scenarioPath, limit: 16 << 20, tooLarge: "too large")
        let name = scenarioPath.split(separator: "/").last.map(String.init) ?? scenarioPath
        let picture = svg(timeline, title: name, source: source)
        do throws(TextFile.Failure) {
            try TextFile.write(picture, to: path)
        } catch {
            throw PlotError(description: "cannot write the plot to '\(path)': \(error)")
        }
    }

    /// Refuses a plot path that does not name an SVG file (before a long render, not after it).
    package static func check(_ path: String) throws(PlotError) {
        guard path.lowercased().hasSuffix(".svg") else {
            throw PlotError(description: "--plot writes SVG: name the file '….svg', not '\(path)'")
        }
    }

    /// The picture of `timeline` as SVG text.
    ///
    /// - Parameters:
    ///   - title: the scenario's file name, shown in the title.
    ///   - source: the scenario's text; event labels quote its lines (without times, sounds and comments).
    package static func svg(_ timeline: ScenarioTimeline, title: String, source: String? = nil) -> String {
        let duration = max(Double(timeline.end.nanoseconds) / 1e9, 0.001)
        func x(_ seconds: Double) -> Double { plotLeft + seconds / duration * (plotRight - plotLeft) }
        let sourceLines = source.map { $0.split(separator: "\n", omittingEmptySubsequences: false) } ?? []

        // Event labels, staggered into rows so that none overlaps another or is crossed by another's marker.
        var labels: [Label] = []
        for mark in timeline.marks {
            let time = Double(mark.time.nanoseconds) / 1e9
            var text = mark.event
            if let line = mark.line, line >= 1, line <= sourceLines.count {
                let quoted = quote(sourceLines[line - 1])
                if !quoted.isEmpty { text = quoted }
            }
            text = truncate(text, to: 44)
            var seen = Set<Rule>()
            let rules = mark.rules.filter { seen.insert($0).inserted }.map(\.rawValue).joined(separator: " ")
            labels.append(Label(x: x(time), time: time, text: text, rules: rules))
        }
        let rows = stagger(&labels)

        var svg = SVGWriter()
        let labelTop = 62.0
        let lanesTop = labelTop + Double(rows) * rowHeight + 8
        let lanesBottom = lanesTop + 3 * laneHeight + 2 * laneGap
        let bandsTop = lanesBottom + 14
        let bandsBottom = bandsTop + 3 * bandHeight + 2 * bandGap
        let axisY = bandsBottom + 8
        let legendY = axisY + 44
        let height = legendY + 40

        svg.open(
            "svg",
            [
                ("xmlns", "http://www.w3.org/2000/svg"), ("width", n(width)), ("height", n(height)),
                ("viewBox", "0 0 \(n(width)) \(n(height))"), ("font-family", "sans-serif"),
            ]
        )
        svg.element("title", [], text: "hush timeline: \(title)")
        svg.element("rect", [("width", "100%"), ("height", "100%"), ("fill", "#FFFFFF")])
        svg.element(
            "text",
            [("x", n(plotLeft)), ("y", "24"), ("font-size", "16"), ("font-weight", "bold"), ("fill", "#222222")],
            text: "hush-render: \(title)"
        )
        // The interval as the engine kept it: the requested one rounded up to whole periods.
        let reportFrames = timeline.levels.first.map { $0.end - $0.start } ?? 0
        let reportMs = timeline.seconds(reportFrames) * 1000
        svg.element(
            "text",
            [("x", n(plotLeft)), ("y", "42"), ("font-size", "11"), ("fill", "#555555")],
            text: "levels as the mixer reported them: each bus's loudest sample per \(n(reportMs, places: 2)) ms, "
                + "in dBFS · \(timeline.sampleRate) Hz, \(timeline.periodFrames)-frame periods"
        )

        // Bus lanes.
        for (index, (bus, colour)) in busColours.enumerated() {
            let top = lanesTop + Double(index) * (laneHeight + laneGap)
            let bottom = top + laneHeight
            func y(_ peak: Float) -> Double {
                let decibels = peak > 0 ? max(floorDecibels, 20 * log10(Double(peak))) : floorDecibels
                return top + min(0, decibels) / floorDecibels * laneHeight
            }
            svg.open(
                "g",
                [
                    ("class", "lane"), ("data-bus", bus.rawValue), ("data-top", n(top)), ("data-bottom", n(bottom)),
                    ("data-floor-db", n(floorDecibels)),
                ]
            )
            svg.element(
                "rect",
                [
                    ("x", n(plotLeft)), ("y", n(top)), ("width", n(plotRight - plotLeft)), ("height", n(laneHeight)),
                    ("fill", "#FAFAFA"), ("stroke", "#CCCCCC"),
                ]
            )
            for decibels in stride(from: 0.0, through: floorDecibels, by: -20) {
                let gridY = top + decibels / floorDecibels * laneHeight
                if decibels != 0 && decibels != floorDecibels {
                    svg.element(
                        "line",
                        [
                            ("x1", n(plotLeft)), ("y1", n(gridY)), ("x2", n(plotRight)), ("y2", n(gridY)),
                            ("stroke", "#E2E2E2"),
                        ]
                    )
                }
                svg.element(
                    "text",
                    [
                        ("x", n(plotLeft - 5)), ("y", n(gridY + 3)), ("font-size", "9"), ("text-anchor", "end"),
                        ("fill", "#777777"),
                    ],
                    text: decibels == 0 ? "0" : "−\(n(-decibels))"
                )
            }
            svg.element(
                "text",
                [("x", "10"), ("y", n(top + 20)), ("font-size", "13"), ("font-weight", "bold"), ("fill", colour)],
                text: bus.rawValue
            )
            svg.element(
                "text",
                [("x", "10"), ("y", n(top + 34)), ("font-size", "9"), ("fill", "#777777")],
                text: "bus, dBFS"
            )
            // A step line per report, merged where the level does not move; the area under it is tinted.
            var steps: [(x: Double, y: Double)] = []
            for level in timeline.levels {
                let startX = x(timeline.seconds(level.start))
                let levelY = (y(level[bus]) * 10).rounded() / 10
                if steps.last?.y != levelY { steps.append((startX, levelY)) }
            }
            if !steps.isEmpty, let last = timeline.levels.last {
                let endX = x(timeline.seconds(last.end))
                var line = "M\(n(steps[0].x)) \(n(steps[0].y))"
                for step in steps.dropFirst() { line += "H\(n(step.x))V\(n(step.y))" }
                line += "H\(n(endX))"
                let area =
                    "M\(n(steps[0].x)) \(n(bottom))V\(n(steps[0].y))" + line.drop { $0 != "H" }
                    + "V\(n(bottom))Z"
                svg.element("path", [("d", area), ("fill", colour), ("fill-opacity", "0.22"), ("stroke", "none")])
                svg.element(
                    "path",
                    [
                        ("class", "level"), ("d", line), ("fill", "none"), ("stroke", colour),
                        ("stroke-width", "1.5"), ("stroke-linejoin", "round"),
                    ]
                )
            }
            svg.close("g")
        }

        // State bands: the text in each segment says the state, so colour is never the only cue.
        let bands: [(String, (ScenarioTimeline.State) -> String, [String: (fill: String, ink: String)])] = [
            ("silence switch", { $0.silenceSwitch.rawValue }, ["silent": ("#D55E00", "#FFFFFF")]),
            ("headphones", { $0.jack.rawValue }, ["plugged": ("#009E73", "#FFFFFF")]),
            (
                "route", { $0.route.name },
                ["speaker": ("#56B4E9", "#222222"), "headphones": ("#009E73", "#FFFFFF")]
            ),
        ]
        for (index, (name, value, colours)) in bands.enumerated() {
            let top = bandsTop + Double(index) * (bandHeight + bandGap)
            svg.open("g", [("class", "state"), ("data-state", name)])
            svg.element(
                "text",
                [
                    ("x", n(plotLeft - 5)), ("y", n(top + 12)), ("font-size", "11"), ("text-anchor", "end"),
                    ("fill", "#333333"),
                ],
                text: name
            )
            // Runs of one value: a change in another band does not split this one.
            var runs: [(start: Double, text: String)] = []
            for state in timeline.states where runs.last?.text != value(state) {
                runs.append((x(Double(state.time.nanoseconds) / 1e9), value(state)))
            }
            for (offset, run) in runs.enumerated() {
                let endX = offset + 1 < runs.count ? runs[offset + 1].start : plotRight
                guard endX > run.start else { continue }
                let style = colours[run.text] ?? ("#EEEEEE", "#555555")
                svg.element(
                    "rect",
                    [
                        ("x", n(run.start)), ("y", n(top)), ("width", n(endX - run.start)), ("height", n(bandHeight)),
                        ("fill", style.fill), ("data-value", run.text),
                    ]
                )
                if textWidth(run.text, size: 10) + 6 < endX - run.start {
                    svg.element(
                        "text",
                        [("x", n(run.start + 4)), ("y", n(top + 12)), ("font-size", "10"), ("fill", style.ink)],
                        text: run.text
                    )
                }
            }
            svg.close("g")
        }

        // The time axis.
        let step = tickStep(for: duration)
        svg.open("g", [("class", "axis")])
        svg.element(
            "line",
            [("x1", n(plotLeft)), ("y1", n(axisY)), ("x2", n(plotRight)), ("y2", n(axisY)), ("stroke", "#333333")]
        )
        var tick = 0
        while Double(tick) * step <= duration + 1e-9 {
            let seconds = Double(tick) * step
            svg.element(
                "line",
                [
                    ("x1", n(x(seconds))), ("y1", n(axisY)), ("x2", n(x(seconds))), ("y2", n(axisY + 5)),
                    ("stroke", "#333333"),
                ]
            )
            svg.element(
                "text",
                [("x", n(x(seconds))), ("y", n(axisY + 17)), ("font-size", "10"), ("text-anchor", "middle")],
                text: n(seconds, places: 2)
            )
            tick += 1
        }
        svg.element(
            "text",
            [
                ("x", n((plotLeft + plotRight) / 2)), ("y", n(axisY + 32)), ("font-size", "11"),
                ("text-anchor", "middle"),
            ],
            text: "time (s)"
        )
        svg.close("g")

        // Event markers over everything else, each line from its label down to the axis.
        for label in labels {
            let top = labelTop + Double(label.row) * rowHeight
            svg.open("g", [("class", "event"), ("data-time", n(label.time, places: 3)), ("data-rules", label.rules)])
            svg.element(
                "line",
                [
                    ("x1", n(label.x)), ("y1", n(top)), ("x2", n(label.x)), ("y2", n(axisY)), ("stroke", "#444444"),
                    ("stroke-width", "1"), ("stroke-dasharray", "4 3"),
                ]
            )
            let anchor: [(String, String)] = label.anchorEnd ? [("text-anchor", "end")] : []
            let textX = label.anchorEnd ? label.x - 3 : label.x + 3
            svg.element(
                "text",
                [("x", n(textX)), ("y", n(top + 10)), ("font-size", "11"), ("fill", "#222222")] + anchor,
                text: label.text
            )
            if !label.rules.isEmpty {
                svg.element(
                    "text",
                    [
                        ("class", "rules"), ("x", n(textX)), ("y", n(top + 22)), ("font-size", "10"),
                        ("font-weight", "bold"), ("fill", "#555555"),
                    ] + anchor,
                    text: label.rules
                )
            }
            svg.close("g")
        }

        // The legend.
        svg.open("g", [("class", "legend")])
        var legendX = plotLeft
        for (bus, colour) in busColours {
            svg.element(
                "rect",
                [
                    ("x", n(legendX)), ("y", n(legendY - 9)), ("width", "18"), ("height", "10"), ("fill", colour),
                    ("fill-opacity", "0.5"), ("stroke", colour),
                ]
            )
            svg.element(
                "text",
                [("x", n(legendX + 23)), ("y", n(legendY)), ("font-size", "11")],
                text: "\(bus.rawValue) bus"
            )
            legendX += 23 + textWidth("\(bus.rawValue) bus", size: 11) + 18
        }
        svg.element(
            "line",
            [
                ("x1", n(legendX)), ("y1", n(legendY - 14)), ("x2", n(legendX)), ("y2", n(legendY + 3)),
                ("stroke", "#444444"), ("stroke-dasharray", "4 3"),
            ]
        )
        svg.element(
            "text",
            [("x", n(legendX + 6)), ("y", n(legendY)), ("font-size", "11")],
            text: "an event, and the rules of the decisions it caused"
        )
        svg.element(
            "text",
            [("x", n(plotLeft)), ("y", n(legendY + 18)), ("font-size", "10"), ("fill", "#555555")],
            text: "Levels are after every gain and fade, before the limiter; silence and anything below "
                + "−\(n(-floorDecibels)) dBFS sit on a lane's bottom line."
        )
        svg.close("g")
        svg.close("svg")
        return svg.text
    }

    /// One event's label and where the staggering put it.
    struct Label {
        var x: Double
        var time: Double
        var text: String
        var rules: String
        var row = 0
        var anchorEnd = false
        /// The horizontal extent of the text.
        var span: ClosedRange<Double> = 0...0
    }

    /// Puts each label in the topmost row where it overlaps no other label, no other marker's line runs through
    /// it, and its own line runs through no label below it; returns how many rows that took.
    ///
    /// Lines run down from their labels, so a label written rightwards of its marker is placed in time order (each
    /// later one below and to the right of its neighbours), and one written leftwards (it would run off the right
    /// edge) in reverse time order. Where that cannot be had (a leftwards label over a marker whose label is in
    /// the top row), it goes where it overlaps no label and the fewest lines cross it.
    static func stagger(_ labels: inout [Label]) -> Int {
        let gap = 6.0
        let strictRows = 12
        for index in labels.indices {
            let textSpan = max(textWidth(labels[index].text, size: 11), textWidth(labels[index].rules, size: 10) * 1.08)
            let x = labels[index].x
            labels[index].anchorEnd = x + 3 + textSpan > width - 4
            labels[index].span = labels[index].anchorEnd ? (x - 3 - textSpan)...(x - 3) : (x + 3)...(x + 3 + textSpan)
        }
        let rightwards = labels.indices.filter { !labels[$0].anchorEnd }
        let leftwards = labels.indices.filter { labels[$0].anchorEnd }.reversed()
        var placed: [Label] = []
        var rows = 0
        for index in rightwards + leftwards {
            var label = labels[index]
            func apart(_ other: Label) -> Bool {
                label.span.upperBound + gap < other.span.lowerBound
                    || other.span.upperBound + gap < label.span.lowerBound
            }
            func uncrossed(_ other: Label) -> Bool {
                if other.row < label.row {  // the other's line runs down through this label's row
                    return !(label.span.lowerBound - 2...label.span.upperBound + 2).contains(other.x)
                }
                // this label's line runs down through the other's row
                return other.row == label.row
                    || !(other.span.lowerBound - 2...other.span.upperBound + 2).contains(label.x)
            }
            func fits(_ row: Int) -> Bool {
                label.row = row
                return placed.allSatisfy { $0.row != row || apart($0) }
            }
            func crossings(_ row: Int) -> Int {
                label.row = row
                return placed.filter { !uncrossed($0) }.count
            }
            if let row = (0..<strictRows).first(where: { fits($0) && crossings($0) == 0 }) {
                label.row = row
            } else {
                // Every row is crossed somewhere: the one crossed least, the topmost of those.
                let candidates = (0...rows).filter(fits)
                label.row = candidates.min { crossings($0) < crossings($1) } ?? rows
            }
            rows = max(rows, label.row + 1)
            placed.append(label)
            labels[index] = label
        }
        return rows
    }

    /// A scenario line as a label: its command without the time, the sound options and the comment.
    static func quote(_ line: Substring) -> String {
        let content = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        let words = content.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst()
        return words.filter { word in
            !["tone=", "sound=", "stream=", "capture="].contains { word.hasPrefix($0) } && word != "loop"
        }.joined(separator: " ")
    }

    static func truncate(_ text: String, to count: Int) -> String {
        text.count <= count ? text : String(text.prefix(count - 1)) + "…"
    }

    /// A generous estimate of `text`'s width in a sans-serif font of `size` px (DejaVu Sans's widths, the widest
    /// of the common defaults), so labels laid out with it do not collide in any of them.
    static func textWidth(_ text: String, size: Double) -> Double {
        var ems = 0.0
        for character in text {
            switch character {
            case "i", "j", "l", "I", ".", ",", ":", ";", "'", "|", "!": ems += 0.30
            case " ", "(", ")", "[", "]", "f", "t", "r": ems += 0.42
            case "m", "w", "M", "W", "…": ems += 0.98
            case "0"..."9": ems += 0.64
            default: ems += character.isUppercase ? 0.74 : 0.62
            }
        }
        return ems * size
    }

    /// Seconds between ticks: about ten ticks across the axis.
    static func tickStep(for duration: Double) -> Double {
        let steps = [0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600]
        return steps.first { duration / $0 <= 12 } ?? 7200
    }

    /// `value` with at most `places` decimals, trailing zeros dropped: short, for the SVG's many coordinates.
    static func n(_ value: Double, places: Int = 1) -> String { DecimalText.trimmed(value, places: places) }
}

/// Builds SVG text with escaped attributes and contents, two spaces per nesting level.
struct SVGWriter {
    private(set) var text = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    private var depth = 0

    mutating func open(_ name: String, _ attributes: [(String, String)]) {
        text += indent + "<\(name)\(Self.attributes(attributes))>\n"
        depth += 1
    }

    mutating func close(_ name: String) {
        depth -= 1
        text += indent + "</\(name)>\n"
    }

    mutating func element(_ name: String, _ attributes: [(String, String)], text content: String? = nil) {
        if let content {
            text += indent + "<\(name)\(Self.attributes(attributes))>\(Self.escape(content))</\(name)>\n"
        } else {
            text += indent + "<\(name)\(Self.attributes(attributes))/>\n"
        }
    }

    private var indent: String { String(repeating: "  ", count: depth) }

    private static func attributes(_ attributes: [(String, String)]) -> String {
        attributes.map { " \($0.0)=\"\(escape($0.1))\"" }.joined()
    }

    static func escape(_ text: String) -> String {
        var out = ""
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            default: out.append(character)
            }
        }
        return out
    }
}
