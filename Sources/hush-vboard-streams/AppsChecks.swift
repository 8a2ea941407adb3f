import Foundation
import HushCore
import HushTesting
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

// The apps scenario (hush-vboard-streams --apps, board/virtual/scenarios/apps.sh): applications other than aplay
// through the `hush` device on the virtual board, as ALSAApplicationsTests has them on the host, judged by what
// the loopback's capture side heard of hushd's output. espeak-ng speaks into hush:CATEGORY=ambient (its speech
// envelope follows its own -w WAV's; silent under the switch, ending on time), GStreamer's alsasink on hush:music
// keeps time (the tone whole, without gaps, in real time), Python's sounddevice through Debian's PortAudio plays
// 1 s of tone and records 1 s of silence (hushd has no microphone here). The programs come in the payload's apps/
// (board/virtual/apps-payload.sh); the scenario sets the variables that make them find what they dlopen.
//
// An application's own start-up (loading Python and numpy, GStreamer's plugins, espeak-ng's voice) is the emulated
// machine's work, not hush's: under TCG on a busy host it takes several times as long as on a quiet one. So no
// check fails on it: each program gets a budget many times its quiet run (it is killed only after that, as hung),
// the capture records until it ends, and a start-up longer than its allowance is a disturbance, for which a take
// whose only problems a slow machine can cause is taken again.

let apps = "/payload/apps"
let speechText = "The quick brown fox jumps over the lazy dog."

/// What hushd's `status` said about an application's streams while it ran.
struct AppWatch {
    /// When hushd first listed a stream of the application's: its own start-up (the program loaded, its libraries
    /// and the hush device opened) ends there.
    var firstSeen: Instant?
    /// hushd's underrun count then: what came before (during the start-up) did not touch what is judged.
    var xrunsWhenSeen: Int?
    var firstRunning: Instant?
    /// Each stream seen, as "direction category bus".
    var streams: Set<String> = []
}

/// Polls hushd's status every 10 ms until `application` ends (at most `seconds`).
func watch(_ application: Application, seconds: Double) -> (ended: (status: Int32, at: Instant)?, watch: AppWatch) {
    var watch = AppWatch()
    let deadline = monotonicNow() + .milliseconds(Int64(seconds * 1000))
    while application.isRunning && monotonicNow() < deadline {
        for stream in streams() where stream["pid"] as? Int == Int(application.pid) {
            if watch.firstSeen == nil {
                watch.firstSeen = monotonicNow()
                watch.xrunsWhenSeen = try? outputXruns()
            }
            watch.streams.insert(
                ["direction", "category", "bus"].map { stream[$0] as? String ?? "?" }.joined(separator: " ")
            )
            if watch.firstRunning == nil && stream["state"] as? String == "running" {
                watch.firstRunning = monotonicNow()
            }
        }
        sleep(.milliseconds(10))
    }
    return (application.finish(within: 0.1), watch)
}

/// hushd's log line saying that `application`'s stream ended with underruns it caused (it was late).
func lateClient(_ application: Application) -> [String] {
    let log = readFile("/tmp/hushd.log") ?? ""
    return log.split(separator: "\n").filter {
        $0.contains("(pid \(application.pid)) ended") && $0.contains("the client was late")
    }.map { "hushd: \($0)" }
}

/// One run of an application through the hush device, with what the speaker capture heard meanwhile.
struct AppRun {
    let application: Application
    /// How it ended; nil when it still ran at the end of its budget (it was killed).
    let ended: (status: Int32, at: Instant)?
    let watch: AppWatch
    let take: Take
    var disturbances: [String]

    /// Seconds from starting the program to hushd listing its stream (its own start-up); nil if never listed.
    var startUp: Double? { watch.firstSeen.map { seconds(from: application.started, to: $0) } }

    /// What was seen, for a failure's message: how the program ended (status or signal, time against its budget,
    /// its last lines of output) and when hushd listed and ran its stream.
    var seen: String {
        let listed =
            startUp.map { "hushd listed its stream \(twoDecimals($0)) s after it started" }
            ?? "hushd never listed a stream of it"
        let running =
            watch.firstRunning.map { ", running after \(twoDecimals(seconds(from: application.started, to: $0))) s" }
            ?? ""
        return "\(application.outcome); \(listed)\(running); streams \(watch.streams.sorted())"
    }
}

/// A mark set when an application's run ended: the capture stops `appTail` after it.
final class EndMark: Sendable {
    private let at = Atomic<Int64>(0)
    func mark() { at.store(monotonicNow().nanoseconds, ordering: .relaxed) }
    func passed(_ seconds: Double) -> Bool {
        let marked = at.load(ordering: .relaxed)
        return marked != 0 && Double(monotonicNow().nanoseconds - marked) / 1e9 >= seconds
    }
}

/// How long the capture goes on after the application ended: hushd's queue and the loopback drain well within it.
let appTail = 1.0

/// Runs `tool` with `arguments` (starting 0.2 s in) while the speaker capture records, until `appTail` after it
/// ended. `budget`: how long it may run before it is killed as hung, many times its quiet run. `startUp`: how long
/// its own start-up (until hushd lists its stream) may take before the take counts as disturbed.
func appTake(_ tool: String, _ arguments: [String], budget: Double, startUp allowance: Double) throws -> AppRun {
    let before = try outputXruns()
    let from = monotonicNow()
    var application: Application?
    var result: (ended: (status: Int32, at: Instant)?, watch: AppWatch)?
    let done = EndMark()
    let take = try listen(
        to: [speakerCapture],
        seconds: 0.2 + budget + appTail,
        until: { done.passed(appTail) },
        while: [
            (
                0.2, "start \(tool)",
                {
                    do {
                        application = try Application(tool, arguments, name: (tool as NSString).lastPathComponent)
                    } catch {
                        done.mark()
                        throw error
                    }
                }
            ),
            (
                0.21, "watch \(tool)",
                {
                    result = watch(application!, seconds: budget)
                    done.mark()
                }
            ),
        ]
    )
    let app = application!
    let watched = result?.watch ?? AppWatch()
    // Underruns and stalls count from when the stream appeared: during the program's own start-up nothing of it
    // sounds yet (a slow start-up is a disturbance of its own, below).
    var run = AppRun(
        application: app,
        ended: result?.ended,
        watch: watched,
        take: take,
        disturbances: take.disturbances + (try xrunsSince(watched.xrunsWhenSeen ?? before)) + lateClient(app)
    )
    run.disturbances +=
        stallWatch?.disturbance(from: watched.firstSeen ?? from, to: monotonicNow(), allowed: .milliseconds(20)) ?? []
    if let startUp = run.startUp, startUp > allowance {
        run.disturbances.append(
            "\(app.name) took \(twoDecimals(startUp)) s to open its stream (its own start-up; \(allowance) s allowed)"
        )
    }
    return run
}

// MARK: Speech

/// A 16-bit PCM WAV's first channel and rate.
func readWAV(_ path: String) throws -> (samples: [Float], rate: Int) {
    guard let data = FileManager.default.contents(atPath: path), data.count > 44 else {
        throw CheckFailure("cannot read \(path)")
    }
    let bytes = [UInt8](data)
    func u32(_ at: Int) -> Int {
        Int(bytes[at]) | Int(bytes[at + 1]) << 8 | Int(bytes[at + 2]) << 16 | Int(bytes[at + 3]) << 24
    }
    func u16(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 }
    var offset = 12
    var channels = 1
    var rate = 0
    while offset + 8 <= bytes.count {
        let id = String(decoding: bytes[offset..<offset + 4], as: UTF8.self)
        var size = u32(offset + 4)
        if id == "fmt " {
            channels = u16(offset + 10)
            rate = u32(offset + 12)
        } else if id == "data" {
            // espeak-ng writes its WAV to a stream: the data chunk's size may be unset.
            if size == 0 || size == 0xFFFF_FFFF || offset + 8 + size > bytes.count { size = bytes.count - offset - 8 }
            var samples: [Float] = []
            var at = offset + 8
            while at + 2 * channels <= offset + 8 + size {
                samples.append(Float(Int16(bitPattern: UInt16(u16(at)))) / 32767)
                at += 2 * channels
            }
            return (samples, rate)
        }
        offset += 8 + size + (size & 1)
    }
    throw CheckFailure("\(path) has no data chunk")
}

func speak(silenced: Bool) throws -> Judged {
    let switchLine = try SimLine("silence-switch")
    defer { try? switchLine.set(active: false) }
    if silenced {
        try switchLine.set(active: true)
        try waitUntil("the switch reads silent") {
            (try? hushdStatus.status())?["silenceSwitch"] as? String == "silent"
        }
    }
    let espeak = "\(apps)/bin/espeak-ng"
    let wav = "/tmp/espeak.wav"
    let writer = try Application(espeak, ["-w", wav, speechText], name: "espeak-ng -w")
    guard writer.finish(within: 60)?.status == 0 else { throw CheckFailure("espeak-ng -w failed: \(writer.outcome)") }
    let (reference, referenceRate) = try readWAV(wav)
    let duration = Double(reference.count) / Double(referenceRate)
    // Quiet: about 0.2-0.5 s of start-up, then the speech's length.
    let run = try appTake(espeak, ["-d", "hush:CATEGORY=ambient", speechText], budget: duration + 30, startUp: 2)
    let mix = run.take.recordings[0].samples
    // From when hushd listed its stream: espeak-ng's own start-up (loading its voice, 0.2-0.8 s under emulation) is
    // judged on its own, as a disturbance past `startUp` (issue 25: no time budget includes a program's start-up).
    let took = run.ended.map { seconds(from: run.application.started, to: $0.at) - (run.startUp ?? 0) } ?? -1
    let mixLevels = SpeechAnalysis.levels(mix, rate: 48000)
    let referenceLevels = SpeechAnalysis.levels(reference, rate: referenceRate)
    let loudest = mixLevels.max() ?? -240
    let referenceLoudest = referenceLevels.max() ?? -240
    var judged = Judged(disturbances: run.disturbances)
    judged.expect(run.ended?.status == 0, "espeak-ng failed or hung: \(run.seen)")
    judged.expect(
        took > duration - 0.1 && took < duration + 1,
        "ran \(twoDecimals(took)) s from its stream's opening for \(twoDecimals(duration)) s of speech",
        stall: true
    )
    if silenced {
        judged.report = [
            "  espeak-ng under silence: start-up \(twoDecimals(run.startUp ?? -1)) s; ran \(twoDecimals(took)) s for \(twoDecimals(duration)) s of speech; loudest "
                + "\(twoDecimals(loudest)) dBFS on the speaker; streams \(run.watch.streams.sorted())"
        ]
        judged.expect(run.watch.firstRunning != nil, "hushd never saw espeak-ng's stream running: \(run.watch.streams)")
        judged.expect(loudest < -90, "R1: silenced, \(twoDecimals(loudest)) dBFS")
        return judged
    }
    let mixSpeech = SpeechAnalysis.windows(mixLevels)
    let referenceSpeech = SpeechAnalysis.windows(referenceLevels)
    let span = (mixSpeech.last ?? 0) - (mixSpeech.first ?? 0) + 1
    let referenceSpan = (referenceSpeech.last ?? 0) - (referenceSpeech.first ?? 0) + 1
    let follows = SpeechAnalysis.envelopeCorrelation(
        reference: reference,
        referenceRate: referenceRate,
        mix: mix,
        mixRate: 48000
    )
    // The effect bus at the default volume (step 8), as a half-scale tone's -6 dBFS becomes expectedLevel.
    let gain = expectedLevel(step: 8) + 6.02
    judged.report = [
        "  espeak-ng through hush:CATEGORY=ambient: start-up \(twoDecimals(run.startUp ?? -1)) s; ran \(twoDecimals(took)) s for \(twoDecimals(duration)) s of "
            + "speech; speech on the speaker for \(span * 20) ms, in its WAV \(referenceSpan * 20) ms; loudest "
            + "\(twoDecimals(loudest)) dBFS vs \(twoDecimals(referenceLoudest)) in the WAV (gain \(twoDecimals(gain)) "
            + "dB); envelope correlation \(String(format: "%.3f", follows)); streams \(run.watch.streams.sorted())"
    ]
    judged.expect(run.watch.streams == ["playback ambient effect"], "hushd's streams: \(run.watch.streams)")
    judged.expect(!mixSpeech.isEmpty, "no speech on the speaker", stall: true)
    judged.expect(
        abs(span - referenceSpan) <= 3,
        "speech for \(span * 20) ms, the WAV has \(referenceSpan * 20)",
        stall: true
    )
    judged.expect(
        abs(loudest - referenceLoudest - gain) < 2,
        "\(twoDecimals(loudest)) dBFS on the speaker, \(twoDecimals(referenceLoudest)) in the WAV",
        stall: true
    )
    judged.expect(follows > 0.9, "the speech envelope against the WAV's: \(follows)", stall: true)
    return judged
}

let appsChecks: [Check] = [
    Check(name: "apps-start") {
        stallWatch = StallWatch()
        try setUpBoardForHushd()
        try startHushd()
        print("  hushd is up: route \((try hushdStatus.status())["route"] ?? "?") (no microphone)")
    },
    Check(name: "apps-espeak-ng-speaks-into-hush-ambient") {
        try judge("espeak-ng through hush") { try speak(silenced: false) }
    },
    Check(name: "apps-espeak-ng-silenced-by-the-switch-ends-on-time") {
        try judge("espeak-ng under silence") { try speak(silenced: true) }
    },
    Check(name: "apps-gstreamer-alsasink-keeps-time") {
        let tone = 2.0
        let gst = "\(apps)/bin/gst-launch-1.0"
        // The plugin registry is made once, before anything is timed.
        let registry = try Application(
            gst,
            ["-q", "fakesrc", "num-buffers=1", "!", "fakesink"],
            name: "gst-launch-1.0"
        )
        guard registry.finish(within: 120)?.status == 0 else {
            throw CheckFailure("GStreamer's first run (making its plugin registry) failed: \(registry.outcome)")
        }
        try judge("GStreamer through hush:music") {
            let run = try appTake(
                gst,
                [
                    "-q", "audiotestsrc", "num-buffers=200", "samplesperbuffer=441", "freq=1000", "volume=0.5", "!",
                    "audio/x-raw,rate=44100,channels=1", "!", "audioconvert", "!", "audioresample", "!", "alsasink",
                    "device=hush:music", "sync=true",
                ],
                // Quiet: started in 0.2-0.5 s, then the tone's 2 s.
                budget: 30,
                startUp: 3
            )
            let mix = run.take.recordings[0].samples
            let levels = windowLevels(1000, mix, rate: 48000, from: 0, to: Double(mix.count) / 48000, window: 0.02)
            let heard = levels.indices.filter { levels[$0] > -60 }
            var judged = Judged(disturbances: run.disturbances)
            let startUp = run.watch.firstRunning.map { seconds(from: run.application.started, to: $0) } ?? -1
            let playing =
                run.ended.flatMap { end in run.watch.firstRunning.map { seconds(from: $0, to: end.at) } } ?? -1
            judged.expect(run.ended?.status == 0, "gst-launch-1.0 failed or hung: \(run.seen)")
            guard let first = heard.first, let last = heard.last, last - first > 2 else {
                judged.report = ["  GStreamer: no tone heard; ran \(twoDecimals(playing)) s once running"]
                judged.expect(false, "no tone on the speaker", stall: true)
                return judged
            }
            let inside = levels[(first + 1)..<last].sorted()
            let median = inside[inside.count / 2]
            let deepest = median - (inside.first ?? -240)
            let window = 48000 / 50
            let quietRun = ToneAnalysis.longestRun(in: mix[((first + 1) * window)..<(last * window)]) {
                abs($0) < 16.0 / 32767
            }
            judged.report = [
                "  GStreamer through hush:music: start-up \(twoDecimals(startUp)) s, then \(twoDecimals(playing)) s for "
                    + "\(tone) s of tone; heard \(heard.count * 20) ms at \(twoDecimals(median)) dBFS, deepest dip "
                    + "\(twoDecimals(deepest)) dB, longest run of quiet samples \(quietRun); streams "
                    + "\(run.watch.streams.sorted())"
            ]
            judged.expect(run.watch.streams == ["playback playback music"], "hushd's streams: \(run.watch.streams)")
            judged.expect(abs(median - expectedLevel(step: 8)) < 3, "the tone's level: \(twoDecimals(median)) dBFS")
            judged.expect(
                abs(playing - tone) < 0.03 * tone + 0.1,
                "played \(playing) s of \(tone) s once running",
                stall: true
            )
            judged.expect(startUp < 5, "GStreamer took \(startUp) s to start", stall: true)
            judged.expect(
                heard.count >= 98 && heard.count <= 102,
                "the tone lasted \(heard.count * 20) ms of 2000",
                stall: true
            )
            judged.expect(deepest < 1, "a window inside the tone is \(deepest) dB below the others: a gap", stall: true)
            judged.expect(quietRun <= 2, "\(quietRun) quiet samples in a row inside the tone: a gap", stall: true)
            return judged
        }
    },
    Check(name: "apps-python-sounddevice-plays-and-records") {
        try judge("sounddevice through hush") {
            let run = try appTake(
                "\(apps)/bin/python3.11",
                ["\(apps)/play_and_record.py", "hush_music", "hush_record", "--seconds", "1", "--hertz", "1000"],
                // Quiet: about 3 s of start-up (numpy, sounddevice, PortAudio listing the devices), then 1 s played
                // and 1 s recorded; on a host busy with two other emulators the whole took more than 9.5 s.
                budget: 90,
                startUp: 8
            )
            var judged = Judged(disturbances: run.disturbances)
            judged.expect(run.ended?.status == 0, "play_and_record.py failed or hung: \(run.seen)")
            let line = run.application.text.split(separator: "\n").last.map(String.init) ?? ""
            let report = (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]) ?? [:]
            let played = report["played"] as? Double ?? -1
            let recorded = report["recorded"] as? Double ?? -1
            let mix = run.take.recordings[0].samples
            let levels = windowLevels(1000, mix, rate: 48000, from: 0, to: Double(mix.count) / 48000, window: 0.02)
            let heard = levels.filter { $0 > -60 }
            let loudest = levels.max() ?? -240
            judged.report = [
                "  sounddevice through hush: start-up \(twoDecimals(run.startUp ?? -1)) s; play took \(twoDecimals(played)) s, the tone heard \(heard.count * 20) ms at "
                    + "\(twoDecimals(loudest)) dBFS; rec took \(twoDecimals(recorded)) s for \(report["frames"] ?? "?") "
                    + "frames, peak \(report["peak"] ?? "?"); streams \(run.watch.streams.sorted())"
            ]
            judged.expect(!report.isEmpty, "play_and_record.py printed no report: \(run.seen)")
            judged.expect(
                run.watch.streams == ["playback playback music", "capture record music"],
                "hushd's streams: \(run.watch.streams)"
            )
            judged.expect(
                abs(loudest - expectedLevel(step: 8)) < 3,
                "the tone's level: \(twoDecimals(loudest)) dBFS",
                stall: true
            )
            judged.expect(report["frames"] as? Int == 16000, "1 s recorded as \(report["frames"] ?? "?") frames")
            judged.expect(report["peak"] as? Int == 0, "no microphone: silence, peak \(report["peak"] ?? "?")")
            judged.expect(played > 0.95 && played < 2, "sounddevice.play took \(played) s for 1 s", stall: true)
            judged.expect(
                heard.count >= 47 && heard.count <= 53,
                "the tone lasted \(heard.count * 20) ms of 1000",
                stall: true
            )
            judged.expect(recorded > 0.95 && recorded < 2, "sounddevice.rec took \(recorded) s for 1 s", stall: true)
            return judged
        }
    },
    Check(name: "apps-gstreamer-alsasink-recovers-from-a-stall") {
        // GStreamer's alsasink is told of an underrun (R23) when its whole process stops for 0.5 s mid-tone, and
        // recovers on its own: it prepares the stream again and the tone goes on. (The registry was made by the
        // check before.)
        let gst = "\(apps)/bin/gst-launch-1.0"
        try judge("GStreamer stopped mid-tone") {
            let before = try outputXruns()
            let logBefore = (readFile("/tmp/hushd.log") ?? "").count
            var application: Application?
            var ended: (status: Int32, at: Instant)?
            var stopped: Instant?
            let done = EndMark()
            let take = try listen(
                to: [speakerCapture],
                seconds: 30,
                until: { done.passed(appTail) },
                while: [
                    (
                        0.2, "start gst-launch-1.0",
                        {
                            do {
                                application = try Application(
                                    gst,
                                    [
                                        "-q", "audiotestsrc", "num-buffers=300", "samplesperbuffer=441", "freq=1000",
                                        "volume=0.5", "!", "audio/x-raw,rate=44100,channels=1", "!", "audioconvert",
                                        "!", "audioresample", "!", "alsasink", "device=hush:music", "sync=true",
                                    ],
                                    name: "gst-launch-1.0"
                                )
                            } catch {
                                done.mark()
                                throw error
                            }
                        }
                    ),
                    (
                        0.21, "stop it for 0.5 s once it plays",
                        {
                            defer { done.mark() }
                            guard let gstreamer = application else { return }
                            _ = try? waitForStream(gstreamer, "running", seconds: 20)
                            sleep(.milliseconds(800))
                            stopped = monotonicNow()
                            gstreamer.signal(SIGSTOP)
                            sleep(.milliseconds(500))
                            gstreamer.signal(SIGCONT)
                            ended = gstreamer.finish(within: 20)
                        }
                    ),
                ]
            )
            guard let gstreamer = application else { throw CheckFailure("gst-launch-1.0 did not start") }
            let log = String((readFile("/tmp/hushd.log") ?? "").dropFirst(logBefore))
            let recovered = log.split(separator: "\n").contains {
                $0.contains("(pid \(gstreamer.pid)) prepared again after") && $0.contains("[R23 late-application]")
            }
            let mix = take.recordings[0].samples
            let levels = windowLevels(1000, mix, rate: 48000, from: 0, to: Double(mix.count) / 48000, window: 0.02)
            let stopAt = stopped.map { take.recordings[0].seconds(at: $0) } ?? 0
            let afterStop = levels.indices.filter { Double($0) * 0.02 > stopAt + 0.5 && levels[$0] > -60 }.count
            let heard = levels.filter { $0 > -60 }.count
            // The stop is the check's own: hushd's own device must not have underrun meanwhile.
            var judged = Judged(disturbances: take.disturbances + (try xrunsSince(before)))
            judged.report = [
                "  GStreamer stopped 0.5 s mid-tone: told and recovered (hushd's log): \(recovered); \(heard * 20) ms of "
                    + "the 3 s tone heard, \(afterStop * 20) ms after the stop; \(gstreamer.outcome)"
            ]
            judged.expect(ended?.status == 0, "gst-launch-1.0 recovers and ends well: \(gstreamer.outcome)")
            judged.expect(recovered, "R23: alsasink was told of the underrun and prepared its stream again")
            judged.expect(afterStop * 20 >= 1500, "the tone goes on after the stop: \(afterStop * 20) ms", stall: true)
            return judged
        }
    },
]
