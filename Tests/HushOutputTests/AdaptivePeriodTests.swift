import CAllocationCounter
import Foundation
import HushALSA
import HushCore
import HushMixer
import Synchronization
import Testing

@testable import HushOutput

#if canImport(Glibc)
import Glibc
#endif

/// The audio thread's side of R24 output-period: it mixes the period the control side chose from its next period
/// on, tells the device the wake level for it before it waits, never overfills the device's buffer, and nothing
/// already playing hears the change.
@Suite("Audio thread: the period in force (R24)")
struct AdaptivePeriodTests {
    /// A device whose period can grow, modelled as ALSA's is: a buffer of `bufferFrames`, a queue that drains
    /// while the thread waits for the wake level (``PlaybackConfiguration/wakeLevel(forPeriod:)``) set by
    /// `setPeriod`, and writes that never block. Everything it keeps is allocated up front.
    final class AdaptiveOutput: PCMOutput, @unchecked Sendable {
        let granted = PlaybackConfiguration(
            pcm: "adaptive",
            format: .floatLE,
            periodFrames: 64,
            periods: 3,
            maxPeriodFrames: 1024
        )
        static let capacity = 4096
        let writes = Atomic<Int>(0)
        /// Per write: its frames, the wake level the device was told before it, the queue before it, and the
        /// smallest and largest sample in it.
        let sizes = UnsafeMutablePointer<Int>.allocate(capacity: capacity)
        let levels = UnsafeMutablePointer<Int>.allocate(capacity: capacity)
        let queues = UnsafeMutablePointer<Int>.allocate(capacity: capacity)
        let lows = UnsafeMutablePointer<Float>.allocate(capacity: capacity)
        let highs = UnsafeMutablePointer<Float>.allocate(capacity: capacity)
        /// Every period the device was told, in order (at most 64).
        let told = UnsafeMutablePointer<Int>.allocate(capacity: 64)
        let tellings = Atomic<Int>(0)
        /// Writes that would have gone beyond the buffer.
        let overflows = Atomic<Int>(0)
        /// Allocation counting on the writing thread from write `countFrom` on (0: never).
        let countFrom: Int
        let allocations = Atomic<Int64>(-1)
        private var queued = 0
        private var wakeLevel: Int

        init(countFrom: Int = 0) {
            self.countFrom = countFrom
            wakeLevel = granted.wakeLevel(forPeriod: granted.periodFrames)
        }

        deinit {
            for pointer in [sizes, levels, queues, told] { pointer.deallocate() }
            lows.deallocate()
            highs.deallocate()
        }

        func setPeriod(_ frames: Int) -> PCMWriteResult {
            let index = tellings.load(ordering: .relaxed)
            if index < 64 { told[index] = frames }
            tellings.store(index + 1, ordering: .releasing)
            wakeLevel = granted.wakeLevel(forPeriod: frames)
            return .written
        }

        /// Drains the queue to the wake level, taking a tenth of the real time it would (the tests stay quick).
        func waitForRoom() -> PCMWriteResult {
            if queued > wakeLevel {
                usleep(UInt32((queued - wakeLevel) * 100_000 / granted.sampleRate))
                queued = wakeLevel
            }
            return .written
        }

        func write(_ buffer: UnsafeRawPointer, frames: Int) -> PCMWriteResult {
            let index = writes.load(ordering: .relaxed)
            if index < Self.capacity {
                let samples = buffer.assumingMemoryBound(to: Float.self)
                var low = Float.infinity
                var high = -Float.infinity
                for sample in 0..<(frames * granted.channels) {
                    low = min(low, samples[sample])
                    high = max(high, samples[sample])
                }
                sizes[index] = frames
                levels[index] = wakeLevel
                queues[index] = queued
                lows[index] = low
                highs[index] = high
            }
            if queued + frames > granted.bufferFrames { overflows.add(1, ordering: .relaxed) }
            queued = min(granted.bufferFrames, queued + frames)
            if countFrom > 0 && index + 1 == countFrom {
                hush_allocation_counting(true)
            } else if countFrom > 0 && index + 1 > countFrom {
                allocations.store(hush_allocations_on_this_thread(), ordering: .relaxed)
            }
            writes.store(index + 1, ordering: .releasing)
            return .written
        }

        func close() {}
    }

    /// An engine with room for 1024-frame periods, playing a steady 0.5 on both channels.
    static func steadyEngine() throws -> (MixerEngine, MixerController) {
        try HushOutputTests.steadyEngine(maxFrames: 1024)
    }

    /// Waits (up to 10 s) until the device has taken `count` writes.
    static func wait(for count: Int, on output: AdaptiveOutput) -> Bool {
        let deadline = Date().addingTimeInterval(10)
        while output.writes.load(ordering: .acquiring) < count {
            guard Date() < deadline else { return false }
            usleep(1000)
        }
        return true
    }

    @Test(
        "the chosen period is mixed from the next period on (a shorter one at once), the device told first, nothing heard"
    )
    func switches() throws {
        let output = AdaptiveOutput()
        let (engine, controller) = try Self.steadyEngine()
        defer { withExtendedLifetime(controller) {} }
        let thread = AudioOutputThread.forTest(engine, output)
        try thread.start()
        #expect(Self.wait(for: 20, on: output))
        thread.setPeriod(1024)
        let long = output.writes.load(ordering: .acquiring)
        #expect(Self.wait(for: long + 20, on: output))
        thread.setPeriod(64)
        let short = output.writes.load(ordering: .acquiring)
        #expect(Self.wait(for: short + 20, on: output))
        // A period the device cannot hold is never mixed: 4096 is clamped to its ceiling.
        thread.setPeriod(4096)
        let clamped = output.writes.load(ordering: .acquiring)
        #expect(Self.wait(for: clamped + 10, on: output))
        thread.stop()
        let writes = output.writes.load(ordering: .acquiring)
        let sizes = (0..<writes).map { output.sizes[$0] }
        // Each switch takes effect at most one period after it was asked (the period being mixed then finishes).
        #expect(sizes[..<long].allSatisfy { $0 == 64 })
        #expect(sizes[(long + 1)..<short].allSatisfy { $0 == 1024 }, "\(sizes[long..<short])")
        #expect(sizes[(short + 1)..<clamped].allSatisfy { $0 == 64 }, "\(sizes[short..<clamped])")
        #expect(sizes[(clamped + 1)...].allSatisfy { $0 == 1024 })
        // Told before it waited: every write found the wake level of its own period in force — but the first of a
        // shorter period chosen while the thread waited for a longer one, written at the longer one's deeper level.
        var early = 0
        for index in 0..<writes {
            let own = output.granted.wakeLevel(forPeriod: sizes[index])
            #expect(output.levels[index] >= own, "write \(index)")
            if output.levels[index] != own { early += 1 }
        }
        #expect(early <= 1, "\(early) writes of a shorter period at a longer one's level")
        let told = (0..<output.tellings.load(ordering: .acquiring)).map { output.told[$0] }
        #expect(told == [64, 1024, 64, 1024])
        #expect(thread.counters.periodChanges.load(ordering: .relaxed) == 3)
        #expect(output.overflows.load(ordering: .relaxed) == 0, "the buffer has room for the longest period")
        // A long period is written when the queue is at its wake level, a short one after the long queue drained:
        // once the first three periods filled it to the start, the queue never ran dry at a switch.
        for index in 3..<writes { #expect(output.queues[index] >= output.granted.wakeLevel(forPeriod: 64)) }
        // The steady signal is the same in every write after its fade-in, across the switches: no gap, no click.
        for index in 10..<writes {
            #expect(output.lows[index] == 0.5 && output.highs[index] == 0.5, "write \(index)")
        }
        #expect(thread.pace.periodFrames.load(ordering: .relaxed) == 1024)
        #expect(thread.pace.queuedFrames.load(ordering: .relaxed) == output.granted.queueFrames(forPeriod: 1024))
        #expect(thread.mixDelayFrames == output.granted.wakeLevel(forPeriod: 1024))
    }

    @Test(
        "the audio thread allocates nothing per period while the period changes",
        .enabled(if: hush_allocation_counter_installed(), "a sanitizer replaces malloc in this build")
    )
    func switchesAllocateNothing() throws {
        let output = AdaptiveOutput(countFrom: 30)
        let (engine, controller) = try Self.steadyEngine()
        defer { withExtendedLifetime(controller) {} }
        let thread = AudioOutputThread.forTest(engine, output)
        try thread.start()
        #expect(Self.wait(for: 40, on: output))
        var target = 40
        for period in [1024, 128, 512, 64, 256, 1024, 64] {
            thread.setPeriod(period)
            controller.apply(.setBusGain(.music, Gain(decibels: period == 64 ? -3 : 0), ramp: .milliseconds(5)))
            target += 12
            #expect(Self.wait(for: target, on: output))
        }
        thread.stop()
        #expect(thread.counters.periodChanges.load(ordering: .relaxed) == 7)
        #expect(output.allocations.load(ordering: .relaxed) == 0, "allocations on the audio thread")
    }

    @Test("the wake level: the shortest period's margin, and a quarter of what a longer one adds, in whole periods")
    func wakeLevels() {
        let device = PlaybackConfiguration(periodFrames: 64, periods: 3, maxPeriodFrames: 1024)
        #expect(device.adaptive)
        #expect(device.wakeLevel(forPeriod: 64) == 128)
        #expect(device.wakeLevel(forPeriod: 128) == 192)
        #expect(device.wakeLevel(forPeriod: 1024) == 128 + 256)
        #expect(device.bufferFrames == 128 + 256 + 1024)
        let fixed = PlaybackConfiguration(periodFrames: 256, periods: 3)
        #expect(!fixed.adaptive)
        #expect(fixed.bufferFrames == 768 && fixed.queueFrames(forPeriod: 256) == 768)
    }
}
