import CHushWire
import Foundation
import HushTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Clients of the stream protocol that break it, against a real hushd while `aplay` plays a tone through the
/// `hush` device: random bytes over the shared header and impossible ring counters, a stream that is started and
/// never written, a recorder that never reads, a process that opens streams without end. The tone must stay clean
/// (its level steady in every 20 ms window, none missing), hushd must keep running, refuse past its limits and
/// say who misbehaved. The raw client is HushTesting's `RawStreamClient`; the virtual board runs the same clients
/// beside an unmodified aplay on real snd-aloop (`streams-hostile-clients-leave-others-clean`,
/// Sources/hush-vboard-streams/HostileChecks.swift).
@Suite("Hostile stream clients", .serialized)
struct HostileStreamTests {
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
            let scribbler = try RawStreamClient(socket: hushd.socket, direction: "playback", category: "ambient")
            #expect(scribbler.opened, "\(scribbler.reply)")
            #expect(scribbler.headerBytes == Int(HUSH_WIRE_HEADER_BYTES), "the header is where the wire puts it")
            // The memory is sealed: shrinking it under hushd (which would make hushd fault) is refused.
            #expect(scribbler.shrink() == EPERM, "a stream's memfd must not shrink")
            try scribbler.act("start")
            // 2. A stream started and never written; 3. a recorder started and never read.
            let silent = try RawStreamClient(socket: hushd.socket, direction: "playback", category: "ambient")
            try silent.act("start")
            let deaf = try RawStreamClient(
                socket: hushd.socket,
                direction: "capture",
                category: "record",
                bufferFrames: 1024
            )
            #expect(deaf.opened, "\(deaf.reply)")
            try deaf.act("start")
            var generator = SeededGenerator(seed: 19)
            scribbler.scribbleHeader(for: .seconds(1), using: &generator)
            // 4. One process opening streams without end: refused past [streams] max_streams_per_process (8) and
            // [control] max_clients_per_process, each refusal with a reason; hushd keeps serving others.
            let flood = RawStreamClient.openMany(100, socket: hushd.socket)
            var opened = flood.opened
            let refusals = flood.refusals
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
