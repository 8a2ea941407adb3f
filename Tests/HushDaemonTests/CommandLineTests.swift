import ArgumentParser
import Foundation
import Testing

@testable import HushDaemon
@testable import HushRender

/// The command lines check their options where they are parsed: typed values, ranges and choices, every bad value a
/// usage error (exit 64) that names the option and what it takes, before anything is read or played.
@Suite("command lines: typed, checked options")
struct CommandLineTests {
    /// The message and exit status `arguments` give `command`, or nil when they parse.
    static func refusal<Command: ParsableCommand>(_ command: Command.Type, _ arguments: [String]) -> (String, Int32)? {
        do {
            _ = try command.parseAsRoot(arguments)
            return nil
        } catch {
            return (command.message(for: error), command.exitCode(for: error).rawValue)
        }
    }

    @Test("hushd play: --priority is a SCHED_FIFO priority (70 unless given), --period a period, checked at once")
    func play() throws {
        #expect(try HushdPlay.parse(["--scenario", "s.txt"]).priority == 70)
        let given = try HushdPlay.parse(["--scenario", "s.txt", "--priority", "0", "--period", "256", "--pcm", "hw:0"])
        #expect(given.priority == 0 && given.period == 256 && given.pcm == "hw:0")
        let priority = try #require(Self.refusal(Hushd.self, ["play", "--scenario", "s.txt", "--priority", "high"]))
        #expect(
            priority.0 == "The value 'high' is invalid for '--priority <n>': must be a priority from 0 to 99"
                && priority.1 == 64
        )
        let period = try #require(Self.refusal(Hushd.self, ["play", "--scenario", "s.txt", "--period", "8"]))
        #expect(period.0.hasPrefix("The value '8' is invalid for '--period <frames>'") && period.1 == 64)
    }

    @Test("hushd run: --console is a serial device, stdio or none; --config and --board exclude each other")
    func run() throws {
        let consoles = try ["none", "stdio", "/dev/ttyS0"].map { try HushdRun.parse(["--console", $0]).console }
        #expect(consoles == [.off, .standardIO, .serial("/dev/ttyS0")])
        #expect(try HushdRun.parse([]).console == nil)
        let both = try #require(Self.refusal(Hushd.self, ["run", "--config", "a.toml", "--board", "b"]))
        #expect(both.0 == "give --config or --board, not both" && both.1 == 64)
        let check = HushdCheckConfig.check(["--config", "a.toml", "--board", "b"])
        #expect(check.status == 64 && check.errors.hasPrefix("Error: give --config or --board, not both\n"))
    }
}
