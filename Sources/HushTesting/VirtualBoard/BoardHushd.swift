import Foundation
import HushALSA
import HushCore
import HushInput

#if canImport(Glibc)
import Glibc
#endif

// hushd on the virtual board, as the e2e, faults, soak and streams scenarios run it (board/virtual/scenarios): on the
// virtual profile, its socket, its log in /tmp/hushd.log, the hardware a board would give it (the codec's "Headphone
// Jack", an amplifier switch, a gpio-keys stand-in on uinput), hushctl against it, and captures of what it plays
// that know when hushd counted an underrun meanwhile.

package let e2eSocket = "/run/hush/control.sock"
package let e2eConfig = "/tmp/hushd.toml"
package let e2eState = "/var/lib/hush/state"
/// Tones per bus: music 440 Hz, effect 1000 Hz, ringer 1500 Hz, a ducking voice 2000 Hz.
package let musicTone = 440.0
package let effectTone = 1000.0
package let ringerTone = 1500.0
package let duckTone = 2000.0
/// What the speaker and the headphones carry, as the tests hear it.
package let speakerCapture = "hw:Loopback,1,0"
/// The switch the virtual profile's routes flip, standing in for a speaker amplifier's.
package let speakerAmplifierSwitch = ALSAElementName("Speaker Playback Switch", interface: .mixer)
package let headphonesCapture = "hw:Loopback,1,1"

/// A number of decibels, milliseconds or seconds for a message: two decimals.
package func twoDecimals(_ value: Double) -> String { String(format: "%.2f", value) }

/// A half-scale tone (-6 dBFS) at `step` of the default curve, in dBFS.
package func expectedLevel(step: Int, extra: Float = 0) -> Double {
    Double(-6.02 + VolumeCurve.default.decibels(at: VolumeStep(clamping: step)) + extra)
}

/// `hushctl` against the daemon's socket.
@discardableResult
package func hushctl(_ arguments: String) throws -> String {
    let (output, status) = shell("/payload/hushctl --socket \(e2eSocket) \(arguments)")
    try require(status == 0, "hushctl \(arguments) failed (\(status)): \(output)")
    return output
}

/// Starts a hushctl client in the background; returns its pid (its output goes to /tmp/client-NAME.log).
package func startClient(_ name: String, _ arguments: String) throws -> Int32 {
    let (output, _) = shell(
        "/payload/hushctl --socket \(e2eSocket) \(arguments) >/tmp/client-\(name).log 2>&1 & echo $!"
    )
    guard let pid = Int32(output.trimmingCharacters(in: .whitespacesAndNewlines)) else {
        throw CheckFailure("could not start client \(name): \(output)")
    }
    return pid
}

/// The daemon's status as JSON.
package func status() throws -> [String: Any] {
    let text = try hushctl("--json status")
    guard let data = text.data(using: .utf8),
        let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
    else { throw CheckFailure("hushctl --json status printed no JSON object: \(text)") }
    return object
}

/// The output's period in force (R24) once the audio thread has taken the rule's, in frames, and the queue it
/// keeps then, in milliseconds (status' `output.period` and `latencyMilliseconds`). Waits up to 5 s for the two to
/// agree (a ruling takes effect at the thread's next period).
package func outputPeriod() throws -> (frames: Int, queueMilliseconds: Double) {
    let deadline = monotonicNow() + .seconds(5)
    while true {
        let output = try status()["output"] as? [String: Any]
        if let period = output?["period"] as? [String: Any], let frames = period["frames"] as? Int,
            frames == period["ruled"] as? Int, let queue = output?["latencyMilliseconds"] as? Double
        {
            return (frames, queue)
        }
        guard monotonicNow() < deadline else {
            throw CheckFailure("hushd's status gives no settled output period: \(String(describing: output))")
        }
        sleep(.milliseconds(50))
    }
}

/// Starts hushd on the virtual profile; waits until its socket answers.
package func startHushd() throws {
    let command = "/payload/hushd --config \(e2eConfig) >>/tmp/hushd.log 2>&1 &"
    try require(system(command) == 0, "could not start hushd")
    // hushd's own start-up (and each hushctl's) under TCG on a busy host takes several times a quiet one's: the
    // budget is many times that, and only a daemon that never answers fails here.
    let start = monotonicNow()
    while monotonicNow() - start < .seconds(60) {
        if shell("/payload/hushctl --socket \(e2eSocket) status").status == 0 { return }
        sleep(.milliseconds(100))
    }
    throw CheckFailure("hushd did not answer on \(e2eSocket) within 60 s:\n\(readWholeFile("/tmp/hushd.log") ?? "")")
}

/// Waits until `count` sessions play (clients start slowly under TCG: a budget of 30 s for their start-up), plus
/// `settle` for the ramps.
package func waitForPlaying(_ count: Int, on bus: String? = nil, settle: Duration = .milliseconds(300)) throws {
    let start = monotonicNow()
    var playing = -1
    while monotonicNow() - start < .seconds(30) {
        let sessions = (try? status())?["sessions"] as? [[String: Any]] ?? []
        playing =
            sessions.filter { $0["state"] as? String == "playing" && (bus == nil || $0["bus"] as? String == bus) }
            .count
        if playing >= count {
            sleep(settle)
            return
        }
        sleep(.milliseconds(100))
    }
    throw CheckFailure("expected \(count) sessions playing within 30 s, \(playing) play")
}

/// Waits until no session plays on `bus` (a client ended or was killed), plus `settle` for the ramps.
package func waitForSilence(on bus: String, settle: Duration = .milliseconds(300)) throws {
    let start = monotonicNow()
    while monotonicNow() - start < .seconds(15) {
        let sessions = (try? status())?["sessions"] as? [[String: Any]] ?? []
        if !sessions.contains(where: { $0["state"] as? String == "playing" && $0["bus"] as? String == bus }) {
            sleep(settle)
            return
        }
        sleep(.milliseconds(100))
    }
    throw CheckFailure("a session still plays on the \(bus) bus after 15 s")
}

/// Waits until hushd's status satisfies `holds` (a change went through the policy), plus `settle` for the ramps.
package func waitForStatus(
    _ what: String,
    settle: Duration = .milliseconds(300),
    _ holds: ([String: Any]) -> Bool
) throws {
    let start = monotonicNow()
    var last: [String: Any] = [:]
    while monotonicNow() - start < .seconds(15) {
        last = (try? status()) ?? [:]
        if holds(last) {
            sleep(settle)
            return
        }
        sleep(.milliseconds(100))
    }
    throw CheckFailure(
        "\(what) within 15 s: status says route \(last["route"] ?? "?"), system volume "
            + "\(last["systemVolume"] ?? "?"), silence switch \(last["silenceSwitch"] ?? "?")"
    )
}

/// The running hushd daemons (not `hushd play`), by /proc: busybox's pidof does not find a program started by path.
package func hushdDaemonPIDs() -> [pid_t] {
    globPaths("/proc/[0-9]*/cmdline").compactMap { path in
        guard let bytes = try? Data(contentsOf: URL(fileURLWithPath: path)) else { return nil }
        let command = bytes.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
        guard command.first?.hasSuffix("hushd") == true, command.contains("--config") else { return nil }
        return pid_t(path.dropFirst(6).dropLast(8))
    }
}

package func stopHushd(signal: String = "TERM") {
    shell("killall -\(signal) hushd")
    let start = monotonicNow()
    while monotonicNow() - start < .seconds(5) {
        if hushdDaemonPIDs().isEmpty { return }
        sleep(.milliseconds(50))
    }
}

/// The level of `hz` in each 50 ms window from `from` to `to` seconds, with where the window starts.
package func windowLevels(_ hz: Double, _ samples: [Float], from: Double, to: Double) -> [(at: Double, level: Double)] {
    var windows: [(at: Double, level: Double)] = []
    var t = from
    while t + 0.05 <= to {
        let a = Int(t * 48000)
        let b = Int((t + 0.05) * 48000)
        guard b <= samples.count else { break }
        windows.append((t, ToneAnalysis.level(of: hz, in: samples[a..<b], sampleRate: 48000)))
        t += 0.05
    }
    return windows
}

/// The level of `hz` in every 50 ms window from `from` to `to` seconds: (quietest, loudest).
package func levels(_ hz: Double, _ samples: [Float], from: Double, to: Double) -> (min: Double, max: Double) {
    let windows = windowLevels(hz, samples, from: from, to: to).map(\.level)
    return (windows.min() ?? .infinity, windows.max() ?? -.infinity)
}

nonisolated(unsafe) package let silenceSwitchLine = try? SimLine("silence-switch")
nonisolated(unsafe) package let volumeUpLine = try? SimLine("volume-up")
nonisolated(unsafe) package let volumeDownLine = try? SimLine("volume-down")

package func line(_ line: SimLine?, _ name: String) throws -> SimLine {
    guard let line else { throw CheckFailure("the gpio-sim line \(name) is missing") }
    return line
}

/// The uinput device standing in for the board's keys (media keys, SW_HEADPHONE_INSERT); kept for the run.
nonisolated(unsafe) package var virtualKeys: UInputDevice?

/// The Dummy card's "Speaker Playback Switch", made for the run; hushd's routes set it.
nonisolated(unsafe) package var amplifierControl: ALSAUserControl?

/// The "Headphone Jack" control a codec driver would have; hushd watches it.
nonisolated(unsafe) package var jackControl: ALSAUserControl?

package func setJack(_ plugged: Bool) throws {
    guard let jackControl else { throw CheckFailure("no Headphone Jack control") }
    try jackControl.set(plugged)
}

package func tap(_ simLine: SimLine) throws {
    try simLine.set(active: true)
    sleep(.milliseconds(80))
    try simLine.set(active: false)
}

/// What hushd on the virtual profile needs before it starts, as a board would have it: the configuration (console on
/// the second serial port, the state file where a board keeps it), the codec's "Headphone Jack" and amplifier
/// switch, and the uinput device standing in for gpio-keys. Used by the e2e, faults, soak and streams checks;
/// `extra` is appended to the configuration (the streams scenario's microphone and its light).
package func setUpBoardForHushd(configuration extra: String = "") throws {
    try writeHushdConfiguration(extra)
    shell("mkdir -p /run/hush /var/lib/hush; rm -f \(e2eState)")
    jackControl = try ALSAUserControl(card: "Loopback", element: jack, initial: false)
    // A stereo amplifier switch such as a codec has, off at first: hushd turns it on for the speaker route.
    amplifierControl = try ALSAUserControl(
        card: "Dummy",
        element: speakerAmplifierSwitch,
        initial: false,
        count: 2,
        writableByOthers: true
    )
    // The board's media keys and second headphone source, as a gpio-keys device would provide them.
    virtualKeys = try UInputDevice(name: keysName, codes: keyCodes, switches: [.headphoneInsert: 0])
    settle()
}

/// Writes hushd's configuration on the virtual board (``setUpBoardForHushd(configuration:)``'s, with `extra`
/// appended and `sounds`' keys in its `[sounds]` table), for a hushd started after it; the board's controls and
/// devices stay as they are.
package func writeHushdConfiguration(_ extra: String = "", sounds: String = "") throws {
    try writeFile(
        e2eConfig,
        """
        board = "/payload/virtual.toml"

        [console]
        device = "/dev/ttyS1"
        baud = 115200

        [control]
        socket = "\(e2eSocket)"
        group = ""

        [state]
        file = "\(e2eState)"

        [sounds]
        directories = ["/tmp"]
        \(sounds)

        """ + extra
    )
}

/// hushd's process id (the daemon, not `hushd play`).
package func hushdPID() throws -> pid_t {
    guard let pid = hushdDaemonPIDs().first else {
        throw CheckFailure("hushd is not running")
    }
    return pid
}

/// hushd's underrun warnings so far, from its log.
package func underrunWarnings() -> [String] {
    (readWholeFile("/tmp/hushd.log") ?? "").split(separator: "\n").filter { $0.contains("underrun(s)") }
        .map { $0.trimmingCharacters(in: .whitespaces) }
}

/// Underruns hushd counted since it started (`hushctl status`).
package func underrunsCounted() throws -> Int {
    guard let output = try status()["output"] as? [String: Any], let xruns = output["xruns"] as? Int else {
        throw CheckFailure("hushctl status has no output.xruns")
    }
    return xruns
}

/// Like `listen`, and also asks hushd (the daemon) how many underruns it counted during the take.
package func listenToHushd(
    _ pcms: [String] = [speakerCapture],
    seconds: Double = 1,
    while actions: [(at: Double, what: String, action: () throws -> Void)] = []
) throws -> Take {
    let before = try underrunsCounted()
    var take = try listen(to: pcms, seconds: seconds, while: actions)
    let counted = try underrunsCounted() - before
    if counted > 0 { take.disturbances.append("hushd counted \(counted) underrun(s) during it") }
    return take
}

/// One capture of the speaker from hushd, `seconds` long with nothing done meanwhile, taken again while disturbed.
package func capture(_ what: String, seconds: Double = 1) throws -> [Float] {
    try measure(what) {
        let take = try listenToHushd(seconds: seconds)
        return (take.recordings[0].samples, take.disturbances)
    }
}
/// The "Headphone Jack" control a codec driver would have (ALSA user control on the Loopback card).
package let jack = ALSAElementName("Headphone Jack", interface: .card)

package let keysName = "hush-virtual-keys"
package let keyCodes: [EvdevCode] = [
    .volumeUp, .volumeDown, .playPause, .nextSong, .previousSong, .mute, .headphoneInsert,
]

/// Waits for the kernel and devtmpfs to publish a new uinput device.
package func settle() { sleep(.milliseconds(150)) }
