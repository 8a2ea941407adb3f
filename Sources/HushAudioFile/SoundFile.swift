import CSamplerate
import CSndfile
import HushCore

#if canImport(Glibc)
import Glibc
#endif

/// Why a sound file was refused: which file, and what is wrong with it.
public struct SoundFileError: Error, Hashable, Sendable, CustomStringConvertible {
    public var path: String
    public var reason: String

    public init(path: String, reason: String) {
        self.path = path
        self.reason = reason
    }

    public var description: String { "cannot use sound file '\(path)': \(reason)" }
}

/// Reading and writing sound files with libsndfile (WAV in all its PCM and float forms, FLAC, Ogg/Vorbis, AIFF,
/// and the rest libsndfile reads), converted to the mixer's rate with libsamplerate.
public enum SoundFile {
    /// Sample encodings for ``write(_:to:encoding:)``.
    public enum Encoding: Sendable {
        case pcm16, pcm24, pcm32, float32, flac16, vorbis

        var format: Int32 {
            switch self {
            case .pcm16: Int32(SF_FORMAT_WAV | SF_FORMAT_PCM_16)
            case .pcm24: Int32(SF_FORMAT_WAV | SF_FORMAT_PCM_24)
            case .pcm32: Int32(SF_FORMAT_WAV | SF_FORMAT_PCM_32)
            case .float32: Int32(SF_FORMAT_WAV | SF_FORMAT_FLOAT)
            case .flac16: Int32(SF_FORMAT_FLAC | SF_FORMAT_PCM_16)
            case .vorbis: Int32(SF_FORMAT_OGG | SF_FORMAT_VORBIS)
            }
        }
    }

    /// The longest sound held in memory: ringtones and effects are short; longer music is streamed.
    public static let defaultMaximumSeconds = 600.0
    /// The loudest float sample accepted: 1000 times full scale (+60 dBFS). Float files may exceed 1.0 a little
    /// (the mixer's limiter takes it); far beyond that they are damaged.
    public static let maximumFloatSample: Float = 1000

    /// Decodes `path` into memory at `sampleRate` (converting the rate if needed), mono or stereo as the file is.
    public static func load(
        _ path: String,
        sampleRate: Int,
        maximumSeconds: Double = defaultMaximumSeconds
    )
        throws(SoundFileError) -> AudioBuffer
    {
        var info = SF_INFO()
        guard let file = hush_sf_open(path, Int32(SFM_READ), &info) else {
            throw SoundFileError(path: path, reason: describeOpenFailure(path))
        }
        defer { hush_sf_close(file) }
        guard info.channels >= 1 else { throw SoundFileError(path: path, reason: "it declares no channels") }
        guard info.channels <= 2 else {
            throw SoundFileError(path: path, reason: "it has \(info.channels) channels; hush plays mono or stereo")
        }
        guard (1000...384_000).contains(info.samplerate) else {
            throw SoundFileError(path: path, reason: "its sample rate, \(info.samplerate) Hz, is outside 1–384 kHz")
        }
        let declared = info.frames
        let limit = Int64(maximumSeconds * Double(info.samplerate))
        guard declared <= limit else {
            throw SoundFileError(
                path: path,
                reason: "it lasts \(declared / Int64(info.samplerate)) s; sounds held in memory may last "
                    + "\(Int(maximumSeconds)) s (stream longer music instead)"
            )
        }
        let channels = Int(info.channels)
        // Decode straight into the buffer the mixer will read. The header may claim more frames than the file
        // holds (a truncated download): keep what is there.
        let capacity = max(1, Int(declared))
        var read: sf_count_t = 0
        let decoded = AudioBuffer(frameCount: capacity, channels: channels, sampleRate: Int(info.samplerate)) {
            samples in
            read = hush_sf_readf_float(file, samples, declared)
            let filled = max(0, Int(read)) * channels
            (samples + filled).initialize(repeating: 0, count: capacity * channels - filled)
        }
        if hush_sf_error(file) != 0 {
            throw SoundFileError(path: path, reason: "decoding failed: \(String(cString: hush_sf_strerror(file)))")
        }
        guard read > 0 else { throw SoundFileError(path: path, reason: "it holds no audio") }
        let subtype = info.format & Int32(SF_FORMAT_SUBMASK)
        if subtype == Int32(SF_FORMAT_FLOAT) || subtype == Int32(SF_FORMAT_DOUBLE) {
            // Only float encodings can carry NaN or infinity; integer ones decode to [-1, 1]. Nor may a float
            // sample be absurdly loud: 3.4e38 is finite, but the resampler's filter sums such samples to infinity
            // and NaN (found by fuzz-soundfile).
            let samples = UnsafeBufferPointer(start: decoded.samples, count: Int(read) * channels)
            if samples.contains(where: { !$0.isFinite }) {
                throw SoundFileError(path: path, reason: "it contains samples that are not numbers (NaN or infinity)")
            }
            if let loud = samples.first(where: { abs($0) > maximumFloatSample }) {
                throw SoundFileError(
                    path: path,
                    reason: "it contains a sample of \(loud), over \(Int(maximumFloatSample)) times full scale "
                        + "(a damaged float file?)"
                )
            }
        }
        let buffer = Int(read) == decoded.frameCount ? decoded : decoded.prefix(frames: Int(read))
        guard Int(info.samplerate) != sampleRate else { return buffer }
        let converted = try resample(
            buffer.interleaved,
            channels: channels,
            from: Int(info.samplerate),
            to: sampleRate,
            path: path
        )
        // A frame or two at a higher rate can convert to nothing; an empty sound is refused like one that held
        // no audio (found by Fuzz/, fuzz-soundfile).
        guard converted.frameCount > 0 else {
            throw SoundFileError(
                path: path,
                reason: "its \(read) frames at \(info.samplerate) Hz are too short to play at \(sampleRate) Hz"
            )
        }
        return converted
    }

    /// How long `path` plays, in seconds, from its header (without decoding): to choose between holding a sound
    /// in memory and streaming it.
    public static func duration(of path: String) throws(SoundFileError) -> Double {
        var info = SF_INFO()
        guard let file = hush_sf_open(path, Int32(SFM_READ), &info) else {
            throw SoundFileError(path: path, reason: describeOpenFailure(path))
        }
        defer { hush_sf_close(file) }
        guard info.samplerate > 0 else { throw SoundFileError(path: path, reason: "it declares no sample rate") }
        return Double(info.frames) / Double(info.samplerate)
    }

    /// Converts interleaved `samples` from one rate to another with libsamplerate's medium sinc converter, as
    /// ``SoundFileReader`` streams: 121 dB of signal to noise across 90 % of the band, beyond any 16-bit source
    /// and any board's DAC. hushd loads a clip on its control loop, so the converter's cost is a stall there: 30 s
    /// of 44.1 kHz stereo take 1.57 s of CPU with the best converter, 0.38 s with this one (docs/performance.md).
    static func resample(
        _ samples: [Float],
        channels: Int,
        from source: Int,
        to target: Int,
        path: String
    )
        throws(SoundFileError) -> AudioBuffer
    {
        let ratio = Double(target) / Double(source)
        let inputFrames = samples.count / channels
        let outputFrames = Int((Double(inputFrames) * ratio).rounded(.up)) + 16
        var output = [Float](repeating: 0, count: outputFrames * channels)
        var data = SRC_DATA()
        let result = samples.withUnsafeBufferPointer { input in
            output.withUnsafeMutableBufferPointer { out in
                data.data_in = input.baseAddress
                data.input_frames = inputFrames
                data.data_out = out.baseAddress
                data.output_frames = outputFrames
                data.src_ratio = ratio
                data.end_of_input = 1
                return src_simple(&data, Int32(SRC_SINC_MEDIUM_QUALITY), Int32(channels))
            }
        }
        guard result == 0 else {
            throw SoundFileError(
                path: path,
                reason: "converting \(source) Hz to \(target) Hz failed: \(String(cString: src_strerror(result)))"
            )
        }
        output.removeLast(output.count - data.output_frames_gen * channels)
        return AudioBuffer(interleaved: output, channels: channels, sampleRate: target)
    }

    /// Writes `buffer` to `path` (the encoding picks the container: WAV, FLAC or Ogg/Vorbis).
    public static func write(
        _ buffer: AudioBuffer,
        to path: String,
        encoding: Encoding = .pcm16
    )
        throws(SoundFileError)
    {
        var info = SF_INFO()
        info.samplerate = Int32(buffer.sampleRate)
        info.channels = Int32(buffer.channels)
        info.format = encoding.format
        guard let file = hush_sf_open(path, Int32(SFM_WRITE), &info) else {
            throw SoundFileError(path: path, reason: "cannot create it: \(String(cString: hush_sf_strerror(nil)))")
        }
        // Clip rather than wrap: float sources beyond full scale become full scale.
        _ = hush_sf_command(file, Int32(SFC_SET_CLIPPING), nil, Int32(SF_TRUE))
        let written = hush_sf_writef_float(file, buffer.samples, sf_count_t(buffer.frameCount))
        let error = hush_sf_error(file)
        hush_sf_close(file)
        guard written == buffer.frameCount, error == 0 else {
            throw SoundFileError(path: path, reason: "writing failed after \(written) frames")
        }
    }

    static func describeOpenFailure(_ path: String) -> String {
        if access(path, F_OK) != 0 { return "no such file" }
        if access(path, R_OK) != 0 { return "permission denied" }
        // libsndfile is opened on first use (CSndfile.h): when it cannot be, the file is not to blame.
        if hush_sf_load() == 0 { return String(cString: hush_sf_strerror(nil)) }
        let text = String(cString: hush_sf_strerror(nil))
        return "not a sound file libsndfile can read (\(text))"
    }
}

extension SoundFile {
    /// Writes interleaved 16-bit samples as they are (no conversion) to a WAV file.
    public static func writePCM16(
        _ samples: [Int16],
        channels: Int,
        sampleRate: Int,
        to path: String
    )
        throws(SoundFileError)
    {
        var info = SF_INFO()
        info.samplerate = Int32(sampleRate)
        info.channels = Int32(channels)
        info.format = Int32(SF_FORMAT_WAV | SF_FORMAT_PCM_16)
        guard let file = hush_sf_open(path, Int32(SFM_WRITE), &info) else {
            throw SoundFileError(path: path, reason: "cannot create it: \(String(cString: hush_sf_strerror(nil)))")
        }
        let frames = samples.count / channels
        let written = samples.withUnsafeBufferPointer { hush_sf_writef_short(file, $0.baseAddress, sf_count_t(frames)) }
        hush_sf_close(file)
        guard written == frames else {
            throw SoundFileError(path: path, reason: "writing failed after \(written) frames")
        }
    }

    /// Reads a file's samples as 16-bit integers without any conversion of rate (for checking rendered output).
    public static func readPCM16(
        _ path: String
    ) throws(SoundFileError) -> (samples: [Int16], channels: Int, sampleRate: Int) {
        var info = SF_INFO()
        guard let file = hush_sf_open(path, Int32(SFM_READ), &info) else {
            throw SoundFileError(path: path, reason: describeOpenFailure(path))
        }
        defer { hush_sf_close(file) }
        var samples = [Int16](repeating: 0, count: Int(info.frames) * Int(info.channels))
        let read = samples.withUnsafeMutableBufferPointer { hush_sf_readf_short(file, $0.baseAddress, info.frames) }
        samples.removeLast(samples.count - Int(read) * Int(info.channels))
        return (samples, Int(info.channels), Int(info.samplerate))
    }
}
