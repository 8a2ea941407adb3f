import Foundation
import HushALSA
import HushCore
import HushTesting
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

// What hush-vboard-latency measures: how long an impulse takes from the moment aplay is started to its place on the
// loopback's capture side, through plain hw:, through dmix and through hush (board/virtual/bench/latency.sh,
// docs/performance.md), and the way in: from a write into the loopback to a recorder reading the other side plainly,
// through dsnoop and through hushd's microphone and `hush:CATEGORY=record`. A figure, not a check: it prints the
// takes and their medians and fails only when it could not measure.
//
// The recorder is this program's own capture of the loopback (the same for every path), started before aplay and
// read a period at a time; it dates its frames by the earliest return of a read (frame n was captured no later than
// the moment the read that delivered it returned, and the earliest such bound over a take is the one least delayed
// by scheduling). aplay is dated by the moment before posix_spawn: its start-up (exec, alsa-lib's configuration, the
// plugin's connection to hushd) is part of what a program's first sound waits for.

let latencyRate = 48000
/// What aplay and the recorder ask for on every path: 256-frame periods in a 1024-frame buffer.
let latencyPeriod = 256
let latencyBufferFrames = 1024
/// The impulse file: a full-scale frame 50 ms in (after any ramp a stream's start gets) and another 0.5 s later,
/// then silence to 1 s.
let latencyLead = 2400
let latencySecond = 24000

struct LatencyPath {
    var name: String
    var device: String
    var capture: String
    /// The capture's period and periods: snd-aloop makes the capture side of a running cable take its playback's.
    var capturePeriod: Int
    var capturePeriods: Int
    /// The writer's period and periods (the live takes), and whether the path has live takes only (the way in: an
    /// application records, the measuring program plays into the loopback).
    var writerPeriod = latencyPeriod
    var writerPeriods = latencyBufferFrames / latencyPeriod
    var liveOnly = false
}

/// A player in this program, on its own thread: writes the impulse file's frames to `device` a period at a time
/// (blocking once its buffer is full, as a program that makes its sound as it goes) and notes when the write that
/// holds the second impulse returned: from then on the impulse is the device's.
final class LiveWriter: @unchecked Sendable {
    /// CLOCK_MONOTONIC nanoseconds of that return; 0 until then, -1 when the device could not be opened or failed.
    let handedOver = Atomic<Int64>(0)
    private let device: String
    private let period: Int
    private let periods: Int

    /// Starts the thread, which opens the device (through hush that takes a connection to hushd: the recorder must
    /// not wait for it).
    init(_ device: String, period: Int, periods: Int) {
        self.device = device
        self.period = period
        self.periods = periods
        Thread.detachNewThread { [self] in play() }
    }

    private func play() {
        guard
            let playback = try? ALSAPlayback(
                PlaybackConfiguration(
                    pcm: device,
                    sampleRate: latencyRate,
                    channels: 2,
                    periodFrames: period,
                    periods: periods
                )
            )
        else {
            handedOver.store(-1, ordering: .relaxed)
            return
        }
        let latencyPeriod = playback.granted.periodFrames  // the device's, where it insists (hushd's microphone)
        var samples = [Int16](repeating: 0, count: latencyPeriod * 2)
        let impulse = latencyLead + latencySecond
        for start in stride(from: 0, to: latencyRate, by: latencyPeriod) {
            for frame in 0..<latencyPeriod {
                let value: Int16 = start + frame == latencyLead || start + frame == impulse ? 32767 : 0
                samples[2 * frame] = value
                samples[2 * frame + 1] = value
            }
            switch samples.withUnsafeBytes({ playback.write($0.baseAddress!, frames: latencyPeriod) }) {
            case .written, .recovered: break
            case .gone, .failed:
                handedOver.store(-1, ordering: .relaxed)
                return
            }
            if impulse >= start && impulse < start + latencyPeriod {
                handedOver.store(monotonicNow().nanoseconds, ordering: .relaxed)
            }
        }
    }
}

/// Records `capture` while `aplay -D device` plays the impulse file (or, `live`, a LiveWriter writes it); the delay
/// in frames from aplay's start to the first impulse (less the 50 ms before it in the file), or from the live
/// write's return to the second; nil when the recorder fell behind (a stall of the emulated machine: the frames it
/// lost would shorten the delay); throws when the take cannot be measured.
func latencyTake(_ path: LatencyPath, file: String, live: Bool = false) throws -> Double? {
    let capture = try ALSACapture(
        PlaybackConfiguration(
            pcm: path.capture,
            sampleRate: latencyRate,
            channels: 2,
            periodFrames: path.capturePeriod,
            periods: path.capturePeriods
        )
    )
    let period = capture.granted.periodFrames
    let total = latencyRate * 2  // 2 s: aplay's start-up under emulation and the file's second
    var samples = [Int16](repeating: 0, count: total * 2)
    var earliest = Double.infinity  // min over reads of (return time - frames so far / rate), in seconds
    var latest = -Double.infinity
    var started: Instant?
    var application: Application?
    var writer: LiveWriter?
    var frames = 0
    try samples.withUnsafeMutableBytes { bytes in
        while frames + period <= total {
            let got = capture.read(into: bytes.baseAddress! + frames * 4, frames: period)
            let now = monotonicNow()
            guard got == period else { throw CheckFailure("\(path.capture): read \(got) of \(period) frames") }
            frames += got
            let t = Double(now.nanoseconds) / 1e9 - Double(frames) / Double(latencyRate)
            earliest = min(earliest, t)
            latest = max(latest, t)
            if live && writer == nil && frames >= 4 * period {
                writer = LiveWriter(path.device, period: path.writerPeriod, periods: path.writerPeriods)
            } else if !live && application == nil && frames >= 4 * period {
                // The capture runs: start the player.
                started = monotonicNow()
                application = try Application(
                    "aplay",
                    [
                        "-q", "-D", path.device, "--period-size=\(latencyPeriod)",
                        "--buffer-size=\(latencyBufferFrames)", file,
                    ],
                    name: "aplay -D \(path.device)"
                )
            }
        }
    }
    if live {
        let handedOver = writer?.handedOver.load(ordering: .relaxed) ?? 0
        try require(handedOver > 0, "\(path.device): the live writer did not write the impulse (\(handedOver))")
        started = Instant(nanoseconds: handedOver)
    } else {
        guard let application else { throw CheckFailure("aplay never started") }
        let result = application.finish(within: 10)
        try require(result?.status == 0, "aplay -D \(path.device) failed: \(application.outcome)")
    }
    guard let started else { throw CheckFailure("no start") }
    let bufferSeconds = Double(period * capture.granted.periods) / Double(latencyRate)
    if latest - earliest > bufferSeconds {
        print("  (\(path.name): the recorder fell \(twoDecimals((latest - earliest) * 1000)) ms behind; taken again)")
        return nil
    }
    // The impulses: the first sample of the left channel above half of the loudest, and the next one 0.4 s on.
    let left = stride(from: 0, to: samples.count, by: 2).map { abs(Int(samples[$0])) }
    let loudest = left.max() ?? 0
    try require(loudest > 500, "\(path.name): no impulse in the recording (loudest sample \(loudest))")
    guard let first = left.firstIndex(where: { $0 > loudest / 2 }) else { throw CheckFailure("no impulse") }
    let after = first + latencySecond * 4 / 5
    let second = after < left.count ? left[after...].firstIndex(where: { $0 > loudest / 2 }) : nil
    // The first impulse must be the file's first: the second one half a second (±10 ms) after it. A second impulse
    // late by more is a gap between them — the writer or the device was held off (the emulated machine stalled),
    // so the first's timing says nothing either: taken again. None at all, or one early, is a wrong measurement.
    if let second, second - first - latencySecond > 480 {
        print(
            "  (\(path.name): the impulses at \(first) and \(second) are \(second - first - latencySecond) frames too far apart: a gap between them; taken again)"
        )
        return nil
    }
    try require(
        second.map { abs($0 - first - latencySecond) <= 480 } == true,
        "\(path.name): the impulses at \(first) and \(second.map(String.init) ?? "none") are not 0.5 s apart"
    )
    let impulse =
        live
        ? earliest + Double(second ?? 0) / Double(latencyRate)
        : earliest + Double(first - latencyLead) / Double(latencyRate)
    return (impulse - Double(started.nanoseconds) / 1e9) * Double(latencyRate)
}

func writeImpulses(_ path: String) throws {
    let frames = latencyRate
    var data = Data(capacity: 44 + frames * 4)
    func append<Value: FixedWidthInteger>(_ value: Value) { withUnsafeBytes(of: value.littleEndian) { data += $0 } }
    data += Data("RIFF".utf8)
    append(UInt32(36 + frames * 4))
    data += Data("WAVEfmt ".utf8)
    append(UInt32(16))
    append(UInt16(1))
    append(UInt16(2))
    append(UInt32(latencyRate))
    append(UInt32(latencyRate * 4))
    append(UInt16(4))
    append(UInt16(16))
    data += Data("data".utf8)
    append(UInt32(frames * 4))
    for frame in 0..<frames {
        let value: Int16 = frame == latencyLead || frame == latencyLead + latencySecond ? 32767 : 0
        append(value)
        append(value)
    }
    guard FileManager.default.createFile(atPath: path, contents: data) else {
        throw CheckFailure("cannot write \(path)")
    }
}

/// The dmix PCM over the plain path's playback, with the same period and buffer.
let latencyDmix = """
    pcm.latency_dmix {
        type dmix
        ipc_key 4242
        slave {
            pcm "hw:Loopback,0,1"
            rate \(latencyRate)
            channels 2
            format S16_LE
            period_size \(latencyPeriod)
            buffer_size \(latencyBufferFrames)
        }
    }
    pcm.latency_dsnoop {
        type dsnoop
        ipc_key 4243
        slave {
            pcm "hw:Loopback,0,1"
            rate \(latencyRate)
            channels 2
            format S16_LE
            period_size \(latencyPeriod)
            buffer_size \(latencyBufferFrames)
        }
    }

    """

func latencyMedian(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.count % 2 == 1
        ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

/// Every path, `takes` times each, interleaved (a slow moment of the emulated machine spoils one take of one path,
/// not all of one); prints each take and the medians. Returns false when a take could not be measured.
func measureLatency(takes: Int) -> Bool {
    do {
        try writeFile("/etc/asound.conf", latencyDmix)
        let file = "/tmp/impulses.wav"
        try writeImpulses(file)
        // hushd with its microphone on the loopback (hw:Loopback,0,0, played on hw:Loopback,1,0), as the streams
        // scenario has it.
        try setUpBoardForHushd(configuration: microphoneConfiguration)
        try startHushd()
        // snd-aloop has two substreams here: 0 carries hushd's speaker; 1 is its headphones route, which it does not
        // open while nothing is plugged in, so plain hw: and dmix use it.
        let paths = [
            LatencyPath(
                name: "plain",
                device: "hw:Loopback,0,1",
                capture: "hw:Loopback,1,1",
                capturePeriod: latencyPeriod,
                capturePeriods: latencyBufferFrames / latencyPeriod
            ),
            LatencyPath(
                name: "dmix",
                device: "latency_dmix",
                capture: "hw:Loopback,1,1",
                capturePeriod: latencyPeriod,
                capturePeriods: latencyBufferFrames / latencyPeriod
            ),
            // hushd's output (the virtual profile's speaker, hw:Loopback,0,0) sets the cable's period: 512 x 3.
            LatencyPath(
                name: "hush",
                device: "hush:music",
                capture: speakerCapture,
                capturePeriod: 512,
                capturePeriods: 3
            ),
            // The way in: the measuring program plays into the loopback, the recorder reads the other side plainly,
            // through dsnoop, or through hushd's microphone and `hush:CATEGORY=record`.
            LatencyPath(
                name: "plain in",
                device: "hw:Loopback,1,1",
                capture: "hw:Loopback,0,1",
                capturePeriod: latencyPeriod,
                capturePeriods: latencyBufferFrames / latencyPeriod,
                liveOnly: true
            ),
            LatencyPath(
                name: "dsnoop in",
                device: "hw:Loopback,1,1",
                capture: "latency_dsnoop",
                capturePeriod: latencyPeriod,
                capturePeriods: latencyBufferFrames / latencyPeriod,
                liveOnly: true
            ),
            // hushd's microphone sets that cable's period (its output's, 512 x 3): the writer takes it.
            LatencyPath(
                name: "hush in",
                device: microphonePlayback,
                capture: "hush:CATEGORY=record",
                capturePeriod: latencyPeriod,
                capturePeriods: latencyBufferFrames / latencyPeriod,
                writerPeriod: 512,
                writerPeriods: 3,
                liveOnly: true
            ),
        ]
        print(
            "aplay --period-size=\(latencyPeriod) --buffer-size=\(latencyBufferFrames), 48 kHz S16_LE stereo; "
                + "dmix's slave the same; hushd's output \(512) x 3 (the virtual profile)"
        )
        var delays: [String: [Double]] = [:]
        for take in 1...takes {
            for path in paths {
                for live in path.liveOnly ? [true] : [false, true] {
                    var measured: Double?
                    for _ in 1...3 where measured == nil { measured = try latencyTake(path, file: file, live: live) }
                    guard let frames = measured else {
                        throw CheckFailure("\(path.name): 3 takes in a row were disturbed (see above)")
                    }
                    let name = live ? "\(path.name) live" : path.name
                    delays[name, default: []].append(frames)
                    print(
                        "  take \(take) \(name) (\(live ? "write" : "aplay") -D \(path.device) -> \(path.capture)): "
                            + "\(Int(frames.rounded())) frames, \(twoDecimals(frames * 1000 / Double(latencyRate))) ms"
                    )
                    sleep(.milliseconds(200))
                }
            }
        }
        var medians: [String: Double] = [:]
        for name in paths.flatMap({ $0.liveOnly ? ["\($0.name) live"] : [$0.name, "\($0.name) live"] }) {
            let values = delays[name] ?? []
            let middle = latencyMedian(values)
            medians[name] = middle
            print(
                "LATENCY \(name): median \(Int(middle.rounded())) frames, "
                    + "\(twoDecimals(middle * 1000 / Double(latencyRate))) ms "
                    + "(min \(twoDecimals((values.min() ?? 0) * 1000 / Double(latencyRate))), "
                    + "max \(twoDecimals((values.max() ?? 0) * 1000 / Double(latencyRate))) ms, \(values.count) takes)"
            )
        }
        for (kind, shared) in [("", "dmix"), (" live", "dmix"), (" in live", "dsnoop")] {
            guard let hush = medians["hush\(kind)"], let plain = medians["plain\(kind)"],
                let dmix = medians["\(shared)\(kind)"]
            else { continue }
            print(
                "LATENCY\(kind) ratios: hush/plain \(twoDecimals(hush / plain)), hush/\(shared) "
                    + "\(twoDecimals(hush / dmix)); hush - plain \(twoDecimals((hush - plain) * 1000 / Double(latencyRate))) "
                    + "ms, hush - \(shared) \(twoDecimals((hush - dmix) * 1000 / Double(latencyRate))) ms"
            )
        }
        print("hushd's underrun warnings: \(shell("grep -c 'underrun(s) (' /tmp/hushd.log").output)")
        stopHushd()
        return true
    } catch {
        print("latency: \(error)")
        stopHushd()
        return false
    }
}
