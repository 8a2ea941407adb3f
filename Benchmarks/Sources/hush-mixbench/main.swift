// hush-mixbench: the figures docs/performance.md records, measured in one run on one machine.
//
//   hush-mixbench compare DIR        three 60 s stereo files: hush's offline mix against `sox -m`, as a ratio
//   hush-mixbench render SECONDS     `hushd render` throughput over a scenario of that length
//   hush-mixbench periods N          render N 64-frame periods of 3 stereo voices with ramps (for valgrind)
import Foundation
import HushAudioFile
import HushCore
import HushDaemon
import HushMixer

func seconds(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

func stereoTone(_ hz: Double, seconds: Double) -> AudioBuffer {
    let frames = Int(seconds * 48000)
    var samples = [Float](repeating: 0, count: frames * 2)
    for n in 0..<frames {
        let value = 0.3 * Float(sin(2 * Double.pi * hz * Double(n) / 48000))
        samples[2 * n] = value
        samples[2 * n + 1] = value
    }
    return AudioBuffer(interleaved: samples, channels: 2, sampleRate: 48000)
}

/// Mixes `files` with hush's engine (three buses, unity gains) into a 16-bit WAV: decode, mix, write.
func hushMix(_ files: [String], to output: String) throws {
    let t0 = DispatchTime.now().uptimeNanoseconds
    // Decode the files at the same time, one per core, as an offline tool should.
    nonisolated(unsafe) let results = UnsafeMutableBufferPointer<Result<AudioBuffer, SoundFileError>?>.allocate(
        capacity: files.count)
    results.initialize(repeating: nil)
    defer { results.deallocate() }
    DispatchQueue.concurrentPerform(iterations: files.count) { index in
        results[index] = Result { () throws(SoundFileError) in try SoundFile.load(files[index], sampleRate: 48000) }
    }
    let buffers = try results.map { try $0!.get() }
    let t1 = DispatchTime.now().uptimeNanoseconds
    defer { if ProcessInfo.processInfo.environment["HUSH_MIXBENCH_TRACE"] != nil { print("load \(Double(t1 - t0) / 1e9) s") } }
    let frames = buffers.map(\.frameCount).max() ?? 0
    let period = 4096
    let engine = MixerEngine(format: MixerFormat(sampleRate: 48000, channels: 2, maxFrames: period))
    let controller = MixerController(engine: engine)
    controller.resumeFade = .zero
    for (index, buffer) in buffers.enumerated() {
        try controller.attach(SessionID(UInt64(index)), bus: Bus.allCases[index % 3], buffer: buffer, loop: false)
        controller.apply(.resume(SessionID(UInt64(index))))
    }
    var out = [Int16](repeating: 0, count: frames * 2)
    var frame = 0
    out.withUnsafeMutableBufferPointer { pointer in
        while frame < frames {
            let count = min(period, frames - frame)
            engine.render(frames: count, into: pointer.baseAddress! + frame * 2, sampleFormat: .s16LE)
            frame += count
        }
    }
    let t2 = DispatchTime.now().uptimeNanoseconds
    try SoundFile.writePCM16(out, channels: 2, sampleRate: 48000, to: output)
    let t3 = DispatchTime.now().uptimeNanoseconds
    if ProcessInfo.processInfo.environment["HUSH_MIXBENCH_TRACE"] != nil {
        print("mix \(Double(t2 - t1) / 1e9) s, write \(Double(t3 - t2) / 1e9) s")
    }
    withExtendedLifetime(controller) {}
}

func run(_ arguments: [String]) throws {
    switch arguments.first {
    case "compare":
        let directory = arguments.count > 1 ? arguments[1] : NSTemporaryDirectory() + "hush-mixbench"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let files = [220.0, 330.0, 440.0].enumerated().map { "\(directory)/voice\($0.offset).wav" }
        for (index, hz) in [220.0, 330.0, 440.0].enumerated() {
            try SoundFile.write(stereoTone(hz, seconds: 60), to: files[index], encoding: .pcm16)
        }
        var hushTimes: [Double] = []
        var soxTimes: [Double] = []
        for _ in 0..<3 {
            hushTimes.append(try seconds { try hushMix(files, to: "\(directory)/hush.wav") })
            soxTimes.append(
                try seconds {
                    let sox = Process()
                    sox.executableURL = URL(fileURLWithPath: "/usr/bin/sox")
                    sox.arguments = ["-m"] + files + ["-r", "48000", "-b", "16", "\(directory)/sox.wav"]
                    try sox.run()
                    sox.waitUntilExit()
                    guard sox.terminationStatus == 0 else { throw CommandFailure(text: "sox failed") }
                })
        }
        let hush = hushTimes.min()!
        let sox = soxTimes.min()!
        print(String(format: "offline mix of 3 × 60 s stereo 48 kHz files: hush %.3f s, sox -m %.3f s, hush %.1f× faster (best of 3)", hush, sox, sox / hush))
    case "render":
        let length = Double(arguments.count > 1 ? arguments[1] : "60") ?? 60
        var text = "0 activate 1 music playback tone=440 loop\n0 activate 2 effect ambient tone=1000 loop\n"
        text += "0 activate 3 ringer playback mix tone=1500 loop\n0 play 1\n0 play 2\n0 play 3\n"
        var t = 1.0
        while t < length - 1 {
            text += "\(t) silence on\n\(t + 0.25) silence off\n\(t + 0.5) up\n\(t + 0.75) down\n"
            t += 1
        }
        text += "\(length) end\n"
        let scenario = try Scenario.parse(text, file: "bench.txt")
        var elapsed = 0.0
        for _ in 0..<3 {
            let renderer = ScenarioRenderer(scenario: scenario)
            let time = try seconds { _ = try renderer.render() }
            elapsed = elapsed == 0 ? time : min(elapsed, time)
        }
        print(String(format: "hushd render: %.0f s of audio (3 voices, 64-frame periods, %d events) in %.3f s: %.0f s of audio per second", length, scenario.steps.count, elapsed, length / elapsed))
    case "periods":
        let count = Int(arguments.count > 1 ? arguments[1] : "1000") ?? 1000
        let engine = MixerEngine(format: MixerFormat(sampleRate: 48000, channels: 2, maxFrames: 64))
        let controller = MixerController(engine: engine)
        for index in 0..<3 {
            try controller.attach(SessionID(UInt64(index)), bus: Bus.allCases[index], buffer: stereoTone(200 + 100 * Double(index), seconds: 1), loop: true)
            controller.apply(.resume(SessionID(UInt64(index))))
        }
        let output = UnsafeMutableRawPointer.allocate(byteCount: 64 * 4, alignment: 16)
        for period in 0..<count {
            let gain: Float = period % 2 == 0 ? 0.5 : 1
            for index in 0..<3 { _ = engine.commands.push(.setVoiceGain(voice: Int32(index), gain: gain, rampFrames: 64)) }
            _ = engine.commands.push(.setBusGain(bus: 1, gain: gain, rampFrames: 64))
            engine.render(frames: 64, into: output, sampleFormat: .s16LE)
            while engine.telemetry.pop() != nil {}
        }
        withExtendedLifetime(controller) {}
        print("rendered \(count) periods")
    default:
        print("usage: hush-mixbench compare [DIR] | render [SECONDS] | periods N")
    }
}

struct CommandFailure: Error { var text: String }

do {
    try run(Array(CommandLine.arguments.dropFirst()))
} catch {
    print("hush-mixbench: \(error)")
    exit(1)
}
