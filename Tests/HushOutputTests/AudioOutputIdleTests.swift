import CAllocationCounter
import Foundation
import HushALSA
import HushCore
import HushMixer
import Logging
import Synchronization
import Testing

@testable import HushOutput

#if canImport(Glibc)
import Glibc
#endif

/// The audio thread's idle state (issue 20, "Idle"): after `idleAfter` with nothing to hear it stops the device and
/// sleeps with no wake-ups; the first sound after that restarts the device and is in the first period written.
/// Counted, not timed: writes, halts and context switches, never how long something took.
@Suite("Audio thread idle")
struct AudioOutputIdleTests {
    /// A device paced like a real one that counts halts and resumes, keeps the first frames of every write after
    /// the first resume (preallocated), and notes the writing thread's kernel id.
    final class IdleOutput: PCMOutput, @unchecked Sendable {
        let granted = PlaybackConfiguration(pcm: "idle", format: .floatLE, periodFrames: 240, periods: 2)
        let writes = Atomic<Int>(0)
        let halts = Atomic<Int>(0)
        let resumes = Atomic<Int>(0)
        /// Writes when the last halt came.
        let writesAtHalt = Atomic<Int>(-1)
        let writerTID = Atomic<Int32>(0)
        /// Every sample of the first 8 writes after the first resume.
        let afterWake = KeptWrites(capacity: 8, perWrite: 240 * 2)

        /// When each of the first writes returned (CLOCK_MONOTONIC), as the rate meter sees them.
        let returned = UnsafeMutablePointer<Int>.allocate(capacity: 4096)
        let returnedCount = Atomic<Int>(0)

        deinit { returned.deallocate() }

        func write(_ buffer: UnsafeRawPointer, frames: Int) -> PCMWriteResult {
            if writerTID.load(ordering: .relaxed) == 0 { writerTID.store(Self.threadID(), ordering: .relaxed) }
            if resumes.load(ordering: .relaxed) > 0 { afterWake.keep(buffer) }
            writes.add(1, ordering: .releasing)
            usleep(useconds_t(frames * 1_000_000 / granted.sampleRate))
            let count = returnedCount.load(ordering: .relaxed)
            if count < 4096 {
                var now = timespec()
                clock_gettime(CLOCK_MONOTONIC, &now)
                returned[count] = now.tv_sec * 1_000_000_000 + now.tv_nsec
                returnedCount.store(count + 1, ordering: .releasing)
            }
            return .written
        }

        /// The frames a second the writes made in window `index` of `seconds` (by when they returned, from the
        /// first to the last there), and the longest wait between two of them, nanoseconds.
        func paced(window index: Int, seconds: Int) -> (rate: Double, longestGap: Int) {
            let count = returnedCount.load(ordering: .acquiring)
            let start = index * seconds * 1_000_000_000
            let end = start + seconds * 1_000_000_000
            let inside = (0..<count).map { returned[$0] }.filter { $0 >= start && $0 < end }
            let gaps = zip(inside, inside.dropFirst()).map { $1 - $0 }
            // From the window's first write to its last: the stretch the meter's line runs through.
            guard let first = inside.first, let last = inside.last, last > first else { return (0, end - start) }
            let rate = Double((inside.count - 1) * granted.periodFrames) / (Double(last - first) / 1e9)
            return (rate, gaps.max() ?? end - start)
        }

        /// This thread's kernel id, from /proc/thread-self ("PID/task/TID").
        static func threadID() -> Int32 {
            var link = [CChar](repeating: 0, count: 64)
            let count = readlink("/proc/thread-self", &link, 63)
            guard count > 0 else { return 0 }
            let path = String(decoding: link.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            return Int32(path.split(separator: "/").last ?? "") ?? 0
        }

        func halt() {
            writesAtHalt.store(writes.load(ordering: .relaxed), ordering: .relaxed)
            halts.add(1, ordering: .releasing)
        }

        func resume() -> PCMWriteResult {
            resumes.add(1, ordering: .releasing)
            return .written
        }

        func close() {}
    }

    static func engine() -> (MixerEngine, MixerController) {
        let engine = MixerEngine(format: MixerFormat(sampleRate: 48000, channels: 2, maxFrames: 240))
        let controller = MixerController(engine: engine)
        // No fade-in: the first frame of the sound is the first frame it plays, so a cut start would show.
        controller.resumeFade = .zero
        return (engine, controller)
    }

    /// A stereo sound whose every sample differs: 0.001, 0.002, … per frame.
    static func ramp(frames: Int = 4800) -> AudioBuffer {
        AudioBuffer(frameCount: frames, channels: 2, sampleRate: 48000) { samples in
            for frame in 0..<frames {
                samples[2 * frame] = Float(frame + 1) / 10000
                samples[2 * frame + 1] = Float(frame + 1) / 10000
            }
        }
    }

    /// Waits (sleeping, serving the control side) until `done`, for at most 10 s: a stalled machine only waits.
    static func wait(_ thread: AudioOutputThread, until done: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(10)
        while !done() {
            guard Date() < deadline else { return false }
            thread.service()
            usleep(2000)
        }
        return true
    }

    /// The context switches, voluntary and not, of thread `tid` of this process so far.
    static func contextSwitches(_ tid: Int32) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/self/task/\(tid)/status", encoding: .utf8) else {
            return nil
        }
        return text.split(separator: "\n").filter { $0.hasSuffix("ctxt_switches") || $0.contains("ctxt_switches:") }
            .compactMap { Int($0.split(separator: ":").last?.trimmingCharacters(in: .whitespaces) ?? "") }
            .reduce(0, +)
    }

    @Test(
        "after idleAfter of nothing the device is stopped and no period is written; a sound started while idle is in the first period after waking, from its first frame"
    )
    func idlesAndWakes() throws {
        let output = IdleOutput()
        let (engine, controller) = Self.engine()
        let thread = AudioOutputThread.forTest(engine, output)
        // 0.1 s: 20 periods of 240 frames.
        thread.idleAfter = .milliseconds(100)
        try thread.start()
        defer { thread.stop() }
        #expect(Self.wait(thread) { thread.isIdle }, "went idle")
        let atHalt = output.writes.load(ordering: .acquiring)
        #expect(output.halts.load(ordering: .acquiring) == 1)
        #expect(output.writesAtHalt.load(ordering: .relaxed) == 20, "20 quiet periods, then the halt")
        // Idle: the control side serving the loop as hushd's does, with nothing for the engine.
        let tid = output.writerTID.load(ordering: .relaxed)
        usleep(50_000)
        let before = Self.contextSwitches(tid)
        for _ in 0..<50 {
            thread.service()
            usleep(20_000)
        }
        let after = Self.contextSwitches(tid)
        let switches = (after ?? 0) - (before ?? 0)
        print(
            "hush-audio (tid \(tid)) idle for 1 s: \(switches) context switches, \(output.writes.load(ordering: .acquiring) - atHalt) writes"
        )
        #expect(before != nil && after != nil, "the audio thread's /proc status")
        #expect(switches <= 1, "context switches of the idle audio thread in 1 s")
        #expect(output.writes.load(ordering: .acquiring) == atHalt, "no period written while idle")
        #expect(thread.isIdle && output.resumes.load(ordering: .relaxed) == 0)

        // A sound while idle: the commands are in the ring; the loop's service wakes the thread.
        try controller.attach(SessionID(1), bus: .music, buffer: Self.ramp(), loop: false)
        controller.apply(.resume(SessionID(1)))
        thread.service()
        #expect(Self.wait(thread) { output.afterWake.count.load(ordering: .acquiring) >= 2 }, "woke and wrote")
        #expect(output.resumes.load(ordering: .relaxed) == 1, "the device was prepared again once")
        #expect(thread.counters.wakings.load(ordering: .relaxed) == 1)
        // The first period after waking is the sound's first 240 frames, unfaded, uncut.
        let first = output.afterWake.write(0)
        #expect(first[0] == 0.0001 && first[1] == 0.0001, "the sound's first frame: \(first[0])")
        #expect((0..<240).allSatisfy { abs(first[2 * $0] - Float($0 + 1) / 10000) < 1e-6 })
        #expect(abs(output.afterWake.write(1)[0] - 0.0241) < 1e-6, "and the next period goes on from frame 241")
        withExtendedLifetime(controller) {}
    }

    @Test("keep_warm (idleAfter nil) never stops the device")
    func keepWarmNeverStops() throws {
        let output = IdleOutput()
        let (engine, _) = Self.engine()
        let thread = AudioOutputThread.forTest(engine, output)
        try thread.start()
        // 60 quiet periods: three times what went idle above.
        #expect(Self.wait(thread) { output.writes.load(ordering: .acquiring) >= 60 })
        thread.stop()
        #expect(output.halts.load(ordering: .relaxed) == 0 && thread.counters.idlings.load(ordering: .relaxed) == 0)
    }

    final class Wanting: @unchecked Sendable {
        let wants = Atomic<Bool>(true)
        var hook: PeriodHook {
            PeriodHook(
                context: Unmanaged.passUnretained(self).toOpaque(),
                call: { _, _ in },
                wantsPeriods: { context in
                    Unmanaged<Wanting>.fromOpaque(context).takeUnretainedValue().wants.load(ordering: .relaxed)
                }
            )
        }
    }

    /// A thread that would go idle after 100 ms of nothing, with a period hook that wants periods (a recorder).
    static func besideARecorder() -> (output: IdleOutput, thread: AudioOutputThread, wanting: Wanting) {
        let output = IdleOutput()
        let (engine, _) = engine()
        let wanting = Wanting()
        let thread = AudioOutputThread.forTest(engine, output)
        thread.idleAfter = .milliseconds(100)
        thread.periodHook = wanting.hook
        return (output, thread, wanting)
    }

    @Test("a period hook that wants periods (a recorder, a relay) keeps the thread running; it idles once it stops")
    func periodHookKeepsItRunning() throws {
        let (output, thread, wanting) = Self.besideARecorder()
        try thread.start()
        defer { thread.stop() }
        #expect(Self.wait(thread) { output.writes.load(ordering: .acquiring) >= 60 })
        #expect(output.halts.load(ordering: .relaxed) == 0, "not idle while the hook wants periods")
        wanting.wants.store(false, ordering: .relaxed)
        #expect(Self.wait(thread) { thread.isIdle })
        // A recorder starting while idle wakes the thread.
        wanting.wants.store(true, ordering: .relaxed)
        let atHalt = output.writes.load(ordering: .acquiring)
        thread.service()
        #expect(Self.wait(thread) { output.writes.load(ordering: .acquiring) >= atHalt + 10 })
        #expect(!thread.isIdle)
        withExtendedLifetime(wanting) {}
    }

    @Test("quiet beside a recorder (so not idle), the device's rate is still measured")
    func rateMeasuredWhileQuiet() throws {
        let (output, thread, wanting) = Self.besideARecorder()
        thread.rateWindow = 1
        try thread.start()
        defer { thread.stop() }
        // 5 ms periods slept one by one: a little under 48 kHz, never over — how much under is the machine's (a busy
        // one oversleeps), so the figure is held to what the writes did in its window. A window in which the thread
        // was held off for 50 ms or more is a busy machine's: the next one is taken.
        var judged: [String] = []
        var seen = -1
        for _ in 1...5 {
            #expect(
                Self.wait(thread) {
                    (RateMeter.unpack(thread.counters.measuredRate.load(ordering: .relaxed))?.index ?? -1) > seen
                }
            )
            guard let (rate, index) = RateMeter.unpack(thread.counters.measuredRate.load(ordering: .relaxed)) else {
                break
            }
            seen = index
            let paced = output.paced(window: index, seconds: 1)
            print(
                "an idle-capable output quiet beside a recorder: measured \(rate) Hz; its writes made \(paced.rate) "
                    + "in that second, at most \(paced.longestGap / 1_000_000) ms apart (a device paced at 48000)"
            )
            guard paced.longestGap < 50_000_000 else {
                judged.append("window \(index): writes \(paced.longestGap / 1_000_000) ms apart")
                continue
            }
            #expect(rate <= 48000 * 1.001, "\(rate): a device slept into is never fast")
            #expect(abs(rate - paced.rate) <= 0.05 * paced.rate, "\(rate) against the writes' \(paced.rate)")
            judged = []
            break
        }
        if !judged.isEmpty { Issue.record("the machine was too busy to measure in 5 windows: \(judged)") }
        #expect(output.halts.load(ordering: .relaxed) == 0)
        withExtendedLifetime(wanting) {}
    }

    @Test(
        "going idle and waking allocates nothing on the audio thread",
        .enabled(if: hush_allocation_counter_installed(), "a sanitizer replaces malloc in this build")
    )
    func idleAllocatesNothing() throws {
        let witness = AudioOutputThreadTests.Witness(countFrom: 5)
        let output = AudioOutputThreadTests.WitnessedOutput(witness)
        let (engine, controller) = Self.engine()
        let thread = AudioOutputThread.forTest(engine, output)
        thread.idleAfter = .milliseconds(100)
        // A sound from the start, so that what the engine makes lazily for a voice's first render is made before
        // counting starts at write 5; then three idle stretches, each ended by a short sound.
        let sound = Self.ramp(frames: 480)
        try controller.attach(SessionID(100), bus: .effect, buffer: sound, loop: false)
        controller.apply(.resume(SessionID(100)))
        try thread.start()
        defer { thread.stop() }
        for round in 1...3 {
            #expect(Self.wait(thread) { thread.isIdle }, "idle \(round)")
            try controller.attach(SessionID(UInt64(round)), bus: .effect, buffer: sound, loop: false)
            controller.apply(.resume(SessionID(UInt64(round))))
            thread.service()
            #expect(Self.wait(thread) { thread.counters.wakings.load(ordering: .relaxed) == round })
            _ = controller.poll()
        }
        #expect(Self.wait(thread) { thread.isIdle })
        #expect(witness.writes.load(ordering: .relaxed) > 60)
        #expect(witness.allocations.load(ordering: .relaxed) == 0, "allocations on the audio thread")
        #expect(witness.frees.load(ordering: .relaxed) == 0, "frees on the audio thread")
    }
}
