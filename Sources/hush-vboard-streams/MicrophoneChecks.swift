import HushCore
import HushTesting

#if canImport(Glibc)
import Glibc
#endif

// The microphone through the `hush` device: a recorder hears it (the tone the check plays into the loopback, at its
// frequency and level) and the light shows it; an interruption gives the recorder silence at the real rate, and it
// stays silent after the interruption ends (R9: a microphone is never re-enabled behind the person's back) while a
// recorder started afterwards hears it; status names who holds it.

/// Why a take of the microphone cannot be judged: the tone player or hushd underran, arecord's ring overran, or a
/// CPU of the emulated machine stalled while it recorded. Any stall the watch records (over 5 ms) counts, not only
/// those longer than the microphone reader's cushion (a period of hushd's, 10.7 ms here): CI runs saw gaps of one
/// period in takes whose stalls were all under 10 ms, and none near some of the gaps; a stall under TCG holds a
/// virtual CPU, and the watch on it sees only what exceeds its 5 ms threshold. A gap in every take still fails.
func microphoneDisturbances(since before: Underruns, recorders: [Application]) throws -> [String] {
    var reasons: [String] = []
    let tone = (microphoneTone?.underruns.load(ordering: .relaxed) ?? 0) - before.tone
    if tone > 0 { reasons.append("the microphone's tone underran \(tone) time(s)") }
    let hushd = try outputXruns() - before.hushd
    if hushd > 0 { reasons.append("hushd counted \(hushd) underrun(s)") }
    for recorder in recorders where recorder.text.contains("overrun") {
        reasons.append("\(recorder.name) overran: \(recorder.text)")
    }
    reasons += stallWatch?.disturbance(from: before.at, to: monotonicNow(), allowed: StallWatch.threshold) ?? []
    return reasons
}

struct Underruns {
    var tone: Int
    var hushd: Int
    var at: Instant
}

func underrunsNow() throws -> Underruns {
    Underruns(
        tone: microphoneTone?.underruns.load(ordering: .relaxed) ?? 0,
        hushd: try outputXruns(),
        at: monotonicNow()
    )
}

/// A run of silence of a millisecond or more inside the microphone's tone: frames the microphone did not deliver.
struct Gap: CustomStringConvertible {
    /// Seconds into the recording.
    var start: Double
    var milliseconds: Double
    /// "1.234 s (2.1 ms)".
    var description: String {
        "\(DecimalText.fixed(start, places: 3)) s (\(DecimalText.fixed(milliseconds, places: 1)) ms)"
    }
}

/// The gaps in `samples` (`rate`: the microphone's recordings are 16 kHz) from `from` to `to` seconds.
func gaps(in samples: [Float], from: Double, to: Double, rate: Int = recordRate) -> [Gap] {
    let a = min(samples.count, max(0, Int(from * Double(rate))))
    let b = min(samples.count, max(a, Int(to * Double(rate))))
    var found: [Gap] = []
    var run = 0
    for index in a..<b {
        if abs(samples[index]) < 1.5 / 32767 {
            run += 1
        } else {
            if run >= rate / 1000 {
                found.append(
                    Gap(start: Double(index - run) / Double(rate), milliseconds: Double(run) * 1000 / Double(rate))
                )
            }
            run = 0
        }
    }
    return found
}

/// The frames of silence hushd handed on in its microphone's place since it started (status `capture.gapFrames`:
/// periods its reader was late for).
func microphoneGapFrames() -> Int {
    ((try? hushdStatus.status())?["capture"] as? [String: Any])?["gapFrames"] as? Int ?? 0
}

/// Whether `holes` are the periods hushd said its microphone's reader was late for (`gapFrames` frames at 48 kHz
/// during the take): none longer than a period of hushd's, and no more of them than the periods it counted. Such a
/// gap is the emulated machine holding the reader's CPU past the router's cushion, and hushd says so; a gap it did
/// not count is hush's.
func gapsCounted(_ holes: [Gap], gapFrames: Int) -> Bool {
    holes.allSatisfy { $0.milliseconds <= hushdPeriod * 1000 + 1 }
        && holes.count <= gapFrames / Int(hushdPeriod * 48000)
}

/// The microphone's tone in `samples` (16 kHz) from `from` to `to` seconds: its quietest and loudest 100 ms window
/// (dBFS) and its frequency; windows that hold one of `avoiding` are left out.
func microphoneHeard(
    _ samples: [Float],
    from: Double,
    to: Double,
    avoiding holes: [Gap] = []
) -> (quietest: Double, loudest: Double, hertz: Double) {
    let all = windowLevels(MicrophoneTone.hertz, samples, rate: recordRate, from: from, to: to, window: 0.1)
    let levels = all.indices.filter { index in
        let start = max(0, from) + Double(index) * 0.1
        return !holes.contains { $0.start < start + 0.1 && $0.start + $0.milliseconds / 1000 > start }
    }.map { all[$0] }
    let a = min(samples.count, Int(from * Double(recordRate)))
    let b = min(samples.count, max(a, Int(to * Double(recordRate))))
    return (
        levels.min() ?? -240, levels.max() ?? -240,
        ToneAnalysis.frequency(of: samples[a..<b], sampleRate: recordRate)
    )
}

/// The loudest 20 ms window of the microphone's tone, and the largest sample, from `from` to `to` seconds.
func microphoneSilence(_ samples: [Float], from: Double, to: Double) -> (loudest: Double, peak: Float) {
    let levels = windowLevels(MicrophoneTone.hertz, samples, rate: recordRate, from: from, to: to, window: 0.02)
    let a = min(samples.count, Int(from * Double(recordRate)))
    let b = min(samples.count, max(a, Int(to * Double(recordRate))))
    return (levels.max() ?? -240, samples[a..<b].map(abs).max() ?? 0)
}

/// When the microphone light first read `value` (looking every 2 ms for up to 2 s), or nil if it never did.
func light(becomes value: String) -> Instant? {
    let deadline = monotonicNow() + .seconds(2)
    while monotonicNow() < deadline {
        if lightValue() == value { return monotonicNow() }
        sleep(.milliseconds(2))
    }
    return nil
}

/// From `start` to `end` for messages; "never" when the light never changed.
func ms(_ end: Instant?, _ start: Instant) -> String { end.map { ms($0, start) } ?? "never" }

/// The microphone holders hushd lists in status, and which streams say they hear it.
func microphoneHolders() throws -> (listed: [Int], hearing: [Int]) {
    let state = try hushdStatus.status()
    let hearing = (state["streams"] as? [[String: Any]] ?? []).filter { $0["microphone"] as? Bool == true }
    return (state["microphone"] as? [Int] ?? [], hearing.compactMap { $0["id"] as? Int })
}

/// A level's distance from the microphone's tone, for messages.
let toneLevel = MicrophoneTone.decibels

let microphoneChecks: [Check] = [
    Check(name: "streams-recorder-hears-the-microphone-and-the-light-shows-it") {
        for device in ["hush:CATEGORY=record", "hush:CATEGORY=playAndRecord"] {
            let file = "/tmp/microphone.raw"
            try judge("the microphone through \(device)") {
                let recorder = try arecord(device, file, seconds: 3)
                let running = try waitForStream(recorder, "running")
                let before = try underrunsNow()
                let gapsBefore = microphoneGapFrames()
                let lit = light(becomes: "1")
                sleep(.milliseconds(300))
                let id = stream(of: recorder)?.stream["id"] as? Int ?? -1
                let holders = try microphoneHolders()
                let result = recorder.finish(within: 10)
                let disturbances = try microphoneDisturbances(since: before, recorders: [recorder])
                let out = light(becomes: "0")
                let after = try microphoneHolders()
                let samples = readRecording(file)
                let took = result.map { seconds(from: running, to: $0.at) } ?? -1
                let holes = gaps(in: samples, from: 0.3, to: 2.9)
                let gapFrames = microphoneGapFrames() - gapsBefore
                let counted = gapsCounted(holes, gapFrames: gapFrames)
                let tone = microphoneHeard(samples, from: 0.3, to: 2.9, avoiding: counted ? holes : [])
                var judged = Judged(disturbances: disturbances)
                judged.report = [
                    "  \(device): \(samples.count) frames in \(twoDecimals(took)) s, the tone at "
                        + "\(twoDecimals(tone.hertz)) Hz, \(twoDecimals(tone.quietest)) to \(twoDecimals(tone.loudest)) dBFS "
                        + "(played at \(twoDecimals(toneLevel))), gaps in it: \(holes) (hushd counted \(gapFrames) frames of "
                        + "gaps: its microphone reader late\(counted && !holes.isEmpty ? ", which explains them" : "")); light on \(ms(lit, running)) after the stream ran, out "
                        + "\(ms(out, result?.at ?? running)) after arecord ended; status while recording: microphone "
                        + "\(holders.listed), streams hearing \(holders.hearing); after: \(after.listed)"
                ]
                judged.expect(result?.status == 0, "\(device): arecord failed: \(recorder.outcome)")
                judged.expect(samples.count == 3 * recordRate, "\(device): 3 s gave \(samples.count) frames")
                judged.expect(
                    took > 2.9 && took < 3.6,
                    "\(device): 3 s at the real rate took \(twoDecimals(took)) s",
                    stall: true
                )
                judged.expect(
                    abs(tone.hertz - MicrophoneTone.hertz) < 1,
                    "\(device): the tone at \(tone.hertz) Hz",
                    stall: true
                )
                judged.expect(
                    abs(tone.quietest - toneLevel) < 1 && abs(tone.loudest - toneLevel) < 1,
                    "\(device): the tone's level \(tone.quietest) to \(tone.loudest) dBFS, played at \(toneLevel) "
                        + "(the microphone's tone: \(microphoneTone?.summary ?? "none"))",
                    stall: true
                )
                // A gap hushd counted as its reader's lateness is the machine's (it says so in status); one it did
                // not count is not.
                judged.expect(
                    holes.isEmpty || counted,
                    "\(device): the microphone's tone has gaps at \(holes), \(gapFrames) frames of them counted by hushd",
                    stall: true
                )
                judged.expect(
                    holders.listed == [id] && holders.hearing == [id],
                    "\(device): status names stream \(id) as the microphone's holder: \(holders)"
                )
                judged.expect(after.listed.isEmpty, "\(device): nobody holds the microphone after: \(after)")
                judged.expect(lit != nil, "\(device): the microphone light is lit while it records")
                judged.expect(out != nil, "\(device): the microphone light goes out after")
                return judged
            }
        }
    },
    Check(name: "streams-interrupted-recorder-gets-silence-and-stays-silent") {
        // A recorder hears the microphone; a ringtone (soloAmbient on the ringer bus: non-mixable, and its end is
        // resumable by R8) interrupts it (R6); the recorder gets silence at the real rate, and after the ringtone
        // ends it stays silent (R9) while a second recorder, started then, hears the microphone. Judged in the first
        // recorder's file, by the times its frames were made.
        let ring = try ToneFile.make(1500, 2)
        let length = 12
        try judge("the interrupted recorder") {
            let first = try arecord("hush:CATEGORY=record", "/tmp/first.raw", seconds: length)
            let running = try waitForStream(first, "running")
            let before = try underrunsNow()
            let lit = light(becomes: "1")
            sleep(.milliseconds(1500))
            let ringtone = try aplay("hush:ringtone", ring)
            let held = try waitForStream(first, "held")
            let ringing = try waitForStream(ringtone, "running")
            let out = light(becomes: "0")
            let during = try microphoneHolders()
            let rang = ringtone.finish(within: 10)
            sleep(.milliseconds(1500))
            let afterRing = (state: state(of: first), light: lightValue(), holders: try microphoneHolders())
            let second = try arecord("hush:CATEGORY=record", "/tmp/second.raw", seconds: nil)
            let secondRunning = try waitForStream(second, "running")
            let secondLit = light(becomes: "1")
            let firstID = stream(of: first)?.stream["id"] as? Int ?? -1
            let secondID = stream(of: second)?.stream["id"] as? Int ?? -1
            // A stream's "microphone" flag is set by the audio thread's next period after the gate opens (the
            // light is the gate): asked at once, an emulator's stall can leave it unset.
            sleep(.milliseconds(300))
            let both = try microphoneHolders()
            sleep(.milliseconds(1200))
            // kill -9 of a recording client: its session ends (R10) and the light goes out.
            let killed = monotonicNow()
            second.signal(SIGKILL)
            second.finish(within: 5)
            let secondOut = light(becomes: "0")
            let afterKill = try microphoneHolders()
            let result = first.finish(within: Double(length) + 5)
            let disturbances = try microphoneDisturbances(since: before, recorders: [first, second])
            let samples = readRecording("/tmp/first.raw")
            let secondSamples = readRecording("/tmp/second.raw")
            let took = result.map { seconds(from: running, to: $0.at) } ?? -1
            // Where things happened in the first recorder's file: its frames are made at the real rate from
            // `running`.
            let heldAt = seconds(from: running, to: held)
            let ringEnded = rang.map { seconds(from: running, to: $0.at) } ?? -1
            let secondAt = seconds(from: running, to: secondRunning)
            let tone = microphoneHeard(samples, from: 0.3, to: heldAt - 0.3)
            let silence = microphoneSilence(samples, from: heldAt + 0.2, to: Double(length) - 0.1)
            let afterRingSilence = microphoneSilence(samples, from: ringEnded, to: Double(length) - 0.1)
            // Where the tone stopped, by the file: the first 20 ms window after the first second without it.
            let windows = windowLevels(
                MicrophoneTone.hertz,
                samples,
                rate: recordRate,
                from: 1,
                to: Double(length),
                window: 0.02
            )
            let stoppedAt = 1 + 0.02 * Double(windows.firstIndex { $0 < -60 } ?? windows.count)
            let secondLength = Double(secondSamples.count) / Double(recordRate)
            let secondTone = microphoneHeard(secondSamples, from: 0.3, to: secondLength - 0.2)
            let holes =
                gaps(in: samples, from: 0.3, to: heldAt - 0.3)
                + gaps(in: secondSamples, from: 0.3, to: secondLength - 0.2)
            var judged = Judged(disturbances: disturbances)
            judged.report = [
                "  first recorder: \(samples.count) frames in \(twoDecimals(took)) s; the tone "
                    + "\(twoDecimals(tone.quietest)) to \(twoDecimals(tone.loudest)) dBFS at \(twoDecimals(tone.hertz)) Hz "
                    + "until the ringtone; held \(twoDecimals(heldAt)) s in, the tone gone from its frames at "
                    + "\(twoDecimals(stoppedAt)) s; from then to its end (the ringtone ended at \(twoDecimals(ringEnded)) s, "
                    + "the second recorder ran from \(twoDecimals(secondAt)) s) the loudest 20 ms window "
                    + "\(twoDecimals(silence.loudest)) dBFS, peak sample \(silence.peak)",
                "  light: on \(ms(lit, running)) after the first recorder ran, out \(ms(out, ringing)) after the "
                    + "ringtone ran, \(afterRing.light) 1.5 s after it ended (first recorder \(afterRing.state ?? "?")), "
                    + "on \(ms(secondLit, secondRunning)) after the second ran, out \(ms(secondOut, killed)) after its "
                    + "kill -9; status: during the ringtone \(during.listed), after it \(afterRing.holders.listed), "
                    + "with the second recorder \(both.listed) (streams hearing \(both.hearing); first \(firstID), "
                    + "second \(secondID)), after the kill \(afterKill.listed)",
                "  second recorder: \(secondSamples.count) frames, the tone \(twoDecimals(secondTone.quietest)) to "
                    + "\(twoDecimals(secondTone.loudest)) dBFS at \(twoDecimals(secondTone.hertz)) Hz; gaps in the tone "
                    + "(both recorders): \(holes)",
            ]
            judged.expect(result?.status == 0, "the first recorder failed: \(first.outcome)")
            judged.expect(samples.count == length * recordRate, "\(length) s gave \(samples.count) frames")
            judged.expect(
                took > Double(length) - 0.1 && took < Double(length) + 0.6,
                "silence at the real rate: \(length) s took \(twoDecimals(took)) s",
                stall: true
            )
            judged.expect(
                abs(tone.quietest - toneLevel) < 1,
                "the first recorder heard the microphone: \(tone)",
                stall: true
            )
            judged.expect(
                holes.isEmpty,
                "the microphone's tone has gaps (first recorder, then second): \(holes)",
                stall: true
            )
            judged.expect(silence.loudest < -80, "silence while interrupted and after (R6, R9): \(silence)")
            judged.expect(
                abs(stoppedAt - heldAt) < 0.25,
                "the microphone left the recorder when it was held (\(heldAt) s), not at \(stoppedAt) s",
                stall: true
            )
            judged.expect(
                afterRingSilence.loudest < -80,
                "still silent after the ringtone ended (R9): \(afterRingSilence)"
            )
            judged.expect(
                secondAt < Double(length) - 1,
                "the second recorder ran while the first still recorded",
                stall: true
            )
            judged.expect(during.listed.isEmpty, "nobody holds the microphone during the ringtone: \(during)")
            judged.expect(
                afterRing.light == "0" && afterRing.holders.listed.isEmpty,
                "the microphone stays off after the ringtone: light \(afterRing.light), \(afterRing.holders)"
            )
            judged.expect(
                both.listed == [secondID] && both.hearing == [secondID],
                "only the second recorder (\(secondID)) holds the microphone: \(both)"
            )
            judged.expect(
                abs(secondTone.quietest - toneLevel) < 1,
                "the second recorder heard the microphone: \(secondTone)",
                stall: true
            )
            judged.expect(afterKill.listed.isEmpty, "nobody holds the microphone after the kill -9: \(afterKill)")
            judged.expect(lit != nil, "the light is lit while the first recorder hears the microphone")
            judged.expect(out != nil, "the light goes out while the ringtone interrupts the recorder")
            judged.expect(secondLit != nil, "the light is lit while the second recorder hears the microphone")
            judged.expect(secondOut != nil, "the light goes out after the kill -9 of the second recorder")
            return judged
        }
    },
]
