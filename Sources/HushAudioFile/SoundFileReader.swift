import CSamplerate
import CSndfile
import HushCore

#if canImport(Glibc)
import Glibc
#endif

/// Reads a sound file a piece at a time, converted to a target rate on the fly: for music too long to hold in
/// memory. libsndfile decodes, libsamplerate converts with its streaming interface.
///
/// Not thread-safe: one reader thread (a decoder thread in the daemon, the render loop offline).
public final class SoundFileReader {
    public let path: String
    public let channels: Int
    public let sampleRate: Int
    public let sourceRate: Int
    /// The file came to its end (and, when looping, was not rewound).
    public private(set) var ended = false
    public var loop: Bool
    private let file: OpaquePointer
    private let converter: OpaquePointer?
    private var input: [Float]
    private var inputFrames = 0
    private var inputOffset = 0
    private var sourceEnded = false
    private var framesEverRead = 0

    /// Opens `path` for streaming at `sampleRate`. Errors name the file and the reason, as for ``SoundFile/load``.
    public init(_ path: String, sampleRate: Int, loop: Bool = false) throws(SoundFileError) {
        var info = SF_INFO()
        guard let file = hush_sf_open(path, Int32(SFM_READ), &info) else {
            throw SoundFileError(path: path, reason: SoundFile.describeOpenFailure(path))
        }
        guard (1...2).contains(info.channels) else {
            hush_sf_close(file)
            throw SoundFileError(path: path, reason: "it has \(info.channels) channels; hush plays mono or stereo")
        }
        guard (1000...384_000).contains(info.samplerate) else {
            hush_sf_close(file)
            throw SoundFileError(path: path, reason: "its sample rate, \(info.samplerate) Hz, is outside 1–384 kHz")
        }
        self.path = path
        self.file = file
        self.loop = loop
        channels = Int(info.channels)
        sourceRate = Int(info.samplerate)
        self.sampleRate = sampleRate
        input = [Float](repeating: 0, count: 4096 * channels)
        if sourceRate != sampleRate {
            var error: Int32 = 0
            converter = src_new(Int32(SRC_SINC_MEDIUM_QUALITY), Int32(channels), &error)
            guard converter != nil else {
                // Fully initialised: deinit closes the file (closing it here as well would close it twice).
                throw SoundFileError(path: path, reason: "no rate converter: \(String(cString: src_strerror(error)))")
            }
        } else {
            converter = nil
        }
    }

    deinit {
        hush_sf_close(file)
        if let converter { src_delete(converter) }
    }

    /// Fills `output` with up to `frames` frames at the target rate; returns how many (0 at the end).
    public func read(into output: UnsafeMutablePointer<Float>, frames: Int) -> Int {
        var produced = 0
        while produced < frames && !ended {
            if inputOffset == inputFrames && !sourceEnded { refill() }
            let destination = output + produced * channels
            guard let converter else {
                let count = min(frames - produced, inputFrames - inputOffset)
                input.withUnsafeBufferPointer { source in
                    destination.update(from: source.baseAddress! + inputOffset * channels, count: count * channels)
                }
                inputOffset += count
                produced += count
                if count == 0 && sourceEnded { ended = true }
                continue
            }
            var data = SRC_DATA()
            let generated: Int = input.withUnsafeBufferPointer { source in
                data.data_in = source.baseAddress! + inputOffset * channels
                data.input_frames = inputFrames - inputOffset
                data.data_out = destination
                data.output_frames = frames - produced
                data.src_ratio = Double(sampleRate) / Double(sourceRate)
                data.end_of_input = sourceEnded ? 1 : 0
                guard src_process(converter, &data) == 0 else { return -1 }
                inputOffset += data.input_frames_used
                return data.output_frames_gen
            }
            guard generated >= 0 else {
                ended = true
                break
            }
            produced += generated
            if generated == 0 && sourceEnded && inputOffset == inputFrames { ended = true }
        }
        return produced
    }

    /// Goes back to the start.
    public func rewind() {
        _ = hush_sf_seek(file, 0, SEEK_SET)
        if let converter { src_reset(converter) }
        inputFrames = 0
        inputOffset = 0
        sourceEnded = false
        ended = false
    }

    private func refill() {
        let count = input.withUnsafeMutableBufferPointer { hush_sf_readf_float(file, $0.baseAddress, 4096) }
        inputFrames = Int(max(0, count))
        // A damaged float file streams on, but what is not a number or absurdly loud (see SoundFile.load, which
        // refuses such a file) becomes silence before the resampler or the mixer sees it.
        for index in 0..<(inputFrames * channels) where !(abs(input[index]) <= SoundFile.maximumFloatSample) {
            input[index] = 0
        }
        inputOffset = 0
        framesEverRead += inputFrames
        if count < 4096 {
            if loop && count == 0 && framesEverRead == 0 {
                sourceEnded = true  // an empty file cannot loop
                return
            }
            if loop && count == 0 {
                _ = hush_sf_seek(file, 0, SEEK_SET)
                refill()
                return
            }
            if !loop { sourceEnded = count == 0 }
            if loop && count > 0 { _ = hush_sf_seek(file, 0, SEEK_SET) }
        }
    }
}
