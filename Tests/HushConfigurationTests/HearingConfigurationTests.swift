import Foundation
import HushConfiguration
import HushCore
import HushPolicy
import HushTesting
import Testing

/// `[hearing]` and the routes' `private` and `full_scale_dba` into the policy (R27, R28): the example of
/// docs/configuration.md, read from the page, does what the page says.
@Suite("hearing safety's configuration")
struct HearingConfigurationTests {
    /// The TOML block of configuration.md's [hearing] section.
    static func documentedExample() throws -> String {
        let page = try String(contentsOfFile: ConfigurationTests.root + "/docs/configuration.md", encoding: .utf8)
        let section = try #require(page.components(separatedBy: "## [hearing]").dropFirst().first)
        let block = try #require(section.components(separatedBy: "```toml\n").dropFirst().first)
        return try #require(block.components(separatedBy: "```").first)
    }

    @Test("the documented example: calibrated headphones start at step 11 and no press takes them higher")
    func documented() throws {
        let text = "[routes.speaker]\npcm = \"hw:0\"\n" + (try Self.documentedExample())
        let configuration = try HushdConfiguration.parse(text, file: "hushd.toml")
        let policy = configuration.policy
        #expect(policy.hearing.privateRoutes == [.headphones], "headphones are private by default")
        #expect(policy.hearing.fullScale == [.headphones: 98] && policy.hearing.ceiling == 85)
        var board = PolicyHarness(
            configuration: policy,
            persisted: PersistedVolumes(system: [.headphones: .maximum], ringer: .maximum, routeOverride: nil)
        )
        board.input(.headphones(.plugged, source: .alsaControl))
        #expect(board.policy.systemVolume == VolumeStep(clamping: 11))
        board.send(.setVolume(.system, .maximum))
        #expect(board.policy.systemVolume == VolumeStep(clamping: 11), "the ceiling of 85 dB(A) holds")
    }

    @Test("uncalibrated headphones start at step 7 (110 dB(A) assumed); private = false turns it off")
    func assumedAndOff() throws {
        let headphones = "[routes.speaker]\npcm = \"hw:0\"\n[routes.headphones]\npcm = \"hw:1\"\n"
        for (extra, expected) in [("", 7), ("private = false\n", 12)] {
            let configuration = try HushdConfiguration.parse(headphones + extra, file: "hushd.toml")
            var board = PolicyHarness(
                configuration: configuration.policy,
                persisted: PersistedVolumes(system: [.headphones: .maximum], ringer: .maximum, routeOverride: nil)
            )
            board.input(.headphones(.plugged, source: .alsaControl))
            #expect(board.policy.systemVolume == VolumeStep(clamping: expected), "\(extra)")
        }
    }

    @Test("a handset route made private, and every profile's routes: headphones private, the rest not")
    func privateRoutes() throws {
        let text =
            "[routes.speaker]\npcm = \"hw:0\"\n[routes.handset]\npcm = \"hw:2\"\nprivate = true\nfull_scale_dba = 92\n"
        let policy = try HushdConfiguration.parse(text, file: "hushd.toml").policy
        #expect(policy.hearing.privateRoutes == [.init("handset")] && policy.hearing.fullScale[.init("handset")] == 92)
        for name in ConfigurationTests.profileNames {
            let profile = try HushdConfiguration.board("\(ConfigurationTests.profiles)/\(name).toml").policy
            #expect(
                profile.hearing.privateRoutes == (profile.routes.contains(.headphones) ? [.headphones] : []),
                "\(name)"
            )
        }
    }

    @Test("bad values are refused, named")
    func refused() {
        #expect(
            ConfigurationTests.problems("[hearing]\nstart_limit_dba = 120\n").first?.contains("start_limit_dba") == true
        )
        #expect(ConfigurationTests.problems("[hearing]\nceiling = 80\n").first?.contains("ceiling") == true)
        #expect(
            ConfigurationTests.problems("[routes.speaker]\npcm = \"hw:0\"\nfull_scale_dba = \"loud\"\n").first?
                .contains("full_scale_dba") == true
        )
    }
}
