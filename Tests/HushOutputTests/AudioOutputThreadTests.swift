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

/// The audio thread's witness of its own timing: the longest gap between periods and the longest render, which
/// hushd's log puts next to every underrun to say what most likely caused it.
@Suite("Audio thread timing")
struct AudioOutputThreadTests {
    /// A device that takes a period every `period` (as a blocking ALSA write does), except write number
    /// `stallAt`, which comes back after `stall` and reports an underrun, as after the thread was held off.
    final class StallingOutput: PCMOutput, @unchecked Sendable {
        let granted = PlaybackConfiguration(pcm: "stalling", periodFrames: 240, periods: 2)
        let period: TimeInterval
        let stallAt: Int
        let stall: TimeInterval
        let writes = Atomic<Int>(0)

        init(stallAt: Int, stall: TimeInterval) {
            period = Double(granted.periodFrames) / Double(granted.sampleRate)
            self.stallAt = stallAt
            self.stall = stall
        }

        func write(_ buffer: UnsafeRawPointer, frames: Int) -> PCMWriteResult {
            let count = writes.add(1, ordering: .relaxed).newValue
            if count == stallAt {
                Thread.sleep(forTimeInterval: stall)
                return .recovered
            }
            Thread.sleep(forTimeInterval: period)
            return .written
        }

        func close() {}
    }

    @Test("a stall of the thread shows as a gap between periods at least as long, next to the underrun it caused")
    func stallIsMeasured() throws {
        let output = StallingOutput(stallAt: 10, stall: 0.08)
        let engine = MixerEngine(format: MixerFormat(sampleRate: 48000, channels: 2, maxFrames: 240))
        let thread = AudioOutputThread.forTest(engine, output)
        try thread.start()
        while output.writes.load(ordering: .relaxed) < 20 { Thread.sleep(forTimeInterval: 0.01) }
        thread.stop()
        #expect(thread.counters.underruns.load(ordering: .relaxed) == 1)
        // Sleeps never end early, so the stall's 80 ms is a floor whatever the machine's load.
        let gap = thread.counters.longestGap.exchange(0, ordering: .relaxed)
        #expect(gap >= 80_000_000, "longest gap \(gap) ns")
        // Rendering silence for 5 ms of audio takes microseconds; a second look after taking the figure is 0.
        let render = thread.counters.longestRender.load(ordering: .relaxed)
        #expect(render > 0 && render < gap, "longest render \(render) ns")
        #expect(thread.counters.longestGap.load(ordering: .relaxed) == 0)
    }

    @Test(
        "the diagnosis names the likeliest cause from the figures",
        arguments: [
            (
                Duration.milliseconds(212), Duration.microseconds(350),
                "the longest gap between periods was 212 ms, with 64 ms queued; the longest render took 0.4 ms of a "
                    + "21 ms period: the audio thread was held off longer than the queue lasts; something else had the "
                    + "CPU (a higher-priority thread, interrupts, a stalled machine)"
            ),
            (
                Duration.milliseconds(30), Duration.milliseconds(25),
                "the longest gap between periods was 30 ms, with 64 ms queued; the longest render took 25 ms of a "
                    + "21 ms period: mixing one period took longer than playing it; raise period_frames or play fewer "
                    + "sounds at once"
            ),
            (
                Duration.microseconds(21_400), Duration.microseconds(40),
                "the longest gap between periods was 21 ms, with 64 ms queued; the longest render took 40 µs of a "
                    + "21 ms period: the audio thread kept time; the device or its driver did not"
            ),
        ]
    )
    func diagnosis(_ gap: Duration, _ render: Duration, _ expected: String) {
        let period = Duration.nanoseconds(1024 * 1_000_000_000 / 48000)
        #expect(
            AudioOutputThread.diagnosis(gap: gap, render: render, period: period, queued: period * 3) == expected
        )
    }

    /// What a device saw, shared by the devices of one test: which threads wrote to, closed and opened them, and
    /// how many allocations the writing thread had made since counting started there.
    final class Witness: @unchecked Sendable {
        /// The thread that wrote (the audio thread), and the threads that closed devices and opened them.
        let writer = Atomic<UInt>(0)
        let closers = Mutex<[UInt]>([])
        let openers = Mutex<[UInt]>([])
        /// When each open was tried, in monotonic nanoseconds, and when the device was lost.
        let attempts = Mutex<[Int]>([])
        let lostAt = Atomic<Int>(0)
        let opens = Atomic<Int>(0)
        /// Writes to every device together; counting starts on the audio thread at write `countFrom` (0: never).
        let writes = Atomic<Int>(0)
        let countFrom: Int
        let allocations = Atomic<Int64>(-1)
        let frees = Atomic<Int64>(-1)
        init(countFrom: Int = 0) { self.countFrom = countFrom }

        static func thread() -> UInt { UInt(pthread_self()) }
        static func now() -> Int {
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC, &now)
            return now.tv_sec * 1_000_000_000 + now.tv_nsec
        }
    }

    /// A device that takes a period per period of time and reports itself gone at its write `goneAt` (0: never).
    /// Its first samples per write are kept (preallocated: the audio thread must not allocate) to hear fades.
    final class WitnessedOutput: PCMOutput, @unchecked Sendable {
        let granted: PlaybackConfiguration
        let witness: Witness
        let goneAt: Int
        let writes = Atomic<Int>(0)
        let closed = Atomic<Bool>(false)
        /// The first sample of each of the first 64 writes.
        let firstSamples = UnsafeMutablePointer<Float>.allocate(capacity: 64)

        init(_ witness: Witness, goneAt: Int = 0, pcm: String = "witnessed") {
            granted = PlaybackConfiguration(pcm: pcm, format: .floatLE, periodFrames: 240, periods: 2)
            self.witness = witness
            self.goneAt = goneAt
            firstSamples.initialize(repeating: .nan, count: 64)
        }

        deinit { firstSamples.deallocate() }

        func write(_ buffer: UnsafeRawPointer, frames: Int) -> PCMWriteResult {
            witness.writer.store(Witness.thread(), ordering: .relaxed)
            let count = writes.add(1, ordering: .relaxed).newValue
            if count <= 64 { firstSamples[count - 1] = buffer.load(as: Float.self) }
            let all = witness.writes.add(1, ordering: .relaxed).newValue
            if all == witness.countFrom {
                hush_allocation_counting(true)
            } else if witness.countFrom > 0 && all > witness.countFrom {
                witness.allocations.store(hush_allocations_on_this_thread(), ordering: .relaxed)
                witness.frees.store(hush_frees_on_this_thread(), ordering: .relaxed)
            }
            if count == goneAt {
                witness.lostAt.store(Witness.now(), ordering: .relaxed)
                return .gone
            }
            usleep(UInt32(frames * 1_000_000 / granted.sampleRate))
            return .written
        }

        func close() {
            closed.store(true, ordering: .relaxed)
            witness.closers.withLock { $0.append(Witness.thread()) }
        }
    }

    /// An engine with room for 240-frame periods, playing a steady 0.5 on both channels.
    static func steadyEngine() throws -> (MixerEngine, MixerController) {
        try HushOutputTests.steadyEngine(maxFrames: 240)
    }

    /// Runs the control side's part (`service`) every 2 ms until `done` holds, for at most 5 s.
    static func serve(_ thread: AudioOutputThread, until done: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(5)
        while !done() {
            guard Date() < deadline else { return false }
            thread.service()
            usleep(2000)
        }
        return true
    }

    @Test(
        "a lost device is closed and reopened by the control side, not the audio thread: 100, 200, 250 ms apart, and the sound fades back in"
    )
    func lossIsHandledOffTheAudioThread() throws {
        let witness = Witness()
        let lost = WitnessedOutput(witness, goneAt: 10)
        let reopened = WitnessedOutput(witness)
        let (engine, controller) = try Self.steadyEngine()
        let thread = AudioOutputThread(
            engine: engine,
            output: lost,
            requested: lost.granted,
            priority: 0,
            logger: Logger(label: "test"),
            open: { [witness, reopened] _ in
                witness.openers.withLock { $0.append(Witness.thread()) }
                witness.attempts.withLock { $0.append(Witness.now()) }
                // Not there for the first two attempts.
                return witness.opens.add(1, ordering: .relaxed).newValue < 3 ? nil : reopened
            }
        )
        try thread.start()
        let served = Self.serve(thread) { reopened.writes.load(ordering: .relaxed) >= 5 }
        thread.stop()
        #expect(served, "the device came back")
        let control = Witness.thread()
        let audio = witness.writer.load(ordering: .relaxed)
        #expect(audio != 0 && audio != control)
        let lostClosed = lost.closed.load(ordering: .relaxed)
        #expect(lostClosed, "the lost device was closed")
        #expect(witness.openers.withLock { $0 } == [control, control, control], "every open on the control side")
        // The lost device, then the reopened one when the thread stopped: both closed here.
        #expect(witness.closers.withLock { $0 } == [control, control])
        #expect(thread.counters.deviceLosses.load(ordering: .relaxed) == 1)
        #expect(thread.counters.reopenings.load(ordering: .relaxed) == 1)
        #expect(thread.counters.handovers.load(ordering: .relaxed) == 0, "a reopening is not a route change")
        // The waits are floors (sleeps never end early); the ceilings only catch a wait that was never kept.
        let attempts = witness.attempts.withLock { $0 }
        let gaps = zip([witness.lostAt.load(ordering: .relaxed)] + attempts, attempts).map { ($1 - $0) / 1_000_000 }
        #expect(gaps.count == 3)
        for (gap, floor) in zip(gaps, [100, 200, 250]) {
            #expect(gap >= floor - 2 && gap < floor + 1000, "waits \(gaps) ms after the loss and each failure")
        }
        // The first period on the returned device starts from silence; a few periods later the sound is steady.
        #expect(abs(reopened.firstSamples[0]) < 0.01, "fades in: \(reopened.firstSamples[0])")
        #expect(abs(reopened.firstSamples[3] - 0.5) < 0.001, "then steady: \(reopened.firstSamples[3])")
        withExtendedLifetime(controller) {}
    }

    @Test(
        "the audio thread allocates nothing per period, through commands, a route handover, a loss and a return",
        .enabled(if: hush_allocation_counter_installed(), "a sanitizer replaces malloc in this build")
    )
    func audioThreadAllocatesNothing() throws {
        // Counting starts at the 50th write, after the first periods have made what is made lazily.
        let witness = Witness(countFrom: 50)
        let first = WitnessedOutput(witness, pcm: "first")
        let route = WitnessedOutput(witness, goneAt: 60, pcm: "route")
        let back = WitnessedOutput(witness, pcm: "back")
        let (engine, controller) = try Self.steadyEngine()
        let thread = AudioOutputThread.forTest(engine, first, open: { [back] _ in back })
        try thread.start()
        var step = 0
        var handedOver = false
        let served = Self.serve(thread) {
            // The control side meanwhile: ducks and volume steps with ramps, through the command ring.
            step += 1
            controller.apply(.setSessionGain(SessionID(1), Gain(decibels: step % 2 == 0 ? -14 : 0), ramp: .zero))
            controller.apply(.setBusGain(.music, Gain(decibels: step % 3 == 0 ? -3.5 : 0), ramp: .milliseconds(5)))
            _ = controller.poll()
            if first.writes.load(ordering: .relaxed) >= 70 && !handedOver {
                handedOver = thread.handOver(route, requested: route.granted)
            }
            return back.writes.load(ordering: .relaxed) >= 30
        }
        thread.stop()
        #expect(served, "the route's device took over, was lost, and came back")
        #expect(route.writes.load(ordering: .relaxed) == 60 && thread.counters.reopenings.load(ordering: .relaxed) == 1)
        #expect(witness.writes.load(ordering: .relaxed) > 150)
        #expect(witness.allocations.load(ordering: .relaxed) == 0, "allocations on the audio thread")
        #expect(witness.frees.load(ordering: .relaxed) == 0, "frees on the audio thread")
    }

    /// A device that keeps every sample of its first 40 writes (preallocated), paced like a device.
    final class RecordingOutput: PCMOutput, @unchecked Sendable {
        let granted = PlaybackConfiguration(pcm: "recording", format: .floatLE, periodFrames: 240, periods: 2)
        let kept = KeptWrites(capacity: 40, perWrite: 240 * 2)
        let writes = Atomic<Int>(0)
        let closed = Atomic<Bool>(false)

        func write(_ buffer: UnsafeRawPointer, frames: Int) -> PCMWriteResult {
            kept.keep(buffer)
            writes.add(1, ordering: .releasing)
            usleep(useconds_t(granted.periodFrames * 1_000_000 / granted.sampleRate))
            return .written
        }

        /// Every sample of write `index` (0-based).
        func write(_ index: Int) -> [Float] { kept.write(index) }

        func close() { closed.store(true, ordering: .relaxed) }
    }

    @Test(
        "a route change cross-fades: both devices play the same frames, their gains add up to one, the old one plays its fade out"
    )
    func routeChangeCrossfades() throws {
        let old = RecordingOutput()
        let new = RecordingOutput()
        // The controller keeps the steady sound's buffer alive while the engine plays it.
        let (engine, controller) = try Self.steadyEngine()
        defer { withExtendedLifetime(controller) {} }
        let thread = AudioOutputThread.forTest(engine, old)
        // Two periods of 240 frames: the ramp crosses a period boundary.
        thread.crossfade = .milliseconds(10)
        try thread.start()
        var handedAt = -1
        let served = Self.serve(thread) {
            if handedAt < 0 && old.writes.load(ordering: .acquiring) >= 8 {
                handedAt = old.writes.load(ordering: .acquiring)
                #expect(thread.handOver(new, requested: new.granted))
            }
            return new.writes.load(ordering: .acquiring) >= 12 && old.closed.load(ordering: .relaxed)
        }
        thread.stop()
        #expect(served, "the new device played and the old one was closed")
        #expect(thread.counters.crossfades.load(ordering: .relaxed) == 1)
        // The steady level, from the new device once the move is over.
        let level = new.write(11)[0]
        #expect(level > 0.1, "the steady level: \(level)")
        // The old device's writes: steady up to the move, then the two fading periods, then its queue's worth of
        // silence, then nothing more (it went back to the control side, which closed it).
        let oldWrites = old.writes.load(ordering: .acquiring)
        let fadeAt = try #require(
            ((handedAt - 1)..<oldWrites).first { old.write($0).contains { abs($0 - level) > 1e-6 } }
        )
        #expect(fadeAt <= handedAt + 1, "the fade began at the handover (write \(fadeAt), handed at \(handedAt))")
        #expect(old.write(fadeAt - 1).allSatisfy { abs($0 - level) < 1e-6 }, "steady before the move")
        #expect(oldWrites == fadeAt + 2 + old.granted.periods, "fade, then silence for the queue, then closed")
        for index in (fadeAt + 2)..<oldWrites { #expect(old.write(index).allSatisfy { $0 == 0 }, "write \(index)") }
        // The first two writes to the new device are the same frames as the old device's fading ones: at every
        // frame and channel the two add up to the steady level, the new one rising, the old one falling.
        var previous: Float = -1
        for period in 0..<2 {
            let faded = old.write(fadeAt + period)
            let rising = new.write(period)
            for sample in 0..<rising.count {
                #expect(abs(faded[sample] + rising[sample] - level) < 1e-5, "period \(period), sample \(sample)")
                if sample % 2 == 0 {
                    #expect(rising[sample] > previous, "the new device's gain rises at every frame")
                    previous = rising[sample]
                }
            }
        }
        #expect(abs(new.write(0)[0] - level / 480) < 1e-5, "the fade starts one frame's step above silence")
        // After the fade the new device plays at the steady level: no second fade-in from silence.
        for index in 2..<12 { #expect(new.write(index).allSatisfy { abs($0 - level) < 1e-6 }, "write \(index)") }
    }
}
