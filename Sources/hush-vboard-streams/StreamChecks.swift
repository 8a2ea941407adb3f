import HushCore
import HushTesting

#if canImport(Glibc)
import Glibc
#endif

// hushd with a microphone, and the `hush` device's argument forms: each opens the session it names.

nonisolated(unsafe) var microphoneTone: MicrophoneTone?
nonisolated(unsafe) var microphoneLight: SimLine?

/// The microphone light's level ("1" lit), read from gpio-sim.
func lightValue() -> String { microphoneLight?.value ?? "?" }

/// The files the applications play: tones at half scale (-6 dBFS).
enum ToneFile {
    static func path(_ hertz: Int, _ seconds: Double, rate: Int = 48000, channels: Int = 2) -> String {
        "/tmp/tone-\(hertz)Hz-\(seconds)s-\(rate)-\(channels)ch.wav"
    }

    /// The file, written the first time it is asked for.
    static func make(_ hertz: Int, _ seconds: Double, rate: Int = 48000, channels: Int = 2) throws -> String {
        let path = path(hertz, seconds, rate: rate, channels: channels)
        if access(path, F_OK) != 0 {
            try writeTone(path, hertz: Double(hertz), seconds: seconds, rate: rate, channels: channels)
        }
        return path
    }
}

/// One way of naming the device, and the session hushd must make of it.
struct DeviceForm {
    var device: String
    var capture = false
    var category: String
    var bus: String
    var options: [String] = []
    var transient = false
    var name: String? = nil
}

let deviceForms: [DeviceForm] = [
    DeviceForm(device: "hush:music", category: "playback", bus: "music"),
    DeviceForm(device: "hush:ringtone", category: "soloAmbient", bus: "ringer"),
    DeviceForm(device: "hush:effects", category: "ambient", bus: "effect"),
    DeviceForm(device: "hush:alarm", category: "playback", bus: "ringer"),
    DeviceForm(device: "hush:playback,ringer", category: "playback", bus: "ringer"),
    DeviceForm(device: "hush:CATEGORY=soloAmbient,BUS=ringer", category: "soloAmbient", bus: "ringer"),
    DeviceForm(
        device: "hush:CATEGORY=playback,OPTIONS=duckOthers,TRANSIENT=yes,NAME=prompt",
        category: "playback",
        bus: "music",
        options: ["duckOthers"],
        transient: true,
        name: "prompt"
    ),
    DeviceForm(
        device: "hush:CATEGORY=ambient,OPTIONS=mixWithOthers,NAME=click",
        category: "ambient",
        bus: "effect",
        options: ["mixWithOthers"],
        name: "click"
    ),
    DeviceForm(device: "hush:CATEGORY=record", capture: true, category: "record", bus: "music"),
    DeviceForm(device: "hush:CATEGORY=playAndRecord", capture: true, category: "playAndRecord", bus: "music"),
    DeviceForm(device: "hush:voice", capture: true, category: "playAndRecord", bus: "music"),
]

let startChecks: [Check] = [
    Check(name: "streams-start") {
        stallWatch = StallWatch()
        try setUpBoardForHushd(configuration: microphoneConfiguration)
        microphoneLight = try SimLine(microphoneLightLine)
        // The microphone plays before hushd opens it, as a microphone would.
        microphoneTone = try MicrophoneTone(pcm: microphonePlayback)
        try startHushd()
        let state = try hushdStatus.status()
        let capture = state["capture"] as? [String: Any] ?? [:]
        print(
            "  hushd is up: route \(state["route"] ?? "?"), microphone \(capture["pcm"] ?? "none") "
                + "(open: \(capture["open"] ?? "?")), microphone light \(lightValue())"
        )
        try require(capture["open"] as? Bool == true, "hushd's microphone \(microphonePCM) is open: \(capture)")
        try require(lightValue() == "0", "the microphone light is out while nobody records: \(lightValue())")
    },
    Check(name: "streams-every-argument-form-opens-its-session") {
        // One application at a time, each 1 s long: the stream's session must be what the device's arguments say,
        // and the application must end on its own, on time.
        let music = try ToneFile.make(440, 1, rate: 44100, channels: 1)
        for form in deviceForms {
            let file = "/tmp/form.raw"
            let application =
                form.capture
                ? try arecord(form.device, file, seconds: 1)
                : try aplay(form.device, music)
            let running = try waitForStream(application, "running")
            guard let (stream, session) = stream(of: application) else {
                throw CheckFailure("\(form.device): the stream vanished from status")
            }
            let result = application.finish(within: 10)
            let took = result.map { seconds(from: running, to: $0.at) } ?? -1
            let options = session["options"] as? [String] ?? []
            let frames = form.capture ? readRecording(file).count : 0
            print(
                "  \(form.device): \(stream["direction"] ?? "?") \(session["category"] ?? "?") on "
                    + "\(session["bus"] ?? "?"), options \(options), transient \(session["transient"] ?? "?"), name "
                    + "\(stream["name"] ?? "?"); ran \(twoDecimals(took)) s"
                    + (form.capture ? ", \(frames) frames" : "")
            )
            try require(result != nil, "\(form.device): \(application.name) did not end within 10 s")
            try require(result?.status == 0, "\(form.device): \(application.name) failed: \(application.outcome)")
            try require(
                stream["direction"] as? String == (form.capture ? "capture" : "playback"),
                "\(form.device): direction \(stream["direction"] ?? "?")"
            )
            try require(session["category"] as? String == form.category, "\(form.device): category \(session)")
            try require(session["bus"] as? String == form.bus, "\(form.device): bus \(session)")
            try require(options == form.options, "\(form.device): options \(options), expected \(form.options)")
            try require(session["transient"] as? Bool == form.transient, "\(form.device): transient \(session)")
            let name = form.name ?? (form.capture ? "arecord" : "aplay")
            try require(stream["name"] as? String == name, "\(form.device): name \(stream["name"] ?? "?")")
            // 1 s of sound at the real rate: the application's start-up is before `running`, its drain after.
            try require(took > 0.9 && took < 1.8, "\(form.device): 1 s took \(twoDecimals(took)) s once running")
            if form.capture {
                try require(frames == recordRate, "\(form.device): 1 s recorded as \(frames) frames")
            }
        }
        try waitUntil("every stream gone") { streams().isEmpty }
    },
    Check(name: "streams-refused-with-a-clear-error") {
        // What cannot be opened fails at once, saying why: a capture of a category that does not record, a playback
        // of one that only records, a category that does not exist.
        let file = try ToneFile.make(440, 1)
        let cases: [(tool: String, device: String, says: String)] = [
            ("arecord", "hush:CATEGORY=playback", "record or playAndRecord"),
            ("aplay", "hush:CATEGORY=record", "record"),
            ("aplay", "hush:CATEGORY=musik", "unknown category 'musik'"),
        ]
        for (tool, device, says) in cases {
            let application =
                tool == "aplay"
                ? try aplay(device, file)
                : try arecord(device, "/tmp/refused.raw", seconds: 1)
            let result = application.finish(within: 10)
            let took = result.map { seconds(from: application.started, to: $0.at) } ?? -1
            let message = application.text.split(separator: "\n").first { $0.contains("hush:") } ?? "(none)"
            print("  \(tool) -D \(device): exit \(result?.status ?? -1) after \(twoDecimals(took)) s: \(message)")
            try require(result != nil && result?.status != 0, "\(tool) -D \(device) must fail: \(application.outcome)")
            try require(message.contains(says), "\(tool) -D \(device) says why ('\(says)'): \(application.outcome)")
            // At once: the time includes the program's own start-up, which a busy emulator makes seconds long, so
            // the bound is generous; a refusal that waited out the plugin's 2 s reply deadline says something else
            // ("did not answer"), which the line above fails.
            try require(took < 10, "\(tool) -D \(device) fails at once, not after \(twoDecimals(took)) s (budget 10 s)")
        }
        try require(streams().isEmpty, "no stream left behind: \(streams())")
    },
]
