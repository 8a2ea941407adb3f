import Foundation
import HushALSA
import HushCore
import HushTesting
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

// The microphone privacy switch (policy R21) on gpio-sim, judged in what arecord receives through the `hush` device:
// silence from within a bound of the switch's edge, every sample after that exactly 0 for as long as the recorder
// lives (turning the switch off does not start it again), at the real rate; the light out; a new recorder hears the
// microphone again with the light on before its first microphone frame. Then a random run of switch flips, recorders
// started and stopped and ringtones, in which no recorder gets a non-zero sample while the switch is on; and the
// capture card's "Capture Switch". docs/virtual-board.md, "The streams scenario".

/// hushd's period on the virtual profile (512 frames at 48 kHz), in seconds.
let hushdPeriod = 512.0 / 48000
/// How soon after the switch's edge hushd's silence may begin, by what it is made of: the GPIO edge's debounce, the
/// audio thread's next period (the gate closes between two), and the capture router's cushion (two periods: what a
/// stream receives is that far behind the microphone's latest, and the frames of the periods in flight may be the
/// microphone's). Judged on when hushd made the frames (`Dating.production`, to within a period), not when arecord
/// wrote them.
let silenceBound = Double(privacyDebounceMilliseconds) / 1000 + 3 * hushdPeriod
/// arecord's period through the hush device in these checks (-F, microseconds): how often it writes its file.
let privacyRecorderPeriod = 10000

/// arecord from `device` into a raw 16 kHz mono S16_LE file with 10 ms periods (the file grows every period, so its
/// growth times each frame's arrival) and a 1 s buffer; `seconds` long, or until stopped.
func privacyRecorder(_ device: String, _ file: String, seconds: Int?) throws -> Application {
    unlink(file)
    let length = seconds.map { ["-d", "\($0)"] } ?? []
    return try Application(
        "arecord",
        [
            "-q", "-D", device, "-t", "raw", "-f", "S16_LE", "-r", "\(recordRate)", "-c", "1", "-B", "1000000", "-F",
            "\(privacyRecorderPeriod)",
        ] + length + [file],
        name: "arecord -D \(device)"
    )
}

/// Watches, every millisecond on a thread of its own, how big recorders' files are and what the microphone light
/// shows: when each frame arrived, and when the light changed. Times are seconds since the watch began.
final class ArrivalWatch: @unchecked Sendable {
    struct Point {
        var at: Double
        var bytes: Int
    }
    private struct State {
        var files: [String: [Point]] = [:]
        var light: [(at: Double, value: String)] = []
        /// The longest time between two looks (a stall of the watch itself), and when it ended.
        var longestGap = 0.0
        var gapAt = 0.0
    }
    let base = monotonicNow()
    private let state = Mutex(State())
    private let stopped = Atomic<Bool>(false)
    private let done = Atomic<Bool>(false)

    init() { Thread.detachNewThread { [self] in watch() } }

    func now() -> Double { seconds(from: base, to: monotonicNow()) }
    func time(_ instant: Instant) -> Double { seconds(from: base, to: instant) }

    /// Starts watching `path` (before the recorder that writes it starts).
    func add(_ path: String) { state.withLock { $0.files[path] = [] } }

    private func watch() {
        var last = now()
        while !stopped.load(ordering: .relaxed) {
            let at = now()
            // The light first, then the files: a change seen in the same look counts the light as first.
            let light = lightValue()
            let paths = state.withLock { Array($0.files.keys) }
            var sizes: [(String, Int)] = []
            for path in paths {
                var info = stat()
                if stat(path, &info) == 0 { sizes.append((path, Int(info.st_size))) }
            }
            state.withLock { state in
                if state.light.last?.value != light { state.light.append((at, light)) }
                for (path, bytes) in sizes where state.files[path]?.last?.bytes != bytes {
                    state.files[path]?.append(Point(at: at, bytes: bytes))
                }
                if at - last > state.longestGap {
                    state.longestGap = at - last
                    state.gapAt = at
                }
            }
            last = at
            sleep(.milliseconds(1))
        }
        done.store(true, ordering: .relaxed)
    }

    func stop() {
        stopped.store(true, ordering: .relaxed)
        while !done.load(ordering: .relaxed) { sleep(.milliseconds(1)) }
    }

    func points(_ path: String) -> [Point] { state.withLock { $0.files[path] ?? [] } }
    var light: [(at: Double, value: String)] { state.withLock { $0.light } }
    var longestGap: (seconds: Double, at: Double) { state.withLock { ($0.longestGap, $0.gapAt) } }

    /// What the light showed at `time`.
    func light(at time: Double) -> String { light.last { $0.at <= time }?.value ?? "?" }

    /// The first time after `time` the light showed `value`, or nil.
    func light(becomes value: String, after time: Double) -> Double? {
        light.first { $0.at >= time && $0.value == value }?.at
    }
}

/// When each frame of one recorder's file arrived, and when hushd made it, from an `ArrivalWatch`'s looks.
struct Dating {
    let points: [ArrivalWatch.Point]
    /// For each look: the earliest moment frame 0 can have been made, by the looks within 1.5 s of it. Frames arrive
    /// at most as fast as hushd makes them, at the real rate, so at every look `at - frames / rate` is no earlier
    /// than when frame 0 was made; the smallest value nearby (the promptest delivery) dates the frames there, as if
    /// made one at a time at the real rate. hushd hands them over a period at a time, so a frame is dated up to a
    /// period before the period that carried it was handed over, and late by the promptest delivery's lag.
    private let origins: [Double]

    init(_ points: [ArrivalWatch.Point]) {
        self.points = points
        let raw = points.map { $0.at - Double($0.bytes / 2) / Double(recordRate) }
        var origins: [Double] = []
        var low = 0
        var high = 0
        for point in points {
            while points[low].at < point.at - 1.5 { low += 1 }
            while high + 1 < points.count && points[high + 1].at <= point.at + 1.5 { high += 1 }
            origins.append(raw[low...high].min()!)
        }
        self.origins = origins
    }

    /// The first look that found the file holding frame `index`.
    private func look(_ index: Int) -> Int? {
        var low = 0
        var high = points.count
        while low < high {
            let middle = (low + high) / 2
            if points[middle].bytes > 2 * index { high = middle } else { low = middle + 1 }
        }
        return low < points.count ? low : nil
    }

    /// When frame `index` arrived (the first look that found it), or nil.
    func arrival(of index: Int) -> Double? { look(index).map { points[$0].at } }

    /// When hushd made frame `index`, or nil.
    func production(of index: Int) -> Double? {
        look(index).map { origins[$0] + Double(index) / Double(recordRate) }
    }

    /// The frame hushd made at `time`, by the looks nearest it.
    func index(at time: Double) -> Int {
        guard let nearest = points.indices.min(by: { abs(points[$0].at - time) < abs(points[$1].at - time) }) else {
            return 0
        }
        return max(0, Int(((time - origins[nearest]) * Double(recordRate)).rounded()))
    }
}

/// Milliseconds for messages: "12.34 ms".
func milliseconds(_ seconds: Double?) -> String {
    seconds.map { DecimalText.fixed($0 * 1000, places: 2) + " ms" } ?? "never"
}

/// The microphone switch hushd's status shows ("muted", "live").
func microphoneSwitchStatus() -> String {
    (try? hushdStatus.status())?["microphoneSwitch"] as? String ?? "?"
}

/// The `microphoneBlocked` of `application`'s session in hushd's status ("privacySwitch", "awaitingStart"; "-" when
/// absent).
func microphoneBlocked(_ application: Application) -> String {
    stream(of: application)?.session["microphoneBlocked"] as? String ?? "-"
}

/// The first run of at least `length` zero samples in `samples` from `from` on: where it starts.
func firstSilence(in samples: [Float], from: Int, length: Int) -> Int? {
    var run = 0
    // `from` may lie past the file's end (a recorder stopped before the frame hushd made at an edge).
    for index in min(max(0, from), samples.count)..<samples.count {
        if samples[index] == 0 {
            run += 1
            if run >= length { return index - run + 1 }
        } else {
            run = 0
        }
    }
    return nil
}

/// The switch, driven on gpio-sim; hushd's status followed until it agrees.
final class PrivacySwitch {
    let line: SimLine

    init() throws { line = try SimLine(privacySwitchLine) }

    /// Turns the switch on or off (pulled down is on: active-low wiring); returns when the edge was written, in the
    /// watch's time (the moment before the write: the edge is no earlier).
    @discardableResult
    func set(on: Bool, watch: ArrivalWatch? = nil) throws -> Double {
        let at = watch?.now() ?? 0
        try line.set(active: on)
        return at
    }

    /// Waits until hushd's status shows the switch `on` or off.
    func waitForStatus(on: Bool) throws {
        let wanted = on ? "muted" : "live"
        try waitUntil("hushd's status shows the microphone switch \(wanted)", seconds: 10) {
            microphoneSwitchStatus() == wanted
        }
    }
}

let privacyChecks: [Check] = [
    Check(name: "streams-privacy-switch-silences-the-microphone-at-once") {
        let privacy = try PrivacySwitch()
        defer { _ = try? privacy.set(on: false) }
        try judge("the privacy switch under arecord") {
            try privacy.set(on: false)
            try privacy.waitForStatus(on: false)
            let fileA = "/tmp/privacy-a.raw"
            let fileB = "/tmp/privacy-b.raw"
            let length = 8
            let watch = ArrivalWatch()
            defer { watch.stop() }
            watch.add(fileA)
            let a = try privacyRecorder("hush:CATEGORY=record", fileA, seconds: length)
            var b: Application?
            defer {
                for application in [a, b].compactMap({ $0 }) where application.isRunning {
                    application.signal(SIGTERM)
                    application.finish(within: 5)
                }
            }
            let running = try waitForStream(a, "running")
            let before = try underrunsNow()
            sleep(.milliseconds(1500))
            // On: from the edge's write, silence within the bound; the light out; status says so.
            let on = try privacy.set(on: true, watch: watch)
            try privacy.waitForStatus(on: true)
            sleep(.milliseconds(2000))
            let whileOn = (
                blocked: microphoneBlocked(a), holders: try microphoneHolders(), state: state(of: a) ?? "?"
            )
            // Off: the recorder was not started again, so it stays silent (R21) and the light stays out.
            let off = try privacy.set(on: false, watch: watch)
            try privacy.waitForStatus(on: false)
            sleep(.milliseconds(1500))
            let afterOff = (blocked: microphoneBlocked(a), holders: try microphoneHolders(), light: lightValue())
            // A recorder started now hears the microphone, the light lit before its first microphone frame.
            watch.add(fileB)
            let bStarted = watch.now()
            let recorderB = try privacyRecorder("hush:CATEGORY=record", fileB, seconds: 2)
            b = recorderB
            let bRunning = try waitForStream(recorderB, "running")
            let bIDs = (
                stream: stream(of: recorderB)?.stream["id"] as? Int ?? -1, a: stream(of: a)?.stream["id"] as? Int ?? -1
            )
            sleep(.milliseconds(300))
            let withB = try microphoneHolders()
            let bResult = recorderB.finish(within: 15)
            let aResult = a.finish(within: Double(length) + 10)
            let ended = watch.now()
            watch.stop()
            var disturbances = try microphoneDisturbances(since: before, recorders: [a, recorderB])
            if watch.longestGap.seconds > 0.010 {
                disturbances.append(
                    "the check's watch looked \(milliseconds(watch.longestGap.seconds)) apart at "
                        + "\(twoDecimals(watch.longestGap.at)) s"
                )
            }

            let samples = readRecording(fileA)
            let points = watch.points(fileA)
            let dating = Dating(points)
            let took = aResult.map { seconds(from: running, to: $0.at) } ?? -1
            let edgeIndex = dating.index(at: on)
            let lastSound = samples.lastIndex { $0 != 0 } ?? -1
            let firstZero = lastSound + 1
            // Every non-zero sample hushd made after the edge and the bound: must be none.
            let sounding = samples.indices.filter { index in
                samples[index] != 0
                    && (dating.production(of: index).map { $0 > on + silenceBound } ?? true)
            }
            // Silence that began and then sounded again is never the machine's stall.
            let silenceRun = Int(hushdPeriod * Double(recordRate))
            let earlySilence = firstSilence(in: samples, from: edgeIndex, length: silenceRun)
            let resounded = earlySilence.map { start in sounding.contains { $0 > start } } ?? false
            let silenceMade = dating.production(of: firstZero).map { $0 - on }
            let silenceArrived = dating.arrival(of: firstZero).map { $0 - on }
            let lastSoundArrived = dating.arrival(of: lastSound)
            let tone = microphoneHeard(samples, from: 0.3, to: Double(edgeIndex) / Double(recordRate) - 0.1)
            // The rate while silent: frames that arrived from 0.2 s after the edge to the end of the file.
            let silentPoints = points.filter { $0.at > on + 0.2 }
            let rate: Double? =
                silentPoints.count >= 2 && silentPoints.last!.at - silentPoints.first!.at > 3
                ? Double(silentPoints.last!.bytes - silentPoints.first!.bytes) / 2
                    / (silentPoints.last!.at - silentPoints.first!.at) / Double(recordRate) : nil
            // The light: lit before A's first microphone frame arrived; out after the edge; out from then on until
            // B; lit before B's first microphone frame.
            let aFirstSound = samples.firstIndex { $0 != 0 }.flatMap { dating.arrival(of: $0) }
            let aLit = watch.light(becomes: "1", after: 0)
            let lightOut = watch.light(becomes: "0", after: on)
            let relit = watch.light.first { $0.at > (lightOut ?? on) && $0.at < bStarted && $0.value == "1" }
            let samplesB = readRecording(fileB)
            let datingB = Dating(watch.points(fileB))
            let bFirstSound = samplesB.firstIndex { $0 != 0 }.flatMap { datingB.arrival(of: $0) }
            let bLit = watch.light(becomes: "1", after: bStarted)
            let bTone = microphoneHeard(samplesB, from: 0.3, to: 1.9)
            let bOut = watch.light(becomes: "0", after: bLit ?? bStarted)
            _ = ended

            var judged = Judged(disturbances: disturbances)
            judged.report = [
                "  privacy switch on \(twoDecimals(on - watch.time(running))) s into a \(length) s arecord (the tone "
                    + "\(twoDecimals(tone.quietest)) to \(twoDecimals(tone.loudest)) dBFS at \(twoDecimals(tone.hertz)) Hz "
                    + "before): silence began \(milliseconds(silenceMade)) after the edge (its first sample, by when hushd made "
                    + "it) and reached arecord \(milliseconds(silenceArrived)) after it (bound on the making: \(milliseconds(silenceBound)) "
                    + "= debounce \(privacyDebounceMilliseconds) ms + 3 periods of \(milliseconds(hushdPeriod))); non-zero "
                    + "samples made after the bound: \(sounding.count) of the \(samples.count - edgeIndex) from the edge "
                    + "on, the switch on for \(twoDecimals(off - on)) s and \(twoDecimals(Double(samples.count) / Double(recordRate) - Double(edgeIndex) / Double(recordRate) - (off - on))) s after it",
                "  arecord: \(samples.count) frames in \(twoDecimals(took)) s; while silent it received "
                    + "\(rate.map { DecimalText.fixed($0 * 100, places: 2) } ?? "?") % of the real rate; status while on: "
                    + "microphoneBlocked \(whileOn.blocked), stream \(whileOn.state), holders \(whileOn.holders.listed); "
                    + "after off: \(afterOff.blocked), holders \(afterOff.holders.listed)",
                "  light: lit \(milliseconds(aLit.flatMap { a in aFirstSound.map { $0 - a } })) before the first "
                    + "microphone frame reached arecord; out \(milliseconds(lightOut.map { $0 - on })) after the edge, "
                    + "\(milliseconds(lightOut.flatMap { out in lastSoundArrived.map { out - $0 } })) after the last "
                    + "microphone frame reached arecord; \(relit == nil ? "out" : "lit at \(twoDecimals(relit!.at)) s") "
                    + "from then until a new recorder started (\(afterOff.light) 1.5 s after the switch went off)",
                "  a new arecord after the switch: the tone \(twoDecimals(bTone.quietest)) to "
                    + "\(twoDecimals(bTone.loudest)) dBFS at \(twoDecimals(bTone.hertz)) Hz; the light lit "
                    + "\(milliseconds(bLit.flatMap { lit in bFirstSound.map { $0 - lit } })) before its first microphone "
                    + "frame arrived, out \(milliseconds(bOut.flatMap { out in bResult.map { watch.time($0.at) - out } })) "
                    + "before arecord exited; holders with it \(withB.listed) (it is \(bIDs.stream), the first \(bIDs.a))",
            ]
            judged.expect(aResult?.status == 0, "the first arecord failed: \(a.outcome)")
            judged.expect(bResult?.status == 0, "the second arecord failed: \(recorderB.outcome)")
            judged.expect(samples.count == length * recordRate, "\(length) s gave \(samples.count) frames")
            judged.expect(
                took > Double(length) - 0.1 && took < Double(length) + 0.6,
                "the call's clock: \(length) s took \(twoDecimals(took)) s",
                stall: true
            )
            judged.expect(
                rate.map { abs($0 - 1) < 0.01 } ?? false,
                "silence at the real rate: \(rate.map { "\($0 * 100) %" } ?? "not measured")",
                stall: true
            )
            judged.expect(abs(tone.quietest - toneLevel) < 1, "the microphone before the switch: \(tone)", stall: true)
            judged.expect(
                !resounded,
                "R21: the microphone sounded again after silence began (\(sounding.count) samples)"
            )
            judged.expect(
                sounding.isEmpty,
                "R21: \(sounding.count) non-zero samples made more than \(milliseconds(silenceBound)) after the edge",
                stall: true
            )
            judged.expect(
                lastSound >= edgeIndex - recordRate / 10,
                "the microphone was heard up to the edge (last sound at frame \(lastSound), the edge at \(edgeIndex))",
                stall: true
            )
            judged.expect(whileOn.blocked == "privacySwitch", "status while on: microphoneBlocked \(whileOn.blocked)")
            judged.expect(whileOn.holders.listed.isEmpty, "nobody holds the microphone while on: \(whileOn.holders)")
            judged.expect(
                afterOff.blocked == "awaitingStart",
                "R21: after the switch, the recorder awaits a start: \(afterOff.blocked)"
            )
            judged.expect(afterOff.holders.listed.isEmpty, "nobody holds the microphone after off: \(afterOff.holders)")
            judged.expect(
                aLit != nil && aFirstSound != nil && aLit! <= aFirstSound!,
                "the light is lit before the first microphone frame reaches arecord",
                stall: true
            )
            judged.expect(lightOut != nil, "the light goes out when the switch is turned on")
            judged.expect(
                (lightOut ?? .infinity) - (lastSoundArrived ?? 0) <= hushdPeriod + Double(privacyRecorderPeriod) / 1e6,
                "the light goes out within a period of the last microphone frame",
                stall: true
            )
            judged.expect(relit == nil && afterOff.light == "0", "R21: the light stays out after the switch is off")
            judged.expect(
                abs(bTone.quietest - toneLevel) < 1,
                "a new recorder hears the microphone: \(bTone)",
                stall: true
            )
            judged.expect(
                withB.listed == [bIDs.stream],
                "the new recorder alone holds the microphone: \(withB.listed) (it is \(bIDs.stream))"
            )
            judged.expect(
                bLit != nil && bFirstSound != nil && bLit! <= bFirstSound!,
                "the light is lit before the new recorder's first microphone frame arrives",
                stall: true
            )
            judged.expect(bOut != nil, "the light goes out after the new recorder ends")
            _ = bRunning
            return judged
        }
    },
    Check(name: "streams-privacy-nothing-heard-while-on-reaches-a-later-recorder") {
        // While the switch is on and nobody records, hushd's audio thread sleeps; the microphone goes on hearing (the
        // tone, marked: twice as loud). After the switch is off, a recorder started anew hears the microphone
        // again, and not one frame of what it heard while the switch was on, nor anything older than its start.
        guard let tone = microphoneTone else { throw CheckFailure("the microphone tone is not playing") }
        let privacy = try PrivacySwitch()
        defer {
            tone.marked.store(false, ordering: .relaxed)
            _ = try? privacy.set(on: false)
        }
        func outputIdle() -> Bool {
            ((try? hushdStatus.status())?["output"] as? [String: Any])?["idle"] as? Bool == true
        }
        try judge("what the microphone heard while the switch was on") {
            try privacy.set(on: false)
            try privacy.waitForStatus(on: false)
            let before = try underrunsNow()
            try privacy.set(on: true)
            try privacy.waitForStatus(on: true)
            tone.marked.store(true, ordering: .relaxed)
            let markedFrom = monotonicNow()
            // The output woken (a short recorder, silent: the switch is on), so that it goes idle after the mark
            // began and its ring fills with the mark; an output idle since before would hold older frames.
            let waker = try arecord("hush:CATEGORY=record", "/tmp/privacy-waker.raw", seconds: 1)
            _ = waker.finish(within: 20)
            try waitUntil("hushd's output idle (nothing plays, nobody records)", seconds: 30) { outputIdle() }
            let idleAfter = seconds(from: markedFrom, to: monotonicNow())
            // Its microphone ring (about 0.7 s) fills with the marked tone while the audio thread sleeps.
            sleep(.milliseconds(1500))
            let stillIdle = outputIdle()
            tone.marked.store(false, ordering: .relaxed)
            // The tone's own buffer (170 ms) of marked frames reaches the microphone while the switch is still on.
            sleep(.milliseconds(600))
            try privacy.set(on: false)
            try privacy.waitForStatus(on: false)
            sleep(.milliseconds(300))
            let file = "/tmp/privacy-late.raw"
            unlink(file)
            let recorder = try arecord("hush:CATEGORY=record", file, seconds: 1)
            let result = recorder.finish(within: 20)
            let samples = readRecording(file)
            let threshold = (MicrophoneTone.amplitude + MicrophoneTone.markedAmplitude) / 2
            let marked = samples.indices.filter { abs(samples[$0]) > threshold }
            let heard = microphoneHeard(samples, from: 0.3, to: 0.9)
            var judged = Judged(disturbances: try microphoneDisturbances(since: before, recorders: [recorder]))
            judged.report = [
                "  switch on, the microphone marked; hushd's output idle \(twoDecimals(idleAfter)) s later, still idle "
                    + "1.5 s after: \(stillIdle); switch off, a new 1 s arecord: \(samples.count) frames, "
                    + "\(marked.count) above \(twoDecimals(Double(threshold))) (the mark)\(marked.first.map { ", the first at frame \($0)" } ?? ""); "
                    + "then the tone at \(twoDecimals(heard.quietest)) to \(twoDecimals(heard.loudest)) dBFS"
            ]
            judged.expect(result?.status == 0, "arecord failed: \(recorder.outcome)")
            judged.expect(idleAfter >= 1, "hushd's output went idle before the mark (\(idleAfter) s): nothing to judge")
            judged.expect(stillIdle, "hushd's output woke while nobody recorded", stall: true)
            judged.expect(
                marked.isEmpty,
                "R21: the new recorder got \(marked.count) frames the microphone heard while the switch was on (the "
                    + "first at frame \(marked.first ?? -1) of \(samples.count))"
            )
            judged.expect(
                abs(heard.quietest - toneLevel) < 1,
                "the new recorder hears the microphone after the switch: \(heard)",
                stall: true
            )
            return judged
        }
    },
    Check(name: "streams-privacy-switch-random-run-never-leaks-a-sample") {
        let privacy = try PrivacySwitch()
        defer { _ = try? privacy.set(on: false) }
        let ring = try ToneFile.make(ringtone, 0.6)
        var attempt = 0
        try judge("the random run") {
            attempt += 1
            try privacy.set(on: false)
            try privacy.waitForStatus(on: false)
            let seed = UInt64(26_000 + attempt)
            var random = SeededGenerator(seed: seed)
            let steps = 80
            struct Recorder {
                var application: Application
                var file: String
                var started: Double
                var ended: Double?
            }
            var recorders: [Recorder] = []
            var ringtones: [Application] = []
            var edges: [(at: Double, on: Bool)] = []
            var switchOn = false
            var counts = (flips: 0, starts: 0, stops: 0, rings: 0)
            let watch = ArrivalWatch()
            defer {
                watch.stop()
                for recorder in recorders where recorder.application.isRunning {
                    recorder.application.signal(SIGTERM)
                    recorder.application.finish(within: 5)
                }
                for ringtone in ringtones { ringtone.finish(within: 5) }
            }
            let before = try underrunsNow()
            func stop(_ index: Int) {
                recorders[index].application.signal(SIGTERM)
                recorders[index].application.finish(within: 5)
                recorders[index].ended = watch.now()
            }
            for step in 0..<steps {
                let running = recorders.indices.filter { recorders[$0].ended == nil }
                let pick = random.below(100)
                if pick < 18 {
                    switchOn.toggle()
                    edges.append((try privacy.set(on: switchOn, watch: watch), switchOn))
                    counts.flips += 1
                } else if pick < 55 && running.count < 3 {
                    let file = "/tmp/privacy-run-\(step).raw"
                    watch.add(file)
                    let device = random.below(2) == 0 ? "hush:CATEGORY=record" : "hush:CATEGORY=playAndRecord"
                    let started = watch.now()
                    let application = try privacyRecorder(device, file, seconds: nil)
                    recorders.append(Recorder(application: application, file: file, started: started))
                    counts.starts += 1
                    // The next step once hushd has the stream: on a busy emulator arecord's start-up alone can
                    // outlast several steps, and a run of recorders stopped before they opened shows nothing.
                    _ = try? waitUntil("\(application.name) opens its stream", seconds: 10) {
                        stream(of: application) != nil || !application.isRunning
                    }
                } else if pick < 78, !running.isEmpty {
                    stop(running[random.below(running.count)])
                    counts.stops += 1
                } else if pick < 83, ringtones.allSatisfy({ !$0.isRunning }) {
                    ringtones.append(try aplay("hush:ringtone", ring))
                    counts.rings += 1
                }
                sleep(.milliseconds(Int64(50 + random.below(300))))
            }
            if switchOn { edges.append((try privacy.set(on: false, watch: watch), false)) }
            sleep(.milliseconds(500))
            for index in recorders.indices where recorders[index].ended == nil { stop(index) }
            watch.stop()
            var disturbances = try microphoneDisturbances(
                since: before,
                recorders: recorders.map(\.application) + ringtones
            )
            if watch.longestGap.seconds > 0.010 {
                disturbances.append("the check's watch looked \(milliseconds(watch.longestGap.seconds)) apart")
            }

            // For each recorder: from when must it be silent? From the first edge on during its life plus the bound,
            // or from its start when the switch was on then; and from then to its end (nothing started it again).
            func onAt(_ time: Double) -> Bool { edges.last { $0.at <= time }?.on ?? false }
            var leaked = 0
            var hardLeaks: [String] = []
            var boundaryLeaks: [String] = []
            var cut = 0
            var heard = 0
            var latest: [Double] = []
            var checked = 0
            for recorder in recorders {
                let samples = readRecording(recorder.file)
                let dating = Dating(watch.points(recorder.file))
                if samples.contains(where: { $0 != 0 }) { heard += 1 }
                let silentFrom: Double?
                var fromEdge: Double?
                if onAt(recorder.started) {
                    silentFrom = -.infinity
                } else if let edge = edges.first(where: {
                    $0.on && $0.at > recorder.started
                        && $0.at < (recorder.ended ?? .infinity)
                }) {
                    silentFrom = edge.at + silenceBound
                    fromEdge = edge.at
                } else {
                    silentFrom = nil
                }
                guard let silentFrom else { continue }
                checked += 1
                let made = samples.indices.map { dating.production(of: $0) }
                let leaks = samples.indices.filter { samples[$0] != 0 && (made[$0] ?? .infinity) > silentFrom }
                if let edge = fromEdge {
                    let edgeIndex = dating.index(at: edge)
                    if samples[..<min(samples.count, edgeIndex)].suffix(recordRate / 5).contains(where: { $0 != 0 }) {
                        cut += 1
                        // Where its silence began: the frame after its last sound, by when hushd made it (dated to
                        // within a period, so a gate that closed at the edge can read a few milliseconds early).
                        if let last = samples.lastIndex(where: { $0 != 0 }), let at = dating.production(of: last + 1) {
                            latest.append(at - edge)
                        }
                    }
                    // Leaks right after the edge, with no silence before them, are a late gate; a stall can do that.
                    let silenceRun = Int(hushdPeriod * Double(recordRate))
                    let silence = firstSilence(in: samples, from: edgeIndex, length: silenceRun) ?? samples.count
                    let late = leaks.filter { $0 < silence }
                    if !late.isEmpty { boundaryLeaks.append("\(recorder.file): \(late.count) late at the edge") }
                    if leaks.count > late.count {
                        hardLeaks.append("\(recorder.file): \(leaks.count - late.count) after silence began")
                    }
                } else if !leaks.isEmpty {
                    hardLeaks.append("\(recorder.file): \(leaks.count), started while the switch was on")
                }
                leaked += leaks.count
            }
            // And the light: never lit while the switch was on, past the bound. Lit and out again before the switch
            // was turned off is hushd learning of the edge late (its loop held off by a stall: it lights the light
            // only for a stream that may hear the microphone, and puts it out when it reads the switch); still lit
            // when the switch is turned off, hushd ignored the switch.
            let litWhileOn = watch.light.filter { change in
                change.value == "1" && onAt(change.at)
                    && (edges.last { $0.at <= change.at }.map { change.at - $0.at > silenceBound } ?? false)
            }
            let litThrough = litWhileOn.filter { change in
                let off = edges.first { $0.at > change.at && !$0.on }?.at ?? watch.now()
                return watch.light(at: off - 0.001) == "1"
            }
            var judged = Judged(disturbances: disturbances)
            judged.report = [
                "  random run (seed \(seed), \(steps) steps): \(counts.flips) switch flips, \(counts.starts) arecords "
                    + "started, \(counts.stops) stopped, \(counts.rings) ringtones; \(heard) recorders heard the "
                    + "microphone, \(checked) lived while the switch was on (\(cut) of them hearing it when it was "
                    + "turned on); non-zero samples made past the bound while on (or after, not started again): "
                    + "\(leaked); for each recorder cut while hearing, silence began "
                    + "\(latest.map { DecimalText.fixed($0 * 1000, places: 2) }) ms after the edge (bound "
                    + "\(milliseconds(silenceBound))); the light lit while on: \(litWhileOn.count) time(s), "
                    + "\(litThrough.count) of them until the switch was turned off"
            ]
            for ringtone in ringtones {
                judged.expect(ringtone.finish(within: 10)?.status == 0, "a ringtone failed: \(ringtone.outcome)")
            }
            judged.expect(
                hardLeaks.isEmpty,
                "R21: the microphone reached a recorder while the switch was on: \(hardLeaks)"
            )
            judged.expect(boundaryLeaks.isEmpty, "R21: silence began late: \(boundaryLeaks)", stall: true)
            judged.expect(litThrough.isEmpty, "R21: the light lit while the switch was on, until it was turned off")
            judged.expect(
                litWhileOn.isEmpty,
                "R21: the light lit while the switch was on (and out again before it was turned off) at "
                    + "\(litWhileOn.map { twoDecimals($0.at) }) s",
                stall: true
            )
            // A run in which the switch cut fewer than two recorders that heard the microphone shows little: run
            // another (with the next seed).
            judged.expect(cut >= 2, "the run cut \(cut) recorder(s) that heard the microphone, not 2", stall: true)
            if cut < 2 && disturbances.isEmpty { judged.disturbances = ["the random run cut \(cut) recorder(s)"] }
            return judged
        }
    },
    Check(name: "streams-privacy-switch-turns-the-capture-card-switch-off") {
        // hushd's [capture] privacy_control: the microphone's card (snd-aloop, "Loopback") has none, nor has snd-dummy
        // (its capture switches are "Mic Capture Switch" and the like). That is said, and hushd's notice checked;
        // then a stereo mixer user control named "Capture Switch" on the Loopback card stands in for a codec's (as
        // the e2e checks' "Speaker Playback Switch" stands in for an amplifier's) and hushd must turn it off and put
        // it back.
        let element = ALSAElementName("Capture Switch", interface: .mixer)
        let native = (
            loopback: (try? ALSAElementClient(card: "Loopback").info(element)) != nil,
            dummy: (try? ALSAElementClient(card: "Dummy").info(element)) != nil
        )
        let noticed = (readWholeFile("/tmp/hushd.log") ?? "").contains("card 'Loopback' has no \(element)")
        print(
            "  the capture card Loopback (snd-aloop) has \(native.loopback ? "a" : "no") \(element); snd-dummy has "
                + "\(native.dummy ? "one" : "none"); hushd said the card has none: \(noticed)"
        )
        try require(native.loopback || noticed, "hushd's notice of a card without \(element)")
        let stand = try ALSAUserControl(
            card: "Loopback",
            element: element,
            initial: true,
            count: 2,
            writableByOthers: true
        )
        defer { try? stand.remove() }
        let privacy = try PrivacySwitch()
        defer { _ = try? privacy.set(on: false) }
        func values() -> [Int] { (try? ALSAElementClient(card: "Loopback").readAll(element)) ?? [] }
        let start = monotonicNow()
        try privacy.set(on: true)
        let off = try waitUntil("hushd turns \(element) off", seconds: 10) { values() == [0, 0] }
        try privacy.waitForStatus(on: true)
        sleep(.milliseconds(300))
        let stillOff = values()
        let release = monotonicNow()
        try privacy.set(on: false)
        let back = try waitUntil("hushd puts \(element) back on", seconds: 10) { values() == [1, 1] }
        print(
            "  a stand-in \(element) (a stereo mixer user control, on): off \(ms(off, start)) after the switch, "
                + "\(stillOff) 300 ms later, back \(values()) \(ms(back, release)) after the switch went off"
        )
        try require(stillOff == [0, 0], "\(element) stays off while the switch is on: \(stillOff)")
    },
]
