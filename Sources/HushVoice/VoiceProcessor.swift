import CVoiceProcessing
import HushCore

/// What `voiceChat` runs on the microphone (R22): echo cancellation against the reference, noise suppression,
/// high-pass, and automatic gain unless configured off.
public struct VoiceConfiguration: Sendable, Equatable, CustomStringConvertible {
    /// The capture's and the reference's rate: 16000 or 48000 (the rates both library generations process
    /// natively).
    public var sampleRate: Int
    /// The reference's channels, 1 or 2 (interleaved). The capture is one channel.
    public var referenceChannels: Int
    public var echoCancellation: Bool
    public var noiseSuppression: Bool
    public var highPassFilter: Bool
    public var automaticGain: Bool

    public static let supportedSampleRates = [16_000, 48_000]

    public init(
        sampleRate: Int = 48_000,
        referenceChannels: Int = 1,
        echoCancellation: Bool = true,
        noiseSuppression: Bool = true,
        highPassFilter: Bool = true,
        automaticGain: Bool = true
    ) {
        self.sampleRate = sampleRate
        self.referenceChannels = referenceChannels
        self.echoCancellation = echoCancellation
        self.noiseSuppression = noiseSuppression
        self.highPassFilter = highPassFilter
        self.automaticGain = automaticGain
    }

    /// What a session's mode asks of the microphone (R22): `voiceChat` is processed, with automatic gain as
    /// configured; `default` and `measurement` are not (nil: no processor, the microphone as it is).
    public static func forMode(
        _ mode: SessionMode,
        sampleRate: Int = 48_000,
        referenceChannels: Int = 1,
        automaticGain: Bool = true
    ) -> VoiceConfiguration? {
        switch mode {
        case .voiceChat:
            VoiceConfiguration(
                sampleRate: sampleRate,
                referenceChannels: referenceChannels,
                automaticGain: automaticGain
            )
        case .default, .measurement: nil
        }
    }

    /// Frames in one 10 ms block, the unit the library processes.
    public var framesPerBlock: Int { sampleRate / 100 }

    public var description: String {
        let parts = [
            echoCancellation ? "echo cancellation" : nil, noiseSuppression ? "noise suppression" : nil,
            highPassFilter ? "high-pass" : nil, automaticGain ? "automatic gain" : nil,
        ].compactMap { $0 }
        let what = parts.isEmpty ? "no processing" : parts.joined(separator: ", ")
        return "\(sampleRate) Hz, reference \(referenceChannels == 1 ? "mono" : "stereo"): \(what)"
    }
}

/// The canceller's own figures, as the library reports them.
public struct VoiceStatistics: Sendable, Equatable {
    /// Echo return loss enhancement in dB (10·log10 of the echo's power over the output's), nil until the library
    /// has one.
    public var echoReturnLossEnhancement: Double?
    /// Echo return loss in dB (the reference's power over the echo's in the capture).
    public var echoReturnLoss: Double?
    /// The delay the canceller itself finds between the reference and its echo, ms: 1.x (AEC3) only, to check
    /// against the delay hush passes; nil with 0.3.
    public var estimatedDelayMilliseconds: Int?

    public init(
        echoReturnLossEnhancement: Double? = nil,
        echoReturnLoss: Double? = nil,
        estimatedDelayMilliseconds: Int? = nil
    ) {
        self.echoReturnLossEnhancement = echoReturnLossEnhancement
        self.echoReturnLoss = echoReturnLoss
        self.estimatedDelayMilliseconds = estimatedDelayMilliseconds
    }
}

/// What the library or the arguments refused, said the way a person reads it.
public enum VoiceProcessorError: Error, Equatable, CustomStringConvertible {
    /// A rate other than 16000 or 48000.
    case unsupportedSampleRate(Int)
    /// A reference of other than 1 or 2 channels.
    case unsupportedReferenceChannels(Int)
    /// The library refused a step of setting up: `step` is what was being set up, `code` its error.
    case refused(step: String, code: Int32, name: String)
    /// A block of the wrong length: `expected` frames, `got`.
    case blockLength(what: String, expected: Int, got: Int)
    /// The library refused a block.
    case processing(what: String, code: Int32, name: String)
    /// webrtc-audio-processing could not be opened (it is loaded when the first processor is made): why.
    case libraryUnavailable(String)

    public var description: String {
        switch self {
        case .unsupportedSampleRate(let rate):
            "voice processing runs at 16000 or 48000 Hz, not \(rate) Hz"
        case .unsupportedReferenceChannels(let channels):
            "the echo reference has 1 or 2 channels, not \(channels)"
        case .refused(let step, let code, let name):
            "webrtc-audio-processing \(VoiceProcessor.libraryGeneration) refused \(step): \(name) (\(code))"
        case .blockLength(let what, let expected, let got):
            "\(what) takes blocks of \(expected) frames (10 ms), not \(got)"
        case .processing(let what, let code, let name):
            "webrtc-audio-processing \(VoiceProcessor.libraryGeneration) failed to \(what): \(name) (\(code))"
        case .libraryUnavailable(let why):
            "voice processing is unavailable: \(why) (is webrtc-audio-processing's package installed?)"
        }
    }
}

/// webrtc-audio-processing on one microphone: feed it what hushd plays (`analyzeReverse`) and what the microphone
/// hears (`process`), 10 ms at a time, with the delay between the two that hushd knows.
///
/// Not for the real-time audio thread: hushd runs it on a thread of its own, fed by lock-free rings. Still, after
/// `init` a block allocates nothing on the Swift side (the shim's buffers are made once), so that thread keeps a
/// steady pace. One thread at a time: the class is not `Sendable`.
public final class VoiceProcessor {
    public let configuration: VoiceConfiguration
    /// The delay passed with each block by `process(_:into:)`: from a reference block's `analyzeReverse` to the
    /// capture block that holds its echo, ms.
    public private(set) var delayMilliseconds: Int
    private let handle: OpaquePointer

    /// The library generation this build compiled against: "0.3" (bookworm) or "1.x" (trixie, AEC3).
    public static var libraryGeneration: String { hush_voice_generation() == 1 ? "1.x" : "0.3" }

    /// The largest delay accepted (the library clamps beyond 500 ms).
    public static let maximumDelayMilliseconds = 500

    public init(_ configuration: VoiceConfiguration, delayMilliseconds: Int = 0) throws(VoiceProcessorError) {
        guard VoiceConfiguration.supportedSampleRates.contains(configuration.sampleRate) else {
            throw .unsupportedSampleRate(configuration.sampleRate)
        }
        guard configuration.referenceChannels == 1 || configuration.referenceChannels == 2 else {
            throw .unsupportedReferenceChannels(configuration.referenceChannels)
        }
        var settings = hush_voice_config(
            sample_rate: Int32(configuration.sampleRate),
            reference_channels: Int32(configuration.referenceChannels),
            echo_cancellation: configuration.echoCancellation ? 1 : 0,
            noise_suppression: configuration.noiseSuppression ? 1 : 0,
            high_pass_filter: configuration.highPassFilter ? 1 : 0,
            automatic_gain: configuration.automaticGain ? 1 : 0
        )
        var step: Int32 = 0
        var code: Int32 = 0
        guard let handle = hush_voice_create(&settings, &step, &code) else {
            if step == Int32(HUSH_VOICE_STEP_LIBRARY.rawValue), let why = hush_voice_load_failure() {
                throw .libraryUnavailable(String(cString: why))
            }
            throw .refused(step: Self.stepName(step, configuration), code: code, name: Self.errorName(code))
        }
        self.handle = handle
        self.configuration = configuration
        self.delayMilliseconds = Self.clampedDelay(delayMilliseconds)
    }

    deinit { hush_voice_destroy(handle) }

    /// The delay for the blocks after this (a route or a device changed): hushd's own queue plus the devices'
    /// reported delays. Clamped to 0...500 ms.
    public func setDelay(milliseconds: Int) {
        delayMilliseconds = Self.clampedDelay(milliseconds)
    }

    /// One 10 ms block of the reference — the mix as it leaves for the route — interleaved, `framesPerBlock` ×
    /// `referenceChannels` samples in [-1, 1].
    public func analyzeReverse(_ block: UnsafeBufferPointer<Float>) throws(VoiceProcessorError) {
        let samples = configuration.framesPerBlock * configuration.referenceChannels
        guard block.count == samples, let base = block.baseAddress else {
            throw .blockLength(
                what: "the echo reference",
                expected: configuration.framesPerBlock,
                got: block.count / configuration.referenceChannels
            )
        }
        let result = hush_voice_analyze_reverse(handle, base, configuration.framesPerBlock)
        if result != 0 {
            throw .processing(what: "analyse the echo reference", code: result, name: Self.errorName(result))
        }
    }

    /// One 10 ms block of the microphone (mono, `framesPerBlock` samples) into `output` (the same length; may be the
    /// capture's own memory), with the delay set by `setDelay`.
    public func process(
        _ capture: UnsafeBufferPointer<Float>,
        into output: UnsafeMutableBufferPointer<Float>
    )
        throws(VoiceProcessorError)
    {
        let frames = configuration.framesPerBlock
        guard capture.count == frames, let source = capture.baseAddress else {
            throw .blockLength(what: "the microphone", expected: frames, got: capture.count)
        }
        guard output.count == frames, let destination = output.baseAddress else {
            throw .blockLength(what: "the processed microphone", expected: frames, got: output.count)
        }
        let result = hush_voice_process(handle, source, destination, frames, Int32(delayMilliseconds))
        if result != 0 { throw .processing(what: "process the microphone", code: result, name: Self.errorName(result)) }
    }

    /// `setDelay(milliseconds:)` then `process(_:into:)`: a block with the delay known when it was captured.
    public func process(
        _ capture: UnsafeBufferPointer<Float>,
        delayMilliseconds: Int,
        into output: UnsafeMutableBufferPointer<Float>
    ) throws(VoiceProcessorError) {
        setDelay(milliseconds: delayMilliseconds)
        try process(capture, into: output)
    }

    /// The library's own figures now (0.3 aggregates its ERLE over time; 1.x smooths its own).
    public func statistics() -> VoiceStatistics {
        var raw = hush_voice_statistics()
        guard hush_voice_get_statistics(handle, &raw) == 0 else { return VoiceStatistics() }
        return VoiceStatistics(
            echoReturnLossEnhancement: raw.has_erle != 0 ? raw.erle_db : nil,
            echoReturnLoss: raw.has_erl != 0 ? raw.erl_db : nil,
            estimatedDelayMilliseconds: raw.has_delay != 0 ? Int(raw.delay_ms) : nil
        )
    }

    private static func clampedDelay(_ milliseconds: Int) -> Int {
        min(max(milliseconds, 0), maximumDelayMilliseconds)
    }

    private static func errorName(_ code: Int32) -> String { String(cString: hush_voice_error_name(code)) }

    private static func stepName(_ step: Int32, _ configuration: VoiceConfiguration) -> String {
        switch hush_voice_step(rawValue: UInt32(bitPattern: step)) {
        case HUSH_VOICE_STEP_CREATE: "to create its processor"
        case HUSH_VOICE_STEP_FORMAT:
            "the format (\(configuration.sampleRate) Hz, mono capture, \(configuration.referenceChannels)-channel reference)"
        case HUSH_VOICE_STEP_ECHO_CANCELLATION: "echo cancellation"
        case HUSH_VOICE_STEP_NOISE_SUPPRESSION: "noise suppression"
        case HUSH_VOICE_STEP_HIGH_PASS_FILTER: "the high-pass filter"
        case HUSH_VOICE_STEP_AUTOMATIC_GAIN: "automatic gain"
        case HUSH_VOICE_STEP_MEMORY: "to allocate its buffers"
        default: "its configuration"
        }
    }
}
