import Foundation
import HushAudioFile
import HushCore
import HushTesting
import Testing

/// A scratch directory for one test.
func scratch(_ name: String) -> String {
    let path = NSTemporaryDirectory() + "hush-soundfile-\(name)-\(getpid())"
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

func sine(_ hz: Double, seconds: Double, rate: Int, channels: Int = 1, amplitude: Float = 0.5) -> AudioBuffer {
    let frames = Int(seconds * Double(rate))
    var samples: [Float] = []
    samples.reserveCapacity(frames * channels)
    for n in 0..<frames {
        let value = amplitude * Float(sin(2 * Double.pi * hz * Double(n) / Double(rate)))
        for _ in 0..<channels { samples.append(value) }
    }
    return AudioBuffer(interleaved: samples, channels: channels, sampleRate: rate)
}

@Suite("Sound files: decoding")
struct DecodingTests {
    static let encodings: [(String, SoundFile.Encoding, String)] = [
        ("WAV 16-bit", .pcm16, "wav"), ("WAV 24-bit", .pcm24, "wav"), ("WAV 32-bit", .pcm32, "wav"),
        ("WAV float", .float32, "wav"), ("FLAC", .flac16, "flac"), ("Ogg/Vorbis", .vorbis, "ogg"),
    ]

    @Test("every format decodes to the same tone", arguments: encodings)
    func formats(name: String, encoding: SoundFile.Encoding, suffix: String) throws {
        // One file per case (the cases run in parallel): "WAV 16-bit" → tone-wav-16-bit.wav.
        let stem = String(name.lowercased().map { $0.isLetter || $0.isNumber ? $0 : "-" })
        let path = scratch("formats") + "/tone-\(stem).\(suffix)"
        try SoundFile.write(sine(1000, seconds: 0.5, rate: 48000, channels: 2), to: path, encoding: encoding)
        let buffer = try SoundFile.load(path, sampleRate: 48000)
        #expect(buffer.channels == 2 && buffer.sampleRate == 48000)
        #expect(abs(buffer.frameCount - 24000) < 2000, "\(buffer.frameCount) frames")
        let left = ToneAnalysis.channel(0, of: buffer.interleaved, channels: 2)
        let frequency = ToneAnalysis.frequency(of: left[2000..<22000], sampleRate: 48000)
        #expect(abs(frequency - 1000) / 1000 < 0.001, "\(name): \(frequency) Hz")
        #expect(abs(ToneAnalysis.level(of: 1000, in: left[2000..<22000], sampleRate: 48000) + 6.02) < 0.3)
    }

    @Test(
        "telephony ringtones (8, 16, 32 kHz mono 16-bit) play at 48 kHz at the right pitch",
        arguments: [8000, 16000, 32000]
    )
    func telephonyRates(rate: Int) throws {
        let path = scratch("rates") + "/ring-\(rate).wav"
        try SoundFile.write(sine(440, seconds: 1, rate: rate), to: path, encoding: .pcm16)
        let buffer = try SoundFile.load(path, sampleRate: 48000)
        #expect(buffer.sampleRate == 48000 && buffer.channels == 1)
        #expect(abs(buffer.frameCount - 48000) <= 2, "\(buffer.frameCount) frames for 1 s")
        let frequency = ToneAnalysis.frequency(of: buffer.interleaved[2000..<46000], sampleRate: 48000)
        #expect(abs(frequency - 440) / 440 < 0.001, "\(rate) Hz source: \(frequency) Hz")
    }

    @Test("a 44.1 kHz stereo file is converted too")
    func cdRate() throws {
        let path = scratch("cd") + "/music.wav"
        try SoundFile.write(sine(997, seconds: 1, rate: 44100, channels: 2), to: path, encoding: .pcm16)
        let buffer = try SoundFile.load(path, sampleRate: 48000)
        let right = ToneAnalysis.channel(1, of: buffer.interleaved, channels: 2)
        #expect(abs(ToneAnalysis.frequency(of: right[2000..<46000], sampleRate: 48000) - 997) / 997 < 0.001)
    }
}

@Suite("Sound files: broken and hostile files")
struct BrokenFileTests {
    /// A valid 16-bit mono WAV to damage.
    static func wav() throws -> [UInt8] {
        let path = scratch("broken") + "/good.wav"
        try SoundFile.write(sine(440, seconds: 0.1, rate: 8000), to: path, encoding: .pcm16)
        return Array(try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    static func write(_ bytes: [UInt8], _ name: String) -> String {
        let path = scratch("broken") + "/" + name
        FileManager.default.createFile(atPath: path, contents: Data(bytes))
        return path
    }

    static func patch(_ bytes: [UInt8], at offset: Int, le32 value: UInt32) -> [UInt8] {
        var copy = bytes
        for i in 0..<4 { copy[offset + i] = UInt8(truncatingIfNeeded: value >> (8 * UInt32(i))) }
        return copy
    }

    static func patch(_ bytes: [UInt8], at offset: Int, le16 value: UInt16) -> [UInt8] {
        var copy = bytes
        copy[offset] = UInt8(truncatingIfNeeded: value)
        copy[offset + 1] = UInt8(truncatingIfNeeded: value >> 8)
        return copy
    }

    @Test("each damaged file is refused with the file named and the reason, never a crash")
    func corpus() throws {
        let good = try Self.wav()
        // Canonical 44-byte header from libsndfile: channels at 22, rate at 24, data size at 40.
        let cases: [(String, [UInt8], String)] = [
            ("truncated-header.wav", Array(good.prefix(20)), "not a sound file libsndfile can read"),
            ("zero-channels.wav", Self.patch(good, at: 22, le16: 0), "not a sound file libsndfile can read"),
            ("absurd-rate.wav", Self.patch(good, at: 24, le32: 7), "its sample rate, 7 Hz, is outside 1–384 kHz"),
            ("text.wav", Array("this is not audio\n".utf8), "not a sound file libsndfile can read"),
            ("empty.wav", [], "not a sound file libsndfile can read"),
        ]
        for (name, bytes, reason) in cases {
            let path = Self.write(bytes, name)
            #expect {
                _ = try SoundFile.load(path, sampleRate: 48000)
            } throws: { error in
                guard let error = error as? SoundFileError else { return false }
                return error.path == path && error.reason.contains(reason)
                    && error.description.hasPrefix("cannot use sound file '\(path)': ")
            }
        }
    }

    @Test("a sound too short to convert to the mixer's rate is refused, not an empty buffer")
    func tooShortToConvert() throws {
        // Found by Fuzz/ (fuzz-soundfile): one frame at 96 kHz converted to no frames at 48 kHz.
        let path = scratch("broken") + "/one-frame-96k.wav"
        try SoundFile.writePCM16([1000], channels: 1, sampleRate: 96000, to: path)
        #expect {
            _ = try SoundFile.load(path, sampleRate: 48000)
        } throws: { error in
            (error as? SoundFileError)?.reason == "its 1 frames at 96000 Hz are too short to play at 48000 Hz"
        }
    }

    /// Found by fuzz-soundfile: a float WAV at 18 048 Hz whose samples were finite but near the largest Float
    /// loaded as NaN and infinity once converted to 48 kHz (the resampler's filter overflows).
    @Test("float samples far over full scale are refused before conversion, naming the sample")
    func absurdlyLoudFloat() throws {
        let path = scratch("broken") + "/loud-float.wav"
        var samples = sine(440, seconds: 0.1, rate: 18048).interleaved
        samples[100] = 3.39e38
        let loud = AudioBuffer(interleaved: samples, channels: 1, sampleRate: 18048)
        try SoundFile.write(loud, to: path, encoding: .float32)
        #expect {
            _ = try SoundFile.load(path, sampleRate: 48000)
        } throws: { error in
            guard let error = error as? SoundFileError else { return false }
            return error.reason.hasPrefix("it contains a sample of 3.39e+38, over 1000 times full scale")
        }
        // A little over full scale is a float file's right: it loads (the mixer's limiter takes it).
        samples[100] = 1.5
        let hot = AudioBuffer(interleaved: samples, channels: 1, sampleRate: 18048)
        try SoundFile.write(hot, to: path, encoding: .float32)
        let buffer = try SoundFile.load(path, sampleRate: 48000)
        let finite = buffer.interleaved.allSatisfy { $0.isFinite }
        #expect(finite)
    }

    /// Streaming cannot refuse a file half-way: damaged float samples become silence instead.
    @Test("a streamed float file with NaN, infinity and absurd samples gives only numbers")
    func streamedDamagedFloat() throws {
        let path = scratch("broken") + "/damaged-stream.wav"
        var samples = sine(440, seconds: 0.5, rate: 18048).interleaved
        for index in stride(from: 50, to: samples.count, by: 997) { samples[index] = .nan }
        samples[2000] = .infinity
        samples[3000] = 3.39e38
        let damaged = AudioBuffer(interleaved: samples, channels: 1, sampleRate: 18048)
        try SoundFile.write(damaged, to: path, encoding: .float32)
        let reader = try SoundFileReader(path, sampleRate: 48000)
        var output = [Float](repeating: 0, count: 4800)
        var all: [Float] = []
        while true {
            let count = output.withUnsafeMutableBufferPointer { reader.read(into: $0.baseAddress!, frames: 4800) }
            if count == 0 { break }
            all += output.prefix(count)
        }
        let finite = all.allSatisfy { $0.isFinite && abs($0) <= 2 }
        #expect(finite, "the reader passed on a sample that is not a number or absurdly loud")
        #expect(abs(all.count - 24000) < 100, "\(all.count) frames")
        #expect(abs(ToneAnalysis.level(of: 440, in: all[4000..<20000], sampleRate: 48000) + 6.02) < 1)
    }

    @Test("a header that claims far more data than the file holds gives what is there")
    func absurdChunkSize() throws {
        let good = try Self.wav()
        let path = Self.write(Self.patch(good, at: 40, le32: 0xFFFF_FFF0), "absurd-chunk.wav")
        let buffer = try SoundFile.load(path, sampleRate: 8000)
        #expect(buffer.frameCount == 800)
    }

    @Test("a missing file and an unreadable length are named")
    func missingAndTooLong() throws {
        #expect {
            _ = try SoundFile.load("/nonexistent/ring.wav", sampleRate: 48000)
        } throws: { error in
            (error as? SoundFileError)?.description == "cannot use sound file '/nonexistent/ring.wav': no such file"
        }
        let path = scratch("long") + "/long.wav"
        try SoundFile.write(sine(440, seconds: 3, rate: 8000), to: path, encoding: .pcm16)
        #expect {
            _ = try SoundFile.load(path, sampleRate: 48000, maximumSeconds: 2)
        } throws: { error in
            (error as? SoundFileError)?.reason.hasPrefix("it lasts 3 s; sounds held in memory may last 2 s") == true
        }
    }

    @Test("six-channel files are refused with the reason")
    func tooManyChannels() throws {
        let path = scratch("channels") + "/six.wav"
        try SoundFile.write(AudioBuffer(frameCount: 100, channels: 6, sampleRate: 48000), to: path, encoding: .pcm16)
        #expect {
            _ = try SoundFile.load(path, sampleRate: 48000)
        } throws: { error in
            (error as? SoundFileError)?.reason == "it has 6 channels; hush plays mono or stereo"
        }
    }
}

@Suite("Sound files: streaming")
struct StreamingTests {
    @Test("a 44.1 kHz file streamed at 48 kHz in small pieces keeps its pitch and length")
    func streamed() throws {
        let path = scratch("stream") + "/long.wav"
        try SoundFile.write(sine(997, seconds: 3, rate: 44100, channels: 2), to: path, encoding: .pcm16)
        let reader = try SoundFileReader(path, sampleRate: 48000)
        var samples: [Float] = []
        var piece = [Float](repeating: 0, count: 300 * 2)
        while true {
            let count = piece.withUnsafeMutableBufferPointer { reader.read(into: $0.baseAddress!, frames: 300) }
            if count == 0 { break }
            samples += piece[0..<(count * 2)]
        }
        #expect(reader.ended)
        #expect(abs(samples.count / 2 - 144_000) < 100, "\(samples.count / 2) frames for 3 s")
        let left = ToneAnalysis.channel(0, of: samples, channels: 2)
        #expect(abs(ToneAnalysis.frequency(of: left[4800..<139_000], sampleRate: 48000) - 997) / 997 < 0.001)
    }

    @Test("a looping stream goes on past the end; rewind starts again")
    func loopAndRewind() throws {
        let path = scratch("stream") + "/short.wav"
        try SoundFile.write(sine(440, seconds: 0.1, rate: 48000), to: path, encoding: .float32)
        let reader = try SoundFileReader(path, sampleRate: 48000, loop: true)
        var buffer = [Float](repeating: 0, count: 48000)
        let count = buffer.withUnsafeMutableBufferPointer { reader.read(into: $0.baseAddress!, frames: 48000) }
        #expect(count == 48000 && !reader.ended)
        #expect(abs(ToneAnalysis.frequency(of: buffer[1000..<47000], sampleRate: 48000) - 440) < 1)
        reader.loop = false
        reader.rewind()
        let again = buffer.withUnsafeMutableBufferPointer { reader.read(into: $0.baseAddress!, frames: 48000) }
        #expect(again == 4800 && reader.ended)
    }

    @Test("a missing or hostile file is refused like a loaded one")
    func refused() {
        #expect {
            _ = try SoundFileReader("/nonexistent/music.flac", sampleRate: 48000)
        } throws: { error in
            (error as? SoundFileError)?.description == "cannot use sound file '/nonexistent/music.flac': no such file"
        }
    }
}
