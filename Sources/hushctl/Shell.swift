import ArgumentParser
import HushProtocol

#if canImport(Glibc)
import Glibc
#endif

/// `hushctl shell`: typed commands on one held connection, so sessions live as long as the shell does.
struct Shell: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send typed commands on one connection (reads stdin; type help).",
        discussion: """
            Sessions belong to their connection, so pause, resume, stop and deactivate are meaningful here. \
            Replies and events are printed as they arrive. At the end of input the shell waits for the last \
            replies; its exit status is 1 if any request was refused.
            """
    )
    @OptionGroup var options: GlobalOptions

    func run() throws {
        var failed = false
        try reporting {
            let connection = try options.connect()
            let interactive = isatty(0) == 1
            var stdin = LineBuffer(maxLineBytes: 1 << 20)
            var outstanding = 0
            var ended = false
            var quit = false
            var waitUntil: Int64?
            let prompt = { if interactive { writeAll(1, "> ") } }

            /// Prints one line from hushd; counts replies.
            func show(_ message: ServerMessage, _ line: [UInt8]) {
                if case .reply(let reply) = message {
                    outstanding -= 1
                    if !reply.ok { failed = true }
                }
                if options.json {
                    sayJSON(line)
                    return
                }
                switch message {
                case .reply(let reply): for text in ShellSyntax.describe(reply) { say(text) }
                case .event(let event): say("event: " + ControlText.event(event))
                }
            }

            func perform(_ text: String) throws {
                switch ShellSyntax.parse(text) {
                case .failure(let error):
                    printError("hushctl: \(error)")
                    failed = true
                case .success(.nothing): break
                case .success(.help): say(ShellSyntax.help)
                case .success(.quit): quit = true
                case .success(.wait(let milliseconds)): waitUntil = monotonicMilliseconds() + Int64(milliseconds)
                case .success(.raw(let json)):
                    try connection.write(Array(json.utf8) + [0x0A])
                    outstanding += 1
                case .success(.request(let command)):
                    try connection.send(command)
                    outstanding += 1
                }
            }

            var last: [UInt8] = []
            connection.onLine = { last = $0 }
            var typed: [String] = []
            prompt()
            while !quit {
                // Lines already read from hushd first, then typed lines not yet sent, then wait for either side.
                while connection.hasBufferedLine, let message = try connection.nextMessage(timeout: 0) {
                    show(message, last)
                }
                if let until = waitUntil, monotonicMilliseconds() >= until { waitUntil = nil }
                if waitUntil == nil && !typed.isEmpty {
                    try perform(typed.removeFirst())
                    if typed.isEmpty && !quit && waitUntil == nil && !ended { prompt() }
                    continue
                }
                if ended && outstanding <= 0 && waitUntil == nil { break }
                var timeout: Int32 = -1
                if let until = waitUntil { timeout = Int32(clamping: max(0, until - monotonicMilliseconds())) }
                var requests = [
                    pollfd(fd: connection.fd, events: Int16(POLLIN), revents: 0),
                    pollfd(fd: ended ? -1 : 0, events: Int16(POLLIN), revents: 0),
                ]
                if poll(&requests, 2, timeout) < 0 { continue }
                if requests[0].revents != 0 { try connection.readAvailable() }
                if requests[1].revents != 0 {
                    var buffer = [UInt8](repeating: 0, count: 4096)
                    let count = buffer.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
                    if count <= 0 {
                        ended = true
                        continue
                    }
                    for item in stdin.append(buffer[0..<count]) {
                        if case .line(let bytes) = item { typed.append(String(decoding: bytes, as: UTF8.self)) }
                    }
                }
            }
        }
        if failed { throw ExitCode.failure }
    }
}
