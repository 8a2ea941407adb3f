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
}
