import CAllocationCounter
import Foundation
import HushMixer
import Testing

@testable import HushOutput

#if canImport(Glibc)
import Glibc
#endif

/// Hearing safety's tap (R29): the audio thread's part copies the mix and allocates nothing; the `hush-hearing`
/// thread measures what it was given, a second at a time, and nothing while inactive.
@Suite("the hearing tap on the mix")
struct HearingTapTests {
    static let rate = 48000
    static let period = 64

    /// A stereo half-scale 1 kHz tone, `frames` long, from frame `start`.
    static func tone(into mix: UnsafeMutablePointer<Float>, frames: Int, start: Int) {
        for frame in 0..<frames {
            let value = Float(0.5 * sin(2 * Double.pi * 1000 * Double(start + frame) / Double(rate)))
            mix[frame * 2] = value
            mix[frame * 2 + 1] = value
        }
    }

    @Test("a second of a half-scale tone reads -6.02; periods while inactive are not measured; no allocation")
    func measures() throws {
        let mix = UnsafeMutablePointer<Float>.allocate(capacity: Self.period * 2)
        defer { mix.deallocate() }
        let tap = try HearingTap(sampleRate: Self.rate, channels: 2, mix: mix)
        try tap.start()
        defer { tap.stop() }
        let hook = tap.hook
        // Inactive: the audio thread's call copies nothing, and nothing is measured.
        for period in 0..<(Self.rate / Self.period) {
            Self.tone(into: mix, frames: Self.period, start: period * Self.period)
            hook.call(hook.context, Self.period)
        }
        usleep(400_000)
        #expect(tap.takeLevels().isEmpty)
        tap.setActive(true)
        usleep(100_000)
        var allocations: Int64 = 0
        var frees: Int64 = 0
        // Periods at the real rate (100 ms of them, then 100 ms of sleep) until two seconds are measured. A meter
        // thread slower than that (an emulator on a busy host) only gets fewer of the frames, as in hushd: the
        // ring drops what does not fit, and the thread drops what came before it noticed it was active. So the
        // budget is generous, and only a meter that measures nothing right in it fails.
        let deadline = Date().addingTimeInterval(60)
        var levels: [Double] = []
        var period = 0
        while levels.count < 2 && Date() < deadline {
            for _ in 0..<75 {
                Self.tone(into: mix, frames: Self.period, start: period * Self.period)
                let before = (hush_allocations_on_this_thread(), hush_frees_on_this_thread())
                hook.call(hook.context, Self.period)
                allocations += hush_allocations_on_this_thread() - before.0
                frees += hush_frees_on_this_thread() - before.1
                period += 1
            }
            usleep(100_000)
            levels += tap.takeLevels()
        }
        let fed = Double(period * Self.period) / Double(Self.rate)
        print(
            "hearing tap: \(levels) dB after \(fed) s of periods; \(allocations) allocations, \(frees) frees on the "
                + "audio thread's side"
        )
        #expect(allocations == 0 && frees == 0)
        #expect(levels.count >= 2 && levels.allSatisfy { abs($0 + 6.02) < 0.05 }, "\(levels) after \(fed) s")
        tap.setActive(false)
        #expect(!tap.isActive)
    }
}
