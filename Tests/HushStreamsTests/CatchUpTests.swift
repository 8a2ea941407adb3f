import HushMixer
import Testing

@testable import HushStreams

#if canImport(Glibc)
import Glibc
#endif

/// A call's clock never stalls: when the audio thread is late (its device underran, the machine stalled), capture
/// streams still receive frames at the microphone's real rate — or, without a microphone, the clock's.
@Suite("The capture router catches up after a late audio thread")
struct CatchUpTests {
    static let period = 64

    typealias Counter = VoicePathTests.Recorder

    @Test("the microphone kept capturing through a stall: every frame reaches the recorder, in order, at once after")
    func microphoneBacklog() throws {
        let microphone = SampleRing(frames: 24_000, channels: 1)
        defer { microphone.deallocate() }
        let router = CaptureRouter(microphone: microphone, maxFrames: Self.period)
        let heard = Counter(voice: false)
        let held = Counter(voice: false, allowed: false)
        router.add(heard)
        router.add(held)
        var next: Float = 1
        func capture(_ periods: Int) {
            for _ in 0..<periods {
                let block = (0..<Self.period).map { Float($0) * 0 + next }
                next += 1
                block.withUnsafeBufferPointer { _ = microphone.write($0.baseAddress!, frames: Self.period) }
            }
        }
        // Steady: three periods of cushion, then one in and one out.
        capture(3)
        for _ in 0..<100 {
            capture(1)
            router.period(frames: Self.period)
        }
        let before = heard.frames.count
        // The audio thread stalls for 60 periods (80 ms at 64 frames) while the microphone goes on.
        capture(60)
        var calls = 0
        while calls < 10 {
            capture(1)
            router.period(frames: Self.period)
            calls += 1
        }
        let written = Int(next - 1) * Self.period
        let behind = written - heard.frames.count
        print(
            "catch-up: 60 periods of stall worked off in \(calls) periods; \(behind / Self.period) periods wait in the ring "
                + "(the cushion); \(router.caughtUpPeriods.load(ordering: .relaxed)) periods handed on to catch up"
        )
        #expect(heard.frames.count - before == (60 + 10) * Self.period - (behind - 3 * Self.period), "nothing lost")
        #expect(behind <= 4 * Self.period, "back to the cushion: \(behind) frames behind")
        // Every period in order, none twice, none missing: the recorder heard 1, 2, 3, … one value a period.
        let firsts = stride(from: 0, to: heard.frames.count, by: Self.period).map { heard.frames[$0] }
        #expect(zip(firsts, firsts.dropFirst()).allSatisfy { $1 == $0 + 1 }, "in order")
        #expect(held.frames.count == heard.frames.count, "a recorder held silent gets as many frames: its clock too")
        #expect(held.frames.allSatisfy { $0 == 0 }, "and only silence")
    }

    @Test("a burst from a late microphone reader is not a backlog: nothing is handed on early")
    func burstIsNoBacklog() throws {
        let microphone = SampleRing(frames: 24_000, channels: 1)
        defer { microphone.deallocate() }
        let router = CaptureRouter(microphone: microphone, maxFrames: Self.period)
        let heard = Counter(voice: false)
        router.add(heard)
        let block = [Float](repeating: 0.5, count: Self.period)
        func capture(_ periods: Int) {
            for _ in 0..<periods {
                block.withUnsafeBufferPointer { _ = microphone.write($0.baseAddress!, frames: Self.period) }
            }
        }
        capture(3)
        // The feeder late by a period, then two at once, over and over.
        for step in 0..<200 {
            capture(step % 2 == 0 ? 0 : 2)
            router.period(frames: Self.period)
        }
        #expect(router.caughtUpPeriods.load(ordering: .relaxed) == 0)
        #expect(heard.frames.allSatisfy { $0 == 0.5 }, "no gap")
    }

    /// `periods` periods of the microphone hearing `value`, written into its ring.
    static func capture(_ value: Float, _ periods: Int, into microphone: SampleRing) {
        let block = [Float](repeating: value, count: period)
        for _ in 0..<periods {
            block.withUnsafeBufferPointer { _ = microphone.write($0.baseAddress!, frames: period) }
        }
    }

    @Test(
        "after the audio thread slept, nothing the full ring kept reaches a recorder: two periods of silence, then live"
    )
    func staleBacklogAfterSleep() throws {
        let microphone = SampleRing(frames: 1024, channels: 1)
        defer { microphone.deallocate() }
        let router = CaptureRouter(microphone: microphone, maxFrames: Self.period)
        func capture(_ value: Float, _ periods: Int) { Self.capture(value, periods, into: microphone) }
        // The audio thread runs with nobody listening: the ring is read every period.
        for _ in 0..<20 {
            capture(0.1, 1)
            router.period(frames: Self.period)
        }
        // Then it sleeps (it read the latest period: nothing waits); the microphone hears something (0.9) that
        // fills the ring; what comes after (0.2) is dropped by the full ring.
        #expect(microphone.available == 0)
        capture(0.9, 1024 / Self.period)
        #expect(microphone.overflows == 0)
        capture(0.2, 40)
        #expect(microphone.overflows == 40 * Self.period)
        // A recorder arrives: the audio thread wakes; the microphone goes on with 0.3.
        let heard = Counter(voice: false)
        router.add(heard)
        let underflowsBefore = microphone.underflows
        for _ in 0..<10 {
            capture(0.3, 1)
            router.period(frames: Self.period)
        }
        #expect(!heard.frames.contains(0.9), "not a frame of the stale backlog")
        #expect(heard.frames.prefix(2 * Self.period).allSatisfy { $0 == 0 }, "the cushion: two periods of silence")
        #expect(heard.frames.dropFirst(2 * Self.period).allSatisfy { $0 == 0.3 }, "then the live microphone, no gap")
        #expect(heard.frames.count == 10 * Self.period)
        #expect(microphone.underflows == underflowsBefore, "the cushion is no underflow")
        #expect(router.caughtUpPeriods.load(ordering: .relaxed) == 0)

        // Woken again with nothing lost in between (the ring never filled): the latest three periods are kept.
        router.remove(heard)
        router.reap()
        for _ in 0..<3 {
            capture(0.4, 1)
            router.period(frames: Self.period)
        }
        capture(0.5, 3)
        let next = Counter(voice: false)
        router.add(next)
        router.period(frames: Self.period)
        #expect(next.frames.count == Self.period)
        #expect(next.frames.allSatisfy { $0 == 0.4 || $0 == 0.5 }, "fresh frames at once, no priming")
    }

    @Test("a ring that overflowed while a recorder listened is not stale for the next one")
    func overflowWhileListening() throws {
        let microphone = SampleRing(frames: 1024, channels: 1)
        defer { microphone.deallocate() }
        let router = CaptureRouter(microphone: microphone, maxFrames: Self.period)
        func capture(_ value: Float, _ periods: Int) { Self.capture(value, periods, into: microphone) }
        let first = Counter(voice: false)
        router.add(first)
        for _ in 0..<5 {
            capture(0.1, 1)
            router.period(frames: Self.period)
        }
        // The audio thread stalls past the ring while the recorder listens; it catches up after.
        capture(0.2, 20)
        #expect(microphone.overflows > 0)
        for _ in 0..<10 {
            capture(0.3, 1)
            router.period(frames: Self.period)
        }
        router.remove(first)
        router.period(frames: Self.period)
        router.reap()
        capture(0.4, 1)
        let next = Counter(voice: false)
        router.add(next)
        router.period(frames: Self.period)
        #expect(next.frames.count == Self.period)
        #expect(next.frames.allSatisfy { $0 != 0 }, "fresh frames at once, not the priming of a stale ring")
    }

    @Test("without a microphone, silence at the clock's rate: a late audio thread catches up")
    func clockWithoutMicrophone() throws {
        let router = CaptureRouter(microphone: nil, maxFrames: Self.period, sampleRate: 48000)
        let recorder = Counter(voice: false)
        router.add(recorder)
        var start = timespec()
        clock_gettime(CLOCK_MONOTONIC, &start)
        router.period(frames: Self.period)
        usleep(100_000)
        router.period(frames: Self.period)
        // 100 ms and more is 75 periods due; one call hands on at most 16 more.
        #expect(recorder.frames.count == (2 + CaptureRouter.catchUpLimit) * Self.period, "\(recorder.frames.count)")
        // More periods and it is back on time: within the cushion of what is due by then. Each call hands on up to
        // 16 periods (21 ms of silence) more than its own, so it converges unless a call takes longer than that; the
        // count of calls is reported, not timed. (Called faster than periods come, as here, it then runs ahead: the
        // catch-up only adds.)
        func due() -> Int {
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC, &now)
            return Int((Double(now.tv_sec - start.tv_sec) + Double(now.tv_nsec - start.tv_nsec) / 1e9) * 48000)
        }
        var calls = 2
        while recorder.frames.count < due() - 4 * Self.period && calls < 200 {
            router.period(frames: Self.period)
            calls += 1
        }
        let owed = due()
        #expect(calls < 200, "caught up within the cushion of what was due, in \(calls) periods")
        print("catch-up without a microphone: \(recorder.frames.count) frames for \(owed) due after \(calls) periods")
        #expect(
            recorder.frames.count >= owed - 4 * Self.period - 16 * Self.period,
            "caught up: \(recorder.frames.count) of \(owed)"
        )
        #expect(recorder.frames.allSatisfy { $0 == 0 })
    }
}
