import Foundation
import HushTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// hushd's log in the journal, from a real hushd: with `JOURNAL_STREAM` naming its standard error or not
/// (JournalPriorityTests in HushDaemonTests checks the log handler itself).
@Suite("hushd's log in the journal: a real hushd")
struct JournalStreamTests {
    /// Starts the real hushd with its standard error on a file and `JOURNAL_STREAM` set to `stream(file)`; a
    /// missing card (a warning: sound goes to /dev/null) and a GPIO chip that is not there (an error) make it
    /// log both. Returns its log after it stopped.
    static func runHushd(stream: (stat) -> String) throws -> String {
        let scratch = try ScratchDirectory(prefix: "hush-journal")
        let socket = scratch.path + "/control.sock"
        let config = scratch.path + "/hushd.toml"
        try """
        [output]
        pcm = "hw:CARD=HushNoSuchCard,DEV=0"
        fallback_wav = "/dev/null"

        [control]
        socket = "\(socket)"
        group = ""

        [state]
        file = ""

        [alsa_controls]
        enabled = false

        [inputs.volume_up]
        kind = "gpio"
        chip = "hush-no-such-chip"
        line = 3
        """.write(toFile: config, atomically: true, encoding: .utf8)
        let logPath = scratch.path + "/stderr"
        try #require(FileManager.default.createFile(atPath: logPath, contents: nil))
        var status = stat()
        try #require(stat(logPath, &status) == 0)
        let hushd = try SpawnedHushd(
            arguments: ["--config", config, "--console", "none"],
            environment: ["PATH": "/usr/bin:/bin", "JOURNAL_STREAM": stream(status)],
            logPath: logPath,
            directory: scratch.path
        )
        try hushd.waitForSocket(socket)
        #expect(hushd.stop() == 0, "hushd stops cleanly on SIGTERM")
        return hushd.log
    }

    @Test("a real hushd whose standard error is the stream JOURNAL_STREAM names prefixes every line")
    func realHushdInJournal() throws {
        let log = try Self.runHushd { "\($0.st_dev):\($0.st_ino)" }
        let lines = log.split(separator: "\n").map(String.init)
        #expect(
            lines.contains { $0.hasPrefix("<4>warning: ") && $0.contains("sound goes to the WAV file /dev/null") },
            "\(log)"
        )
        #expect(
            lines.contains { $0.hasPrefix("<3>error: input left out: ") && $0.contains("hush-no-such-chip") },
            "\(log)"
        )
        #expect(
            lines.contains { $0.hasPrefix("<5>notice: hushd ") && $0.contains(" ready on no board profile: ") },
            "\(log)"
        )
        let unprefixed = lines.filter { line in
            !["<7>", "<6>", "<5>", "<4>", "<3>", "<2>"].contains { line.hasPrefix($0) }
        }
        #expect(unprefixed.isEmpty, "every line hushd wrote starts with a priority: \(unprefixed)")
    }

    @Test("a real hushd that inherited JOURNAL_STREAM but writes elsewhere writes plain, timed lines")
    func realHushdNotInJournal() throws {
        let log = try Self.runHushd { "\($0.st_dev):\($0.st_ino + 1)" }
        let lines = log.split(separator: "\n").map(String.init)
        let warning = lines.first { $0.contains("warning: ") && $0.contains("sound goes to the WAV file /dev/null") }
        #expect(warning.map { $0.wholeMatch(of: /\d\d:\d\d:\d\d\.\d\d\d warning: .*/) != nil } == true, "\(log)")
        #expect(!log.contains("<4>") && !log.contains("<3>"), "\(log)")
    }
}
