import Foundation
import HushALSA
import HushCore
import HushMixer
import Logging
import Synchronization
import Testing

@testable import HushDaemon

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

        func write(_ buffer: UnsafeRawPointer, frames: Int) -> ALSAPlayback.WriteResult {
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
        let thread = AudioOutputThread(
            engine: engine,
            output: output,
            requested: output.granted,
            priority: 0,
            logger: Logger(label: "test"),
            open: { _ in nil }
        )
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
}
