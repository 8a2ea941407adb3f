import Foundation
import HushTesting
import Testing

@testable import HushConfiguration

/// The keys of the `hush` ALSA device's streams: `[control] max_clients_per_process`, `[streams]`, `[capture]` and
/// `[outputs.mic_led]`, read into their typed values (EveryKeyTests holds each key's edges).
@Suite("configuration: streams, the microphone and its light")
struct StreamConfigurationTests {
    @Test("without the sections: 64 clients, 16 per process, 32 streams, 8 per process, 512 KiB rings, no microphone")
    func defaults() throws {
        let configuration = try HushdConfiguration.parse("# nothing\n", file: "hushd.toml")
        #expect(configuration.control.maxClients == 64)
        #expect(configuration.control.maxClientsPerProcess == 16)
        #expect(configuration.streams == HushdConfiguration.Streams())
        #expect(configuration.streams.maxStreams == 32)
        #expect(configuration.streams.maxStreamsPerProcess == 8)
        #expect(configuration.streams.ringKiBMax == 512)
        #expect(configuration.capture == nil)
        #expect(configuration.outputs[.micLED] == nil)
        #expect(HushdConfiguration.builtIn.capture == nil)
    }

    @Test("every key read into its value")
    func everyKey() throws {
        let text = """
            [control]
            max_clients = 128
            max_clients_per_process = 4

            [streams]
            max_streams = 12
            max_streams_per_process = 3
            ring_kib_max = 128

            [capture]
            pcm = "hw:CARD=Mic,DEV=0"
            periods = 4

            [outputs.mic_led]
            chip = "gpiochip0"
            line = "mic-led"
            active_low = true
            """
        let configuration = try HushdConfiguration.parse(text, file: "hushd.toml")
        #expect(configuration.control.maxClients == 128 && configuration.control.maxClientsPerProcess == 4)
        #expect(configuration.streams.maxStreams == 12 && configuration.streams.maxStreamsPerProcess == 3)
        #expect(configuration.streams.ringKiBMax == 128)
        #expect(configuration.capture == HushdConfiguration.Capture(pcm: "hw:CARD=Mic,DEV=0", periods: 4))
        var led = HushdConfiguration.OutputLineSettings(chip: "gpiochip0", line: .name("mic-led"))
        led.activeLow = true
        #expect(configuration.outputs == [.micLED: led])
    }

    @Test("the biggest ring a stream may ask for, in frames of its size")
    func ringFrames() {
        var streams = HushdConfiguration.Streams()
        #expect(streams.maxRingFrames(frameBytes: 4) == 131_072)
        #expect(streams.maxRingFrames(frameBytes: 2) == 262_144)
        streams.ringKiBMax = 16
        #expect(streams.maxRingFrames(frameBytes: 8) == 2048)
    }

    @Test("a file over a profile: keeps its microphone, changes its periods, or takes it away with pcm = \"\"")
    func captureOverProfile() throws {
        let scratch = try ScratchDirectory(prefix: "hush-capture-profile")
        let profile = scratch.path + "/board.toml"
        try """
        [board]
        name = "board"
        description = "a board with a microphone"

        [capture]
        pcm = "hw:CARD=Mic,DEV=0"
        periods = 4
        """.write(toFile: profile, atomically: true, encoding: .utf8)
        let board = "board = \"\(profile)\"\n"
        let kept = try HushdConfiguration.parse(board, file: scratch.path + "/hushd.toml")
        #expect(kept.capture == HushdConfiguration.Capture(pcm: "hw:CARD=Mic,DEV=0", periods: 4))
        let changed = try HushdConfiguration.parse(board + "[capture]\nperiods = 8\n", file: scratch.path + "/a.toml")
        #expect(changed.capture == HushdConfiguration.Capture(pcm: "hw:CARD=Mic,DEV=0", periods: 8))
        let removed = try HushdConfiguration.parse(board + "[capture]\npcm = \"\"\n", file: scratch.path + "/b.toml")
        #expect(removed.capture == nil)
    }

    @Test("mistakes: periods without a microphone, a typo, two lights on one line")
    func mistakes() {
        #expect(
            ConfigurationTests.problems("[capture]\nperiods = 4\n") == [
                "hushd.toml:2: [capture] periods = 4: needs pcm: the microphone's ALSA PCM (\"\" for none)"
            ]
        )
        #expect(
            ConfigurationTests.problems("[streams]\nmax_stream = 4\n") == [
                "hushd.toml:2: [streams] max_stream: unknown key; did you mean 'max_streams'?"
            ]
        )
        #expect(
            ConfigurationTests.problems("[stream]\nmax_streams = 4\n") == [
                "hushd.toml:1: [stream]: unknown section; did you mean [streams]?"
            ]
        )
        #expect(
            ConfigurationTests.problems("max_clients_per_process = 4\n") == [
                "hushd.toml:1: max_clients_per_process = 4: unknown key at the top level; it belongs in [control]: "
                    + "put it below that line"
            ]
        )
        let shared = """
            [outputs.alert_led]
            chip = "gpiochip0"
            line = 24

            [outputs.mic_led]
            chip = "gpiochip0"
            line = 24
            """
        let problems = ConfigurationTests.problems(shared)
        #expect(problems.count == 1)
        #expect(
            problems.first?.hasPrefix(
                "hushd.toml:7: [outputs.mic_led] line = 24: line 24 of chip \"gpiochip0\" is already used by "
                    + "[outputs.alert_led]"
            ) == true,
            "\(problems)"
        )
        #expect(
            ConfigurationTests.problems("[outputs.mic_lde]\nchip = \"gpiochip0\"\nline = 5\n") == [
                "hushd.toml:1: [outputs.mic_lde]: unknown output; did you mean [outputs.mic_led]?"
            ]
        )
    }

    @Test("configuration.md has a row for each of these keys, with its default")
    func documented() throws {
        let path = ConfigurationTests.root + "/docs/configuration.md"
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let rows = [
            "| `max_clients` | integer | `64` |", "| `max_clients_per_process` | integer | `16` |",
            "| `max_streams` | integer | `32` |", "| `max_streams_per_process` | integer | `8` |",
            "| `ring_kib_max` | integer | `512` |", "| `pcm` | string | `\"\"` | the ALSA PCM the microphone",
            "| `periods` | integer | `[output] periods` |",
        ]
        for row in rows { #expect(text.contains(row), "\(row)") }
        for section in ["## [streams]", "## [capture]", "`mic_led`"] { #expect(text.contains(section)) }
    }
}
