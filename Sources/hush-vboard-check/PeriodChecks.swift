import Foundation
import HushALSA
import HushCore
import HushTesting

#if canImport(Glibc)
import Glibc
#endif

// The ALSA adapter's side of R24 output-period, on snd-aloop: a device opened with room for the longest period, a
// wake level set on it as the period changes, `snd_pcm_wait` pacing the writer. Heard on the loopback's capture
// side: a tone written in periods that change every half second plays on without a gap, and the writer blocks once
// a period.

/// This thread's voluntary context switches so far (the kernel's count of the times it blocked).
func blocksOfThisThread() -> Int {
    let status = readWholeFile("/proc/thread-self/status") ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix("voluntary_ctxt_switches:") }
    return line.flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
}

let periodChecks: [Check] = [
    Check(name: "output-period-grows-on-snd-aloop") {
        let asked = PlaybackConfiguration(pcm: "hw:Loopback,0,0", periodFrames: 512, periods: 3, maxPeriodFrames: 2048)
        // Periods written in turn, each for half a second: long, short, longer, short.
        let plan = [2048, 512, 1024, 512, 2048]
        final class Outcome: @unchecked Sendable {
            var granted: PlaybackConfiguration?
            var recovered = 0
            var blocks: [(period: Int, blocks: Int, writes: Int)] = []
            var failure: String?
        }
        let recording = try measure("a tone in periods that change") {
            let outcome = Outcome()
            let writer = Thread {
                do {
                    let playback = try ALSAPlayback(asked)
                    outcome.granted = playback.granted
                    var samples = [Int16](repeating: 0, count: 2048 * 2)
                    var n = 0
                    for period in plan {
                        _ = playback.setPeriod(period)
                        let before = blocksOfThisThread()
                        var writes = 0
                        while writes * period < 24000 {
                            if case .recovered = playback.waitForRoom() { outcome.recovered += 1 }
                            for frame in 0..<period {
                                let value = Int16(16384 * sin(2 * Double.pi * 440 * Double(n + frame) / 48000))
                                samples[2 * frame] = value
                                samples[2 * frame + 1] = value
                            }
                            let result = samples.withUnsafeBytes { playback.write($0.baseAddress!, frames: period) }
                            if case .recovered = result { outcome.recovered += 1 }
                            n += period
                            writes += 1
                        }
                        outcome.blocks.append((period, blocksOfThisThread() - before, writes))
                    }
                    // What is queued plays out before the device closes.
                    usleep(200_000)
                } catch {
                    outcome.failure = "\(error)"
                }
            }
            writer.start()
            let recording = try record("hw:Loopback,1,0", seconds: 3.4, periodFrames: 512)
            while !writer.isFinished { usleep(10_000) }
            if let failure = outcome.failure { throw CheckFailure("the adaptive device: \(failure)") }
            let disturbances =
                [recording.disturbance].compactMap { $0 }
                + (outcome.recovered > 0 ? ["the writer underran \(outcome.recovered) time(s)"] : [])
            return ((recording.samples, outcome), disturbances)
        }
        let (samples, outcome) = recording
        guard let granted = outcome.granted else { throw CheckFailure("the device never opened") }
        print(
            "  granted \(granted.periodFrames)-frame periods × \(granted.periods), buffer \(granted.bufferFrames), "
                + "longest period \(granted.maxPeriodFrames)"
        )
        try require(
            granted.maxPeriodFrames == 2048 && granted.bufferFrames >= granted.queueFrames(forPeriod: 2048),
            "snd-aloop gives room for 2048-frame periods: buffer \(granted.bufferFrames)"
        )
        for (period, blocks, writes) in outcome.blocks {
            print("  \(period)-frame periods: \(writes) writes, the writer blocked \(blocks) times")
            // One wait a period (the first of a longer period finds the room at once); a writer woken each device
            // period would block 4 times per 2048-frame write.
            try require(blocks <= writes + 1, "\(period)-frame periods: \(blocks) blocks for \(writes) writes")
        }
        guard let onset = stride(from: 0.0, to: 1.5, by: 0.01).first(where: { level(440, samples, at: $0) > -12 })
        else { throw CheckFailure("the tone never arrived on the capture side") }
        // 2.5 s of the tone, across four changes of period: every 100 ms window at -6 dBFS, nothing else in it.
        var quietest = 0.0
        var loudest = -240.0
        var noise = -240.0
        var t = onset + 0.1
        while t + 0.1 < min(onset + 2.5, Double(samples.count) / 48000) {
            let tone = level(440, samples, at: t)
            quietest = min(quietest, tone)
            loudest = max(loudest, tone)
            noise = max(noise, level(5000, samples, at: t))
            t += 0.1
        }
        print(
            "  the tone across the changes: \(twoDecimals(quietest)) to \(twoDecimals(loudest)) dBFS, 5 kHz at most "
                + "\(twoDecimals(noise)) dBFS"
        )
        try require(quietest > -7.5 && loudest < -4.5, "the tone plays on through every change of period")
        try require(noise < -70, "no gap or click where the period changed: 5 kHz at \(twoDecimals(noise)) dBFS")
    }
]
