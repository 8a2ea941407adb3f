import Benchmark
import HushCore
import HushMixer

#if canImport(Glibc)
import Glibc
#endif

/// Three stereo voices, every gain ramping, 64-frame periods at 48 kHz: the render path the audio thread runs.
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.instructions, .mallocCountTotal, .wallClock, .cpuTotal],
        warmupIterations: 100,
        maxDuration: .seconds(3),
        maxIterations: 20_000
    )

    let format = MixerFormat(sampleRate: 48000, channels: 2, maxFrames: 64)
    let engine = MixerEngine(format: format)
    let controller = MixerController(engine: engine)
    let sources = (0..<3).map { voice in
        let frames = 48000
        let samples = (0..<frames * 2).map { 0.3 * Float(sin(Double($0 / 2) * Double(voice + 1) * 0.05)) }
        return AudioBuffer(interleaved: samples, channels: 2, sampleRate: 48000)
    }
    for (index, buffer) in sources.enumerated() {
        try! controller.attach(SessionID(UInt64(index)), bus: Bus.allCases[index], buffer: buffer, loop: true)
        controller.apply(.resume(SessionID(UInt64(index))))
    }
    let output = UnsafeMutableRawPointer.allocate(byteCount: 64 * 2 * 2, alignment: 16)
    var flip = false

    // Each iteration renders one 64-frame period. Ramps are restarted every period so they always run.
    Benchmark("render 64 frames, 3 stereo voices, ramps running") { benchmark in
        for _ in benchmark.scaledIterations {
            flip.toggle()
            for index in 0..<3 {
                _ = engine.commands.push(
                    .setVoiceGain(voice: Int32(index), gain: flip ? 0.5 : 1, rampFrames: 64))
            }
            _ = engine.commands.push(.setBusGain(bus: 1, gain: flip ? 0.7 : 0.9, rampFrames: 64))
            engine.render(frames: 64, into: output, sampleFormat: .s16LE)
            while engine.telemetry.pop() != nil {}
        }
        // The controller owns the sounds' buffers: it must outlive every render that reads them.
        withExtendedLifetime(controller) {}
    }

    Benchmark("render 64 frames, 3 stereo voices, steady gains") { benchmark in
        for _ in benchmark.scaledIterations {
            engine.render(frames: 64, into: output, sampleFormat: .s16LE)
            while engine.telemetry.pop() != nil {}
        }
        withExtendedLifetime(controller) {}
    }

    // The harness's own cost, to subtract: an iteration that does nothing.
    Benchmark("baseline: empty iteration") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(benchmark) }
    }
}
