import HushALSA
import HushCore

#if canImport(Glibc)
import Glibc
#endif

/// A playback "device" that is a WAV file written in real time: where the built-in default board's sound goes when
/// no ALSA device opens (a build machine, a container), so `make run` works anywhere and what was played can be
/// listened to afterwards.
///
/// Writes are paced by the monotonic clock, a period at a time, as a sound card would take them. The header's
/// sizes are brought up to date every second and at close, so the file is playable while hushd runs. After
/// `maximumSeconds` the file stops growing (it is a record of the first minutes, not a log).
public final class WAVFileOutput: PCMOutput {
    public let granted: PlaybackConfiguration
    public let path: String
    private var descriptor: Int32
    private var dataBytes = 0
    private let maximumBytes: Int
    private var next = timespec()
    private var headerUpdatedAt = 0
    private let periodNanoseconds: Int

    /// Creates (truncates) `path` for 16-bit PCM at the configuration's rate and channels.
    public init(path: String, configuration: PlaybackConfiguration, maximumSeconds: Int = 600) throws(HardwareError) {
        self.path = path
        var granted = configuration
        granted.format = .s16LE
        granted.pcm = "file:" + path
        self.granted = granted
        maximumBytes = maximumSeconds * granted.sampleRate * granted.channels * 2
        periodNanoseconds = granted.periodFrames * 1_000_000_000 / granted.sampleRate
        descriptor = Glibc.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw HardwareError(
                operation: "create the output file",
                device: "'\(path)'",
                errno: errno,
                message: String(cString: strerror(errno))
            )
        }
        writeHeader()
        lseek(descriptor, 44, SEEK_SET)
        clock_gettime(CLOCK_MONOTONIC, &next)
    }

    deinit { close() }

    public func write(_ buffer: UnsafeRawPointer, frames: Int) -> ALSAPlayback.WriteResult {
        guard descriptor >= 0 else { return .gone }
        // Sleep until this period is due, as a device's buffer would make the writer wait.
        next.tv_nsec += frames * 1_000_000_000 / granted.sampleRate
        while next.tv_nsec >= 1_000_000_000 {
            next.tv_nsec -= 1_000_000_000
            next.tv_sec += 1
        }
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        if now.tv_sec - next.tv_sec > 1 { next = now }  // far behind (the process was stopped): start afresh
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, nil) == EINTR {}
        let bytes = frames * granted.channels * 2
        if dataBytes + bytes <= maximumBytes {
            var offset = 0
            while offset < bytes {
                let written = Glibc.write(descriptor, buffer + offset, bytes - offset)
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else { return .failed(-errno) }
                offset += written
            }
            dataBytes += bytes
        }
        headerUpdatedAt += frames
        if headerUpdatedAt >= granted.sampleRate {
            headerUpdatedAt = 0
            writeHeader()
        }
        return .written
    }

    public func close() {
        guard descriptor >= 0 else { return }
        writeHeader()
        Glibc.close(descriptor)
        descriptor = -1
    }

    /// The 44-byte RIFF/WAVE header for 16-bit PCM with the data written so far (built on the stack: this runs
    /// on the audio thread).
    private func writeHeader() {
        let channels = granted.channels
        withUnsafeTemporaryAllocation(byteCount: 44, alignment: 4) { header in
            func put(_ offset: Int, _ text: StaticString) {
                for index in 0..<4 { header[offset + index] = text.utf8Start[index] }
            }
            func put(_ offset: Int, _ value: Int, size: Int) {
                for index in 0..<size { header[offset + index] = UInt8((value >> (8 * index)) & 0xff) }
            }
            put(0, "RIFF")
            put(4, 36 + dataBytes, size: 4)
            put(8, "WAVE")
            put(12, "fmt ")
            put(16, 16, size: 4)
            put(20, 1, size: 2)
            put(22, channels, size: 2)
            put(24, granted.sampleRate, size: 4)
            put(28, granted.sampleRate * channels * 2, size: 4)
            put(32, channels * 2, size: 2)
            put(34, 16, size: 2)
            put(36, "data")
            put(40, dataBytes, size: 4)
            _ = pwrite(descriptor, header.baseAddress, 44, 0)
        }
    }
}
