import Foundation
import HushALSA
import HushCore
import HushPolicy
import Testing

@testable import HushConfiguration

/// hushd's configuration: the board profiles, the built-in default, files over profiles, and every kind of
/// mistake with its exact message and line.
@Suite("configuration")
struct ConfigurationTests {
    static let root: String = {
        var path = #filePath
        for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }
        return path
    }()
    static let profiles = root + "/board/profiles"

    static var profileNames: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: profiles)) ?? []).filter { $0.hasSuffix(".toml") }
            .map { String($0.dropLast(5)) }.sorted()
    }

    /// Parses `text` as hushd.toml, expecting it to fail; returns the problems' lines.
    static func problems(_ text: String) -> [String] {
        do {
            _ = try HushdConfiguration.parse(text, file: "hushd.toml")
            return ["(no error)"]
        } catch {
            return error.problems.map(\.description)
        }
    }

    // MARK: Profiles

    @Test("[control] group: unnamed, hush where the machine has it; named, whatever the machine has; \"\" none")
    func socketGroup() throws {
        let unnamed = try HushdConfiguration.parse("[output]\npcm = \"default\"\n", file: "t.toml").control
        #expect(!unnamed.groupGiven && unnamed.group == "hush")
        #expect(unnamed.socketGroup { $0 == "hush" } == "hush")
        #expect(unnamed.socketGroup { _ in false } == nil, "no group hush: hushd's own group, not a failed start")
        let named = try HushdConfiguration.parse("[control]\ngroup = \"audio\"\n", file: "t.toml").control
        #expect(named.groupGiven && named.socketGroup { _ in false } == "audio", "a named group must exist")
        let none = try HushdConfiguration.parse("[control]\ngroup = \"\"\n", file: "t.toml").control
        #expect(none.groupGiven && none.socketGroup { _ in true } == nil)
    }

    @Test("every board profile loads and validates, and is named after its file")
    func everyProfileLoads() throws {
        #expect(Self.profileNames == ["pi4-dac-hat", "pi5-dac-hat", "virtual", "zero2w-i2s-amp"])
        for name in Self.profileNames {
            let path = "\(Self.profiles)/\(name).toml"
            let configuration: HushdConfiguration
            do {
                configuration = try HushdConfiguration.board(path)
            } catch {
                Issue.record("\(name): \(error)")
                continue
            }
            #expect(configuration.board.name == name)
            #expect(!configuration.board.description.isEmpty)
            #expect(configuration.routes[.speaker] != nil)
            #expect(configuration.inputs[.silenceSwitch] != nil, "\(name) has a silence switch")
            #expect(configuration.inputs[.volumeUp] != nil && configuration.inputs[.volumeDown] != nil)
            #expect(configuration.files == [path])
            #expect(configuration.outputs[.alertLED] != nil)
        }
    }

    @Test("the Pi 5 profile: GPIO inputs on the RP1, a switch flipped per route")
    func pi5Profile() throws {
        let pi5 = try HushdConfiguration.board(Self.profiles + "/pi5-dac-hat.toml")
        #expect(pi5.output.pcm == "hw:CARD=sndrpihifiberry,DEV=0")
        #expect(pi5.output.format == .s32LE)
        #expect(pi5.output.periodFrames == 64 && pi5.output.periods == 3 && pi5.output.realtimePriority == 70)
        #expect(pi5.routeOrder == [.speaker, .headphones, Route("hdmi")])
        #expect(
            pi5.routes[.headphones]?.switches == [
                .init(
                    card: "sndrpihifiberry",
                    element: ALSAElementName("Speaker Playback Switch", interface: .mixer),
                    value: 0
                )
            ]
        )
        #expect(pi5.routeOutputs[Route("hdmi")]?.format == .s16LE)
        #expect(pi5.routeOutputs[Route("hdmi")]?.sampleRate == 48000)
        let gpio = pi5.gpioInputs
        #expect(
            gpio.map(\.role) == [
                .silenceSwitch, .volumeButton(.up), .volumeButton(.down), .headphoneSense, .microphoneSwitch,
            ]
        )
        #expect(gpio.map(\.line) == [.offset(17), .offset(27), .offset(22), .offset(23), .offset(26)])
        #expect(gpio[0].debounce == .milliseconds(10) && gpio[0].activeLow && gpio[0].bias == .pullUp)
        #expect(!gpio[3].activeLow && gpio[3].bias == .pullDown)
        #expect(gpio[4].debounce == .milliseconds(10) && gpio[4].activeLow && gpio[4].bias == .pullUp)
        #expect(pi5.outputs[.micLED] == .init(chip: "pinctrl-rp1", line: .offset(16)))
        #expect(pi5.alsaControlsCard == "sndrpihifiberry")
    }

    @Test("the Pi 4 profile: the evdev inputs become one device with its key map")
    func pi4Evdev() throws {
        let pi4 = try HushdConfiguration.board("pi4-dac-hat".withProfilesDirectory)
        let devices = pi4.evdevInputs
        #expect(devices.count == 1)
        #expect(devices.first?.device == .name("hush-controls"))
        #expect(devices.first?.silenceSwitch == .muteDevice)
        #expect(
            devices.first?.keyMap == [
                .volumeUp: .volumeButton(.up), .volumeDown: .volumeButton(.down), .headphoneInsert: .headphoneSwitch,
            ]
        )
        #expect(pi4.routes[.headphones]?.pcm == "hw:CARD=Headphones,DEV=0")
        #expect(pi4.routeOutputs[.headphones]?.format == .s16LE)
    }

    @Test("the virtual profile: gpio-sim line names, an ALSA jack, media keys on uinput")
    func virtualProfile() throws {
        let virtual = try HushdConfiguration.board(Self.profiles + "/virtual.toml")
        #expect(virtual.output.periodFrames == 512)
        #expect(virtual.gpioInputs.first?.line == .name("silence-switch"))
        #expect(virtual.gpioInputs.first?.bias == .asIs)
        #expect(
            virtual.alsaControlInputs == [
                ALSAControlConfiguration(
                    card: "Loopback",
                    element: ALSAElementName("Headphone Jack"),
                    role: .headphoneJack
                )
            ]
        )
        let keys = virtual.evdevInputs
        #expect(keys.count == 1)
        #expect(
            keys.first?.keyMap == [
                .headphoneInsert: .headphoneSwitch, .playPause: .mediaKey(.playPause), .nextSong: .mediaKey(.next),
                .previousSong: .mediaKey(.previous),
            ]
        )
        #expect(virtual.outputs[.alertLED] == .init(chip: "hush-sim", line: .name("led")))
    }

    @Test("a board is found by name in the search path; an unknown one is named with a suggestion")
    func boardByName() throws {
        let searchPath = ["/nonexistent/hush-boards", Self.profiles]
        #expect(try HushdConfiguration.board("zero2w-i2s-amp", searchPath: searchPath).board.name == "zero2w-i2s-amp")
        do {
            _ = try HushdConfiguration.board("pi4-dac-hta", searchPath: searchPath)
            Issue.record("an unknown board loaded")
        } catch {
            #expect(
                error.description
                    == "pi4-dac-hta: no board profile 'pi4-dac-hta' (looked for "
                    + "/nonexistent/hush-boards/pi4-dac-hta.toml, "
                    + "\(Self.profiles)/pi4-dac-hta.toml); did you mean 'pi4-dac-hat'?"
            )
        }
        do {
            _ = try HushdConfiguration.board("nothing-like-it", searchPath: searchPath)
            Issue.record("an unknown board loaded")
        } catch {
            #expect(
                error.description.hasSuffix(
                    "; profiles there: pi4-dac-hat, pi5-dac-hat, virtual, zero2w-i2s-amp"
                )
            )
        }
    }

    // MARK: Defaults

    @Test("the built-in default needs no hardware: terminal keys, ALSA default or a WAV file")
    func builtIn() {
        let builtIn = HushdConfiguration.builtIn
        #expect(builtIn.output.pcm == "default")
        #expect(builtIn.output.fallbackWAV?.hasSuffix("hushd-output.wav") == true)
        #expect(builtIn.output.fallbackWAV?.hasPrefix("/") == true, "never the current directory (a checkout)")
        #expect(builtIn.routeOrder == [.speaker, .headphones])
        #expect(
            builtIn.terminalInputs == [.silenceSwitch, .volumeUp, .volumeDown, .headphoneJack, .mediaKeys, .micPrivacy]
        )
        #expect(builtIn.gpioInputs.isEmpty && builtIn.evdevInputs.isEmpty && builtIn.alsaControlInputs.isEmpty)
        #expect(builtIn.alsaControlsCard == nil)
        #expect(builtIn.console.device == nil)
        var expected = PolicyConfiguration()
        expected.hearing.privateRoutes = [.headphones]  // uncalibrated: assumed at 110 dB(A) (R27)
        #expect(builtIn.policy == expected)
    }

    @Test("the built-in socket and state file go where this user can write")
    func builtInPaths() {
        typealias Environment = HushdConfiguration.Environment
        let root = Environment(runtimeDirectory: nil, home: "/root", uid: 0, isWritable: { _ in true })
        #expect(HushdConfiguration.builtInSocket(root) == "/run/hush/control.sock")
        #expect(HushdConfiguration.builtInStateFile(root) == "/root/.local/state/hush/state")
        let user = Environment(
            runtimeDirectory: "/run/user/1000",
            home: "/home/pi",
            uid: 1000,
            isWritable: { $0 == "/home/pi" }
        )
        #expect(HushdConfiguration.builtInSocket(user) == "/run/user/1000/hush-control.sock")
        #expect(HushdConfiguration.builtInStateFile(user) == "/home/pi/.local/state/hush/state")
        #expect(HushdConfiguration.builtInOutputFile(user) == "/home/pi/.local/state/hush/hushd-output.wav")
        let bare = Environment(runtimeDirectory: nil, home: nil, uid: 1001, isWritable: { _ in false })
        #expect(HushdConfiguration.builtInSocket(bare) == "/tmp/hush-1001-control.sock")
        #expect(HushdConfiguration.builtInStateFile(bare) == "/tmp/hush-1001-state")
        #expect(HushdConfiguration.builtInOutputFile(bare) == "/tmp/hush-1001-output.wav")
    }

    // MARK: A file over a board profile

    @Test("the microphone privacy switch: a GPIO line or an evdev switch, read as the R21 switch")
    func microphonePrivacy() throws {
        let evdev = try HushdConfiguration.parse(
            "[inputs.mic_privacy]\nkind = \"evdev\"\ndevice = \"hush-controls\"\ncode = \"SW_MUTE_DEVICE\"\n",
            file: "hushd.toml"
        )
        #expect(evdev.evdevInputs.first?.roles[.muteDevice] == .microphoneSwitch(activeValue: 1))
        let gpio = try HushdConfiguration.parse(
            "[inputs.mic_privacy]\nkind = \"gpio\"\nchip = \"gpiochip0\"\nline = 26\n",
            file: "hushd.toml"
        )
        #expect(gpio.gpioInputs.map(\.role) == [.microphoneSwitch])
        #expect(gpio.gpioInputs.first?.role.event(active: true) == .microphoneSwitch(.muted, source: .gpio))
        #expect(gpio.gpioInputs.first?.role.reportsInitialState == true, "read at start-up")
        #expect(throws: (any Error).self) {
            try HushdConfiguration.parse(
                "[inputs.mic_privacy]\nkind = \"alsa\"\ncard = \"Loopback\"\n",
                file: "hushd.toml"
            )
        }
    }

    @Test("the microphone is matched to the output's clock when its card is another's, or when told")
    func microphoneClock() throws {
        let usb = HushdConfiguration.Capture(pcm: "hw:CARD=Mic,DEV=0")
        #expect(usb.matchesClock(outputs: ["hw:CARD=sndrpihifiberry,DEV=0"]))
        #expect(!usb.matchesClock(outputs: ["plughw:Mic,0"]), "one card, one clock")
        #expect(usb.matchesClock(outputs: ["hw:Mic,0", "hw:CARD=Headphones,DEV=0"]), "a route on another card")
        #expect(!HushdConfiguration.Capture(pcm: "default").matchesClock(outputs: ["hw:0,0"]), "no card named")
        let told = try HushdConfiguration.parse(
            "[capture]\npcm = \"default\"\nclock = \"match\"\n",
            file: "hushd.toml"
        )
        #expect(told.capture?.matchesClock(outputs: ["default"]) == true)
        let shared = try HushdConfiguration.parse(
            "[capture]\npcm = \"hw:Mic,0\"\nclock = \"shared\"\n",
            file: "hushd.toml"
        )
        #expect(shared.capture?.matchesClock(outputs: ["hw:Other,0"]) == false)
    }

    @Test("a short file starts from a profile and changes single keys; a changed kind replaces the input")
    func overridesOverBoard() throws {
        let text = """
            board = "\(Self.profiles)/pi5-dac-hat.toml"

            [output]
            period_frames = 128

            [inputs.volume_up]
            line = 5

            [inputs.headphone_sense]
            kind = "none"

            [inputs.silence_switch]
            kind = "evdev"
            device = "/dev/input/by-path/platform-hush-event"
            code = "SW_MUTE_DEVICE"

            [routes.headphones]
            pcm = "hw:CARD=Headphones,DEV=0"

            [console]
            device = "/dev/ttyAMA0"
            """
        let configuration = try HushdConfiguration.parse(text, file: "/etc/hush/hushd.toml")
        let base = try HushdConfiguration.board(Self.profiles + "/pi5-dac-hat.toml")
        #expect(configuration.files == [Self.profiles + "/pi5-dac-hat.toml", "/etc/hush/hushd.toml"])
        #expect(configuration.board == base.board)
        #expect(configuration.output.periodFrames == 128)
        #expect(configuration.output.pcm == base.output.pcm && configuration.output.format == .s32LE)
        guard case .gpio(let up) = configuration.inputs[.volumeUp] else {
            Issue.record("volume_up is not a GPIO input: \(String(describing: configuration.inputs[.volumeUp]))")
            return
        }
        #expect(up.line == .offset(5) && up.chip == "pinctrl-rp1" && up.bias == .pullUp)
        #expect(configuration.inputs[.headphoneSense] == nil)
        #expect(
            configuration.inputs[.silenceSwitch]
                == .evdev(.init(device: .path("/dev/input/by-path/platform-hush-event"), codes: [.muteDevice]))
        )
        #expect(configuration.inputs[.volumeDown] == base.inputs[.volumeDown])
        // The route keeps the switches the profile gave it; naming no card, they follow the route's new PCM.
        #expect(configuration.routes[.headphones]?.pcm == "hw:CARD=Headphones,DEV=0")
        #expect(base.routes[.headphones]?.switches.map(\.card) == ["sndrpihifiberry"])
        #expect(
            configuration.routes[.headphones]?.switches
                == [
                    .init(
                        card: "Headphones",
                        element: ALSAElementName("Speaker Playback Switch", interface: .mixer),
                        value: 0
                    )
                ]
        )
        #expect(configuration.console.device == "/dev/ttyAMA0")
    }

    @Test("a problem in the profile names the profile's file and line; include is relative to the file")
    func includeAndProblemsInBase() throws {
        let directory =
            FileManager.default.temporaryDirectory.path
            + "/hush-config-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try "[board]\nname = \"mine\"\n\n[output]\nrate = 44100\nperiods = 1\n"
            .write(toFile: directory + "/base.toml", atomically: true, encoding: .utf8)
        try "include = \"base.toml\"\n[output]\nchannels = 1\n"
            .write(toFile: directory + "/hushd.toml", atomically: true, encoding: .utf8)
        do {
            _ = try HushdConfiguration.load(file: directory + "/hushd.toml")
            Issue.record("periods = 1 passed")
        } catch {
            #expect(
                error.description
                    == "\(directory)/base.toml:6: [output] periods = 1: must be a whole number from 2 to 16"
            )
        }
        try "[board]\nname = \"mine\"\n\n[output]\nrate = 44100\n"
            .write(toFile: directory + "/base.toml", atomically: true, encoding: .utf8)
        let configuration = try HushdConfiguration.load(file: directory + "/hushd.toml")
        #expect(configuration.output.sampleRate == 44100 && configuration.output.channels == 1)
        #expect(configuration.board.name == "mine")

        try "include = \"hushd.toml\"\n".write(toFile: directory + "/base.toml", atomically: true, encoding: .utf8)
        #expect(throws: ConfigurationError.self) { try HushdConfiguration.load(file: directory + "/hushd.toml") }
        #expect(
            Self.loadProblems(directory + "/hushd.toml").first?.hasPrefix(
                "\(directory)/base.toml:1: include = \"hushd.toml\": \(directory)/hushd.toml includes itself"
            ) == true
        )
        #expect(
            Self.loadProblems(directory + "/missing.toml")
                == ["\(directory)/missing.toml: cannot open the configuration: No such file or directory"]
        )
    }

    static func loadProblems(_ path: String) -> [String] {
        do {
            _ = try HushdConfiguration.load(file: path)
            return []
        } catch {
            return error.problems.map(\.description)
        }
    }

    // MARK: Errors, each with its exact message and line

    @Test(
        "each kind of mistake: its message names the file, line, section, key and value",
        arguments: [
            // The example from the issue: line 12, a value out of range.
            (
                "[board]\nname = \"x\"\n\n[output]\npcm = \"hw:0\"\nrate = 48000\nchannels = 2\n# comment\n\n"
                    + "format = \"S16_LE\"\n\nperiod_frames = 7\n",
                ["hushd.toml:12: [output] period_frames = 7: must be a whole number from 16 to 8192"]
            ),
            (
                "[output]\nrate = 0\nchannels = 9\n",
                [
                    "hushd.toml:2: [output] rate = 0: must be a whole number from 8000 to 384000",
                    "hushd.toml:3: [output] channels = 9: must be 1 (mono) or 2 (stereo)",
                ]
            ),
            (
                "[output]\nrate = \"48000\"\n",
                ["hushd.toml:2: [output] rate = \"48000\": must be a whole number from 8000 to 384000, not a string"]
            ),
            (
                "[output]\nperod_frames = 64\n",
                ["hushd.toml:2: [output] perod_frames: unknown key; did you mean 'period_frames'?"]
            ),
            (
                "[outptu]\npcm = \"default\"\n",
                ["hushd.toml:1: [outptu]: unknown section; did you mean [output]?"]
            ),
            (
                "period_frames = 64\n[output]\n",
                [
                    "hushd.toml:1: period_frames = 64: unknown key at the top level; it belongs in [output]: "
                        + "put it below that line"
                ]
            ),
            (
                "[output]\npcm = \"a\"\n  [output.x]\n",
                [
                    "hushd.toml:3: [output] x: unknown key; known here: pcm, rate, channels, format, period_frames, "
                        + "periods, max_period_frames, realtime_priority, fallback_wav, idle_seconds, keep_warm"
                ]
            ),
            (
                "[output]\nidle_seconds = 0.2\nkeep_warm = \"yes\"\n",
                [
                    "hushd.toml:2: [output] idle_seconds = 0.2: must be a number from 1 to 3600",
                    "hushd.toml:3: [output] keep_warm = \"yes\": must be true or false (without quotes), not a string",
                ]
            ),
            (
                "[output]\nformat = \"S24_LE\"\n",
                [
                    "hushd.toml:2: [output] format = \"S24_LE\": must be one of \"S16_LE\", \"S24_3LE\", \"S32_LE\", "
                        + "\"FLOAT_LE\"; did you mean \"S24_3LE\"?"
                ]
            ),
            (
                "[routes.speaker]\npcm = \"hw:0\"\n\n[routes.headphones]\npcm = \"hw:1\"\nformat = \"S16\"\n",
                [
                    "hushd.toml:6: [routes.headphones] format = \"S16\": must be one of \"S16_LE\", \"S24_3LE\", "
                        + "\"S32_LE\", \"FLOAT_LE\""
                ]
            ),
            (
                "[output]\nrate = 48000\n[routes.speaker]\n[routes.headphones]\nrate = 44100\n",
                [
                    "hushd.toml:5: [routes.headphones] rate = 44100: must be [output] rate, 48000: a route change "
                        + "keeps the rate (name a plughw: PCM to have ALSA convert)"
                ]
            ),
            (
                "[routes.hdmi]\npcm = \"hw:2\"\n",
                [
                    "hushd.toml:1: [routes]: a [routes.speaker] is required: it is where sound goes when no "
                        + "headphones are in"
                ]
            ),
            (
                "[volume]\ndefault_system = 17\ndefault_ringer = -1\n",
                [
                    "hushd.toml:2: [volume] default_system = 17: must be a whole number from 0 to 16 "
                        + "(the volume steps)",
                    "hushd.toml:3: [volume] default_ringer = -1: must be a whole number from 0 to 16 "
                        + "(the volume steps)",
                ]
            ),
            (
                "[volume]\ncurve = [\n  [1, -50],\n  [8, -60],\n  [16, 0],\n]\n",
                [
                    "hushd.toml:2: [volume] curve = [[1, -50], [8, -60], [16, 0]]: points must rise: step 1 "
                        + "(-50.0 dB) is followed by step 8 (-60.0 dB)"
                ]
            ),
            (
                "[volume]\ncurve = [\n  [1, -50],\n  [8],\n]\n",
                [
                    "hushd.toml:4: [volume] curve[1] = [8]: must be [step, dB] pairs from step 1 to step 16, such as "
                        + "[[1, -50], [16, 0]]"
                ]
            ),
            (
                "[inputs.volume_up]\nkind = \"gpio\"\nchip = \"gpiochip0\"\nline = 27\n\n"
                    + "[inputs.volume_down]\nkind = \"gpio\"\nchip = \"gpiochip0\"\nline = 27\n",
                [
                    "hushd.toml:9: [inputs.volume_down] line = 27: line 27 of chip \"gpiochip0\" is already used by "
                        + "[inputs.volume_up] (hushd.toml:4); each can be one input or output only"
                ]
            ),
            (
                "[inputs.volume_up]\nkind = \"gpio\"\nline = 27\nactive_low = \"yes\"\n",
                [
                    "hushd.toml:1: [inputs.volume_up] chip: missing; name the GPIO chip: \"gpiochip0\" or its label, "
                        + "such as \"pinctrl-bcm2711\"",
                    "hushd.toml:4: [inputs.volume_up] active_low = \"yes\": must be true or false (without quotes), "
                        + "not a string",
                ]
            ),
            (
                "[inputs.volume_upp]\nkind = \"terminal\"\n",
                ["hushd.toml:1: [inputs.volume_upp]: unknown input; did you mean [inputs.volume_up]?"]
            ),
            (
                "[inputs.volume_up]\nkind = \"evdev\"\ndevice = \"keys\"\ncode = \"KEY_VOLUMUP\"\n",
                [
                    "hushd.toml:4: [inputs.volume_up] code = \"KEY_VOLUMUP\": not an evdev key or switch name; did "
                        + "you mean \"KEY_VOLUMEUP\"?"
                ]
            ),
            (
                "[inputs.volume_down]\nkind = \"evdev\"\ndevice = \"keys\"\ncode = \"SW_MUTE_DEVICE\"\n",
                [
                    "hushd.toml:4: [inputs.volume_down] code = \"SW_MUTE_DEVICE\": a volume button must be a key "
                        + "(KEY_… or BTN_…), not a switch"
                ]
            ),
            (
                "[inputs.mic_privacy]\nkind = \"evdev\"\ndevice = \"keys\"\ncode = \"KEY_MICMUTE\"\n",
                [
                    "hushd.toml:4: [inputs.mic_privacy] code = \"KEY_MICMUTE\": the microphone privacy switch must be "
                        + "a switch (SW_…), such as SW_MUTE_DEVICE: a key has no position hushd can read at start-up"
                ]
            ),
            (
                "[inputs.headphone_sense]\nkind = \"gpio\"\nchip = \"gpiochip0\"\nline = 23\n",
                [
                    "hushd.toml:1: [inputs.headphone_sense]: headphones need a route to go to: add "
                        + "[routes.headphones] with their pcm (or set kind = \"none\")"
                ]
            ),
            (
                "[inputs.volume_up]\nkind = \"alsa\"\ncard = \"0\"\n",
                [
                    "hushd.toml:2: [inputs.volume_up] kind = \"alsa\": an ALSA control can be the silence_switch or a "
                        + "headphone input, not volume_up"
                ]
            ),
            (
                "[inputs.media_keys]\nkind = \"gpoi\"\n",
                [
                    "hushd.toml:2: [inputs.media_keys] kind = \"gpoi\": must be one of \"gpio\", \"evdev\", \"alsa\", "
                        + "\"terminal\", \"none\"; did you mean \"gpio\"?"
                ]
            ),
            (
                "[routes.speaker]\npcm = \"default\"\nswitches = [\n  { control = \"Amp\", on = true },\n"
                    + "  { card = \"0\", control = \"Mute\", on = \"no\" },\n]\n",
                [
                    "hushd.toml:4: [routes.speaker] switches[0].card: missing; the route's PCM \"default\" names no "
                        + "card, so say which: card = \"0\"",
                    "hushd.toml:5: [routes.speaker] switches[1].on = \"no\": must be true or false (without quotes), "
                        + "not a string",
                ]
            ),
            (
                "[control]\nmode = 660\nsocket = \"run/hush.sock\"\n",
                [
                    "hushd.toml:2: [control] mode = 660: must be permissions in octal, \"0660\" or 0o660 (a plain 660 "
                        + "is decimal in TOML)",
                    "hushd.toml:3: [control] socket = \"run/hush.sock\": must be an absolute path, starting with /",
                ]
            ),
            (
                "[console]\nbaud = 115000\n",
                [
                    "hushd.toml:2: [console] baud = 115000: must be a standard rate: 9600, 19200, 38400, 57600, "
                        + "115200, 230400, 460800, 500000, 576000, 921600, 1000000, 1500000, 2000000, 3000000"
                ]
            ),
            (
                "[ramps]\nsilence_ms = 50\n[log]\nlevel = \"verbose\"\n",
                [
                    "hushd.toml:2: [ramps] silence_ms = 50: must be a whole number of milliseconds from 0 to 20 "
                        + "(policy R1: the switch acts within 20 ms)",
                    "hushd.toml:4: [log] level = \"verbose\": must be one of \"trace\", \"debug\", \"info\", "
                        + "\"notice\", \"warning\", \"error\", \"critical\"",
                ]
            ),
            (
                "[buses.music]\ncategory = \"record\"\n[buses.efect]\n",
                [
                    "hushd.toml:2: [buses.music] category = \"record\": record is capture only: a bus plays sound",
                    "hushd.toml:3: [buses.efect]: unknown bus; did you mean [buses.effect]?",
                ]
            ),
            (
                "board = 5\n",
                [
                    "hushd.toml:1: board = 5: must be a board profile's name or path in quotes "
                        + "(board = \"pi4-dac-hat\"), or a [board] table"
                ]
            ),
            (
                "board = \"\"\n[output]\n",
                ["hushd.toml:1: board = \"\": must be a board profile's name or a path, in quotes"]
            ),
            (
                "output = 5\n",
                ["hushd.toml:1: output = 5: must be a table: write [output] and its keys on the lines below"]
            ),
        ] as [(String, [String])]
    )
    func mistakes(text: String, expected: [String]) {
        #expect(Self.problems(text) == expected)
    }

    @Test("TOML syntax errors give the line and column")
    func syntaxError() {
        let problems = Self.problems("[output]\nrate = 48000\nperiods = = 3\n")
        #expect(problems.count == 1)
        #expect(problems.first?.hasPrefix("hushd.toml:3:11: TOML syntax: ") == true, "\(problems)")
        let duplicate = Self.problems("[output]\nrate = 48000\n\nrate = 44100\n")
        #expect(duplicate.first?.hasPrefix("hushd.toml:4:8: TOML syntax: ") == true, "\(duplicate)")
    }

    @Test("all problems are listed at once, in line order, with a count from check-config")
    func everyProblemListed() throws {
        let text = "[output]\nrate = 1\n[volume]\nstartup_max = 99\n[sounds]\ndirectories = [\"sounds\"]\n"
        #expect(
            Self.problems(text) == [
                "hushd.toml:2: [output] rate = 1: must be a whole number from 8000 to 384000",
                "hushd.toml:4: [volume] startup_max = 99: must be a whole number from 0 to 16 (the volume steps)",
                "hushd.toml:6: [sounds] directories[0] = \"sounds\": must be an absolute path in quotes, "
                    + "starting with /",
            ]
        )
    }

    // MARK: Lines

    @Test("toml++ gives every key, table and array element the line it is written on")
    func keyLines() throws {
        let text = """
            # "[output]" in a comment is not a table
            [board]
            name = "a # not a comment [x]"
            description = \"\"\"
            two
            [lines] = 5
            \"\"\"

            [ "output" ]
            pcm = 'hw:0'   # a comment with = in it
            rate.x = 1

            [routes.speaker]
            switches = [
              { control = "A", on = true },

              { control = "B", card = "0", value = 3 }, [
                "nested", "array" ] ,
            ]
            "format" = "S16_LE"
            """
        let document = try ConfigurationNode.parse(text, file: "hushd.toml")
        /// The line of the node at `path`; "[N]" steps into an array.
        func line(_ path: [String]) -> Int? {
            var node: ConfigurationNode? = document
            for step in path {
                if step.hasPrefix("["), case .array(let items)? = node?.value,
                    let index = Int(step.dropFirst().dropLast()),
                    items.indices.contains(index)
                {
                    node = items[index]
                } else {
                    node = node?.table?[step]
                }
            }
            return node?.line
        }
        #expect(line(["board"]) == 2)
        #expect(line(["board", "name"]) == 3)
        #expect(line(["board", "description"]) == 4)
        #expect(line(["lines"]) == nil)
        #expect(line(["output"]) == 9)
        #expect(line(["output", "pcm"]) == 10)
        #expect(line(["output", "rate", "x"]) == 11)
        #expect(line(["routes"]) == 13)
        #expect(line(["routes", "speaker", "switches", "[0]", "on"]) == 15)
        #expect(line(["routes", "speaker", "switches", "[1]"]) == 17)
        #expect(line(["routes", "speaker", "switches", "[1]", "value"]) == 17)
        #expect(line(["routes", "speaker", "switches", "[2]", "[1]"]) == 18)
        #expect(line(["routes", "speaker", "format"]) == 20)
        // And through the loader: each problem on the line where its key or element is written.
        #expect(
            Self.problems(text) == [
                "hushd.toml:11: [output] rate = { x = 1 }: must be a whole number from 8000 to 384000, not a table",
                "hushd.toml:17: [routes.speaker] switches[2] = [\"nested\", \"array\"]: must be a table such as "
                    + "{ control = \"Speaker Playback Switch\", on = true }",
            ]
        )
    }
}

extension String {
    /// A profile name as a path in the source tree's board/profiles.
    fileprivate var withProfilesDirectory: String { ConfigurationTests.profiles + "/" + self + ".toml" }
}
