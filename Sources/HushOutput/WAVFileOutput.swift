import HushALSA
import HushCore
import HushSystem

#if canImport(Glibc)
import Glibc
#endif

/// A playback "device" that is a WAV file written in real time: where the built-in default board's sound goes when
/// no ALSA device opens (a build machine, a container), so `make run` works anywhere and what was just played can
/// be listened to.
///
/// Writes are paced by the monotonic clock, a period at a time, as a sound card would take them. The file at
/// `path` always holds the most recent sound, in order, as a complete WAV: between half of `keepSeconds` and
/// `keepSeconds` of it once that much has played. It is two files that overlap: once `path` holds half the time,
/// every period also goes to `path.next`; when `path` is full, `path.next` (which then holds the last half) is
/// renamed over it, and a fresh `path.next` starts. A rename is atomic, so whoever opens `path` gets either the old
/// file or the new one, never a half-made one, and a player that has it open keeps reading the old one. The
/// headers' sizes are brought up to date every second and before each rename, so both files are playable while
/// hushd runs. Disk use stays under 1.5 × `keepSeconds` of sound (60 s of 48 kHz stereo: 17 MB at most).
///
/// A `path` that is not a regular file (/dev/null, a FIFO) is written as it is, without rotation: nothing may be
/// renamed over a device.
///
/// - Important: ``write(_:frames:)`` runs on the audio thread. The file output is the one device that does file
///   I/O there by nature; it allocates nothing (the paths are C strings made here) and never logs. When the
///   rotation fails (the disk is full, the directory went away), the file stops growing, as a full disk would
///   make it, and stays playable.
package final class WAVFileOutput: PCMOutput {
    package let granted: PlaybackConfiguration
    package let path: String
    /// The file that catches up: it becomes `path` at the next rotation.
    package let nextPath: String
    /// What `path` holds at most, and what `nextPath` holds when it replaces it (half).
    package let maximumBytes: Int
    private let halfBytes: Int
    private let rotates: Bool
    private let paced: Bool
    private var current: Int32
    private var currentBytes = 0
    private var next: Int32 = -1
    private var nextBytes = 0
    private let cPath: UnsafeMutablePointer<CChar>
    private let cNextPath: UnsafeMutablePointer<CChar>
    private var nextDue = timespec()
    private var headerUpdatedAt = 0
    /// Set when a rotation failed: `path` keeps what it has.
    private var stopped = false
    /// When the audio thread went idle (CLOCK_MONOTONIC nanoseconds), 0 while it writes.
    private var haltedAt = 0
    /// A tenth of a second of silence: what fills the file for the time the output was idle.
    private let silence: UnsafeMutableRawPointer
    private let silenceFrames: Int

    /// Creates (truncates) `path`, and its directory when missing, for 16-bit PCM at the configuration's rate and
    /// channels.
    ///
    /// - Parameters:
    ///   - keepSeconds: how much of the latest sound `path` holds at most (at least 2).
    ///   - paced: false writes as fast as the caller gives periods (tests); true waits for each period's time.
    /// - Throws: `HardwareError` naming the file when it cannot be created.
    package init(
        path: String,
        configuration: PlaybackConfiguration,
        keepSeconds: Int = 60,
        paced: Bool = true
    ) throws(HardwareError) {
        precondition(keepSeconds >= 2, "a WAV output must keep at least 2 seconds")
        self.path = path
        nextPath = path + ".next"
        var granted = configuration
        granted.format = .s16LE
        granted.pcm = "file:" + path
        self.granted = granted
        self.paced = paced
        let frameBytes = granted.channels * 2
        halfBytes = keepSeconds * granted.sampleRate / 2 * frameBytes
        maximumBytes = 2 * halfBytes
        cPath = strdup(path)
        cNextPath = strdup(nextPath)
        silenceFrames = max(granted.sampleRate / 10, 1)
        silence = .allocate(byteCount: silenceFrames * frameBytes, alignment: 16)
        silence.initializeMemory(as: UInt8.self, repeating: 0, count: silenceFrames * frameBytes)
        // A missing directory (the first run's ~/.local/state/hush) is made; if that fails, open says why.
        try? Directory.make(Directory.name(of: path))
        current = Glibc.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard current >= 0 else {
            let code = errno
            free(cPath)
            free(cNextPath)
            silence.deallocate()
            throw HardwareError(
                operation: "create the output file",
                device: "'\(path)'",
                errno: code,
                message: String(cString: strerror(code)).lowercased()
                    + "; check [output] fallback_wav and that hushd's user may write to its directory"
            )
        }
        var status = stat()
        rotates = fstat(current, &status) == 0 && status.st_mode & S_IFMT == S_IFREG
        // Left by an earlier run: it would be renamed over the new file with old sound in it.
        if rotates {
            unlink(cNextPath)
            Self.writeHeader(current, dataBytes: 0, granted: granted)
            lseek(current, 44, SEEK_SET)
        } else {
            // A pipe or a device cannot be rewritten at offset 0: its header goes first, once, with the sizes a
            // stream of unknown length carries (as `arecord` writes to a pipe), so `aplay` or sox on a FIFO reads
            // it as a WAV.
            Self.writeHeader(current, dataBytes: Self.streamingDataBytes, granted: granted, streaming: true)
        }
        clock_gettime(CLOCK_MONOTONIC, &nextDue)
    }

    /// What `path` holds, for the person at the console: how much sound and how to listen to it; nil when it is
    /// not a regular file (/dev/null).
    package var listeningHint: String? {
        guard rotates else { return nil }
        let seconds = maximumBytes / (granted.sampleRate * granted.channels * 2)
        return "it holds the latest \(seconds / 2) to \(seconds) s of sound and is always playable: "
            + "'aplay \(path)' here, or copy it to a computer with speakers"
    }

    deinit {
        close()
        free(cPath)
        free(cNextPath)
        silence.deallocate()
    }

    package func write(_ buffer: UnsafeRawPointer, frames: Int) -> PCMWriteResult {
        guard current >= 0 else { return .gone }
        if paced { waitForPeriod(frames: frames) }
        return append(buffer, frames: frames)
    }

    /// The audio thread goes idle: the file stops growing until ``resume()``.
    package func halt() {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        haltedAt = now.tv_sec * 1_000_000_000 + now.tv_nsec
    }

    /// The audio thread wakes: the file gets the silence of the time it was idle (at most what it keeps), so that
    /// its time stays the speaker's time (tests and people measure when sounds start in it), and the pacing
    /// starts afresh.
    package func resume() -> PCMWriteResult {
        guard current >= 0 else { return .gone }
        guard haltedAt != 0 else { return .written }
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let idle = now.tv_sec * 1_000_000_000 + now.tv_nsec - haltedAt
        haltedAt = 0
        var left = min(idle / 1000 * granted.sampleRate / 1_000_000, maximumBytes / (granted.channels * 2))
        while left > 0 {
            let frames = min(left, silenceFrames)
            if case .failed(let code) = append(silence, frames: frames) { return .failed(code) }
            left -= frames
        }
        nextDue = now
        return .written
    }

    /// Adds `frames` frames to the file(s), rotating when due.
    private func append(_ buffer: UnsafeRawPointer, frames: Int) -> PCMWriteResult {
        let bytes = frames * granted.channels * 2
        if rotates && !stopped {
            if currentBytes + bytes > maximumBytes { rotate() }
            if next < 0 && currentBytes >= halfBytes && !stopped {
                next = Glibc.open(cNextPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
                nextBytes = 0
                if next >= 0 {
                    Self.writeHeader(next, dataBytes: 0, granted: granted)
                    lseek(next, 44, SEEK_SET)
                } else {
                    stopped = true
                }
            }
        }
        // After a failed rotation `path` keeps what it has (its header cannot count past 32 bits). A pipe or a
        // device has no size to keep: it is written for as long as hushd plays.
        let fits = (!stopped || currentBytes + bytes <= maximumBytes) && currentBytes + bytes < Int(UInt32.max) - 44
        if !rotates || fits {
            if !Self.writeAll(current, buffer, bytes) { return .failed(-errno) }
            currentBytes += bytes
        }
        if next >= 0 {
            if Self.writeAll(next, buffer, bytes) {
                nextBytes += bytes
            } else {
                // The copy failed (a full disk): give it up; `path` keeps what it has and stops growing.
                Glibc.close(next)
                unlink(cNextPath)
                next = -1
                stopped = true
            }
        }
        headerUpdatedAt += frames
        if rotates && headerUpdatedAt >= granted.sampleRate {
            headerUpdatedAt = 0
            Self.writeHeader(current, dataBytes: currentBytes, granted: granted)
            if next >= 0 { Self.writeHeader(next, dataBytes: nextBytes, granted: granted) }
        }
        return .written
    }

    package func close() {
        if next >= 0 {
            Self.writeHeader(next, dataBytes: nextBytes, granted: granted)
            Glibc.close(next)
            next = -1
        }
        guard current >= 0 else { return }
        Self.writeHeader(current, dataBytes: currentBytes, granted: granted)
        Glibc.close(current)
        current = -1
    }

    /// Puts `path.next`, which holds the latest half, in place of `path`, complete with its header.
    private func rotate() {
        guard next >= 0 else { return }
        Self.writeHeader(next, dataBytes: nextBytes, granted: granted)
        guard rename(cNextPath, cPath) == 0 else {
            Glibc.close(next)
            unlink(cNextPath)
            next = -1
            stopped = true
            return
        }
        Glibc.close(current)
        current = next
        currentBytes = nextBytes
        next = -1
    }

    /// Sleeps until this period is due, as a device's buffer would make the writer wait.
    private func waitForPeriod(frames: Int) {
        nextDue.tv_nsec += frames * 1_000_000_000 / granted.sampleRate
        while nextDue.tv_nsec >= 1_000_000_000 {
            nextDue.tv_nsec -= 1_000_000_000
            nextDue.tv_sec += 1
        }
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        if now.tv_sec - nextDue.tv_sec > 1 { nextDue = now }  // far behind (the process was stopped): start afresh
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &nextDue, nil) == EINTR {}
    }

    /// Writes all `count` bytes; false with errno set when the file refuses.
    private static func writeAll(_ descriptor: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Bool {
        var offset = 0
        while offset < count {
            let written = Glibc.write(descriptor, buffer + offset, count - offset)
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return false }
            offset += written
        }
        return true
    }

    /// The data size in the header of a stream (a FIFO, /dev/null): the largest a RIFF size can say, which readers
    /// take as "until the end".
    static let streamingDataBytes = Int(UInt32.max) - 36

    /// The 44-byte RIFF/WAVE header for 16-bit PCM with `dataBytes` of sound (built on the stack: this runs on
    /// the audio thread), written over the file's first 44 bytes, or, `streaming`, where the descriptor is (a pipe).
    private static func writeHeader(
        _ descriptor: Int32,
        dataBytes: Int,
        granted: PlaybackConfiguration,
        streaming: Bool = false
    ) {
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
            if streaming {
                _ = writeAll(descriptor, UnsafeRawPointer(header.baseAddress!), 44)
            } else {
                _ = pwrite(descriptor, header.baseAddress, 44, 0)
            }
        }
    }
}
