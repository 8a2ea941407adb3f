import CAllocationCounter
import HushCore
import HushMixer
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Counts the heap allocations and frees the calling thread makes in `body`, with the test executable's own
/// malloc and friends (Tests/CAllocationCounter): other threads are not counted.
func countingAllocations<T>(_ body: () -> T) -> (result: T, allocations: Int64, frees: Int64) {
    hush_allocation_counting(true)
    let result = body()
    let counts = (hush_allocations_on_this_thread(), hush_frees_on_this_thread())
    hush_allocation_counting(false)
    return (result, counts.0, counts.1)
}

/// Why the allocation tests cannot run in this build, or nil when they can.
let allocationCounterMissing: String? =
    hush_allocation_counter_installed()
    ? nil : "a sanitizer's allocator replaces malloc in this build, so the counting hooks are left out"

/// The counter itself: it must see what it is meant to see, or a count of 0 proves nothing.
@Suite(
    "Allocation counter",
    .enabled(if: allocationCounterMissing == nil, Comment(rawValue: allocationCounterMissing ?? ""))
)
struct AllocationCounterTests {
    nonisolated(unsafe) static var kept: [Int] = []
    var kept: [Int] {
        get { Self.kept }
        nonmutating set { Self.kept = newValue }
    }

    @Test("an array made and dropped inside the counted region is one allocation and one free")
    func seesAnArray() {
        kept = [Int](repeating: 1, count: 10)
        let (_, allocations, frees) = countingAllocations {
            // Kept where the optimiser cannot see it unused (it would put a dead array on the stack).
            kept = [Int](repeating: 3, count: 1000)
        }
        #expect(kept.count == 1000)
        #expect(allocations == 1, "the new array's storage")
        #expect(frees == 1, "the old array's storage given back")
    }

    @Test("an over-aligned allocation (posix_memalign or aligned_alloc) and a realloc are counted")
    func seesAlignedAndRealloc() {
        let (_, aligned, alignedFrees) = countingAllocations {
            let pointer = UnsafeMutableRawPointer.allocate(byteCount: 4096, alignment: 64)
            pointer.storeBytes(of: 1, as: UInt8.self)
            pointer.deallocate()
        }
        #expect(aligned == 1 && alignedFrees == 1)
        let (_, grown, _) = countingAllocations {
            let first = malloc(16)
            let second = realloc(first, 1 << 20)
            free(second)
        }
        #expect(grown == 2, "malloc and realloc")
    }

    @Test("another thread's allocations do not count on this one, and its own count is its own")
    func perThread() {
        let worker = Worker()
        var thread = pthread_t()
        // Started before this thread counts: creating a thread allocates (its TLS block).
        let created = pthread_create(
            &thread,
            nil,
            { raw in
                let worker = Unmanaged<Worker>.fromOpaque(raw!).takeUnretainedValue()
                while !worker.go.load(ordering: .acquiring) { sched_yield() }
                let (_, counted, _) = countingAllocations {
                    for _ in 0..<100 { _ = [Int](repeating: 1, count: 64).count }
                }
                worker.counted.store(counted, ordering: .releasing)
                return nil
            },
            Unmanaged.passUnretained(worker).toOpaque()
        )
        #expect(created == 0)
        let (_, mine, _) = countingAllocations {
            worker.go.store(true, ordering: .releasing)
            while worker.counted.load(ordering: .acquiring) < 0 { sched_yield() }
        }
        pthread_join(thread, nil)
        #expect(worker.counted.load(ordering: .acquiring) >= 100, "the worker's 100 arrays, on the worker")
        #expect(mine == 0, "none of them on this thread")
    }

    final class Worker: Sendable {
        let go = Atomic<Bool>(false)
        let counted = Atomic<Int64>(-1)
    }
}

/// The render path, counted: what the audio thread runs every period must allocate and free nothing, however
/// busy the mix and whatever the control side sends meanwhile. `make bench` counts the same in a release build;
/// this runs in `swift test`, in whatever configuration the tests are built.
@Suite(
    "Mixer: no allocation per period",
    .enabled(if: allocationCounterMissing == nil, Comment(rawValue: allocationCounterMissing ?? ""))
)
struct RenderAllocationTests {
    /// A busy mix: every bus in use, mono and stereo sources, a live source fed through a ring, looping and
    /// finishing sounds, a sum loud enough for the limiter, and every output format in turn.
    @Test("a busy mix with commands arriving every period: 0 allocations and 0 frees in 4000 periods after warm-up")
    func busyMix() throws {
        let period = 64
        let engine = MixerEngine(format: MixerFormat(sampleRate: 48000, channels: 2, maxFrames: period))
        let controller = MixerController(engine: engine)
        let music = SessionID(1)
        let musicMono = SessionID(2)
        let ringer = SessionID(3)
        let click = SessionID(4)
        let live = SessionID(5)
        let alarm = SessionID(6)
        try controller.attach(music, bus: .music, buffer: stereoTone(440, amplitude: 0.6), loop: true)
        try controller.attach(musicMono, bus: .music, buffer: tone(660, amplitude: 0.5), loop: true)
        try controller.attach(ringer, bus: .ringer, buffer: stereoTone(880, amplitude: 0.9), loop: true)
        // Shorter than a tenth of the measurement: it ends (a telemetry report) and is started again, many times.
        try controller.attach(click, bus: .effect, buffer: tone(2000, amplitude: 0.7, seconds: 0.02), loop: false)
        try controller.attach(alarm, bus: .effect, buffer: tone(1500, amplitude: 0.8), loop: true)
        let ring = SampleRing(frames: 4096, channels: 1)
        defer { ring.deallocate() }
        try controller.attach(live, bus: .music, ring: ring)
        for session in [music, musicMono, ringer, click, live, alarm] { controller.apply(.resume(session)) }
        let liveFrames = [Float](repeating: 0.25, count: period)
        let output = UnsafeMutableRawPointer.allocate(byteCount: period * 2 * 4, alignment: 16)
        defer { output.deallocate() }
        let formats = SampleFormat.allCases

        var finished = 0
        var loudest: Float = 0
        var allocations: Int64 = 0
        var frees: Int64 = 0
        var periodsThatAllocated: [Int] = []
        // The first periods may fill lazily made things (the runtime's metadata caches, the ring's first
        // wrap); the guarantee is for the periods after.
        let warmUp = 200
        for index in 0..<(warmUp + 4000) {
            // The control side, between periods: ducking and volume steps with ramps, pauses and resumes, the
            // finished sound started again, the live ring fed (a little short now and then: an underflow).
            switch index % 50 {
            case 0: controller.apply(.setSessionGain(music, Gain(decibels: -14), ramp: .milliseconds(100)))
            case 10: controller.apply(.setBusGain(.music, Gain(decibels: -3.5), ramp: .milliseconds(30)))
            case 20: controller.apply(.setSessionGain(music, .unity, ramp: .milliseconds(50)))
            case 25: controller.apply(.pause(alarm))
            case 30: controller.apply(.setBusGain(.ringer, Gain(decibels: -6), ramp: .milliseconds(20)))
            case 35: controller.apply(.resume(alarm))
            case 40: controller.apply(.setBusGain(.music, .unity, ramp: .milliseconds(30)))
            case 45: controller.apply(.setBusGain(.ringer, .unity, ramp: .milliseconds(20)))
            default: break
            }
            if index % 37 == 0 { controller.apply(.resume(click)) }
            liveFrames.withUnsafeBufferPointer {
                _ = ring.write($0.baseAddress!, frames: index % 13 == 0 ? period / 2 : period)
            }
            let format = formats[index % formats.count]
            let (_, allocated, freed) = countingAllocations {
                engine.render(frames: period, into: output, sampleFormat: format)
            }
            if format == .floatLE {
                let samples = output.assumingMemoryBound(to: Float.self)
                for i in 0..<(period * 2) { loudest = max(loudest, abs(samples[i])) }
            }
            finished += controller.poll().count
            guard index >= warmUp else { continue }
            allocations += allocated
            frees += freed
            if allocated + freed > 0 { periodsThatAllocated.append(index) }
        }
        #expect(allocations == 0, "allocations in periods \(periodsThatAllocated.prefix(10))")
        #expect(frees == 0, "frees in periods \(periodsThatAllocated.prefix(10))")
        // What the measurement went through, so that a 0 is about the real path.
        #expect(finished >= 40, "the short sound ended and restarted (\(finished) times)")
        #expect(loudest > SampleConversion.limiterThreshold && loudest < 1, "the limiter worked (peak \(loudest))")
        #expect(ring.underflows > 0, "the live source ran short and played silence")
        #expect(controller.peaks.count == 3 && controller.peaks.values.allSatisfy { $0 > 0 }, "every bus sounded")
    }

    @Test("the check fails when the render path allocates: a period that allocates is seen")
    func allocatingPeriodIsSeen() {
        let engine = MixerEngine(format: MixerFormat(sampleRate: 48000, channels: 2, maxFrames: 64))
        let output = UnsafeMutableRawPointer.allocate(byteCount: 64 * 2 * 4, alignment: 16)
        defer { output.deallocate() }
        engine.render(frames: 64, into: output, sampleFormat: .s16LE)
        Self.kept = [1, 2, 3]
        // What a careless change to the render path would do: a buffer allocated per period.
        let (_, allocations, frees) = countingAllocations {
            engine.render(frames: 64, into: output, sampleFormat: .s16LE)
            Self.kept = [Int](repeating: 0, count: 128)
        }
        #expect(allocations == 1 && frees == 1, "the new buffer, and the one it replaced")
    }

    /// Where the failing test puts its buffer, out of the optimiser's sight (its own: suites run side by side).
    nonisolated(unsafe) static var kept: [Int] = []

    func stereoTone(_ hz: Double, amplitude: Float) -> AudioBuffer {
        let mono = tone(hz, amplitude: amplitude)
        return AudioBuffer(frameCount: mono.frameCount, channels: 2, sampleRate: mono.sampleRate) { samples in
            for frame in 0..<mono.frameCount {
                samples[2 * frame] = mono.samples[frame]
                samples[2 * frame + 1] = -mono.samples[frame]
            }
        }
    }
}
