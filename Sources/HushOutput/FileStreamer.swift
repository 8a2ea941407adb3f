import HushAudioFile
import HushMixer

#if canImport(Glibc)
import Glibc
#endif

/// Streams a long sound file into a ``SampleRing`` for the mixer: decoded and rate-converted a piece at a time,
/// a few seconds ahead of the engine, so music of any length plays without being held in memory.
///
/// Offline (`hush-render`) the render loop tops the ring up before each period, so rendering stays
/// deterministic; live (`hushd play`) the play loop does it every few milliseconds, off the audio thread.
package final class FileStreamer {
    package let reader: SoundFileReader
    package let ring: SampleRing
    private var chunk: [Float]

    /// Opens `path`; `seconds` of audio are kept decoded ahead.
    package init(_ path: String, sampleRate: Int, loop: Bool, seconds: Double = 2) throws(SoundFileError) {
        reader = try SoundFileReader(path, sampleRate: sampleRate, loop: loop)
        ring = SampleRing(frames: Int(seconds * Double(sampleRate)), channels: reader.channels)
        chunk = [Float](repeating: 0, count: 1024 * reader.channels)
        topUp()
    }

    deinit { ring.deallocate() }

    /// Decodes until the ring is full or the file has ended.
    package func topUp() {
        while ring.capacity - ring.available >= 1024 && !reader.ended {
            let frames = chunk.withUnsafeMutableBufferPointer { reader.read(into: $0.baseAddress!, frames: 1024) }
            guard frames > 0 else { break }
            let written = chunk.withUnsafeBufferPointer { ring.write($0.baseAddress!, frames: frames) }
            precondition(written == frames, "the ring had room for the chunk")
        }
    }

    /// The file has ended and the engine has taken every frame of it.
    package var finished: Bool { reader.ended && ring.available == 0 }
}
