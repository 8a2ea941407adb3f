import Foundation
import Glibc
import HushTesting
import Logging
import Testing

@testable import HushDaemon

@Suite("hushd's log on the console")
struct DaemonLogHandlerTests {
    @Test("the console gets errors, warnings and the notices that say something works again; not info or debug")
    func consoleLevels() {
        let router = LogRouter(level: .debug, timestamps: false)
        var shown: [String] = []
        router.console = { shown.append($0) }
        let logger = Logger(label: "test") { DaemonLogHandler(label: $0, router: router) }
        logger.debug("a period took 0.2 ms")
        logger.info("route headphones: output moves to hw:1,0")
        logger.notice("hw:0,0: the output device is back")
        logger.warning("cannot lock hushd's memory")
        logger.error("hw:0,0: the output device is gone")
        #expect(
            shown == [
                "notice: hw:0,0: the output device is back", "warning: cannot lock hushd's memory",
                "error: hw:0,0: the output device is gone",
            ]
        )
    }

    @Test("a console on hushd's own terminal gets no copy of standard error: the same file is recognised")
    func sameFile() {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        let copy = dup(ends[1])
        defer { for fd in ends + [copy] { close(fd) } }
        #expect(DaemonRunner.sameFile(ends[1], copy))
        #expect(DaemonRunner.sameFile(ends[0], ends[1]), "both ends of one pipe are one pipe")
        let file = open("/dev/null", O_WRONLY)
        defer { close(file) }
        #expect(!DaemonRunner.sameFile(ends[1], file))
        #expect(!DaemonRunner.sameFile(ends[1], -1), "a descriptor that fstat refuses is not the same")
    }
}

@Suite("hushd's log in the journal: sd-daemon priorities")
struct JournalPriorityTests {
    @Test(
        "each level gets its sd-daemon prefix",
        arguments: [
            (Logger.Level.trace, "<7>"), (.debug, "<7>"), (.info, "<6>"), (.notice, "<5>"), (.warning, "<4>"),
            (.error, "<3>"), (.critical, "<2>"),
        ]
    )
    func prefix(level: Logger.Level, prefix: String) {
        #expect(
            DaemonLogHandler.journalLines("warning: the card is gone", level: level) == prefix
                + "warning: the card is gone"
        )
    }

    @Test("every line of a message carries the prefix, so journald stores no continuation line at info")
    func multiLine() {
        let text =
            "error: the configuration cannot be used:\n  [output] rate: 1 is not a rate\n\n  see configuration.md"
        let expected = [
            "<3>error: the configuration cannot be used:", "<3>  [output] rate: 1 is not a rate", "<3>",
            "<3>  see configuration.md",
        ]
        #expect(DaemonLogHandler.journalLines(text, level: .error) == expected.joined(separator: "\n"))
    }

    @Test("JOURNAL_STREAM counts only when it names the descriptor's own device and inode")
    func journalStreamCheck() throws {
        let scratch = try ScratchDirectory(prefix: "hush-journal")
        let path = scratch.path + "/stream"
        let file = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
        try #require(file >= 0)
        defer { close(file) }
        var status = stat()
        try #require(fstat(file, &status) == 0)
        let matching = "\(status.st_dev):\(status.st_ino)"
        #expect(LogRouter.isJournal(matching, descriptor: file))
        #expect(!LogRouter.isJournal(nil, descriptor: file))
        #expect(!LogRouter.isJournal("\(status.st_dev):\(status.st_ino + 1)", descriptor: file), "another inode")
        #expect(!LogRouter.isJournal("\(status.st_dev + 1):\(status.st_ino)", descriptor: file), "another device")
        let other = open("/dev/null", O_WRONLY | O_CLOEXEC)
        defer { close(other) }
        #expect(!LogRouter.isJournal(matching, descriptor: other), "a child that inherited the variable")
        for malformed in [
            "", ":", "\(status.st_dev)", "\(status.st_dev):\(status.st_ino):0", "a:b", "-1:\(status.st_ino)",
        ] {
            #expect(!LogRouter.isJournal(malformed, descriptor: file), "JOURNAL_STREAM=\(malformed)")
        }
    }

    @Test("the console's copy never carries the prefix")
    func consoleWithoutPrefix() {
        let router = LogRouter(level: .info, timestamps: false, journal: true)
        var shown: [String] = []
        router.console = { shown.append($0) }
        let logger = Logger(label: "test") { DaemonLogHandler(label: $0, router: router) }
        logger.warning("cannot lock hushd's memory\nsecond line")
        #expect(shown == ["warning: cannot lock hushd's memory\nsecond line"])
    }
}
