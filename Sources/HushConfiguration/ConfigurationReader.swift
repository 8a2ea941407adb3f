import HushALSA
import HushCore
import HushGPIO
import HushInput
import HushSystem
import Logging

/// Turns a parsed (and merged) configuration document into a checked ``HushdConfiguration``.
///
/// It reads every section, collects every problem instead of stopping at the first, and names each with its file,
/// line, section, key and value. The limits here are the ones docs/configuration.md states.
final class ConfigurationReader {
    private var problems: [ConfigurationProblem] = []
    private let root: ConfigurationNode
    private var configuration = HushdConfiguration()
    /// Where each input was configured, for messages about two inputs that clash.
    private var inputTables: [HushdConfiguration.InputName: Table] = [:]

    /// The sections and their keys, for unknown-key checks and for telling where a stray key belongs.
    static let sections: [String: [String]] = [
        "board": ["name", "description"],
        "output": [
            "pcm", "rate", "channels", "format", "period_frames", "periods", "max_period_frames", "realtime_priority",
            "fallback_wav",
            "idle_seconds", "keep_warm",
        ],
        "routes": [],
        "inputs": [],
        "buttons": ["repeat_delay_ms", "repeat_interval_ms", "idle_target"],
        "volume": ["curve", "default_system", "default_ringer", "startup_max"],
        "ducking": ["depth_db", "attack_ms", "release_ms"],
        "ramps": ["silence_ms", "volume_ms"],
        "hearing": [
            "start_limit_dba", "momentary_limit_dba", "momentary_seconds", "ceiling_dba", "assumed_full_scale_dba",
        ],
        "buses": [],
        "outputs": [],
        "console": ["device", "baud"],
        "control": [
            "socket", "mode", "group", "max_clients", "max_clients_per_process", "max_sessions_per_client",
            "max_line_bytes", "allowed_uids",
        ],
        "streams": ["max_streams", "max_streams_per_process", "ring_kib_max"],
        "capture": ["pcm", "periods", "privacy_control", "clock"],
        "voice": ["automatic_gain", "noise_suppression"],
        "state": ["file", "write_interval_ms"],
        "alsa_controls": ["enabled", "card"],
        "sounds": ["directories", "startup", "hearing_warning"],
        "log": ["level"],
    ]
    static let routeKeys = ["pcm", "rate", "channels", "format", "switches", "private", "full_scale_dba"]
    static let switchKeys = ["card", "control", "interface", "index", "on", "value"]
    static let gpioKeys = ["kind", "chip", "line", "active_low", "bias", "debounce_ms"]
    /// A GPIO media key also says which key a press means.
    static let gpioMediaKeyKeys = gpioKeys + ["key"]
    static let evdevKeys = ["kind", "device", "code", "codes", "grab", "optional"]
    static let alsaKeys = ["kind", "card", "control", "interface", "index"]
    static let busKeys = ["category", "mix_with_others", "duck_others"]
    static let outputLineKeys = ["kind", "chip", "line", "active_low"]
    /// Evdev names people use with hush, for "did you mean" (libevdev checks the name itself).
    static let commonCodes = [
        "KEY_VOLUMEUP", "KEY_VOLUMEDOWN", "KEY_MUTE", "KEY_PLAYPAUSE", "KEY_PLAY", "KEY_PAUSE", "KEY_NEXTSONG",
        "KEY_PREVIOUSSONG", "SW_HEADPHONE_INSERT", "SW_MUTE_DEVICE", "SW_LINEOUT_INSERT", "SW_JACK_PHYSICAL_INSERT",
    ]

    /// A table being read: its name for messages, where it is, and its entries.
    struct Table {
        /// "output", "inputs.volume_up"; nil at the top level.
        var name: String?
        var node: ConfigurationNode
        var entries: [String: ConfigurationNode]
        /// Put before key names in messages, for tables inside a section ("switches[0].").
        var keyPrefix = ""
    }

    static func read(_ document: ConfigurationNode) throws(ConfigurationError) -> HushdConfiguration {
        let reader = ConfigurationReader(document)
        reader.readAll()
        guard reader.problems.isEmpty else { throw ConfigurationError(reader.problems) }
        return reader.configuration
    }

    private init(_ root: ConfigurationNode) { self.root = root }

    private func readAll() {
        checkTopLevel()
        readBoard()
        readOutput()
        readRoutes()
        readInputs()
        readButtons()
        readVolume()
        readDucking()
        readRamps()
        readHearing()
        readBuses()
        readOutputLines()
        readConsole()
        readControl()
        readStreams()
        readCapture()
        readVoice()
        readState()
        readALSAControls()
        readSounds()
        checkSoundPaths()
        readLog()
        checkSharedLines()
    }

    // MARK: Reporting

    private func report(
        _ table: Table,
        _ key: String?,
        _ node: ConfigurationNode?,
        _ message: String,
        showValue: Bool = true
    ) {
        var text = table.name.map { "[\($0)]" } ?? ""
        if let key {
            text += (text.isEmpty ? "" : " ") + table.keyPrefix + key
            if let node, showValue { text += " = \(node.written)" }
        }
        problems.append(
            ConfigurationProblem(
                file: node?.file ?? table.node.file,
                line: node?.line ?? table.node.line,
                section: table.name,
                key: key.map { table.keyPrefix + $0 },
                message: text.isEmpty ? message : text + ": " + message
            )
        )
    }

    /// Reports a key that must be there and is not, at the table's own line.
    private func missing(_ table: Table, _ key: String, _ why: String) {
        report(table, key, nil, "missing; \(why)")
    }

    private func checkKeys(_ table: Table, known: [String]) {
        for (key, node) in table.entries.sorted(by: { $0.key < $1.key }) where !known.contains(key) {
            var message = "unknown key"
            if let suggestion = Suggestion.closest(to: key, in: known) {
                message += "; did you mean '\(suggestion)'?"
            } else if known.isEmpty {
                message += "; this table takes none"
            } else {
                message += "; known here: " + known.joined(separator: ", ")
            }
            report(table, key, node, message, showValue: false)
        }
    }

    // MARK: Values

    private func integer(
        _ table: Table,
        _ key: String,
        _ range: ClosedRange<Int>,
        _ expectation: String? = nil
    )
        -> Int?
    {
        guard let node = table.entries[key] else { return nil }
        let expected = expectation ?? "must be a whole number from \(range.lowerBound) to \(range.upperBound)"
        guard case .integer(let number) = node.value else {
            report(table, key, node, "\(expected), not \(node.typeName)")
            return nil
        }
        guard range.contains(number) else {
            report(table, key, node, expected)
            return nil
        }
        return number
    }

    private func milliseconds(
        _ table: Table,
        _ key: String,
        _ range: ClosedRange<Int>,
        _ why: String = ""
    )
        -> Duration?
    {
        let expected = "must be a whole number of milliseconds from \(range.lowerBound) to \(range.upperBound)" + why
        return integer(table, key, range, expected).map { .milliseconds($0) }
    }

    private func number(_ table: Table, _ key: String, _ range: ClosedRange<Double>) -> Double? {
        guard let node = table.entries[key] else { return nil }
        let expected = "must be a number from \(Self.format(range.lowerBound)) to \(Self.format(range.upperBound))"
        let value: Double
        switch node.value {
        case .integer(let whole): value = Double(whole)
        case .float(let decimal): value = decimal
        default:
            report(table, key, node, "\(expected), not \(node.typeName)")
            return nil
        }
        guard range.contains(value) else {
            report(table, key, node, expected)
            return nil
        }
        return value
    }

    private static func format(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
    }

    private func string(_ table: Table, _ key: String, allowEmpty: Bool = true) -> String? {
        guard let node = table.entries[key] else { return nil }
        guard case .string(let text) = node.value else {
            report(table, key, node, "must be a string in quotes, not \(node.typeName)")
            return nil
        }
        guard allowEmpty || !text.isEmpty else {
            report(table, key, node, "must not be empty")
            return nil
        }
        return text
    }

    /// A path that must be absolute; "" when `allowEmpty` (meaning none).
    private func path(_ table: Table, _ key: String, allowEmpty: Bool) -> String? {
        guard let text = string(table, key, allowEmpty: allowEmpty) else { return nil }
        guard text.isEmpty || text.hasPrefix("/") else {
            report(table, key, table.entries[key], "must be an absolute path, starting with /")
            return nil
        }
        return text
    }

    private func boolean(_ table: Table, _ key: String) -> Bool? {
        guard let node = table.entries[key] else { return nil }
        guard case .boolean(let flag) = node.value else {
            report(table, key, node, "must be true or false (without quotes), not \(node.typeName)")
            return nil
        }
        return flag
    }

    private func choice<T>(_ table: Table, _ key: String, _ options: [(String, T)]) -> T? {
        guard let node = table.entries[key] else { return nil }
        let names = options.map(\.0)
        let expected = "must be one of " + names.map { "\"\($0)\"" }.joined(separator: ", ")
        guard case .string(let text) = node.value else {
            report(table, key, node, "\(expected), not \(node.typeName)")
            return nil
        }
        guard let match = options.first(where: { $0.0 == text }) else {
            let suggestion = Suggestion.closest(to: text, in: names).map { "; did you mean \"\($0)\"?" } ?? ""
            report(table, key, node, expected + suggestion)
            return nil
        }
        return match.1
    }

    private func lineSelector(_ table: Table, _ key: String) -> GPIOLineSelector? {
        guard let node = table.entries[key] else { return nil }
        switch node.value {
        case .integer(let offset) where (0...65535).contains(offset): return .offset(UInt32(offset))
        case .string(let name) where !name.isEmpty: return .name(name)
        default:
            report(
                table,
                key,
                node,
                "must be a line offset from 0 to 65535 (17 for GPIO17 on a Pi) or a line name in quotes"
            )
            return nil
        }
    }

    // MARK: Sections

    /// The section `name` as a table, if the document has it.
    private func section(_ name: String) -> Table? {
        guard let node = root.table?[name] else { return nil }
        guard let entries = node.table else {
            report(
                Table(name: nil, node: root, entries: [:]),
                name,
                node,
                "must be a table: write [\(name)] and its keys on the lines below"
            )
            return nil
        }
        return Table(name: name, node: node, entries: entries)
    }

    /// The tables inside `section` (`[routes.speaker]` in `[routes]`), in name order.
    private func subtables(of section: Table) -> [(String, Table)] {
        section.entries.sorted { $0.key < $1.key }.compactMap { name, node in
            guard let entries = node.table else {
                report(section, name, node, "must be a table: write [\(section.name ?? "").\(name)] and its keys")
                return nil
            }
            return (name, Table(name: "\(section.name ?? "").\(name)", node: node, entries: entries))
        }
    }

    private func checkTopLevel() {
        let top = Table(name: nil, node: root, entries: root.table ?? [:])
        let known = Self.sections.keys.sorted()
        for (key, node) in top.entries.sorted(by: { $0.key < $1.key }) where Self.sections[key] == nil {
            if node.table != nil {
                let suggestion = Suggestion.closest(to: key, in: known).map { "; did you mean [\($0)]?" }
                problems.append(
                    ConfigurationProblem(
                        file: node.file,
                        line: node.line,
                        section: key,
                        message: "[\(key)]: unknown section"
                            + (suggestion ?? "; sections are " + known.map { "[\($0)]" }.joined(separator: ", "))
                    )
                )
                continue
            }
            var message = "unknown key at the top level"
            if let home = Self.sections.first(where: { $0.value.contains(key) })?.key {
                message += "; it belongs in [\(home)]: put it below that line"
            } else if let suggestion = Suggestion.closest(to: key, in: ["board", "include"] + known) {
                message += "; did you mean '\(suggestion)'?"
            } else {
                message += "; only board = \"NAME\" and include = \"PATH\" go before the first [section]"
            }
            report(top, key, node, message)
        }
    }

    private func readBoard() {
        guard let table = section("board") else { return }
        checkKeys(table, known: Self.sections["board"]!)
        if let name = string(table, "name") { configuration.board.name = name }
        if let description = string(table, "description") { configuration.board.description = description }
    }

    private func readOutput() {
        guard let table = section("output") else {
            configuration.routes = [.speaker: .init(pcm: configuration.output.pcm)]
            return
        }
        checkKeys(table, known: Self.sections["output"]!)
        var output = configuration.output
        if let pcm = string(table, "pcm", allowEmpty: false) { output.pcm = pcm }
        if let rate = integer(table, "rate", 8000...384_000) { output.sampleRate = rate }
        if let channels = integer(table, "channels", 1...2, "must be 1 (mono) or 2 (stereo)") {
            output.channels = channels
        }
        if let format = choice(table, "format", SampleFormat.allCases.map { ($0.rawValue, $0) }) {
            output.format = format
        }
        if let frames = integer(table, "period_frames", 16...8192) { output.periodFrames = frames }
        if let periods = integer(table, "periods", 2...16) { output.periods = periods }
        if let frames = integer(table, "max_period_frames", 16...16384) { output.maxPeriodFrames = frames }
        if let priority = integer(
            table,
            "realtime_priority",
            0...99,
            "must be a whole number from 0 to 99 (0: normal scheduling)"
        ) {
            output.realtimePriority = Int32(priority)
        }
        if let fallback = string(table, "fallback_wav") { output.fallbackWAV = fallback.isEmpty ? nil : fallback }
        if let seconds = number(table, "idle_seconds", 1...3600) { output.idleSeconds = seconds }
        if let warm = boolean(table, "keep_warm") { output.keepWarm = warm }
        configuration.output = output
        configuration.routes = [.speaker: .init(pcm: output.pcm)]
    }

    private func readRoutes() {
        guard let section = section("routes") else { return }
        configuration.routes = [:]
        for (name, table) in subtables(of: section) {
            guard name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" }),
                name.first?.isLetter == true
            else {
                report(table, nil, nil, "a route's name is a letter, then letters, digits, '-' and '_'")
                continue
            }
            checkKeys(table, known: Self.routeKeys)
            var route = HushdConfiguration.RouteSettings(pcm: configuration.output.pcm)
            if let pcm = string(table, "pcm", allowEmpty: false) { route.pcm = pcm }
            let output = configuration.output
            if let rate = integer(table, "rate", 8000...384_000), rate != output.sampleRate {
                report(
                    table,
                    "rate",
                    table.entries["rate"],
                    "must be [output] rate, \(output.sampleRate): a route change keeps the rate "
                        + "(name a plughw: PCM to have ALSA convert)"
                )
            }
            if let channels = integer(table, "channels", 1...2, "must be 1 (mono) or 2 (stereo)"),
                channels != output.channels
            {
                report(
                    table,
                    "channels",
                    table.entries["channels"],
                    "must be [output] channels, \(output.channels): a route change keeps the channels "
                        + "(name a plughw: PCM to have ALSA convert)"
                )
            }
            route.format = choice(table, "format", SampleFormat.allCases.map { ($0.rawValue, $0) })
            route.switches = readSwitches(table, pcm: route.pcm)
            route.isPrivate = boolean(table, "private")
            route.fullScaleDecibelsA = number(table, "full_scale_dba", 40...140)
            configuration.routes[Route(name)] = route
        }
        if configuration.routes[.speaker] == nil {
            report(
                section,
                nil,
                nil,
                "a [routes.speaker] is required: it is where sound goes when no headphones are in"
            )
        }
    }

    private func readSwitches(_ route: Table, pcm: String) -> [HushdConfiguration.MixerSwitch] {
        guard let node = route.entries["switches"] else { return [] }
        guard case .array(let items) = node.value else {
            report(route, "switches", node, "must be an array of tables: [{ control = \"…\", on = true }]")
            return []
        }
        var switches: [HushdConfiguration.MixerSwitch] = []
        for (index, item) in items.enumerated() {
            let prefix = "switches[\(index)]"
            guard let entries = item.table else {
                report(
                    route,
                    prefix,
                    item,
                    "must be a table such as { control = \"Speaker Playback Switch\", on = true }"
                )
                continue
            }
            let table = Table(name: route.name, node: item, entries: entries, keyPrefix: prefix + ".")
            checkKeys(table, known: Self.switchKeys)
            let control = string(table, "control", allowEmpty: false)
            if entries["control"] == nil {
                missing(table, "control", "name the mixer control, as `amixer controls` shows it")
            }
            let interface =
                choice(table, "interface", ALSAControlInterface.allCases.map { ($0.rawValue, $0) }) ?? .mixer
            let elementIndex = integer(table, "index", 0...1023)
            var value: Int?
            switch (entries["on"], entries["value"]) {
            case (_?, _?):
                report(table, "value", entries["value"], "give on = true|false or value = N, not both")
            case (_?, nil): value = boolean(table, "on").map { $0 ? 1 : 0 }
            case (nil, _?): value = integer(table, "value", -1_000_000...1_000_000)
            case (nil, nil): missing(table, "on", "say what to set: on = true or false (or value = N)")
            }
            var card = string(table, "card", allowEmpty: false)
            if entries["card"] == nil {
                card = HushdConfiguration.card(ofPCM: pcm)
                if card == nil {
                    missing(table, "card", "the route's PCM \"\(pcm)\" names no card, so say which: card = \"0\"")
                }
            }
            guard let control, let card, let value else { continue }
            switches.append(
                HushdConfiguration.MixerSwitch(
                    card: card,
                    element: ALSAElementName(control, interface: interface, index: UInt32(elementIndex ?? 0)),
                    value: value
                )
            )
        }
        return switches
    }

    // MARK: Inputs

    private func readInputs() {
        guard let section = section("inputs") else { return }
        let known = HushdConfiguration.InputName.allCases.map(\.rawValue)
        for (name, table) in subtables(of: section) {
            guard let input = HushdConfiguration.InputName(rawValue: name) else {
                let suggestion = Suggestion.closest(to: name, in: known).map { "; did you mean [inputs.\($0)]?" }
                report(
                    table,
                    nil,
                    nil,
                    "unknown input" + (suggestion ?? "; inputs are " + known.joined(separator: ", "))
                )
                continue
            }
            inputTables[input] = table
            guard let kindNode = table.entries["kind"] else {
                missing(
                    table,
                    "kind",
                    "say how the input is read: kind = "
                        + HushdConfiguration.InputKind.allCases.filter { $0 != .none }.map { "\"\($0.rawValue)\"" }
                        .joined(separator: ", ")
                )
                continue
            }
            let kinds = HushdConfiguration.InputKind.allCases.map { ($0.rawValue, $0) }
            guard let kind = choice(table, "kind", kinds) else { continue }
            switch kind {
            case .gpio: readGPIOInput(input, table).map { configuration.inputs[input] = .gpio($0) }
            case .evdev: readEvdevInput(input, table).map { configuration.inputs[input] = .evdev($0) }
            case .alsa: readALSAInput(input, table, kindNode).map { configuration.inputs[input] = .alsa($0) }
            case .terminal:
                checkKeys(table, known: ["kind"])
                configuration.inputs[input] = .terminal
            case .none:
                checkKeys(table, known: ["kind"])
            }
        }
        let headphoneInputs = configuration.inputs.keys.filter(\.isHeadphones).sorted()
        if let first = headphoneInputs.first, configuration.routes[.headphones] == nil, let table = inputTables[first] {
            report(
                table,
                nil,
                nil,
                "headphones need a route to go to: add [routes.headphones] with their pcm (or set kind = \"none\")"
            )
        }
    }

    private func readGPIOInput(_ name: HushdConfiguration.InputName, _ table: Table) -> HushdConfiguration.GPIOInput? {
        checkKeys(table, known: name == .mediaKeys ? Self.gpioMediaKeyKeys : Self.gpioKeys)
        let chip = string(table, "chip", allowEmpty: false)
        if table.entries["chip"] == nil {
            missing(table, "chip", "name the GPIO chip: \"gpiochip0\" or its label, such as \"pinctrl-bcm2711\"")
        }
        let line = lineSelector(table, "line")
        if table.entries["line"] == nil { missing(table, "line", "give the line offset (17 for GPIO17) or its name") }
        let activeLow = boolean(table, "active_low")
        let bias = choice(table, "bias", GPIOBias.allCases.map { ($0.rawValue, $0) })
        let debounce = milliseconds(table, "debounce_ms", 0...1000)
        let keys: [(String, MediaKey)] = [
            ("play_pause", .playPause), ("play", .play), ("pause", .pause), ("next", .next), ("previous", .previous),
        ]
        let key = name == .mediaKeys ? choice(table, "key", keys) ?? .playPause : nil
        guard let chip, let line else { return nil }
        var input = HushdConfiguration.GPIOInput(chip: chip, line: line)
        input.activeLow = activeLow ?? input.activeLow
        input.bias = bias ?? input.bias
        input.debounce = debounce ?? input.debounce
        input.mediaKey = key
        return input
    }

    private func readEvdevInput(
        _ name: HushdConfiguration.InputName,
        _ table: Table
    )
        -> HushdConfiguration.EvdevInput?
    {
        checkKeys(table, known: Self.evdevKeys)
        let device = string(table, "device", allowEmpty: false)
        if table.entries["device"] == nil {
            missing(table, "device", "name the input device, as `evtest` lists it, or give its /dev/input path")
        }
        var codes: [EvdevCode] = []
        var codeNodes: [(key: String, node: ConfigurationNode, text: String)] = []
        switch (table.entries["code"], table.entries["codes"]) {
        case (_?, _?): report(table, "codes", table.entries["codes"], "give code or codes, not both")
        case (let node?, nil):
            if let text = string(table, "code", allowEmpty: false) { codeNodes.append(("code", node, text)) }
        case (nil, let node?):
            guard case .array(let items) = node.value, !items.isEmpty else {
                report(table, "codes", node, "must be an array of code names such as [\"KEY_PLAYPAUSE\"]")
                break
            }
            for (index, item) in items.enumerated() {
                guard case .string(let text) = item.value else {
                    report(table, "codes[\(index)]", item, "must be a code name in quotes, such as \"KEY_PLAYPAUSE\"")
                    continue
                }
                codeNodes.append(("codes[\(index)]", item, text))
            }
        case (nil, nil):
            missing(table, "code", "give the key or switch, such as code = \"KEY_VOLUMEUP\" (evtest shows them)")
        }
        for (key, node, text) in codeNodes {
            guard let code = EvdevCode(name: text) else {
                let suggestion = Suggestion.closest(to: text, in: Self.commonCodes).map { "; did you mean \"\($0)\"?" }
                let hint = suggestion ?? " (KEY_…, BTN_… or SW_…)"
                report(table, key, node, "not an evdev key or switch name" + hint)
                continue
            }
            guard HushdConfiguration.evdevRole(name, code) != nil else {
                report(table, key, node, Self.codeMismatch(name))
                continue
            }
            codes.append(code)
        }
        if name == .silenceSwitch, codes.count > 1 {
            report(table, "codes", table.entries["codes"], "the silence switch is one switch or key: give one code")
        }
        if name == .micPrivacy, codes.count > 1 {
            report(table, "codes", table.entries["codes"], "the microphone privacy switch is one switch: give one code")
        }
        let grab = boolean(table, "grab")
        let optional = boolean(table, "optional")
        guard let device, !codes.isEmpty else { return nil }
        var input = HushdConfiguration.EvdevInput(
            device: device.hasPrefix("/") ? .path(device) : .name(device),
            codes: codes
        )
        input.grab = grab ?? false
        input.optional = optional ?? false
        return input
    }

    private static func codeMismatch(_ name: HushdConfiguration.InputName) -> String {
        switch name {
        case .silenceSwitch: "cannot be the silence switch"
        case .volumeUp, .volumeDown: "a volume button must be a key (KEY_… or BTN_…), not a switch"
        case .headphoneJack, .headphoneSwitch, .headphoneSense:
            "headphones are reported by a switch (SW_…), such as SW_HEADPHONE_INSERT"
        case .mediaKeys:
            "must be one of " + HushdConfiguration.mediaKeyCodes.keys.sorted().joined(separator: ", ")
        case .micPrivacy:
            "the microphone privacy switch must be a switch (SW_…), such as SW_MUTE_DEVICE: a key has no position "
                + "hushd can read at start-up"
        }
    }

    private func readALSAInput(
        _ name: HushdConfiguration.InputName,
        _ table: Table,
        _ kind: ConfigurationNode
    )
        -> HushdConfiguration.ALSAInput?
    {
        checkKeys(table, known: Self.alsaKeys)
        guard name == .silenceSwitch || name.isHeadphones else {
            report(
                table,
                "kind",
                kind,
                "an ALSA control can be the silence_switch or a headphone input, not \(name)"
            )
            return nil
        }
        let card = string(table, "card", allowEmpty: false)
        if table.entries["card"] == nil {
            missing(table, "card", "name the sound card: its id (\"Loopback\"), index (\"0\") or \"hw:…\"")
        }
        let control = string(table, "control", allowEmpty: false) ?? "Headphone Jack"
        let interface = choice(table, "interface", ALSAControlInterface.allCases.map { ($0.rawValue, $0) }) ?? .card
        let index = integer(table, "index", 0...1023) ?? 0
        guard let card else { return nil }
        return HushdConfiguration.ALSAInput(
            card: card,
            element: ALSAElementName(control, interface: interface, index: UInt32(index))
        )
    }

    /// Two inputs (or an input and an output) on one GPIO line, evdev code or ALSA control cannot both have it.
    private func checkSharedLines() {
        var gpio: [String: String] = [:]
        var evdev: [String: String] = [:]
        var alsa: [String: String] = [:]
        func place(_ node: ConfigurationNode?, in table: Table) -> String {
            let node = node ?? table.node
            return "[\(table.name ?? "")] (\(node.file):\(node.line ?? 0))"
        }
        func claim(_ registry: inout [String: String], _ key: String, _ what: String, _ table: Table, _ entry: String) {
            let node = table.entries[entry]
            if let owner = registry[key] {
                report(table, entry, node, "\(what) is already used by \(owner); each can be one input or output only")
            } else {
                registry[key] = place(node, in: table)
            }
        }
        for name in configuration.inputs.keys.sorted() {
            guard let table = inputTables[name] else { continue }
            switch configuration.inputs[name] {
            case .gpio(let input):
                claim(
                    &gpio,
                    "\(input.chip)\u{0}\(input.line)",
                    "\(input.line) of chip \"\(input.chip)\"",
                    table,
                    "line"
                )
            case .evdev(let input):
                for code in input.codes {
                    let entry = table.entries["code"] != nil ? "code" : "codes"
                    claim(&evdev, "\(input.device)\u{0}\(code)", "\(code) of device \(input.device)", table, entry)
                }
            case .alsa(let input):
                let key = "\(input.card)\u{0}\(input.element)"
                claim(&alsa, key, "control \(input.element) of card \"\(input.card)\"", table, "control")
            case .terminal, nil: continue
            }
        }
        for name in configuration.outputs.keys.sorted(by: { $0.rawValue < $1.rawValue }) {
            guard let output = configuration.outputs[name], let node = root.table?["outputs"]?.table?[name.rawValue],
                let entries = node.table
            else { continue }
            let table = Table(name: "outputs.\(name)", node: node, entries: entries)
            claim(
                &gpio,
                "\(output.chip)\u{0}\(output.line)",
                "\(output.line) of chip \"\(output.chip)\"",
                table,
                "line"
            )
        }
    }

    // MARK: Policy sections

    private func readButtons() {
        guard let table = section("buttons") else { return }
        checkKeys(table, known: Self.sections["buttons"]!)
        if let delay = milliseconds(table, "repeat_delay_ms", 50...5000) { configuration.buttons.repeatDelay = delay }
        if let interval = milliseconds(table, "repeat_interval_ms", 20...2000) {
            configuration.buttons.repeatInterval = interval
        }
        if let target = choice(table, "idle_target", VolumeKind.allCases.map { ($0.rawValue, $0) }) {
            configuration.buttons.idleTarget = target
        }
    }

    private func readVolume() {
        guard let table = section("volume") else { return }
        checkKeys(table, known: Self.sections["volume"]!)
        let steps = 0...VolumeStep.count
        let expected = "must be a whole number from 0 to \(VolumeStep.count) (the volume steps)"
        if let step = integer(table, "default_system", steps, expected) {
            configuration.volume.defaultSystem = VolumeStep(clamping: step)
        }
        if let step = integer(table, "default_ringer", steps, expected) {
            configuration.volume.defaultRinger = VolumeStep(clamping: step)
        }
        if let step = integer(table, "startup_max", steps, expected) {
            configuration.volume.startupMaximum = VolumeStep(clamping: step)
        }
        guard let node = table.entries["curve"] else { return }
        let shape = "must be [step, dB] pairs from step 1 to step \(VolumeStep.count), such as [[1, -50], [16, 0]]"
        guard case .array(let items) = node.value else {
            report(table, "curve", node, shape)
            return
        }
        var anchors: [(step: Int, decibels: Float)] = []
        for (index, item) in items.enumerated() {
            guard case .array(let pair) = item.value, pair.count == 2, case .integer(let step) = pair[0].value,
                let decibels = Self.decimal(pair[1])
            else {
                report(table, "curve[\(index)]", item, shape)
                return
            }
            anchors.append((step, Float(decibels)))
        }
        do {
            configuration.volume.curve = try VolumeCurve(anchors: anchors)
        } catch {
            report(table, "curve", node, error.description.replacing("volume curve ", with: ""))
        }
    }

    private static func decimal(_ node: ConfigurationNode) -> Double? {
        switch node.value {
        case .integer(let whole): Double(whole)
        case .float(let value): value
        default: nil
        }
    }

    private func readDucking() {
        guard let table = section("ducking") else { return }
        checkKeys(table, known: Self.sections["ducking"]!)
        if let depth = number(table, "depth_db", -60...0) { configuration.ducking.depthDecibels = Float(depth) }
        if let attack = milliseconds(table, "attack_ms", 0...5000) { configuration.ducking.attack = attack }
        if let release = milliseconds(table, "release_ms", 0...10000) { configuration.ducking.release = release }
    }

    private func readHearing() {
        guard let table = section("hearing") else { return }
        checkKeys(table, known: Self.sections["hearing"]!)
        var hearing = configuration.hearing
        if let limit = number(table, "start_limit_dba", 60...100) { hearing.startLimit = limit }
        if let limit = number(table, "momentary_limit_dba", 80...120) { hearing.momentaryLimit = limit }
        if let seconds = integer(table, "momentary_seconds", 1...60) { hearing.momentarySeconds = seconds }
        if let ceiling = number(table, "ceiling_dba", 40...120) { hearing.ceiling = ceiling }
        if let assumed = number(table, "assumed_full_scale_dba", 60...140) { hearing.assumedFullScale = assumed }
        if let ceiling = hearing.ceiling, ceiling < hearing.startLimit {
            hearing.startLimit = ceiling
        }
        configuration.hearing = hearing
    }

    private func readRamps() {
        guard let table = section("ramps") else { return }
        checkKeys(table, known: Self.sections["ramps"]!)
        if let silence = milliseconds(table, "silence_ms", 0...20, " (policy R1: the switch acts within 20 ms)") {
            configuration.ramps.silence = silence
        }
        if let volume = milliseconds(table, "volume_ms", 0...1000) { configuration.ramps.volume = volume }
    }

    private func readBuses() {
        guard let section = section("buses") else { return }
        let known = Bus.allCases.map(\.rawValue)
        for (name, table) in subtables(of: section) {
            guard let bus = Bus(rawValue: name) else {
                let suggestion = Suggestion.closest(to: name, in: known).map { "; did you mean [buses.\($0)]?" }
                report(table, nil, nil, "unknown bus" + (suggestion ?? "; buses are " + known.joined(separator: ", ")))
                continue
            }
            checkKeys(table, known: Self.busKeys)
            var settings = configuration.buses[bus] ?? HushdConfiguration.BusSettings(category: .playback)
            let categories = HushCore.Category.allCases.filter { $0 != .record }.map { ($0.rawValue, $0) }
            if case .string("record")? = table.entries["category"]?.value {
                report(table, "category", table.entries["category"], "record is capture only: a bus plays sound")
            } else if let category = choice(table, "category", categories) {
                settings.category = category
            }
            for (key, option) in [("mix_with_others", CategoryOptions.mixWithOthers), ("duck_others", .duckOthers)] {
                guard let flag = boolean(table, key) else { continue }
                if flag { settings.options.insert(option) } else { settings.options.remove(option) }
            }
            configuration.buses[bus] = settings
        }
    }

    private func readOutputLines() {
        guard let section = section("outputs") else { return }
        let known = HushdConfiguration.OutputName.allCases.map(\.rawValue)
        for (name, table) in subtables(of: section) {
            guard let output = HushdConfiguration.OutputName(rawValue: name) else {
                let suggestion = Suggestion.closest(to: name, in: known).map { "; did you mean [outputs.\($0)]?" }
                report(
                    table,
                    nil,
                    nil,
                    "unknown output" + (suggestion ?? "; outputs are " + known.joined(separator: ", "))
                )
                continue
            }
            checkKeys(table, known: Self.outputLineKeys)
            let kind =
                table.entries["kind"] == nil ? "gpio" : choice(table, "kind", [("gpio", "gpio"), ("none", "none")])
            guard kind == "gpio" else { continue }
            let chip = string(table, "chip", allowEmpty: false)
            if table.entries["chip"] == nil { missing(table, "chip", "name the GPIO chip the line is on") }
            let line = lineSelector(table, "line")
            if table.entries["line"] == nil { missing(table, "line", "give the line offset or name") }
            let activeLow = boolean(table, "active_low")
            guard let chip, let line else { continue }
            var settings = HushdConfiguration.OutputLineSettings(chip: chip, line: line)
            settings.activeLow = activeLow ?? false
            configuration.outputs[output] = settings
        }
    }

    // MARK: Daemon sections

    private func readConsole() {
        guard let table = section("console") else { return }
        checkKeys(table, known: Self.sections["console"]!)
        if let device = path(table, "device", allowEmpty: true) {
            configuration.console.device = device.isEmpty ? nil : device
        }
        if let node = table.entries["baud"] {
            // The console's own list: a speed accepted here is one SerialConsole can set.
            if case .integer(let bits) = node.value, let baud = BaudRate(bits) {
                configuration.console.baud = baud
            } else {
                report(table, "baud", node, "must be a standard rate: " + BaudRate.supportedList)
            }
        }
    }

    private func readControl() {
        guard let table = section("control") else { return }
        checkKeys(table, known: Self.sections["control"]!)
        var control = configuration.control
        if let socket = path(table, "socket", allowEmpty: false) {
            // sun_path holds 108 bytes with the terminating NUL.
            if socket.utf8.count > 107 {
                report(table, "socket", table.entries["socket"], "is longer than a socket path may be (107 bytes)")
            } else {
                control.socket = socket
            }
        }
        if let node = table.entries["mode"] {
            let expected = "must be permissions in octal, \"0660\" or 0o660 (a plain 660 is decimal in TOML)"
            switch node.value {
            case .integer(let mode) where (0...0o777).contains(mode): control.mode = UInt32(mode)
            case .string(let text) where (3...4).contains(text.count):
                if let mode = UInt32(text, radix: 8), mode <= 0o777 {
                    control.mode = mode
                } else {
                    report(table, "mode", node, expected)
                }
            default: report(table, "mode", node, expected)
            }
        }
        if let group = string(table, "group") {
            control.group = group.isEmpty ? nil : group
            control.groupGiven = true
        }
        if let clients = integer(table, "max_clients", 1...1024) { control.maxClients = clients }
        if let clients = integer(table, "max_clients_per_process", 1...1024) { control.maxClientsPerProcess = clients }
        if let sessions = integer(table, "max_sessions_per_client", 1...256) { control.maxSessionsPerClient = sessions }
        if let bytes = integer(table, "max_line_bytes", 1024...16_777_216) { control.maxLineBytes = bytes }
        if let node = table.entries["allowed_uids"] {
            var uids: [UInt32] = []
            if case .array(let items) = node.value {
                for (index, item) in items.enumerated() {
                    if case .integer(let uid) = item.value, (0...4_294_967_294).contains(uid) {
                        uids.append(UInt32(uid))
                    } else {
                        report(
                            table,
                            "allowed_uids[\(index)]",
                            item,
                            "must be a user id, a whole number (id -u shows it)"
                        )
                    }
                }
                control.allowedUIDs = uids
            } else {
                report(table, "allowed_uids", node, "must be an array of user ids, such as [1000]")
            }
        }
        configuration.control = control
    }

    private func readStreams() {
        guard let table = section("streams") else { return }
        checkKeys(table, known: Self.sections["streams"]!)
        if let count = integer(table, "max_streams", 1...64) { configuration.streams.maxStreams = count }
        if let count = integer(table, "max_streams_per_process", 1...64) {
            configuration.streams.maxStreamsPerProcess = count
        }
        if let kibibytes = integer(table, "ring_kib_max", 16...512) { configuration.streams.ringKiBMax = kibibytes }
    }

    private func readCapture() {
        guard let table = section("capture") else { return }
        checkKeys(table, known: Self.sections["capture"]!)
        let pcm = string(table, "pcm")
        let periods = integer(table, "periods", 2...16)
        if table.entries["pcm"] == nil, let node = table.entries["periods"] {
            report(table, "periods", node, "needs pcm: the microphone's ALSA PCM (\"\" for none)")
        }
        let privacyControl = string(table, "privacy_control")
        // "" takes a board profile's microphone away: capture streams get silence.
        guard let pcm, !pcm.isEmpty else { return }
        var capture = HushdConfiguration.Capture(pcm: pcm, periods: periods)
        if let privacyControl { capture.privacyControl = privacyControl.isEmpty ? nil : privacyControl }
        switch choice(table, "clock", [("auto", 0), ("match", 1), ("shared", 2)]) {
        case 1: capture.matchClock = true
        case 2: capture.matchClock = false
        default: break
        }
        configuration.capture = capture
    }

    private func readVoice() {
        guard let table = section("voice") else { return }
        checkKeys(table, known: Self.sections["voice"]!)
        if let on = boolean(table, "automatic_gain") { configuration.voice.automaticGain = on }
        if let on = boolean(table, "noise_suppression") { configuration.voice.noiseSuppression = on }
    }

    private func readState() {
        guard let table = section("state") else { return }
        checkKeys(table, known: Self.sections["state"]!)
        if let file = path(table, "file", allowEmpty: true) { configuration.state.file = file.isEmpty ? nil : file }
        if let interval = milliseconds(table, "write_interval_ms", 100...60000) {
            configuration.state.writeInterval = interval
        }
    }

    private func readALSAControls() {
        guard let table = section("alsa_controls") else { return }
        checkKeys(table, known: Self.sections["alsa_controls"]!)
        if let enabled = boolean(table, "enabled") { configuration.alsaControls.enabled = enabled }
        if let card = string(table, "card") { configuration.alsaControls.card = card.isEmpty ? nil : card }
    }

    private func readSounds() {
        guard let table = section("sounds") else { return }
        checkKeys(table, known: Self.sections["sounds"]!)
        for (key, keyPath) in Self.soundKeys {
            guard let node = table.entries[key] else { continue }
            if case .string(let path) = node.value, path.isEmpty || path.hasPrefix("/") {
                configuration.sounds[keyPath: keyPath] = path.isEmpty ? nil : path
            } else {
                report(table, key, node, "must be the absolute path of a sound file in quotes, or \"\" for none")
            }
        }
        guard let node = table.entries["directories"] else { return }
        guard case .array(let items) = node.value else {
            report(
                table,
                "directories",
                node,
                "must be an array of absolute paths, such as [\"/usr/share/hush/sounds\"]"
            )
            return
        }
        var directories: [String] = []
        for (index, item) in items.enumerated() {
            guard case .string(let path) = item.value, path.hasPrefix("/") else {
                report(table, "directories[\(index)]", item, "must be an absolute path in quotes, starting with /")
                continue
            }
            directories.append(path)
        }
        configuration.sounds.directories = directories
    }

    /// The sounds hushd plays of its own accord: the start-up sound (R25), the hearing warning's (R30).
    static var soundKeys: [(String, WritableKeyPath<HushdConfiguration.Sounds, String?>)] {
        [("startup", \.startup), ("hearing_warning", \.hearingWarning)]
    }

    /// hushd's own sounds must be where hushd plays sounds from (`directories`): hushd would refuse them.
    private func checkSoundPaths() {
        guard let table = section("sounds") else { return }
        let directories = configuration.sounds.directories
        for (key, keyPath) in Self.soundKeys {
            guard let path = configuration.sounds[keyPath: keyPath], let node = table.entries[key] else { continue }
            guard !directories.contains(where: { path.hasPrefix($0.hasSuffix("/") ? $0 : $0 + "/") }) else { continue }
            let listed = directories.isEmpty ? "none" : directories.joined(separator: ", ")
            report(
                table,
                key,
                node,
                "\(path) is not in [sounds] directories (\(listed)): hushd plays sounds only from there"
            )
        }
    }

    private func readLog() {
        guard let table = section("log") else { return }
        checkKeys(table, known: Self.sections["log"]!)
        if let level = choice(table, "level", Logger.Level.allCases.map { ($0.rawValue, $0) }) {
            configuration.log.level = level
        }
    }
}
