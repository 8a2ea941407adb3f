import FuzzSupport
import HushAudioFile
import HushCore

#if canImport(Glibc)
import Glibc
#endif

// A sound file as hushd loads it for a play request: SoundFile.load at the mixer's 48 kHz, through libsndfile
// (WAV, FLAC, Ogg/Vorbis, AIFF, …) and libsamplerate. load takes a path, so each input is written to a file in
// a directory of this process's own under /dev/shm (memory, no disk wear).
//
// Properties beyond "no crash": a sound that loads is mono or stereo at 48 kHz, holds at least one frame, only
// finite samples, and no more than the 600 s load allows; a refused file gets an error naming its path and why.

let sampleRate = 48_000
let directory: String = {
    let base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp"
    let path = "\(base)/hush-fuzz-soundfile-\(getpid())"
    mkdir(path, 0o700)
    return path
}()
let path = directory + "/input"

/// Replaces the file at `path` with `input`.
func store(_ input: [UInt8]) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard fd >= 0 else { fatalError("cannot create \(path): \(String(cString: strerror(errno)))") }
    defer { close(fd) }
    var offset = 0
    while offset < input.count {
        // SAFETY: the pointer and count stay inside `input`, which outlives the call.
        let written = input.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
        guard written > 0 else { fatalError("cannot write \(path): \(String(cString: strerror(errno)))") }
        offset += written
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSoundFile(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = bytes(data, size)
    store(input)
    let buffer: AudioBuffer
    do {
        buffer = try SoundFile.load(path, sampleRate: sampleRate)
    } catch {
        require(error.path == path, "an error names '\(error.path)'", input: input)
        require(!error.reason.isEmpty, "an error without a reason", input: input)
        return 0
    }
    require((1...2).contains(buffer.channels), "\(buffer.channels) channels", input: input)
    require(buffer.sampleRate == sampleRate, "a buffer at \(buffer.sampleRate) Hz", input: input)
    require(buffer.frameCount >= 1, "a buffer of \(buffer.frameCount) frames", input: input)
    // Resampling may add a few frames (libsamplerate's filter tail); 600 s plus a second covers that.
    require(
        buffer.frameCount <= Int(SoundFile.defaultMaximumSeconds + 1) * sampleRate,
        "a buffer of \(buffer.frameCount) frames",
        input: input
    )
    // SAFETY: an AudioBuffer holds frameCount × channels initialised samples for its lifetime.
    let samples = UnsafeBufferPointer(start: buffer.samples, count: buffer.frameCount * buffer.channels)
    require(samples.allSatisfy(\.isFinite), "a loaded sound holds NaN or infinity", input: input)
    return 0
}
