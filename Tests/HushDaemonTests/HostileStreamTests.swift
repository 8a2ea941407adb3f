import CHushWire
import Foundation
import HushSystem
import HushTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Clients of the stream protocol that break it, against a real hushd while `aplay` plays a tone through the
/// `hush` device: random bytes over the shared header and impossible ring counters, a stream that is started and
/// never written, a recorder that never reads, a process that opens streams without end. The tone must stay clean
/// (its level steady in every 20 ms window, none missing), hushd must keep running, refuse past its limits and
/// say who misbehaved.
@Suite("Hostile stream clients", .serialized)
struct HostileStreamTests {
    /// A raw stream client: the protocol by hand, the shared memory mapped.
    final class RawStream {
        let connection: HushdConnection
        var memfd: Int32 = -1
        var eventfd: Int32 = -1
        var mapped: UnsafeMutableRawPointer?
        var bytes = 0
        var id = 0
        var reply: [String: Any] = [:]

        /// Opens a stream; `reply["ok"]` says whether hushd took it.
        init(socket: String, direction: String, category: String, rate: Int = 48000, frames: Int = 4800) throws {
            connection = try HushdConnection(path: socket)
            let line =
                #"{"command":"open-stream","id":1,"direction":"\#(direction)","category":"\#(category)","#
                + #""rate":\#(rate),"channels":2,"format":"S16_LE","bufferFrames":\#(frames),"name":"hostile"}"#
                + "\n"
            try connection.send(line)
            var buffer = [UInt8](repeating: 0, count: 65536)
            var descriptors: [Int32] = []
            var text = ""
            let deadline = Date().addingTimeInterval(5)
            while !text.contains("\n") && Date() < deadline {
                var ready = pollfd(fd: connection.fd, events: Int16(POLLIN), revents: 0)
                guard poll(&ready, 1, 100) > 0 else { continue }
                switch UnixSocket.receive(connection.fd, into: &buffer, descriptors: &descriptors) {
                case .bytes(let count): text += String(decoding: buffer[0..<count], as: UTF8.self)
                default: throw HushdTestFailure("hushd closed the connection: \(text)")
                }
            }
            reply = try HushdConnection.object(String(text.prefix { $0 != "\n" }))
            guard reply["ok"] as? Bool == true else { return }
            guard descriptors.count == 2 else { throw HushdTestFailure("\(descriptors.count) descriptors came") }
            memfd = descriptors[0]
            eventfd = descriptors[1]
            id = ((reply["stream"] as? [String: Any])?["id"] as? Int) ?? 0
            var info = stat()
            fstat(memfd, &info)
            bytes = Int(info.st_size)
            mapped = mmap(nil, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0)
        }

        func act(_ action: String) throws {
            _ = try connection.request(#"{"command":"stream","id":2,"stream":\#(id),"action":"\#(action)"}"#)
        }

        deinit {
            if let mapped { munmap(mapped, bytes) }
            if memfd >= 0 { close(memfd) }
            if eventfd >= 0 { close(eventfd) }
            connection.close()
        }
    }

    @Test("random header bytes, silent and deaf streams and 100 opens leave aplay's tone clean")
    func hostileClientsDoNotDisturbOthers() throws {
        try ALSADeviceTests.requireTools()
        try ALSADeviceTests.retaking("aplay beside hostile clients") {
            let scratch = try ScratchDirectory(prefix: "hush-hostile")
            let wav = scratch.path + "/mix.wav"
            let hushd = try HushdProcess(fallback: wav)
            let file = scratch.path + "/tone.wav"
            try ALSADeviceTests.tone(file, hertz: 440, seconds: 4, rate: 48000)
            let victim = try ALSADeviceTests.Application(
                "/usr/bin/aplay",
                ["-q", "-D", "hush:CATEGORY=playback,OPTIONS=mixWithOthers", file],
                socket: hushd.socket
            )
            try ALSADeviceTests.wait("aplay running", hushd) {
                ALSADeviceTests.streams(hushd).contains { $0["state"] as? String == "running" }
            }
            // 1. Random bytes over the whole header and impossible counters, for a second, from a started stream.
            let scribbler = try RawStream(socket: hushd.socket, direction: "playback", category: "ambient")
            #expect(scribbler.reply["ok"] as? Bool == true, "\(scribbler.reply)")
            // The memory is sealed: shrinking it under hushd (which would make hushd fault) is refused.
            #expect(ftruncate(scribbler.memfd, 0) == -1 && errno == EPERM, "a stream's memfd must not shrink")
            try scribbler.act("start")
            // 2. A stream started and never written; 3. a recorder started and never read.
            let silent = try RawStream(socket: hushd.socket, direction: "playback", category: "ambient")
            try silent.act("start")
            let deaf = try RawStream(socket: hushd.socket, direction: "capture", category: "record", frames: 1024)
            #expect(deaf.reply["ok"] as? Bool == true, "\(deaf.reply)")
            try deaf.act("start")
            var generator = SeededGenerator(seed: 19)
            let header = try #require(scribbler.mapped)
            let end = Date().addingTimeInterval(1.0)
            while Date() < end {
                for offset in stride(from: 0, to: Int(HUSH_WIRE_HEADER_BYTES), by: 8) {
                    header.storeBytes(
                        of: UInt64.random(in: .min ... .max, using: &generator),
                        toByteOffset: offset,
                        as: UInt64.self
                    )
                }
                usleep(500)
            }
            // 4. One process opening streams without end: refused past [streams] max_streams_per_process (8) and
            // [control] max_clients_per_process, each refusal with a reason; hushd keeps serving others.
            var opened: [RawStream] = []
            var refusals: [String] = []
            for _ in 0..<100 {
                guard let stream = try? RawStream(socket: hushd.socket, direction: "playback", category: "ambient")
                else {
                    refusals.append("connection refused")
                    continue
                }
                if stream.reply["ok"] as? Bool == true {
                    opened.append(stream)
                } else {
                    refusals.append(((stream.reply["error"] as? [String: Any])?["code"] as? String) ?? "?")
                }
            }
            let status = try hushd.status()
            let streams = (status["streams"] as? [[String: Any]]) ?? []
            let scribbled = streams.first { $0["id"] as? Int == scribbler.id }
            let starved = streams.first { $0["id"] as? Int == silent.id }
            let unread = streams.first { $0["id"] as? Int == deaf.id }
            print(
                "hostile: \(opened.count) more streams opened, \(refusals.count) refused (\(Set(refusals).sorted())); "
                    + "scribbler violations \(scribbled?["violations"] ?? "?"), silent stream underruns "
                    + "\(starved?["underruns"] ?? "?"), deaf recorder overrun frames \(unread?["overrunFrames"] ?? "?")"
            )
            #expect(opened.count + 3 <= 8, "at most 8 streams per process")
            #expect(refusals.contains("too-many-streams"))
            #expect((scribbled?["violations"] as? Int ?? 0) > 0, "impossible counters are counted")
            #expect((unread?["overrunFrames"] as? Int ?? 0) > 0, "a recorder that does not read loses frames, alone")
            opened.removeAll()
            let result = try #require(victim.finish(within: 15), "aplay hung: \(victim.text)")
            #expect(result.status == 0, "aplay: \(victim.text)")
            let log = try String(contentsOfFile: hushd.logPath, encoding: .utf8)
            #expect(
                log.contains("wrote impossible ring counters") && log.contains("pid \(getpid())"),
                "hushd says who broke the rules"
            )
            _ = hushd.stop()
            // The victim's tone: every 20 ms window present, at one level.
            let levels = ALSADeviceTests.levels(of: 440, in: try ALSADeviceTests.mix(wav))
            let heard = levels.filter { $0 > -60 }
            let sorted = heard.sorted()
            let median = sorted[sorted.count / 2]
            // The first and last windows hold the tone's edges.
            let inner = heard.dropFirst().dropLast()
            let spread = (inner.max() ?? 0) - (inner.min() ?? 0)
            print("victim: \(heard.count) windows of 200, level \(median) dBFS, spread \(spread) dB")
            return ALSADeviceTests.judge(
                late: ALSADeviceTests.lateClient(pid: victim.process.processIdentifier, log: hushd.logPath),
                [
                    (heard.count >= 198 && heard.count <= 202, "the tone lasted \(heard.count * 20) ms of 4000"),
                    (spread < 0.5, "the tone's level moved by \(spread) dB"),
                ]
            )
        }
    }
}
