import Foundation
import HushConsole
import HushCore
import HushGPIO
import HushSystem
import HushTesting
import Testing

@testable import HushConfiguration
@testable import HushDaemon

/// `hushd check-config` says what hushd does, byte for byte: what it prints about an output or a route's PCM that
/// does not open must be what Daemon.start and the route retry do (start without sound, wait), not a failure.
@Suite("check-config's words")
struct CheckConfigTests {
    /// The `output` and `routes` lines of check-config's summary for `text`.
    static func outputAndRoutes(_ text: String) throws -> [String] {
        let directory = try ScratchDirectory(prefix: "check-config-words")
        let path = directory.path + "/hushd.toml"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        let outcome = HushdCheckConfig.check(["--config", path])
        #expect(outcome.status == 0 && outcome.errors.isEmpty, "\(outcome.errors)")
        let lines = outcome.output.split(separator: "\n").map(String.init)
        guard let start = lines.firstIndex(where: { $0.hasPrefix("output ") }),
            let end = lines.firstIndex(where: { $0.hasPrefix("inputs ") })
        else {
            Issue.record("no output or inputs line in \(outcome.output)")
            return []
        }
        return Array(lines[start..<end])
    }

    @Test("a PCM that does not open: hushd starts without sound and opens it when it appears; routes wait")
    func missingPCMIsWaitedFor() throws {
        let text = """
            [output]
            pcm = "hw:Loopback,0,0"
            period_frames = 512
            [routes.speaker]
            pcm = "hw:Loopback,0,0"
            [routes.headphones]
            pcm = "hw:Loopback,0,1"
            """
        #expect(
            try Self.outputAndRoutes(text) == [
                "output    hw:Loopback,0,0: 48000 Hz, 2 ch, S16_LE, 512-frame periods × 3",
                "          real-time priority 70",
                "          if the PCM does not open at start, hushd starts without sound and opens it when it appears",
                "          (tried every 250 ms); it must then grant 48000 Hz, 2 ch and 512-frame periods, or it stays "
                    + "closed and the log says what it offers",
                "routes    speaker     hw:Loopback,0,0",
                "          headphones  hw:Loopback,0,1",
                "          a route's PCM that does not open (busy, card missing) is waited for: the sound stays "
                    + "where it",
                "          plays and hushd tries the PCM again after 250 ms, then at most every 2 s",
            ]
        )
    }

    @Test("with fallback_wav the sound goes to the file; routes on the output's PCM have nothing to wait for")
    func fallbackFile() throws {
        let text = """
            [output]
            pcm = "default"
            realtime_priority = 0
            fallback_wav = "/tmp/hushd-output.wav"
            """
        #expect(
            try Self.outputAndRoutes(text) == [
                "output    default: 48000 Hz, 2 ch, S16_LE, 64-frame periods × 3",
                "          real-time priority none (normal scheduling)",
                "          if the PCM does not open at start, sound goes to the WAV file /tmp/hushd-output.wav",
                "routes    speaker     default",
            ]
        )
    }
}

/// Every key of the configuration, with values check-config accepts and values it refuses: what it accepts, hushd's
/// own start-up takes (up to the hardware); what it refuses is named with its file, line and key. The keys come
/// from ConfigurationReader's lists, so a key added there without a case here fails this suite.
@Suite("every configuration key: check-config and start-up agree")
struct EveryKeyTests {
    /// One key: where it goes (`{}` is the value), how messages name it, and values on each side of its domain.
    struct KeyCase {
        var key: String
        var template: String
        var label: String
        var accepted: [String]
        var refused: [String]
    }

    /// The keys ConfigurationReader knows, as "section.key" ("routes.rate", "switches.card", "gpio.debounce_ms").
    static var readerKeys: Set<String> {
        var keys = Set<String>()
        for (section, names) in ConfigurationReader.sections { keys.formUnion(names.map { "\(section).\($0)" }) }
        let tables: [(String, [String])] = [
            ("routes", ConfigurationReader.routeKeys), ("switches", ConfigurationReader.switchKeys),
            ("gpio", ConfigurationReader.gpioMediaKeyKeys), ("evdev", ConfigurationReader.evdevKeys),
            ("alsa", ConfigurationReader.alsaKeys), ("buses", ConfigurationReader.busKeys),
            ("outputs", ConfigurationReader.outputLineKeys),
        ]
        for (table, names) in tables { keys.formUnion(names.map { "\(table).\($0)" }) }
        keys.insert("inputs.kind")
        return keys
    }

    /// A table `header` with `base` keys, `key` given the value `{}` (replacing its base value, or added).
    static func table(_ header: String, _ base: [(String, String)], _ key: String) -> String {
        var lines = [header]
        var placed = false
        for (name, value) in base {
            if name == key {
                lines.append("\(name) = {}")
                placed = true
            } else {
                lines.append("\(name) = \(value)")
            }
        }
        if !placed { lines.append("\(key) = {}") }
        return lines.joined(separator: "\n")
    }

    static func cases(scratch: String) -> [KeyCase] {
        func plain(_ section: String, _ key: String, _ accepted: [String], _ refused: [String]) -> KeyCase {
            KeyCase(
                key: "\(section).\(key)",
                template: "[\(section)]\n\(key) = {}",
                label: "[\(section)] \(key)",
                accepted: accepted,
                refused: refused
            )
        }
        func switchCase(_ key: String, _ base: String, _ accepted: [String], _ refused: [String]) -> KeyCase {
            KeyCase(
                key: "switches.\(key)",
                template: "[routes.speaker]\npcm = \"hw:0\"\nswitches = [{ \(base)\(key) = {} }]",
                label: "[routes.speaker] switches[0].\(key)",
                accepted: accepted,
                refused: refused
            )
        }
        func input(
            _ kind: String,
            _ name: String,
            _ base: [(String, String)],
            _ key: String,
            _ accepted: [String],
            _ refused: [String]
        ) -> KeyCase {
            KeyCase(
                key: "\(kind).\(key)",
                template: table("[inputs.\(name)]", base, key),
                label: "[inputs.\(name)] \(key)",
                accepted: accepted,
                refused: refused
            )
        }
        let gpio = [("kind", "\"gpio\""), ("chip", "\"gpiochip0\""), ("line", "17")]
        let evdev = [("kind", "\"evdev\""), ("device", "\"hush-controls\""), ("code", "\"KEY_VOLUMEUP\"")]
        let alsa = [("kind", "\"alsa\""), ("card", "\"Loopback\"")]
        let led = [("kind", "\"gpio\""), ("chip", "\"gpiochip0\""), ("line", "\"led\"")]
        let flags = (["true", "false"], ["1", "\"yes\""])
        // sun_path holds 107 bytes and the NUL: the longest path the reader takes must bind.
        let longest = scratch + "/" + String(repeating: "s", count: 107 - scratch.utf8.count - 1)
        var cases = [
            plain("board", "name", ["\"pi\"", "\"\""], ["5"]),
            plain("board", "description", ["\"a board\""], ["true"]),
            plain("output", "pcm", ["\"hw:0\"", "\"default\""], ["\"\"", "1"]),
            plain("output", "rate", ["8000", "48000", "384000"], ["7999", "384001", "\"48000\""]),
            plain("output", "channels", ["1", "2"], ["0", "3"]),
            plain("output", "format", SampleFormatNames.all, ["\"S8\"", "16"]),
            plain("output", "period_frames", ["16", "64", "8192"], ["15", "8193"]),
            plain("output", "periods", ["2", "16"], ["1", "17"]),
            plain("output", "max_period_frames", ["16", "1024", "16384"], ["15", "16385", "\"1024\""]),
            plain("output", "realtime_priority", ["0", "1", "99"], ["-1", "100"]),
            plain("output", "fallback_wav", ["\"\"", "\"hushd-output.wav\"", "\"/tmp/out.wav\""], ["1"]),
            plain("output", "idle_seconds", ["1", "2.5", "3600"], ["0", "0.5", "3601", "\"5\""]),
            plain("output", "keep_warm", ["true", "false"], ["1", "\"yes\""]),
            plain("buttons", "repeat_delay_ms", ["50", "5000"], ["49", "5001"]),
            plain("buttons", "repeat_interval_ms", ["20", "2000"], ["19", "2001"]),
            plain("buttons", "idle_target", VolumeKind.allCases.map { "\"\($0.rawValue)\"" }, ["\"music\""]),
            plain(
                "volume",
                "curve",
                ["[[1, -50], [16, 0]]", "[[1, -40], [8, -20], [16, -1.5]]"],
                ["[[1, -50]]", "[[1, 0], [16, 0]]", "[[1, -50], [16, 3]]", "5"]
            ),
            plain("volume", "default_system", ["0", "16"], ["-1", "17"]),
            plain("volume", "default_ringer", ["0", "16"], ["-1", "17"]),
            plain("volume", "startup_max", ["0", "16"], ["-1", "17"]),
            plain("ducking", "depth_db", ["-60", "0", "-14.5"], ["-60.5", "1"]),
            plain("ducking", "attack_ms", ["0", "5000"], ["-1", "5001"]),
            plain("ducking", "release_ms", ["0", "10000"], ["10001"]),
            plain("ramps", "silence_ms", ["0", "20"], ["21"]),
            plain("ramps", "volume_ms", ["0", "1000"], ["1001"]),
            plain("hearing", "start_limit_dba", ["60", "85", "100"], ["59", "101", "\"85\""]),
            plain("hearing", "momentary_limit_dba", ["80", "100", "120"], ["79", "121"]),
            plain("hearing", "momentary_seconds", ["1", "60"], ["0", "61", "2.5"]),
            plain("hearing", "ceiling_dba", ["40", "80.5", "120"], ["39", "121"]),
            plain("hearing", "assumed_full_scale_dba", ["60", "110", "140"], ["59", "141"]),
            plain("console", "device", ["\"\"", "\"/dev/ttyAMA0\""], ["\"ttyAMA0\""]),
            plain(
                "console",
                "baud",
                BaudRate.supported.map { "\($0.0)" },
                ["1200", "2400", "4800", "115201", "\"115200\""]
            ),
            plain("control", "socket", ["\"\(longest)\""], ["\"control.sock\"", "\"\(longest)s\""]),
            plain("control", "mode", ["\"0660\"", "0o600", "0o777", "0"], ["\"0999\"", "0o1000", "\"66\""]),
            plain("control", "group", ["\"audio\"", "\"root\"", "\"\""], ["\"no-such-group-hush\""]),
            plain("control", "max_clients", ["1", "1024"], ["0", "1025"]),
            plain("control", "max_clients_per_process", ["1", "1024"], ["0", "1025", "\"16\""]),
            plain("streams", "max_streams", ["1", "32", "64"], ["0", "65", "\"32\""]),
            plain("streams", "max_streams_per_process", ["1", "64"], ["0", "65"]),
            plain("streams", "ring_kib_max", ["16", "256", "512"], ["15", "513", "2.5"]),
            plain("capture", "pcm", ["\"hw:CARD=Mic,DEV=0\"", "\"default\"", "\"\""], ["1", "true"]),
            KeyCase(
                key: "capture.periods",
                template: "[capture]\npcm = \"default\"\nperiods = {}",
                label: "[capture] periods",
                accepted: ["2", "4", "16"],
                refused: ["1", "17", "\"4\""]
            ),
            KeyCase(
                key: "capture.privacy_control",
                template: "[capture]\npcm = \"default\"\nprivacy_control = {}",
                label: "[capture] privacy_control",
                accepted: ["\"Capture Switch\"", "\"\""],
                refused: ["0", "true"]
            ),
            KeyCase(
                key: "capture.clock",
                template: "[capture]\npcm = \"default\"\nclock = {}",
                label: "[capture] clock",
                accepted: ["\"auto\"", "\"match\"", "\"shared\""],
                refused: ["\"drift\"", "true"]
            ),
            plain("voice", "automatic_gain", flags.0, flags.1),
            plain("voice", "noise_suppression", flags.0, flags.1),
            plain("control", "max_sessions_per_client", ["1", "256"], ["0", "257"]),
            plain("control", "max_line_bytes", ["1024", "16777216"], ["1023", "16777217"]),
            plain("control", "allowed_uids", ["[]", "[0, 1000, 4294967294]"], ["[4294967295]", "[-1]", "1000"]),
            plain("state", "file", ["\"\"", "\"/var/lib/hush/state\""], ["\"state\""]),
            plain("state", "write_interval_ms", ["100", "60000"], ["99", "60001"]),
            plain("alsa_controls", "enabled", flags.0, flags.1),
            plain("alsa_controls", "card", ["\"\"", "\"Loopback\""], ["0"]),
            plain("sounds", "directories", ["[]", "[\"/usr/share/hush/sounds\"]"], ["[\"sounds\"]", "\"/usr\""]),
            plain(
                "sounds",
                "startup",
                ["\"\"", "\"/usr/share/hush/sounds/startup.wav\""],
                ["\"startup.wav\"", "\"/tmp/startup.wav\"", "1"]
            ),
            plain(
                "sounds",
                "hearing_warning",
                ["\"\"", "\"/usr/share/hush/sounds/hearing-warning.wav\""],
                ["\"warning.wav\"", "\"/tmp/warning.wav\"", "1"]
            ),
            plain("log", "level", ["\"trace\"", "\"info\"", "\"critical\""], ["\"verbose\""]),
            plain("routes.speaker", "pcm", ["\"hw:0,0\""], ["\"\""]),
            plain("routes.speaker", "rate", ["48000"], ["44100"]),
            plain("routes.speaker", "channels", ["2"], ["1"]),
            plain("routes.speaker", "format", SampleFormatNames.all, ["\"S16\""]),
            plain("routes.speaker", "private", flags.0, flags.1),
            plain("routes.speaker", "full_scale_dba", ["40", "95.5", "140"], ["39", "141", "\"95\""]),
            plain(
                "routes.speaker",
                "switches",
                ["[]", "[{ card = \"0\", control = \"Amp\", on = true }]"],
                ["5", "[5]"]
            ),
            switchCase("card", "control = \"Amp\", on = true, ", ["\"0\"", "\"Dummy\""], ["\"\"", "0"]),
            switchCase("control", "on = true, ", ["\"Amp\""], ["\"\"", "1"]),
            switchCase(
                "interface",
                "control = \"Amp\", on = true, ",
                ["\"mixer\"", "\"card\"", "\"pcm\""],
                ["\"mixr\""]
            ),
            switchCase("index", "control = \"Amp\", on = true, ", ["0", "1023"], ["-1", "1024"]),
            switchCase("on", "control = \"Amp\", ", flags.0, flags.1),
            switchCase("value", "control = \"Amp\", ", ["0", "-1000000", "1000000"], ["1000001", "true"]),
            input("gpio", "volume_up", gpio, "kind", ["\"gpio\""], ["\"gpoi\""]),
            input("gpio", "volume_up", gpio, "chip", ["\"gpiochip0\"", "\"pinctrl-bcm2711\""], ["\"\"", "0"]),
            input("gpio", "volume_up", gpio, "line", ["0", "17", "65535", "\"volume-up\""], ["-1", "65536", "\"\""]),
            input("gpio", "volume_up", gpio, "active_low", flags.0, flags.1),
            input("gpio", "volume_up", gpio, "bias", GPIOBias.allCases.map { "\"\($0.rawValue)\"" }, ["\"pullup\""]),
            input("gpio", "volume_up", gpio, "debounce_ms", ["0", "1000"], ["-1", "1001"]),
            input("gpio", "media_keys", gpio, "key", ["\"play_pause\"", "\"next\"", "\"previous\""], ["\"stop\""]),
            input("inputs", "volume_up", [], "kind", ["\"terminal\"", "\"none\""], ["\"keyboard\""]),
            input("evdev", "volume_up", evdev, "kind", ["\"evdev\""], ["\"evdv\""]),
            input("evdev", "volume_up", evdev, "device", ["\"hush-controls\"", "\"/dev/input/event0\""], ["\"\""]),
            input(
                "evdev",
                "volume_up",
                evdev,
                "code",
                ["\"KEY_VOLUMEUP\"", "\"BTN_0\""],
                ["\"KEY_NOPE\"", "\"SW_HEADPHONE_INSERT\""]
            ),
            input(
                "evdev",
                "volume_up",
                evdev.filter { $0.0 != "code" },
                "codes",
                ["[\"KEY_VOLUMEUP\"]", "[\"KEY_VOLUMEUP\", \"BTN_0\"]"],
                ["[]", "[5]", "[\"KEY_MUTE\", \"SW_LID\"]"]
            ),
            input("evdev", "volume_up", evdev, "grab", flags.0, flags.1),
            input("evdev", "volume_up", evdev, "optional", flags.0, flags.1),
            input("alsa", "silence_switch", alsa, "kind", ["\"alsa\""], ["\"alas\""]),
            input("alsa", "silence_switch", alsa, "card", ["\"Loopback\"", "\"0\"", "\"hw:0\""], ["\"\""]),
            input("alsa", "silence_switch", alsa, "control", ["\"Mute Switch\""], ["\"\""]),
            input("alsa", "silence_switch", alsa, "interface", ["\"card\"", "\"mixer\"", "\"pcm\""], ["\"cad\""]),
            input("alsa", "silence_switch", alsa, "index", ["0", "1023"], ["-1", "1024"]),
            plain(
                "buses.ringer",
                "category",
                ["\"soloAmbient\"", "\"playback\"", "\"ambient\"", "\"playAndRecord\""],
                ["\"record\"", "\"alarm\""]
            ),
            plain("buses.ringer", "mix_with_others", flags.0, flags.1),
            plain("buses.ringer", "duck_others", flags.0, flags.1),
        ]
        // Every output line (alert_led, mic_led) takes the same keys.
        for output in HushdConfiguration.OutputName.allCases {
            for key in ConfigurationReader.outputLineKeys {
                let values: ([String], [String]) =
                    switch key {
                    case "kind": (["\"gpio\"", "\"none\""], ["\"pwm\""])
                    case "chip": (["\"gpiochip0\""], ["\"\"", "5"])
                    case "line": (["26", "\"led\""], ["65536", "\"\""])
                    default: flags
                    }
                cases.append(
                    KeyCase(
                        key: "outputs.\(key)",
                        template: table("[outputs.\(output)]", led, key),
                        label: "[outputs.\(output)] \(key)",
                        accepted: values.0,
                        refused: values.1
                    )
                )
            }
        }
        // The table names of plain cases on [routes.speaker] and [buses.ringer] are the reader's "routes"/"buses".
        return cases.map { item in
            var item = item
            item.key = item.key.replacingOccurrences(of: "routes.speaker.", with: "routes.")
                .replacingOccurrences(of: "buses.ringer.", with: "buses.")
            return item
        }
    }

    enum SampleFormatNames {
        static let all = SampleFormat.allCases.map { "\"\($0.rawValue)\"" }
    }

    /// hushd's start-up up to the hardware, as DaemonRunner runs it: the daemon built from the configuration's
    /// setup (policy, mixer format, sound directories), the serial console at the configured baud (on a
    /// pseudo-terminal instead of a UART), and the control socket as ControlParticipant makes it (in `scratch`
    /// unless the configuration already puts it there).
    static func startUp(_ configuration: HushdConfiguration, scratch: String) throws {
        var configuration = configuration
        if !configuration.control.socket.hasPrefix(scratch) { configuration.control.socket = scratch + "/control.sock" }
        let (logger, _) = RecordingLogHandler.logger()
        let daemon = Daemon(setup: configuration.daemonSetup(), inputs: [], clock: ManualClock(), logger: logger)
        let pty = try PseudoTerminal()
        let console = try SerialConsole(device: pty.slavePath, baud: configuration.console.baud, logger: logger)
        console.close()
        let control = try ControlParticipant(configuration: configuration.control, daemon: daemon)
        control.close()
    }

    @Test("every key the reader knows has a case, and every input kind is accepted by one")
    func everyKeyHasACase() throws {
        let scratch = try ScratchDirectory(prefix: "hush-every-key")
        let cases = Self.cases(scratch: scratch.path)
        let covered = Set(cases.map(\.key))
        #expect(Self.readerKeys.subtracting(covered).sorted() == [], "keys without a case")
        #expect(covered.subtracting(Self.readerKeys).sorted() == [], "cases for keys the reader does not know")
        let kinds = Set(cases.filter { $0.key.hasSuffix(".kind") && !$0.key.hasPrefix("outputs") }.flatMap(\.accepted))
        #expect(kinds == Set(HushdConfiguration.InputKind.allCases.map { "\"\($0.rawValue)\"" }))
    }

    @Test("accepted values pass check-config and start-up; refused ones fail both, named by file, line and key")
    func checkConfigAndStartUpAgree() throws {
        let scratch = try ScratchDirectory(prefix: "hush-every-key")
        let path = scratch.path + "/hushd.toml"
        for item in Self.cases(scratch: scratch.path) {
            let line = item.template.split(separator: "\n", omittingEmptySubsequences: false)
                .firstIndex { $0.contains("{}") }.map { $0 + 1 }
            for (value, acceptedByReader) in item.accepted.map({ ($0, true) }) + item.refused.map({ ($0, false) }) {
                try item.template.replacingOccurrences(of: "{}", with: value)
                    .write(toFile: path, atomically: true, encoding: .utf8)
                let check = HushdCheckConfig.check(["--config", path])
                var startUpError: String?
                do {
                    try Self.startUp(try HushdConfiguration.load(file: path), scratch: scratch.path)
                } catch {
                    startUpError = "\(error)"
                }
                let what = "\(item.label) = \(value)"
                #expect((check.status == 0) == acceptedByReader, "check-config on \(what): \(check.errors)")
                #expect(
                    (startUpError == nil) == acceptedByReader,
                    "start-up on \(what): \(startUpError ?? "started")"
                )
                guard !acceptedByReader else { continue }
                let problems = check.errors.split(separator: "\n").dropLast().map(String.init)
                #expect(!problems.isEmpty)
                for problem in problems {
                    #expect(problem.hasPrefix("\(path):\(line ?? 0): \(item.label)"), "\(what): \(problem)")
                }
            }
        }
    }
}
