import Foundation
import HushALSA
import HushCore
import HushTesting
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

// What the streams and apps checks play and record, beside HushTesting's `Application` and `hushdStatus`: aplay
// and arecord through the `hush` device, the tone files they play and the levels heard in a recording, the
// microphone (a tone played into the loopback that hushd's `[capture] pcm` records), several streams timed at
// once, and the underruns that excuse a take.

/// aplay of `file` through the hush device `device` ("hush:music").
func aplay(_ device: String, _ file: String, _ extra: [String] = []) throws -> Application {
    try Application("aplay", ["-q", "-D", device] + extra + [file], name: "aplay -D \(device)")
}

/// arecord from the hush device `device` into a raw 16 kHz mono S16_LE file, for `seconds` (nil: until stopped).
/// A deep buffer (1 s) so that the emulated machine's stalls do not overrun it.
func arecord(_ device: String, _ file: String, seconds: Int?) throws -> Application {
    let length = seconds.map { ["-d", "\($0)"] } ?? []
    return try Application(
        "arecord",
        ["-q", "-D", device, "-t", "raw", "-f", "S16_LE", "-r", "\(recordRate)", "-c", "1", "-B", "1000000"] + length
            + [file],
        name: "arecord -D \(device)"
    )
}

let recordRate = 16000

/// Writes a WAV file of a sine at `hertz`, half scale (-6 dBFS), `seconds` long, mono or stereo, 16-bit.
func writeTone(_ path: String, hertz: Double, seconds: Double, rate: Int = 48000, channels: Int = 2) throws {
    let frames = Int(seconds * Double(rate))
    var data = Data(capacity: 44 + frames * channels * 2)
    func append<Value: FixedWidthInteger>(_ value: Value) { withUnsafeBytes(of: value.littleEndian) { data += $0 } }
    data += Data("RIFF".utf8)
    append(UInt32(36 + frames * channels * 2))
    data += Data("WAVEfmt ".utf8)
    append(UInt32(16))
    append(UInt16(1))  // PCM
    append(UInt16(channels))
    append(UInt32(rate))
    append(UInt32(rate * channels * 2))
    append(UInt16(channels * 2))
    append(UInt16(16))
    data += Data("data".utf8)
    append(UInt32(frames * channels * 2))
    for frame in 0..<frames {
        let value = Int16(16383 * sin(2 * Double.pi * hertz * Double(frame) / Double(rate)))
        for _ in 0..<channels { append(value) }
    }
    guard FileManager.default.createFile(atPath: path, contents: data) else {
        throw CheckFailure("cannot write \(path)")
    }
}

/// The level of `hertz` in every `window`-second window of `samples` (at `rate`) from `from` to `to` seconds.
func windowLevels(
    _ hertz: Double,
    _ samples: [Float],
    rate: Int,
    from: Double,
    to: Double,
    window: Double = 0.05
) -> [Double] {
    var result: [Double] = []
    var t = max(0, from)
    while t + window <= to {
        let a = Int(t * Double(rate))
        let b = Int((t + window) * Double(rate))
        guard b <= samples.count else { break }
        result.append(ToneAnalysis.level(of: hertz, in: samples[a..<b], sampleRate: rate))
        t += window
    }
    return result
}

// MARK: The microphone

/// A 700 Hz tone at -12 dBFS played into the loopback for as long as the checks run: what hushd's microphone
/// (`[capture] pcm`) hears. Its own underruns are counted: a take during one is taken again.
final class MicrophoneTone: @unchecked Sendable {
    static let hertz = 700.0
    static let amplitude: Float = 0.25
    static var decibels: Double { 20 * log10(Double(amplitude)) }
    let underruns = Atomic<Int>(0)
    /// While set, the tone is played at twice its amplitude (-6 dBFS): a mark, to tell frames heard then from any
    /// heard before or after.
    let marked = Atomic<Bool>(false)
    static let markedAmplitude: Float = 0.5
    /// Frames written so far, and whether the device failed (then the tone stopped).
    let written = Atomic<Int>(0)
    let failed = Atomic<Bool>(false)
    private let stopped = Atomic<Bool>(false)
    private let playback: ALSAPlayback

    /// Opens `pcm` (the loopback's playback side whose capture side hushd records) and starts playing.
    init(pcm: String) throws {
        // A deep buffer: the player shares two emulated CPUs with hushd and the applications.
        playback = try ALSAPlayback(PlaybackConfiguration(pcm: pcm, periodFrames: 512, periods: 16))
        Thread.detachNewThread { [self] in play() }
    }

    private func play() {
        let frames = 512
        let channels = playback.granted.channels
        let rate = Double(playback.granted.sampleRate)
        var samples = [Int16](repeating: 0, count: frames * channels)
        var n = 0
        while !stopped.load(ordering: .relaxed) {
            let amplitude = marked.load(ordering: .relaxed) ? Self.markedAmplitude : Self.amplitude
            for frame in 0..<frames {
                let value = Int16(
                    32767 * amplitude * Float(sin(2 * Double.pi * Self.hertz * Double(n + frame) / rate))
                )
                for channel in 0..<channels { samples[frame * channels + channel] = value }
            }
            switch samples.withUnsafeBytes({ playback.write($0.baseAddress!, frames: frames) }) {
            case .written: break
            case .recovered: underruns.add(1, ordering: .relaxed)
            case .gone, .failed:
                failed.store(true, ordering: .relaxed)
                return
            }
            n += frames
            written.store(n, ordering: .relaxed)
        }
    }

    func stop() { stopped.store(true, ordering: .relaxed) }

    /// "48000 frames written (granted …), 0 underruns", for messages.
    var summary: String {
        "\(written.load(ordering: .relaxed)) frames written to \(playback.describeGrant), "
            + "\(underruns.load(ordering: .relaxed)) underrun(s)\(failed.load(ordering: .relaxed) ? ", failed" : "")"
    }
}

/// When each of `applications` was first seen in `wanted` (one status a poll, every 10 ms, so two streams starting
/// together are both timed).
func waitForStreams(_ applications: [Application], _ wanted: String, seconds: Double = 30) throws -> [Instant] {
    var seen: [Instant?] = Array(repeating: nil, count: applications.count)
    try waitUntil(applications.map(\.name).joined(separator: ", ") + " \(wanted)", seconds: seconds) {
        let listed = streams()
        let now = monotonicNow()
        for (index, application) in applications.enumerated() where seen[index] == nil {
            if listed.contains(where: { $0["pid"] as? Int == Int(application.pid) && $0["state"] as? String == wanted })
            {
                seen[index] = now
            }
        }
        return !seen.contains(nil)
    }
    return seen.map { $0! }
}

/// Seconds from `start` to `end`.
func seconds(from start: Instant, to end: Instant) -> Double { Double((end - start).nanoseconds) / 1e9 }

/// From `start` to `end` in milliseconds, for messages ("40 ms").
func ms(_ end: Instant, _ start: Instant) -> String { "\((end - start).milliseconds) ms" }

/// The times `application`'s playback stream ran dry in hushd (the program late with its frames: a stall of the
/// emulated machine, not of hushd), 0 when hushd does not list it.
func streamUnderruns(_ application: Application) -> Int {
    stream(of: application)?.stream["underruns"] as? Int ?? 0
}

/// `application`'s stream underruns since `before` (``streamUnderruns(_:)``), as a disturbance: a program that
/// was late leaves a gap in what it plays.
func streamUnderrunsSince(_ before: Int, _ application: Application) -> [String] {
    let counted = streamUnderruns(application) - before
    return counted > 0 ? ["\(application.name)'s stream ran dry \(counted) time(s) (the program was late)"] : []
}

/// The underruns hushd counted since `before`, as a disturbance.
func xrunsSince(_ before: Int) throws -> [String] {
    let counted = try outputXruns() - before
    return counted > 0 ? ["hushd counted \(counted) underrun(s) meanwhile"] : []
}
