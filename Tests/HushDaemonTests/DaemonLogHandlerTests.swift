import Glibc
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
