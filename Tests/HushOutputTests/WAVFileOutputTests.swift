import Foundation
import HushALSA
import HushAudioFile
import HushTesting
import Testing

@testable import HushOutput

#if canImport(Glibc)
import Glibc
#endif

/// The WAV fallback keeps only the latest sound, and the file a person opens is always a WAV libsndfile reads.
/// The sound written is a count: each frame's left sample is its number's low 15 bits, the right one the rest, so
/// a frame read back says which frame it was.
@Suite("the WAV fallback: bounded, newest sound, always playable")
struct WAVFileOutputTests {
    /// 8 kHz stereo, 800-frame periods: 10 periods a second, so many minutes take a moment when not paced.
    static let configuration = PlaybackConfiguration(
        pcm: "default",
        sampleRate: 8000,
        channels: 2,
        format: .s16LE,
        periodFrames: 800,
        periods: 3
    )

    /// Writes `periods` periods of the count, starting at frame `first`; returns the next frame's number.
    static func write(_ output: WAVFileOutput, periods: Int, from first: Int) -> Int {
        var frame = first
        var buffer = [Int16](repeating: 0, count: configuration.periodFrames * 2)
        for _ in 0..<periods {
            for index in 0..<configuration.periodFrames {
                buffer[2 * index] = Int16(frame & 0x7fff)
                buffer[2 * index + 1] = Int16(frame >> 15)
                frame += 1
            }
            let result = buffer.withUnsafeBytes { output.write($0.baseAddress!, frames: configuration.periodFrames) }
            #expect(result == .written)
        }
        return frame
    }

    /// The frame numbers in a file, read with libsndfile (which checks the header as a player would).
    static func frames(in path: String) throws -> [Int] {
        let (samples, channels, rate) = try SoundFile.readPCM16(path)
        #expect(channels == 2 && rate == 8000)
        return stride(from: 0, to: samples.count - 1, by: 2).map {
            Int(UInt16(bitPattern: samples[$0])) | Int(samples[$0 + 1]) << 15
        }
    }

    @Test("past its limit the file holds the latest 30 to 60 s, in order, ending with the last frame written")
    func bounded() throws {
        let scratch = try ScratchDirectory(prefix: "hush-wav")
        let path = scratch.path + "/out.wav"
        let output = try WAVFileOutput(path: path, configuration: Self.configuration, keepSeconds: 60, paced: false)
        let secondBytes = 8000 * 4
        var next = 0
        // Every 7 s over 200 s: the file is read while hushd would still be writing (header at most 1 s behind).
        for _ in 0..<29 {
            next = Self.write(output, periods: 70, from: next)
            let frames = try Self.frames(in: path)
            let last = try #require(frames.last)
            #expect(next - 1 - last <= 8000, "the header is at most a second behind")
            #expect(frames == Array(frames[0]...last), "the file's frames are consecutive")
            let size = try #require(FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
            #expect(size <= 44 + 60 * secondBytes, "at most 60 s: \(size) bytes")
            if next >= 60 * 8000 {
                #expect(frames.count >= 29 * 8000, "past the first minute, at least 30 s (less a second of header)")
            }
        }
        output.close()
        let frames = try Self.frames(in: path)
        #expect(frames.last == next - 1, "after close the file ends with the last frame written")
        #expect((30 * 8000...60 * 8000).contains(frames.count), "\(frames.count) frames")
        #expect(frames == Array((next - frames.count)..<next))
        let catching = try #require(FileManager.default.attributesOfItem(atPath: path + ".next")[.size] as? Int)
        #expect(catching <= 44 + 30 * secondBytes, "the file that catches up holds at most half")
    }

    @Test("a new output replaces what an earlier run left, .next included")
    func startsAfresh() throws {
        let scratch = try ScratchDirectory(prefix: "hush-wav")
        let path = scratch.path + "/out.wav"
        let first = try WAVFileOutput(path: path, configuration: Self.configuration, keepSeconds: 4, paced: false)
        _ = Self.write(first, periods: 35, from: 1000)
        first.close()
        #expect(FileManager.default.fileExists(atPath: path + ".next"))
        let second = try WAVFileOutput(path: path, configuration: Self.configuration, keepSeconds: 4, paced: false)
        #expect(!FileManager.default.fileExists(atPath: path + ".next"))
        _ = Self.write(second, periods: 5, from: 0)
        second.close()
        #expect(try Self.frames(in: path) == Array(0..<4000))
    }

    @Test("the file's directory is made when missing (the first run's ~/.local/state/hush)")
    func makesDirectory() throws {
        let scratch = try ScratchDirectory(prefix: "hush-wav")
        let path = scratch.path + "/home/.local/state/hush/hushd-output.wav"
        let output = try WAVFileOutput(path: path, configuration: Self.configuration, paced: false)
        output.close()
        #expect(try Self.frames(in: path).isEmpty, "an empty WAV, still a valid one")
        #expect(output.listeningHint?.contains("'aplay \(path)'") == true)
    }

    @Test("/dev/null is written as it is: nothing is renamed over a device, no hint to listen to it")
    func notARegularFile() throws {
        let output = try WAVFileOutput(
            path: "/dev/null",
            configuration: Self.configuration,
            keepSeconds: 2,
            paced: false
        )
        _ = Self.write(output, periods: 50, from: 0)
        output.close()
        #expect(!FileManager.default.fileExists(atPath: "/dev/null.next"))
        var status = stat()
        #expect(stat("/dev/null", &status) == 0 && status.st_mode & S_IFMT == S_IFCHR)
        #expect(output.listeningHint == nil)
    }

    @Test("a FIFO gets a streaming WAV header first, then every frame in order (aplay or sox can read it)")
    func fifo() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hush-wav-fifo-\(getpid())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let fifo = directory + "/out.fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        let reader = open(fifo, O_RDONLY | O_NONBLOCK)
        #expect(reader >= 0)
        defer { Glibc.close(reader) }
        let output = try WAVFileOutput(path: fifo, configuration: Self.configuration, keepSeconds: 2, paced: false)
        // 5 periods of 3200 bytes: within the pipe's buffer, so nothing waits for the reader.
        let end = Self.write(output, periods: 5, from: 0)
        output.close()
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while case let count = read(reader, &chunk, chunk.count), count > 0 { bytes += chunk[0..<count] }
        #expect(bytes.count == 44 + end * 4)
        func text(_ range: Range<Int>) -> String { String(decoding: bytes[range], as: UTF8.self) }
        #expect(text(0..<4) == "RIFF" && text(8..<12) == "WAVE" && text(36..<40) == "data")
        // A stream's data size: unknown, as large as it can say.
        #expect(bytes[40..<44].elementsEqual([0xdb, 0xff, 0xff, 0xff]))
        // What was captured from the pipe is a WAV libsndfile reads (it takes the data up to the file's end).
        let copy = directory + "/captured.wav"
        FileManager.default.createFile(atPath: copy, contents: Data(bytes))
        #expect(try Self.frames(in: copy) == Array(0..<end))
        #expect(!FileManager.default.fileExists(atPath: fifo + ".next"))
        #expect(output.listeningHint == nil)
    }

    @Test("a file that cannot be made is an error that names it")
    func cannotCreate() {
        #expect {
            _ = try WAVFileOutput(path: "/proc/hush-no/out.wav", configuration: Self.configuration, paced: false)
        } throws: { error in
            "\(error)".contains("'/proc/hush-no/out.wav'")
        }
    }
}
