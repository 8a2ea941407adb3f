import HushCore

/// The mixer's output shape: rate, channels (1 or 2) and the largest period it will be asked for.
public struct MixerFormat: Hashable, Sendable {
    public var sampleRate: Int
    public var channels: Int
    public var maxFrames: Int

    public init(sampleRate: Int = 48000, channels: Int = 2, maxFrames: Int = 4096) {
        precondition(channels == 1 || channels == 2, "the mixer renders mono or stereo")
        self.sampleRate = sampleRate
        self.channels = channels
        self.maxFrames = maxFrames
    }

    /// `duration` in frames at this rate.
    public func frames(_ duration: Duration) -> Int32 {
        Int32(clamping: duration.nanoseconds * Int64(sampleRate) / 1_000_000_000)
    }
}

/// The real-time mixer: voices on three buses, each voice and bus gain ramped per frame, a soft limiter, and the
/// device's sample format. Everything it needs is allocated in `init`; `render` neither allocates, locks, logs
/// nor does I/O.
///
/// - Important: `render` is called from one thread only (the audio thread, or `hush-render`'s loop). Commands
///   arrive through `commands` (pushed by the control side), reports leave through `telemetry`.
public final class MixerEngine: @unchecked Sendable {
    public let format: MixerFormat
    public let voiceCount: Int
    /// The control side pushes here; `render` pops.
    public let commands: SPSCRing<MixerCommand>
    /// `render` pushes here; the control side pops.
    public let telemetry: SPSCRing<MixerTelemetry>
    /// Reports that did not fit in the telemetry ring (the control side fell behind).
    public private(set) var lostReports = 0
    /// Frames rendered since start.
    public private(set) var framesRendered: Int64 = 0
    /// Frames rendered in a row, up to the last `render`, in which nothing could be heard or change: no voice
    /// playing (a stream's voice counts while it plays, fed or not), no bus gain ramp and no output fade moving.
    /// The audio thread stops the device once this reaches its idle time (``AudioOutputThread``).
    ///
    /// - Important: read on the thread that renders.
    public private(set) var quietFrames = 0

    private let voices: UnsafeMutablePointer<Voice>
    private let busGains: UnsafeMutablePointer<Ramp>
    /// Each bus's gain over the current period, as a line (the bus ramps advance once per period, whatever plays).
    private let busLines: UnsafeMutablePointer<RampLine>
    /// Per-frame gains of the voice being mixed (its own gain × fade × its bus's gain).
    private let voiceGainFrames: UnsafeMutablePointer<Float>
    /// Where a ring-fed voice's frames land before they are mixed (stereo at most).
    private let ringScratch: UnsafeMutablePointer<Float>
    /// 1, 2, 3, … maxFrames: the frame ordinals ramps multiply by.
    private let ordinals: UnsafeMutablePointer<Float>
    private let mixBuffer: UnsafeMutablePointer<Float>
    private let peaks: UnsafeMutablePointer<Float>
    private var peakInterval: Int
    private var framesSincePeaks = 0
    /// The whole output's gain: at unity but for a fade-in after the device recovered from an underrun.
    private var outputGain = Ramp(1)

    public init(format: MixerFormat, voiceCount: Int = 32, commandCapacity: Int = 1024) {
        self.format = format
        self.voiceCount = voiceCount
        commands = SPSCRing(capacity: commandCapacity)
        telemetry = SPSCRing(capacity: commandCapacity)
        voices = .allocate(capacity: voiceCount)
        voices.initialize(repeating: Voice(), count: voiceCount)
        busGains = .allocate(capacity: 3)
        busGains.initialize(repeating: Ramp(1), count: 3)
        let samples = format.maxFrames * format.channels
        busLines = .allocate(capacity: 3)
        busLines.initialize(repeating: RampLine(start: 1, step: 0, end: 1, moving: 0), count: 3)
        voiceGainFrames = .allocate(capacity: format.maxFrames)
        voiceGainFrames.initialize(repeating: 1, count: format.maxFrames)
        ringScratch = .allocate(capacity: 2 * format.maxFrames)
        ringScratch.initialize(repeating: 0, count: 2 * format.maxFrames)
        ordinals = .allocate(capacity: format.maxFrames)
        for i in 0..<format.maxFrames { (ordinals + i).initialize(to: Float(i + 1)) }
        mixBuffer = .allocate(capacity: samples)
        mixBuffer.initialize(repeating: 0, count: samples)
        peaks = .allocate(capacity: 3)
        peaks.initialize(repeating: 0, count: 3)
        peakInterval = format.sampleRate / 10
    }

    deinit {
        commands.deallocate()
        telemetry.deallocate()
        voices.deallocate()
        busGains.deallocate()
        busLines.deallocate()
        voiceGainFrames.deallocate()
        ordinals.deallocate()
        ringScratch.deallocate()
        mixBuffer.deallocate()
        peaks.deallocate()
    }

    /// The last period's mix, `format.channels` interleaved, after the output's gain and before the limiter: the
    /// echo reference of the voice path (policy R22). Read it on the audio thread, after `render` and before the next.
    public var lastMix: UnsafePointer<Float> { UnsafePointer(mixBuffer) }

    /// Renders `frames` frames (at most `format.maxFrames`) into `output` in `sampleFormat`, interleaved.
    ///
    /// - Important: real-time safe. It is not annotated `@_noAllocation` itself because the compiler cannot see
    ///   through the generic ring in debug builds or prove the engine's lifetime in release builds; its leaves
    ///   (`SampleConversion`, `Ramp`, `Voice`) carry the annotations, and `RenderAllocationTests` (in `swift test`,
    ///   any build configuration) and `make bench` (release) count the mallocs of the whole path: none.
    ///
    /// - Parameter commands: whether to carry out what the control side pushed first; false when the caller took
    ///   the commands itself (``takeCommands()``) and chose the period from what it found (the audio thread, R24).
    public func render(
        frames: Int,
        into output: UnsafeMutableRawPointer,
        sampleFormat: SampleFormat,
        commands: Bool = true
    ) {
        let frames = min(frames, format.maxFrames)
        let channels = format.channels
        let samples = frames * channels
        if commands { applyCommands() }
        // Each bus's gain over this period (its ramp advances once per frame, whatever plays).
        for bus in 0..<3 { busLines[bus] = busGains[bus].advance(by: frames) }
        mixBuffer.update(repeating: 0, count: samples)
        var rendering = false
        for index in 0..<voiceCount where voices[index].isRendering {
            rendering = true
            mix(voice: index, frames: frames)
        }
        // A voice that ended in this period counted: its last frames are in this period's output.
        let moving = outputGain.isMoving || busGains[0].isMoving || busGains[1].isMoving || busGains[2].isMoving
        quietFrames = rendering || moving ? 0 : quietFrames &+ frames
        if outputGain.isMoving { outputGain.multiplyInterleaved(mixBuffer, frames: frames, channels: channels) }
        SampleConversion.limitAndWrite(mixBuffer, count: samples, to: output, format: sampleFormat)
        framesRendered += Int64(frames)
        framesSincePeaks += frames
        if framesSincePeaks >= peakInterval {
            framesSincePeaks = 0
            report(.peaks(effect: peaks[0], music: peaks[1], ringer: peaks[2]))
            peaks.update(repeating: 0, count: 3)
        }
    }

    /// Fades the whole output in from silence over `frames` frames: after an underrun, the output starts again
    /// without a click.
    ///
    /// - Important: call on the audio thread, between `render` calls.
    public func fadeInOutput(frames: Int32) {
        outputGain = Ramp(0)
        outputGain.move(to: 1, frames: frames)
    }

    @inline(__always)
    private func report(_ message: MixerTelemetry) {
        if !telemetry.push(message) { lostReports += 1 }
    }

    /// Carries out what the control side pushed so far, before a ``render(frames:into:sampleFormat:commands:)``
    /// that does not: whatever the control side did before pushing these (choosing the output's period, R24) is
    /// visible once they are taken. Real-time safe; on the rendering thread.
    public func takeCommands() { applyCommands() }

    private func applyCommands() {
        while let command = commands.pop() {
            switch command {
            case .attach(let voice, let bus, let source, let loop, let gain):
                guard let v = slot(voice) else { continue }
                v.pointee = Voice()
                v.pointee.active = true
                v.pointee.bus = Int(max(0, min(2, bus)))
                v.pointee.source = source
                v.pointee.loop = loop
                v.pointee.gain = Ramp(gain)
            case .setVoiceGain(let voice, let gain, let rampFrames):
                slot(voice)?.pointee.gain.move(to: gain, frames: rampFrames)
            case .setBusGain(let bus, let gain, let rampFrames):
                guard (0..<3).contains(bus) else { continue }
                busGains[Int(bus)].move(to: gain, frames: rampFrames)
            case .play(let voice, let fadeFrames):
                guard let v = slot(voice), v.pointee.active else { continue }
                if !v.pointee.isRendering { v.pointee.fade = Ramp(0) }
                v.pointee.playing = true
                v.pointee.afterFade = .keepPlaying
                v.pointee.fade.move(to: 1, frames: fadeFrames)
            case .pause(let voice, let fadeFrames):
                guard let v = slot(voice), v.pointee.isRendering else { continue }
                v.pointee.afterFade = .pause
                v.pointee.fade.move(to: 0, frames: fadeFrames)
                if fadeFrames <= 0 { v.pointee.settleFade() }
            case .stop(let voice, let fadeFrames):
                guard let v = slot(voice), v.pointee.active else { continue }
                if v.pointee.isRendering {
                    v.pointee.afterFade = .rewind
                    v.pointee.fade.move(to: 0, frames: fadeFrames)
                    if fadeFrames <= 0 { v.pointee.settleFade() }
                } else {
                    v.pointee.position = 0
                }
            case .release(let voice):
                guard let v = slot(voice) else { continue }
                v.pointee = Voice()
                report(.released(voice: voice))
            case .setPeakInterval(let frames):
                // A fresh interval starts here, so each report covers exactly the frames since the one before.
                peakInterval = max(1, Int(frames))
                framesSincePeaks = 0
                peaks.update(repeating: 0, count: 3)
            }
        }
    }

    @inline(__always)
    private func slot(_ voice: Int32) -> UnsafeMutablePointer<Voice>? {
        guard voice >= 0 && Int(voice) < voiceCount else { return nil }
        return voices + Int(voice)
    }

    /// Adds one voice's frames, times its gain, its fade and its bus's gain, into the mix.
    private func mix(voice index: Int, frames: Int) {
        let v = voices + index
        guard let source = v.pointee.source, source.frameCount > 0 || source.ring != nil || source.pull != nil else {
            v.pointee.playing = false
            return
        }
        let channels = format.channels
        let bus = v.pointee.bus
        // The voice's gain for every frame: bus × voice ramp × fade ramp, in one vectorised pass.
        let gains = voiceGainFrames
        let fadeEndsAt = v.pointee.fade.isMoving ? Int(v.pointee.fade.remaining) : Int.max
        let voiceLine = v.pointee.gain.advance(by: frames)
        let fadeLine = v.pointee.fade.advance(by: frames)
        MixKernels.gains(
            gains,
            count: frames,
            bus: busLines[bus],
            voice: voiceLine,
            fade: fadeLine,
            ordinals: ordinals
        )
        // A fade to silence that ends in this period pauses or rewinds the voice there.
        let audible =
            v.pointee.afterFade != .keepPlaying && v.pointee.fade.value == 0 ? min(frames, fadeEndsAt) : frames
        var peak = MixKernels.Vector(repeating: 0)
        var done = 0
        while done < audible {
            let chunk: Int
            let input: UnsafePointer<Float>
            if let pull = source.pull {
                // An application's stream: it converts its own frames to the mixer's rate; a short answer is
                // silence (the stream counts its own underrun, alone).
                chunk = audible - done
                let got = max(0, min(chunk, pull.render(pull.context, ringScratch, chunk)))
                (ringScratch + got * source.channels).update(repeating: 0, count: (chunk - got) * source.channels)
                input = UnsafePointer(ringScratch)
            } else if let ring = source.ring {
                // Live or streamed: take what has arrived; what has not plays as silence (counted by the ring).
                chunk = audible - done
                let got = ring.read(into: ringScratch, frames: chunk)
                (ringScratch + got * source.channels).update(repeating: 0, count: (chunk - got) * source.channels)
                input = UnsafePointer(ringScratch)
            } else {
                chunk = min(audible - done, source.frameCount - v.pointee.position)
                input = source.samples + v.pointee.position * source.channels
            }
            let out = mixBuffer + done * channels
            let g = UnsafePointer(gains + done)
            switch (source.channels, channels) {
            case (1, 1): MixKernels.monoToMono(input, g, out, frames: chunk, peak: &peak)
            case (1, _): MixKernels.monoToStereo(input, g, out, frames: chunk, peak: &peak)
            case (2, 1): MixKernels.stereoToMono(input, g, out, frames: chunk, peak: &peak)
            default: MixKernels.stereoToStereo(input, g, out, frames: chunk, peak: &peak)
            }
            done += chunk
            if source.ring != nil || source.pull != nil { continue }
            v.pointee.position += chunk
            if v.pointee.position >= source.frameCount {
                v.pointee.position = 0
                if !v.pointee.loop {
                    v.pointee.playing = false
                    v.pointee.afterFade = .keepPlaying
                    report(.finished(voice: Int32(index)))
                    break
                }
            }
        }
        // Peaks combine as bit patterns of magnitudes: ordered like the floats.
        peaks[bus] = Float(bitPattern: max(peaks[bus].bitPattern, MixKernels.largest(peak).bitPattern))
        if audible < frames || (v.pointee.fade.remaining == 0 && v.pointee.afterFade != .keepPlaying) {
            v.pointee.settleFade()
        }
    }
}

/// One voice slot.
struct Voice: BitwiseCopyable {
    enum AfterFade: BitwiseCopyable { case keepPlaying, pause, rewind }

    var active = false
    var playing = false
    var afterFade = AfterFade.keepPlaying
    var bus = 0
    var source: VoiceSource?
    var loop = false
    var position = 0
    var gain = Ramp(1)
    var fade = Ramp(0)

    var isRendering: Bool { active && playing }

    /// A fade to silence has ended: hold (pause) or go back to the start (stop).
    @inline(__always)
    mutating func settleFade() {
        switch afterFade {
        case .keepPlaying: return
        case .pause: playing = false
        case .rewind:
            playing = false
            position = 0
        }
        afterFade = .keepPlaying
    }
}
