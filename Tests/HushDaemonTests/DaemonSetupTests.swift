import Foundation
import HushALSA
import HushConfiguration
import HushCore
import HushPolicy
import HushSystem
import Testing

@testable import HushDaemon

/// hushd.toml as far as the daemon takes it: the defaults and every section in the setup hushd starts with
/// (`daemonSetup`), and `hushd check-config`'s summary (ConfigurationTests in HushConfigurationTests reads the
/// file itself).
@Suite("configuration into hushd's setup, and check-config")
struct DaemonSetupTests {
    static let profiles: String = {
        var path = #filePath
        for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }
        return path + "/board/profiles"
    }()

    @Test("an empty file gives the documented defaults")
    func emptyFileDefaults() throws {
        let configuration = try HushdConfiguration.parse("# nothing\n", file: "hushd.toml")
        // R24: periods from 64 frames up to 1024, as the sessions and streams allow.
        #expect(configuration.output.playback == PlaybackConfiguration(maxPeriodFrames: 1024))
        #expect(configuration.output.realtimePriority == 70 && configuration.output.fallbackWAV == nil)
        #expect(configuration.output.idleAfter == .seconds(5) && configuration.daemonSetup().idleAfter == .seconds(5))
        #expect(configuration.routes == [.speaker: .init(pcm: "default")])
        #expect(configuration.inputs.isEmpty)
        #expect(configuration.control.socket == "/run/hush/control.sock")
        #expect(configuration.control.mode == 0o660 && configuration.control.group == "hush")
        #expect(configuration.control.maxClients == 64 && configuration.control.maxSessionsPerClient == 8)
        #expect(configuration.control.maxLineBytes == 65536 && configuration.control.allowedUIDs.isEmpty)
        #expect(configuration.state.file == "/var/lib/hush/state")
        #expect(configuration.state.writeInterval == .milliseconds(1000))
        #expect(configuration.console.device == nil && configuration.console.baud == .standard)
        #expect(configuration.sounds.directories == ["/usr/share/hush/sounds", "/var/lib/hush/sounds"])
        #expect(configuration.log.level == .info)
        var policy = PolicyConfiguration()
        policy.routes = [.speaker]
        #expect(configuration.policy == policy)
        #expect(configuration.buses[.effect] == .init(category: .ambient, options: .mixWithOthers))
        #expect(configuration.buses[.ringer] == .init(category: .soloAmbient))
    }

    @Test("every daemon section is read and mapped into the policy")
    func everySection() throws {
        let text = """
            [output]
            pcm = "plughw:1,0"
            realtime_priority = 0
            fallback_wav = "/tmp/out.wav"
            idle_seconds = 2.5
            keep_warm = true

            [buttons]
            repeat_delay_ms = 400
            repeat_interval_ms = 80
            idle_target = "ringer"

            [volume]
            curve = [[1, -60], [8, -30.5], [16, 0]]
            default_system = 6
            default_ringer = 9
            startup_max = 10

            [ducking]
            depth_db = -20
            attack_ms = 50
            release_ms = 800

            [ramps]
            silence_ms = 10
            volume_ms = 40

            [buses.music]
            category = "soloAmbient"
            duck_others = true

            [console]
            device = "/dev/ttyAMA0"
            baud = 9600

            [control]
            socket = "/run/hush/c.sock"
            mode = "0600"
            group = ""
            max_clients = 4
            max_sessions_per_client = 2
            max_line_bytes = 4096
            allowed_uids = [1000, 1001]

            [state]
            file = ""
            write_interval_ms = 250

            [alsa_controls]
            enabled = true

            [sounds]
            directories = ["/srv/sounds"]

            [log]
            level = "debug"
            """
        let configuration = try HushdConfiguration.parse(text, file: "hushd.toml")
        let policy = configuration.policy
        #expect(policy.repeatDelay == .milliseconds(400) && policy.repeatInterval == .milliseconds(80))
        #expect(policy.idleButtonTarget == .ringer)
        let curve = try VolumeCurve(anchors: [(1, -60), (8, -30.5), (16, 0)])
        #expect(policy.curve == curve)
        #expect(policy.defaultSystemVolume.rawValue == 6 && policy.defaultRingerVolume.rawValue == 9)
        #expect(policy.startupMaximum.rawValue == 10)
        #expect(policy.duckDepth == Gain(decibels: -20))
        #expect(policy.duckAttack == .milliseconds(50) && policy.duckRelease == .milliseconds(800))
        #expect(policy.silenceRamp == .milliseconds(10) && policy.volumeRamp == .milliseconds(40))
        #expect(configuration.buses[.music] == .init(category: .soloAmbient, options: .duckOthers))
        #expect(configuration.console.device == "/dev/ttyAMA0" && configuration.console.baud == BaudRate(9600))
        #expect(configuration.control.mode == 0o600 && configuration.control.group == nil)
        #expect(configuration.control.allowedUIDs == [1000, 1001] && configuration.control.maxLineBytes == 4096)
        #expect(configuration.state.file == nil && configuration.state.writeInterval == .milliseconds(250))
        #expect(configuration.alsaControlsCard == "1")
        #expect(configuration.sounds.directories == ["/srv/sounds"])
        #expect(configuration.log.level == .debug)
        let setup = configuration.daemonSetup()
        #expect(setup.output.pcm == "plughw:1,0" && setup.realtimePriority == 0)
        #expect(setup.fallbackWAV == "/tmp/out.wav" && setup.maxSessionsPerClient == 2)
        // keep_warm wins over idle_seconds: the output never stops.
        #expect(configuration.output.idleSeconds == 2.5 && configuration.output.keepWarm && setup.idleAfter == nil)
        #expect(setup.soundDirectories == ["/srv/sounds"])
    }

    @Test("check-config prints what would be used, or every problem and exit status 1")
    func checkConfig() throws {
        let good = HushdCheckConfig.check(["--board", Self.profiles + "/virtual.toml"])
        #expect(good.status == 0 && good.errors.isEmpty)
        let lines = good.output.split(separator: "\n").map(String.init)
        #expect(lines.first == "configuration OK: \(Self.profiles)/virtual.toml")
        #expect(lines.contains("output    hw:Loopback,0,0: 48000 Hz, 2 ch, S16_LE, 512-frame periods × 3"))
        #expect(lines.contains("routes    speaker     hw:Loopback,0,0"))
        #expect(lines.contains("          headphones  hw:Loopback,0,1"))
        #expect(
            lines.contains(
                "inputs    silence_switch    gpio hush-sim line 'silence-switch', active low, as-is, 10 ms debounce"
            )
        )
        #expect(lines.contains("          headphone_jack    alsa card Loopback control 'Headphone Jack' (CARD)"))
        #expect(lines.contains("console   none"))
        let group = getgrnam("hush") != nil ? "group hush" : "hushd's own group (no group hush here)"
        #expect(lines.contains("socket    /run/hush/control.sock, mode 0660, \(group)"))
        #expect(lines.contains("state     /var/lib/hush/state, written at most every 1000 ms"))

        let directory = FileManager.default.temporaryDirectory.path + "/hush-check-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try "[output]\nrate = 0\nperiods = 99\n".write(
            toFile: directory + "/bad.toml",
            atomically: true,
            encoding: .utf8
        )
        let bad = HushdCheckConfig.check(["--config", directory + "/bad.toml"])
        #expect(bad.status == 1 && bad.output.isEmpty)
        #expect(
            bad.errors == """
                \(directory)/bad.toml:2: [output] rate = 0: must be a whole number from 8000 to 384000
                \(directory)/bad.toml:3: [output] periods = 99: must be a whole number from 2 to 16
                2 problems in the configuration: hushd would not start
                """
        )
        let none = HushdCheckConfig.check([], defaultExists: { _ in false })
        #expect(none.status == 0)
        #expect(none.output.hasPrefix("no /etc/hush/hushd.toml: hushd would start on its built-in default"))
        #expect(HushdCheckConfig.check(["--config", "a", "--board", "b"]).status == 64)
        #expect(HushdCheckConfig.check(["--bored", "b"]).status == 64)
    }
}
