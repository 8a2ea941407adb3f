import Foundation
import HushTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// ALSA's underrun contract through the `hush` device (R23): an application that falls behind a running stream is
/// told as a sound card tells it — XRUN, `-EPIPE` from its next write, read, wait, delay or status — and recovers
/// with `snd_pcm_prepare`; its stop threshold is honoured; hushd's count and the application's agree; the policy's
/// own holds and a pause are not lateness. hush-xrun-probe (Tests/alsa-plugin/xrun_probe.c) falls behind on purpose
/// by stalling for longer than its 100 ms buffer.
@Suite("ALSA's underrun contract (R23)", .serialized)
struct ALSAXrunTests {
    static let probe = ALSADeviceTests.root.appendingPathComponent(".build/alsa-plugin/hush-xrun-probe").path

    struct Cycle: CustomStringConvertible {
        var call: String
        var milliseconds: Int
        /// The first call's result and the state after it; then a transfer's, and the state after that.
        var result: String
        var state: String
        var then: String
        var state2: String
        /// How long the stall really took, to the first call's end.
        var slept: Int
        var xrun: Bool { result == "EPIPE" || then == "EPIPE" || state == "XRUN" || state2 == "XRUN" }
        var description: String { "\(call) after \(milliseconds) ms: \(result) (\(state)), then \(then) (\(state2))" }
    }

    struct Run {
        var cycles: [Cycle] = []
        var xruns: Int?
        var unplanned = 0
        /// The longest the probe went without moving frames where it meant to keep up.
        var longestGap = 0
        var done = false
        var text = ""
        /// What hushd's log says at the stream's end: its underruns (playback) or overruns (capture).
        var counted: Int?
        /// hushd's own output underruns meanwhile: it caught up with back-to-back periods, which drains a small ring
        /// faster than real time — possibly where the probe does not look (just before its drain).
        var outputXruns = 0
    }

    /// Runs the probe against `hushd` and reads what it printed and what hushd counted for its stream.
    static func run(
        _ hushd: HushdProcess,
        device: String,
        _ direction: String,
        stop: String = "default",
        access: String = "rw",
        blocking: String = "block",
        _ cycles: [String]
    ) throws -> Run {
        guard FileManager.default.fileExists(atPath: probe) else {
            throw HushdTestFailure("\(probe) is missing: run `make alsa-plugin` (make test does) first")
        }
        func outputXruns() -> Int { ((try? hushd.status())?["output"] as? [String: Any])?["xruns"] as? Int ?? 0 }
        let xrunsBefore = outputXruns()
        let application = try ALSADeviceTests.Application(
            probe,
            [device, direction, stop, access, blocking] + cycles,
            socket: hushd.socket
        )
        guard let ended = application.finish(within: 30) else {
            throw HushdTestFailure("hush-xrun-probe did not end within 30 s: \(application.text.suffix(2000))")
        }
        var run = Run(text: application.text)
        run.outputXruns = outputXruns() - xrunsBefore
        run.done = ended.status == 0 && application.text.contains("done")
        for line in application.text.split(separator: "\n") {
            let words = line.split(separator: " ").map(String.init)
            if words.first == "cycle", words.count == 14, let ms = Int(words[3]) {
                run.cycles.append(
                    Cycle(
                        call: words[2],
                        milliseconds: ms,
                        result: words[5],
                        state: words[7],
                        then: words[9],
                        state2: words[11],
                        slept: Int(words[13]) ?? 0
                    )
                )
            } else if words.first == "xruns", words.count == 2 {
                run.xruns = Int(words[1])
            } else if words.first == "unplanned", words.count == 2 {
                run.unplanned = Int(words[1]) ?? 0
            } else if words.first == "longest_gap_ms", words.count == 2 {
                run.longestGap = Int(words[1]) ?? 0
            }
        }
        // hushd logs the stream's end a moment after the probe closed it.
        let pid = application.process.processIdentifier
        let deadline = Date().addingTimeInterval(5)
        while run.counted == nil && Date() < deadline {
            let log = (try? String(contentsOfFile: hushd.logPath, encoding: .utf8)) ?? ""
            if let line = log.split(separator: "\n").first(where: { $0.contains("(pid \(pid)) ended") }),
                let match = line.firstMatch(of: /; (\d+) (underrun|overrun)/)
            {
                run.counted = Int(match.1)
            } else {
                usleep(20_000)
            }
        }
        return run
    }

    /// A take whose probe was itself stalled while it meant to keep up (an xrun it did not plan, which it recovers
    /// from and counts) says nothing about the contract's cycles: measured again.
    /// A stall of 80 ms or more where it meant to keep up may have emptied its 100 ms buffer where nobody looks (just
    /// before its drain): hushd then counts one more than the probe was told of.
    static func disturbed(_ run: Run) -> String? {
        if run.unplanned > 0 { return "the probe fell behind \(run.unplanned) times where it meant to keep up" }
        if run.longestGap >= 80 { return "the probe was stalled for \(run.longestGap) ms where it meant to keep up" }
        if run.outputXruns > 0 {
            return "hushd's own output underran \(run.outputXruns) times (the machine stalled it)"
        }
        return nil
    }

    /// A cycle whose first call found the stream running and whose transfer a moment later found it in XRUN: hushd
    /// was behind the clock when the probe first looked (held off, it then caught up at once), so the ring was not
    /// yet empty (playback) or full (capture). A card's pointer never lags the clock; hushd's, on a starved machine,
    /// can. A plugin that missed the XRUN on one call would do so in every take, and the third fails.
    static func foundLate(_ run: Run) -> String? {
        guard let cycle = run.cycles.first(where: { $0.result != "EPIPE" && $0.then == "EPIPE" }) else { return nil }
        return "hushd was behind the clock at the first call (\(cycle))"
    }

    static func device(_ direction: String) -> String {
        direction == "playback" ? "hush:music" : "hush:CATEGORY=record"
    }

    /// Runs the probe on a fresh hushd until a take is undisturbed (at most three), and has `judge` look at it:
    /// `judge` records what is wrong, or returns why the take is the machine's and not hush's.
    static func probing(
        _ what: String,
        _ direction: String,
        stop: String = "default",
        access: String = "rw",
        blocking: String = "block",
        _ cycles: [String],
        judge: (Run) -> String?
    ) throws {
        try ALSADeviceTests.requireTools()
        try ALSADeviceTests.retaking(what) {
            let hushd = try HushdProcess()
            defer { _ = hushd.stop() }
            let run = try Self.run(
                hushd,
                device: device(direction),
                direction,
                stop: stop,
                access: access,
                blocking: blocking,
                cycles
            )
            #expect(run.done, "the probe: \(run.text.suffix(2000))")
            if let reason = disturbed(run) { return reason }
            return judge(run)
        }
    }

    @Test(
        "playback: a stall longer than the buffer is an underrun the next call reports (-EPIPE, XRUN); prepare recovers",
        arguments: [("rw", "block"), ("mmap", "block"), ("rw", "nonblock"), ("mmap", "nonblock")]
    )
    func playbackUnderrun(access: String, blocking: String) throws {
        let cycles = ["move:300", "wait:300", "delay:300", "status:300"]
        try Self.probing(
            "playback underrun, \(access) \(blocking)",
            "playback",
            access: access,
            blocking: blocking,
            cycles
        ) {
            run in
            if let reason = Self.foundLate(run) { return reason }
            #expect(run.cycles.count == 4, "\(run.text)")
            for cycle in run.cycles {
                #expect(cycle.result == "EPIPE", "\(cycle): the first call after the stall reports the underrun")
                #expect(cycle.state == "XRUN", "\(cycle): snd_pcm_state says XRUN")
            }
            #expect(run.xruns == 4, "\(run.text)")
            #expect(run.counted == 4, "hushd counted \(run.counted ?? -1); the probe was told 4: \(run.text)")
            return nil
        }
    }

    @Test("capture: a recorder that stops reading for longer than its buffer is told of the overrun")
    func captureOverrun() throws {
        try Self.probing("capture overrun", "capture", ["move:300", "wait:300", "status:300"]) { run in
            if let reason = Self.foundLate(run) { return reason }
            for cycle in run.cycles {
                #expect(cycle.result == "EPIPE" && cycle.state == "XRUN", "\(cycle)")
            }
            #expect(run.xruns == 3 && run.cycles.count == 3, "\(run.text)")
            #expect(run.counted == 3, "hushd counted \(run.counted ?? -1) overruns; the probe was told 3")
            return nil
        }
    }

    @Test(
        "a stop threshold at the boundary asks never to be stopped: counted by hushd, not told",
        arguments: ["playback", "capture"]
    )
    func boundary(direction: String) throws {
        try Self.probing(
            "\(direction), stop threshold at the boundary",
            direction,
            stop: "boundary",
            ["move:300", "status:300"]
        ) {
            run in
            for cycle in run.cycles {
                #expect(!cycle.xrun && cycle.state == "RUNNING", "\(cycle)")
            }
            #expect(run.xruns == 0, "\(run.text)")
            #expect(run.counted == 2, "hushd counts each stall all the same: \(run.counted ?? -1)")
            return nil
        }
    }

    @Test("a stop threshold 500 ms above the buffer lets a 200 ms starvation pass and stops an 800 ms one")
    func aboveTheBuffer() throws {
        try Self.probing(
            "playback, stop threshold above the buffer",
            "playback",
            stop: "+500",
            ["move:300", "move:900"]
        ) {
            run in
            guard run.cycles.count == 2 else {
                Issue.record("two cycles expected: \(run.text)")
                return nil
            }
            // A first stall that grew past 550 ms (450 ms dry) is the machine's doing, not hush's.
            if run.cycles[0].slept > 550 { return "the 300 ms stall took \(run.cycles[0].slept) ms" }
            #expect(!run.cycles[0].xrun, "\(run.cycles[0]): 200 ms of starvation is within the 500 ms allowed")
            #expect(run.cycles[1].result == "EPIPE", "\(run.cycles[1]): 800 ms is not")
            #expect(run.counted == 2, "hushd counts both: \(run.counted ?? -1)")
            return nil
        }
    }

    @Test("a stop threshold below the buffer stops the stream before the ring is empty")
    func belowTheBuffer() throws {
        try Self.probing("playback, stop threshold below the buffer", "playback", stop: "-40", ["move:300"]) { run in
            #expect(run.cycles.first?.result == "EPIPE", "\(run.text)")
            return nil
        }
    }

    @Test("a pause longer than the buffer is not an underrun (R23: nothing moves)", arguments: ["playback", "capture"])
    func pauseIsNotLate(direction: String) throws {
        try Self.probing("\(direction) paused for 500 ms", direction, ["pause:500", "pause:500"]) { run in
            for cycle in run.cycles {
                #expect(!cycle.xrun && cycle.state == "RUNNING", "\(cycle)")
            }
            #expect(run.xruns == 0 && run.counted == 0, "\(run.text); hushd counted \(run.counted ?? -1)")
            return nil
        }
    }

    /// aplay fed through a pipe that stalls twice for 500 ms, with a 100 ms buffer: what it prints, and what hushd
    /// counted for its stream and said when it recovered.
    static func starvedAplay(
        _ hushd: HushdProcess,
        extra: [String]
    ) throws -> (printed: Int, counted: Int?, text: String) {
        let scratch = try ScratchDirectory(prefix: "hush-xrun-aplay")
        let raw = scratch.path + "/half.raw"
        // Half a second of 1 kHz, S16_LE stereo at 48 kHz.
        var bytes: [UInt8] = []
        for frame in 0..<24000 {
            let value = Int16(3277 * sin(2 * Double.pi * 1000 * Double(frame) / 48000))
            let le = UInt16(bitPattern: value)
            for _ in 0..<2 { bytes += [UInt8(le & 0xFF), UInt8(le >> 8)] }
        }
        FileManager.default.createFile(atPath: raw, contents: Data(bytes))
        let aplay =
            (["aplay", "-D", "hush:music", "-t", "raw", "-f", "S16_LE", "-r", "48000", "-c", "2", "-B", "100000"]
            + extra).joined(separator: " ")
        let script = "{ cat \(raw); sleep 0.5; cat \(raw); sleep 0.5; cat \(raw); } | \(aplay)"
        let application = try ALSADeviceTests.Application("/bin/sh", ["-c", script], socket: hushd.socket)
        guard let ended = application.finish(within: 30) else {
            throw HushdTestFailure("aplay did not end within 30 s: \(application.text.suffix(2000))")
        }
        #expect(ended.status == 0, "aplay recovers and ends well: \(application.text.suffix(2000))")
        let printed = application.text.components(separatedBy: "underrun!!!").count - 1
        var counted: Int?
        let deadline = Date().addingTimeInterval(5)
        while counted == nil && Date() < deadline {
            let log = (try? String(contentsOfFile: hushd.logPath, encoding: .utf8)) ?? ""
            if let line = log.split(separator: "\n").first(where: {
                $0.contains("of aplay (pid") && $0.contains("ended")
            }),
                let match = line.firstMatch(of: /; (\d+) underrun/)
            {
                counted = Int(match.1)
            } else {
                usleep(20_000)
            }
        }
        return (printed, counted, application.text)
    }

    @Test("aplay starved twice prints underrun!!! twice, as hushd counts, and recovers; hushd logs the recovery")
    func aplayIsTold() throws {
        try ALSADeviceTests.requireTools()
        try ALSADeviceTests.retaking("aplay starved by its pipe") {
            let hushd = try HushdProcess()
            defer { _ = hushd.stop() }
            let (printed, counted, text) = try Self.starvedAplay(hushd, extra: [])
            let log = (try? String(contentsOfFile: hushd.logPath, encoding: .utf8)) ?? ""
            print("aplay starved twice: printed \(printed) underrun!!!, hushd counted \(counted ?? -1)")
            #expect(printed == counted, "aplay was told of each underrun hushd counted: \(text)")
            // More than the two stalls: the machine stalled aplay as well (it was still told each time).
            if printed > 2 { return "aplay fell behind \(printed - 2) more times than its pipe made it" }
            #expect(printed == 2, "two stalls, two underruns: \(text)")
            #expect(
                log.contains("prepared again after") && log.contains("[R23 late-application]"),
                "hushd says aplay recovered"
            )
            return nil
        }
    }

    @Test("aplay -T 1000000 (its stop threshold a second past the buffer) rides out 400 ms of starvation untold")
    func aplayStopDelay() throws {
        try ALSADeviceTests.requireTools()
        try ALSADeviceTests.retaking("aplay -T with a starved pipe") {
            let hushd = try HushdProcess()
            defer { _ = hushd.stop() }
            let (printed, counted, text) = try Self.starvedAplay(hushd, extra: ["-T", "1000000"])
            print("aplay -T 1000000 starved twice: printed \(printed) underrun!!!, hushd counted \(counted ?? -1)")
            #expect(printed == 0, "\(text)")
            #expect((counted ?? 0) >= 2, "hushd counts the starvation all the same: \(counted ?? -1)")
            return nil
        }
    }
}
