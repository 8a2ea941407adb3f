import HushCore
import HushMixer
import HushStreams
import Testing

/// A capture device relayed onto a bus (`hushd play`'s `capture=PCM`) through the capture router, the path
/// applications' recorders take: the voice plays what the device gave one period earlier, only while the relay is
/// allowed, and a session that was held comes back with live audio, not with what was captured meanwhile.
@Suite("A capture relayed onto the music bus")
struct CaptureRelayTests {
    static let period = 64

    /// The engine, a mono "microphone" whose period `k` holds the value `k / 1000`, and a relay on session 1.
    final class Rig {
        let engine = MixerEngine(
            format: MixerFormat(sampleRate: 48000, channels: 2, maxFrames: CaptureRelayTests.period)
        )
        let controller: MixerController
        let microphone = SampleRing(frames: 4096, channels: 1)
        let router: CaptureRouter
        let relay = CaptureRelay(channels: 2, maxFrames: CaptureRelayTests.period, ringFrames: 512)
        let routers: CaptureRouters
        let output = UnsafeMutablePointer<Float>.allocate(capacity: CaptureRelayTests.period * 2)
        var index = 0

        init() throws {
            controller = MixerController(engine: engine)
            router = CaptureRouter(microphone: microphone, maxFrames: CaptureRelayTests.period)
            routers = CaptureRouters([router])
            router.add(relay)
            try controller.attach(SessionID(1), bus: .music, ring: relay.ring)
            controller.apply(.resume(SessionID(1)))
        }

        deinit {
            microphone.deallocate()
            output.deallocate()
        }

        /// One period: the microphone's thread writes `writes` periods (the next values of `index`; 0 when it is
        /// late, 2 when it catches up), the engine mixes, the router runs after the mix (as on the audio thread).
        /// Returns the period's first left sample and the microphone's latest value.
        @discardableResult
        func period(writes: Int = 1) -> (out: Float, microphone: Float) {
            for _ in 0..<writes {
                index += 1
                let frames = [Float](repeating: Float(index) / 1000, count: CaptureRelayTests.period)
                _ = frames.withUnsafeBufferPointer {
                    microphone.write($0.baseAddress!, frames: CaptureRelayTests.period)
                }
            }
            let value = Float(index) / 1000
            engine.render(frames: CaptureRelayTests.period, into: output, sampleFormat: .floatLE)
            let hook = routers.hook
            hook.call(hook.context, CaptureRelayTests.period)
            return (output[CaptureRelayTests.period * 2 - 2], value)
        }
    }

    @Test("allowed: each period plays the microphone's previous one, at one gain")
    func relaysThePreviousPeriod() throws {
        let rig = try Rig()
        rig.relay.allowed.store(true, ordering: .relaxed)
        for _ in 0..<20 { rig.period() }  // past the 5 ms fade-in
        var ratios: [Float] = []
        for _ in 0..<20 {
            let (out, value) = rig.period()
            ratios.append(out / (value - 0.001))
        }
        let gain = ratios[0]
        #expect(gain > 0.1, "the relayed level: \(ratios)")
        #expect(ratios.allSatisfy { abs($0 - gain) < 1e-3 * gain }, "one period late at one gain: \(ratios)")
        let hearing = rig.relay.hearing.load(ordering: .relaxed)
        #expect(hearing)
    }

    @Test("a microphone reader late by up to two periods leaves no gap; later, one silent period and nothing lost")
    func lateReader() throws {
        let rig = try Rig()
        rig.relay.allowed.store(true, ordering: .relaxed)
        // Three periods waiting when the relay starts listening: it takes the oldest, two periods of cushion stay.
        rig.period(writes: 3)
        for _ in 0..<20 { rig.period() }  // past the 5 ms fade-in
        // Steady, successive periods differ by the microphone's step (0.001), whatever the relay's lag.
        let gain = (rig.period().out - rig.period().out) / -0.001
        /// What the relay played, in the microphone's values (0 for silence), over `writes`, one period each.
        func heard(_ writes: [Int]) -> [Int] {
            writes.map { Int((rig.period(writes: $0).out / gain * 1000).rounded()) }
        }
        // Late by a period, and by two, then caught up: the cushion covers it.
        let once = heard([1, 0, 2, 1, 0, 0, 3, 1, 1])
        #expect(once.allSatisfy { $0 > 0 }, "no silent period: \(once)")
        #expect(zip(once, once.dropFirst()).allSatisfy { $1 == $0 + 1 }, "every value once, in order: \(once)")
        // Late by three periods: one silent period, then every value that came, in order, none dropped.
        let twice = heard([1, 0, 0, 0, 4, 1, 1])
        let sounding = twice.filter { $0 > 0 }
        #expect(twice.filter { $0 == 0 }.count == 1, "one silent period: \(twice)")
        #expect(
            zip(sounding, sounding.dropFirst()).allSatisfy { $1 == $0 + 1 } && sounding.first == once.last! + 1,
            "nothing lost: \(twice) after \(once)"
        )
    }

    @Test("not allowed: silence; allowed again: live audio at once, not what was captured meanwhile")
    func gatedAndLiveAgain() throws {
        let rig = try Rig()
        rig.relay.allowed.store(true, ordering: .relaxed)
        for _ in 0..<20 { rig.period() }
        let gain = rig.period().out / (Float(rig.index - 1) / 1000)
        // Held: the session pauses and the relay is closed, as the renderer does when the policy pauses it.
        rig.controller.apply(.pause(SessionID(1)))
        rig.relay.allowed.store(false, ordering: .relaxed)
        var held: [Float] = []
        for _ in 0..<100 { held.append(rig.period().out) }
        #expect(held.suffix(90).allSatisfy { $0 == 0 }, "silent while held: \(held.suffix(90).max() ?? 0)")
        let hearingWhileHeld = rig.relay.hearing.load(ordering: .relaxed)
        #expect(!hearingWhileHeld)
        // Released: the first sound is the microphone's last period, not one of the hundred held ones.
        rig.relay.allowed.store(true, ordering: .relaxed)
        rig.controller.apply(.resume(SessionID(1)))
        for _ in 0..<20 { rig.period() }
        let (out, value) = rig.period()
        let heard = out / gain
        #expect(abs(heard - (value - 0.001)) < 1e-4, "live after the hold: heard \(heard), the microphone \(value)")
        let dropped = rig.relay.droppedFrames.load(ordering: .relaxed)
        #expect(dropped == 0)
    }

    @Test("the privacy gate (R21): an allowed consumer gets silence from the next period, then live audio again")
    func privacyGate() throws {
        let rig = try Rig()
        rig.relay.allowed.store(true, ordering: .relaxed)
        for _ in 0..<20 { rig.period() }
        let gain = rig.period().out / (Float(rig.index - 1) / 1000)
        rig.router.muted.store(true, ordering: .relaxed)
        // The period in the mixer was relayed before the gate closed; from the next one on, nothing.
        var muted: [Float] = []
        for _ in 0..<50 { muted.append(rig.period().out) }
        #expect(muted.dropFirst().allSatisfy { $0 == 0 }, "not one sample while muted: \(muted.prefix(4))")
        let hearing = rig.relay.hearing.load(ordering: .relaxed)
        #expect(!hearing, "the relay is told it hears silence, though it is allowed")
        rig.router.muted.store(false, ordering: .relaxed)
        rig.period()
        let (out, value) = rig.period()
        #expect(abs(out / gain - (value - 0.001)) < 1e-4, "live again, the microphone kept fresh meanwhile")
    }
}
