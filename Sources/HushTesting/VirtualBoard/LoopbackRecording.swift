import Foundation
import HushALSA
import HushCore

#if canImport(Glibc)
import Glibc
#endif

// Captures that know whether they can be judged. Under TCG the whole emulated machine stalls now and then (qemu's
// translation cache, a busy host): a stall longer than hushd's queue (three 512-frame periods, 32 ms) empties the
// device and hushd counts an underrun, and a stall longer than the capture's own buffer loses captured periods.
// Either way the level in that stretch says how the host was doing, not what hush did. So every capture records
// when each period arrived, the daemon's captures also what hushd counted meanwhile, and a disturbed take is taken
// again (at most `takes` times, each re-take printed with its reason) instead of being judged.

/// What one capture PCM heard, with when it heard it.
package struct Recording {
    /// The left channel, as floats.
    package let samples: [Float]
    package let sampleRate: Int
    /// When the first frame was captured, on the monotonic clock (the earliest arrival less the frames before it).
    package let start: Instant
    /// How much later than the device's own pace the latest period arrived.
    package let latestArrival: Duration
    /// How late a period may arrive before the capture's buffer overflows and periods are lost.
    package let bufferLeeway: Duration
    /// Frames asked for and not captured (the device could not be recovered after an overrun); the samples are
    /// padded with silence.
    package let shortBy: Int

    /// Seconds into the recording at `instant`.
    package func seconds(at instant: Instant) -> Double { Double((instant - start).nanoseconds) / 1e9 }

    /// Why this recording cannot be judged, or nil when every period arrived in time.
    package var disturbance: String? {
        if shortBy > 0 { return "the capture ended \(shortBy) frames short after an overrun it could not recover" }
        guard latestArrival > bufferLeeway else { return nil }
        return "a captured period arrived \(latestArrival.milliseconds) ms behind the device's pace (more than the "
            + "\(bufferLeeway.milliseconds) ms the capture buffer holds: periods were lost)"
    }
}

/// Records `seconds` from a capture PCM a period at a time, noting when each period arrived. With `done`, asked
/// after every period, `seconds` is the most: the recording ends (whole, not short) once `done` says so.
package func record(
    _ pcm: String,
    seconds: Double,
    periodFrames: Int,
    until done: (@Sendable () -> Bool)? = nil
) throws -> Recording {
    // A deep buffer: the reader shares two emulated CPUs with hushd and its clients, and may be held off for a while
    // without losing a period (what the device's clock and hushd's counters say is what matters).
    let periods = 16
    let capture = try ALSACapture(PlaybackConfiguration(pcm: pcm, periodFrames: periodFrames, periods: periods))
    let granted = capture.granted
    let frames = Int(seconds * Double(granted.sampleRate))
    var samples = [Int16](repeating: 0, count: frames * granted.channels)
    // (frames read so far, when the read returned): at most one entry per period, reserved before reading.
    var arrivals: [(frames: Int, at: Instant)] = []
    arrivals.reserveCapacity(frames / granted.periodFrames + 2)
    var read = 0
    var wanted = frames
    while read < wanted {
        let chunk = min(granted.periodFrames, wanted - read)
        let got = samples.withUnsafeMutableBytes { bytes in
            capture.read(into: bytes.baseAddress! + read * granted.channels * 2, frames: chunk)
        }
        read += got
        arrivals.append((read, monotonicNow()))
        if got < chunk { break }
        if let done, done() { wanted = read }
    }
    try require(read > 0, "captured nothing from \(pcm)")
    // A period arrives when the device has captured it: the arrival less the audio before it is when the first frame
    // was captured, plus how late that read was. The earliest of these is the device's pace; the latest, how far
    // behind it the capture fell.
    let rate = Int64(granted.sampleRate)
    let offsets = arrivals.map { $0.at.nanoseconds - Int64($0.frames) * 1_000_000_000 / rate }
    let earliest = offsets.min() ?? monotonicNow().nanoseconds
    let period = Int64(granted.periodFrames) * 1_000_000_000 / rate
    return Recording(
        samples: stride(from: 0, to: wanted * granted.channels, by: granted.channels).map {
            Float(samples[$0]) / 32767
        },
        sampleRate: granted.sampleRate,
        start: Instant(nanoseconds: earliest),
        latestArrival: .nanoseconds((offsets.max() ?? earliest) - earliest),
        // A read that comes this late finds the buffer full; any later and the device overwrote a period.
        bufferLeeway: .nanoseconds(period * Int64(granted.periods - 1)),
        // alsa-lib gives up on a capture it cannot recover after an overrun: the take is short, not wrong.
        shortBy: wanted - read
    )
}

/// What a `listen` heard, and when its actions really ran (they run late when the machine is slow).
package struct Take {
    package let recordings: [Recording]
    /// The instant each action started, in the order given.
    package let acted: [Instant]
    /// Why this take cannot be judged: periods the capture lost, underruns hushd counted meanwhile.
    package var disturbances: [String]

    /// Seconds into the first recording at which action `index` started.
    package func actedAt(_ index: Int) -> Double { recordings[0].seconds(at: acted[index]) }
}

/// Records `pcms` for `seconds` while `actions` run at their times (seconds after the recording starts). With
/// `done`, `seconds` is the most: every recording ends once `done` says so (`record(_:seconds:periodFrames:until:)`).
package func listen(
    to pcms: [String],
    seconds: Double,
    until done: (@Sendable () -> Bool)? = nil,
    while actions: [(at: Double, what: String, action: () throws -> Void)] = []
) throws -> Take {
    final class Box: @unchecked Sendable {
        var results: [Result<Recording, Error>?]
        init(_ count: Int) { results = Array(repeating: nil, count: count) }
    }
    let box = Box(pcms.count)
    let group = DispatchGroup()
    for (index, pcm) in pcms.enumerated() {
        group.enter()
        Thread.detachNewThread {
            box.results[index] = Result { try record(pcm, seconds: seconds, periodFrames: 512, until: done) }
            group.leave()
        }
    }
    let start = monotonicNow()
    var acted: [Instant] = []
    for (time, what, action) in actions {
        let due = start + .milliseconds(Int64(time * 1000))
        let now = monotonicNow()
        if due > now { sleep(due - now) }
        acted.append(monotonicNow())
        do {
            try action()
        } catch {
            group.wait()
            throw CheckFailure("\(what): \(error)")
        }
    }
    group.wait()
    let recordings = try box.results.map { try $0!.get() }
    return Take(recordings: recordings, acted: acted, disturbances: recordings.compactMap(\.disturbance))
}

/// How many takes a disturbed measurement gets in all. Only a take the emulated machine disturbed (and whose only
/// problems are of the kind a stall makes) is taken again; on a host shared with other work, stalls over 10 ms came
/// several times a second in some runs, so three takes were sometimes all disturbed.
package let takes = 5

/// Runs `take` until one is undisturbed, at most `takes` times; prints why each earlier one was taken again. The
/// closure sets up what it needs each time (a re-take starts from the same state) and returns its result with the
/// reasons it cannot be judged (none: judge it).
package func measure<Result>(_ what: String, _ take: () throws -> (Result, disturbances: [String])) throws -> Result {
    var reasons: [String] = []
    for attempt in 1...takes {
        let (result, disturbances) = try take()
        if disturbances.isEmpty { return result }
        let reason = disturbances.joined(separator: "; ")
        reasons.append(reason)
        print("  re-measuring \(what) (take \(attempt) of \(takes) not judged: \(reason))")
        fflush(nil)
        // Stalls come in bursts (a host compiling, the translation cache refilling): let one pass.
        if attempt < takes { sleep(.seconds(Int64(attempt))) }
    }
    throw CheckFailure("\(what): none of \(takes) takes could be judged: " + reasons.joined(separator: " | "))
}
