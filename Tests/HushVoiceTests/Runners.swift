import CSpeexDSP
import Foundation
import HushVoice

/// The CPU time of the calling thread, seconds.
func threadCPUSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

/// What one run through a canceller gives: the processed microphone, its CPU time, the library's own figures.
struct Run {
    var output: [Float]
    var cpuSeconds: Double
    var statistics: VoiceStatistics?
}

/// `scene` through a `VoiceProcessor` block by block, as hushd's voice thread will: each 10 ms the reference's
/// block, then the microphone's with the delay. `delayAt` gives the delay passed for the block starting at a time
/// (setDelay when it changes); `statisticsAt` takes the library's figures at a time.
func runVoice(
    _ scene: EchoScene,
    configuration: VoiceConfiguration? = nil,
    microphone: [Float]? = nil,
    reference: [Float]? = nil,
    referenceChannels: Int = 1,
    delayAt: (Double) -> Int = { _ in 30 }
) throws -> Run {
    var settings = configuration ?? VoiceConfiguration(sampleRate: scene.rate)
    settings.referenceChannels = referenceChannels
    let mic = microphone ?? scene.microphone
    let ref = reference ?? scene.reference
    let processor = try VoiceProcessor(settings, delayMilliseconds: delayAt(0))
    let frames = settings.framesPerBlock
    var output = [Float](repeating: 0, count: mic.count)
    var block = [Float](repeating: 0, count: frames)
    let blocks = mic.count / frames
    var cpu = 0.0
    for b in 0..<blocks {
        let t = Double(b * frames) / Double(scene.rate)
        let delay = delayAt(t)
        if delay != processor.delayMilliseconds { processor.setDelay(milliseconds: delay) }
        let start = threadCPUSeconds()
        try ref.withUnsafeBufferPointer { r in
            try processor.analyzeReverse(
                UnsafeBufferPointer(
                    rebasing: r[(b * frames * referenceChannels)..<((b + 1) * frames * referenceChannels)]
                )
            )
        }
        try mic.withUnsafeBufferPointer { m in
            try block.withUnsafeMutableBufferPointer { out in
                try processor.process(UnsafeBufferPointer(rebasing: m[(b * frames)..<((b + 1) * frames)]), into: out)
            }
        }
        cpu += threadCPUSeconds() - start
        for n in 0..<frames { output[b * frames + n] = block[n] }
    }
    return Run(output: output, cpuSeconds: cpu, statistics: processor.statistics())
}

/// `scene` through speexdsp's echo canceller and its preprocessor (noise suppression and residual echo
/// suppression), the peer measured beside webrtc. speexdsp takes no delay: it is given the reference already
/// delayed by the delay hush knows, as hush would, and a filter of `tail` seconds for the room.
func runSpeex(
    _ scene: EchoScene,
    microphone: [Float]? = nil,
    reference: [Float]? = nil,
    delay: Double = 0.030,
    tail: Double = 0.1
) -> Run {
    let frames = scene.rate / 100
    let shift = Int(delay * Double(scene.rate))
    let echo = speex_echo_state_init(Int32(frames), Int32(tail * Double(scene.rate)))!
    let pre = speex_preprocess_state_init(Int32(frames), Int32(scene.rate))!
    defer {
        speex_preprocess_state_destroy(pre)
        speex_echo_state_destroy(echo)
    }
    _ = hush_speex_echo_set_sampling_rate(echo, Int32(scene.rate))
    _ = hush_speex_preprocess_set_echo_state(pre, echo)
    _ = hush_speex_preprocess_set_denoise(pre, 1)
    func int16(_ x: Float) -> Int16 { Int16(max(-32768, min(32767, (x * 32768).rounded()))) }
    let mic = (microphone ?? scene.microphone).map(int16)
    let ref = [Int16](repeating: 0, count: shift) + (reference ?? scene.reference).map(int16)
    var output = [Float](repeating: 0, count: mic.count)
    var out = [Int16](repeating: 0, count: frames)
    var cpu = 0.0
    for b in 0..<(mic.count / frames) {
        let start = threadCPUSeconds()
        mic.withUnsafeBufferPointer { m in
            ref.withUnsafeBufferPointer { r in
                out.withUnsafeMutableBufferPointer { o in
                    speex_echo_cancellation(
                        echo,
                        m.baseAddress! + b * frames,
                        r.baseAddress! + b * frames,
                        o.baseAddress!
                    )
                    _ = speex_preprocess_run(pre, o.baseAddress!)
                }
            }
        }
        cpu += threadCPUSeconds() - start
        for n in 0..<frames { output[b * frames + n] = Float(out[n]) / 32768 }
    }
    return Run(output: output, cpuSeconds: cpu, statistics: nil)
}

/// The figures the issue asks for, measured on the output.
struct EchoFigures: CustomStringConvertible {
    /// Median ERLE over far-end-only 100 ms windows from 1 s on, dB.
    var erle: Double
    /// The near end in double-talk against the near end alone, dB (0 is the same level).
    var nearEnd: Double
    /// CPU seconds per second of voice.
    var cpuPerSecond: Double

    var description: String {
        String(
            format: "ERLE %.1f dB, near end in double-talk %+.1f dB, CPU %.1f ms per s",
            erle,
            nearEnd,
            cpuPerSecond * 1000
        )
    }
}

/// ERLE on the far-end-only windows from 1 s, and the near end in double-talk against `nearAloneOutput`.
func figures(_ scene: EchoScene, _ run: Run, nearAloneOutput: [Float]) -> EchoFigures {
    EchoFigures(
        erle: Measure.erle(
            microphone: scene.microphone,
            output: run.output,
            windows: scene.farOnlyWindows(from: 1),
            rate: scene.rate
        ),
        nearEnd: Measure.levelRatio(
            run.output,
            over: nearAloneOutput,
            windows: scene.doubleTalkWindows(),
            rate: scene.rate
        ),
        cpuPerSecond: run.cpuSeconds / (Double(scene.microphone.count) / Double(scene.rate))
    )
}
