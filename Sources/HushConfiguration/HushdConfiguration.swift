import HushALSA
import HushCore
import HushGPIO
import HushInput
import HushPolicy
import HushProtocol
import HushSystem
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// Everything hushd is configured with: the board's hardware and the daemon's settings.
///
/// Read from `/etc/hush/hushd.toml` (``load(file:)``), a board profile (``board(_:)``), a text
/// (``parse(_:file:)``), or ``builtIn`` when there is no file. Every key, its type, default and meaning is in
/// docs/configuration.md; each property here carries the key it comes from. A value of this type has been
/// checked: ranges, cross-references (a headphone input needs a headphones route, two inputs never share a GPIO
/// line) and names (sample formats, evdev codes) are all valid.
public struct HushdConfiguration: Sendable, Equatable {
    /// `[board]`: what the board is, for messages and the console banner.
    public var board = Board()
    /// `[output]`: the playback device and the audio thread.
    public var output = Output()
    /// `[routes.NAME]`: where sound goes for each route. Always has `speaker`.
    public var routes: [Route: RouteSettings] = [.speaker: RouteSettings(pcm: "default")]
    /// `[inputs.NAME]`: the switch, buttons, jack and keys, each read one way.
    public var inputs: [InputName: Input] = [:]
    /// `[buttons]`: volume button repeat and what they control when nothing plays.
    public var buttons = Buttons()
    /// `[volume]`: the curve, the defaults and the start-up cap.
    public var volume = Volume()
    /// `[ducking]`: how far and how fast a ducking session lowers the others.
    public var ducking = Ducking()
    /// `[ramps]`: silence switch and volume change ramps.
    public var ramps = Ramps()
    /// `[hearing]`: hearing safety's limits on private routes (policy R27, R28, R29).
    public var hearing = Hearing()
    /// `[buses.effect|music|ringer]`: what a session on each bus is when its client does not say.
    public var buses: [Bus: BusSettings] = BusSettings.defaults
    /// `[outputs.NAME]`: lines hushd drives (an alert LED).
    public var outputs: [OutputName: OutputLineSettings] = [:]
    /// `[console]`: the serial console.
    public var console = Console()
    /// `[control]`: the control socket and its limits.
    public var control = Control()
    /// `[streams]`: the limits on streams of the `hush` ALSA device.
    public var streams = Streams()
    /// `[capture]`: the microphone; nil when `pcm` is not set (capture streams get silence).
    public var capture: Capture?
    /// `[voice]`: what `voiceChat` runs on the microphone (policy R22).
    public var voice = Voice()
    /// `[state]`: the state file.
    public var state = State()
    /// `[alsa_controls]`: hushd's volumes as ALSA user controls.
    public var alsaControls = ALSAControls()
    /// `[sounds]`: where play requests may read sound files from.
    public var sounds = Sounds()
    /// `[log]`: how much hushd logs.
    public var log = Log()
    /// The files this configuration was read from, the board profile first; empty for ``builtIn``.
    public var files: [String] = []

    public init() {}

    // MARK: Sections

    /// `[board]`.
    public struct Board: Sendable, Equatable {
        /// `name`: the profile's name ("pi4-dac-hat"); "" when the file names none.
        public var name = ""
        /// `description`: one line about the hardware.
        public var description = ""
        public init() {}
    }

    /// `[output]`.
    public struct Output: Sendable, Equatable {
        /// `pcm`: the ALSA PCM sound goes to ("default", "hw:CARD=sndrpihifiberry,DEV=0").
        public var pcm = "default"
        /// `rate`, in Hz.
        public var sampleRate = 48000
        /// `channels`: 1 or 2.
        public var channels = 2
        /// `format`: the device's sample format.
        public var format = SampleFormat.s16LE
        /// `period_frames`: frames per period; the latency of one period.
        public var periodFrames = 64
        /// `periods`: periods in the device buffer.
        public var periods = 3
        /// `max_period_frames`: the longest period hushd mixes at once when nothing needs a short one (R24); nil
        /// for ``defaultMaxPeriodFrames``. Rounded down to `period_frames` × 2ⁿ; `period_frames` fixes the period.
        public var maxPeriodFrames: Int?
        /// 1024 frames (21 ms at 48 kHz): a music player alone wakes hushd 47 times a second instead of 750 (at
        /// 64-frame periods), and the first sound after a long stretch waits behind at most about 29 ms.
        public static let defaultMaxPeriodFrames = 1024

        /// The ceiling in force: `max_period_frames` (or its default) rounded down to `period_frames` × 2ⁿ, never
        /// below `period_frames`.
        public var periodCeiling: Int {
            let limit = maxPeriodFrames ?? Self.defaultMaxPeriodFrames
            var ceiling = max(1, periodFrames)
            while ceiling * 2 <= limit { ceiling *= 2 }
            return ceiling
        }
        /// `realtime_priority`: SCHED_FIFO priority of the audio thread, 0 for normal scheduling.
        public var realtimePriority: Int32 = 70
        /// `fallback_wav`: where sound goes when the PCM does not open at start; nil ("") starts without sound and
        /// opens the PCM when it appears.
        public var fallbackWAV: String?
        /// `idle_seconds`: after this long with nothing to hear, the output device is stopped and the audio thread
        /// sleeps (no wake-ups) until the next sound, which restarts it.
        public var idleSeconds = 5.0
        /// `keep_warm`: never stop the device (a DAC that pops, or starts slowly, when stopped).
        public var keepWarm = false
        public init() {}

        /// How long the output waits, silent, before it goes idle; nil when it is kept warm.
        public var idleAfter: Duration? {
            keepWarm ? nil : .nanoseconds(Int64((idleSeconds * 1e9).rounded()))
        }

        /// The device settings the ALSA adapter takes.
        public var playback: PlaybackConfiguration {
            PlaybackConfiguration(
                pcm: pcm,
                sampleRate: sampleRate,
                channels: channels,
                format: format,
                periodFrames: periodFrames,
                periods: periods,
                maxPeriodFrames: periodCeiling
            )
        }
    }

    /// `[routes.NAME]`: a route's device and the mixer switches flipped when it is selected.
    public struct RouteSettings: Sendable, Equatable {
        /// `pcm`: defaults to `[output] pcm`.
        public var pcm: String
        /// `format`: defaults to `[output] format`; a route may change the format, not the rate or channels.
        public var format: SampleFormat?
        /// `switches`: set, in order, when the route is selected.
        public var switches: [MixerSwitch]
        /// `private`: its sound goes straight into a person's ears (headphones, a handset); nil: the default,
        /// true for the route named headphones (policy R27–R29).
        public var isPrivate: Bool?
        /// `full_scale_dba`: what a full-scale 1 kHz sine is at the listener, in dB(A), as measured for the board
        /// (at the ear for a private route, at 1 m for a speaker); nil: not calibrated.
        public var fullScaleDecibelsA: Double?
        public init(pcm: String, format: SampleFormat? = nil, switches: [MixerSwitch] = []) {
            self.pcm = pcm
            self.format = format
            self.switches = switches
        }
    }

    /// `[hearing]`: hearing safety (policy R27, R28, R29). Levels in dB(A) at the listener.
    public struct Hearing: Sendable, Equatable {
        /// `start_limit_dba` (85): a private route starts at no more than this.
        public var startLimit = 85.0
        /// `momentary_limit_dba` (100) and `momentary_seconds` (5): over the limit for longer warns and lowers.
        public var momentaryLimit = 100.0
        public var momentarySeconds = 5
        /// `ceiling_dba`: nothing exceeds it on a calibrated route (a toy); nil for none.
        public var ceiling: Double?
        /// `assumed_full_scale_dba` (110): a private route without `full_scale_dba` is taken to be this loud.
        public var assumedFullScale = 110.0
        public init() {}
    }

    /// One entry of a route's `switches`: an ALSA mixer control set to a value when the route is selected.
    public struct MixerSwitch: Sendable, Equatable {
        /// `card`: defaults to the card of the route's PCM.
        public var card: String
        /// `control`, `interface` (default mixer), `index` (default 0).
        public var element: ALSAElementName
        /// `on = true|false` (1 or 0), or `value = N` for a control that is not a switch.
        public var value: Int
        public init(card: String, element: ALSAElementName, value: Int) {
            self.card = card
            self.element = element
            self.value = value
        }
    }

    /// The inputs hush knows, by their configuration names.
    public enum InputName: String, Sendable, Hashable, CaseIterable, Comparable, CustomStringConvertible {
        case silenceSwitch = "silence_switch"
        case volumeUp = "volume_up"
        case volumeDown = "volume_down"
        /// An ALSA control such as the codec's "Headphone Jack".
        case headphoneJack = "headphone_jack"
        /// An evdev switch such as SW_HEADPHONE_INSERT.
        case headphoneSwitch = "headphone_switch"
        /// A GPIO line wired to the socket's detect contact.
        case headphoneSense = "headphone_sense"
        case mediaKeys = "media_keys"
        /// The microphone privacy switch (policy R21): a GPIO line or an evdev switch such as SW_MUTE_DEVICE.
        case micPrivacy = "mic_privacy"

        public var description: String { rawValue }
        public static func < (a: InputName, b: InputName) -> Bool {
            allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
        }

        /// Whether this input reports headphones plugged and unplugged.
        public var isHeadphones: Bool { self == .headphoneJack || self == .headphoneSwitch || self == .headphoneSense }
    }

    /// `[inputs.NAME]`: how one input is read (`kind`).
    public enum Input: Sendable, Equatable {
        case gpio(GPIOInput)
        case evdev(EvdevInput)
        case alsa(ALSAInput)
        /// Keys on hushd's own terminal stand in for it (the built-in default, no hardware needed).
        case terminal

        /// The `kind` this is read as.
        public var kind: InputKind {
            switch self {
            case .gpio: .gpio
            case .evdev: .evdev
            case .alsa: .alsa
            case .terminal: .terminal
            }
        }
    }

    /// `kind = "…"` of an `[inputs.NAME]` table: every way hush reads a control. A new kind is a case here, a
    /// case of ``Input`` and its reader in ``ConfigurationReader``; the compiler finds every switch to extend.
    public enum InputKind: String, Sendable, CaseIterable {
        case gpio, evdev, alsa, terminal
        /// Not wired: the input is left out.
        case none
    }

    /// `kind = "gpio"`.
    public struct GPIOInput: Sendable, Equatable {
        /// `chip`: "gpiochip0", "0", "/dev/gpiochip0" or a label such as "pinctrl-bcm2711".
        public var chip: String
        /// `line`: an offset (17) or a line name ("silence-switch").
        public var line: GPIOLineSelector
        /// `active_low` (default true: a switch to ground with a pull-up).
        public var activeLow = true
        /// `bias` (default pull-up).
        public var bias = GPIOBias.pullUp
        /// `debounce_ms` (default 10).
        public var debounce: Duration = .milliseconds(10)
        /// `key`, for `media_keys` only (default play_pause): the key a press means.
        public var mediaKey: MediaKey?
        public init(chip: String, line: GPIOLineSelector) {
            self.chip = chip
            self.line = line
        }
    }

    /// `kind = "evdev"`.
    public struct EvdevInput: Sendable, Equatable {
        /// `device`: a path ("/dev/input/by-path/…") or the device's name ("hush-controls").
        public var device: EvdevDeviceSelector
        /// `code`, or `codes` for media keys.
        public var codes: [EvdevCode]
        /// `grab` (default false): take the device for hush alone.
        public var grab = false
        /// `optional` (default false): start without the device and open it when it appears.
        public var optional = false
        public init(device: EvdevDeviceSelector, codes: [EvdevCode]) {
            self.device = device
            self.codes = codes
        }
    }

    /// `kind = "alsa"`.
    public struct ALSAInput: Sendable, Equatable {
        /// `card`: "Loopback", "0" or "hw:…".
        public var card: String
        /// `control` (default "Headphone Jack"), `interface` (default card), `index` (default 0).
        public var element: ALSAElementName
        public init(card: String, element: ALSAElementName) {
            self.card = card
            self.element = element
        }
    }

    /// `[buttons]`.
    public struct Buttons: Sendable, Equatable {
        /// `repeat_delay_ms` (500).
        public var repeatDelay: Duration = .milliseconds(500)
        /// `repeat_interval_ms` (100).
        public var repeatInterval: Duration = .milliseconds(100)
        /// `idle_target`: which volume the buttons move when nothing plays (system).
        public var idleTarget = VolumeKind.system
        public init() {}
    }

    /// `[volume]`.
    public struct Volume: Sendable, Equatable {
        /// `curve`: [step, dB] points from step 1 to step 16.
        public var curve = VolumeCurve.default
        /// `default_system` (8).
        public var defaultSystem = VolumeStep(clamping: 8)
        /// `default_ringer` (10).
        public var defaultRinger = VolumeStep(clamping: 10)
        /// `startup_max` (12): no volume starts above it.
        public var startupMaximum = VolumeStep(clamping: 12)
        public init() {}
    }

    /// `[ducking]`.
    public struct Ducking: Sendable, Equatable {
        /// `depth_db` (-14).
        public var depthDecibels: Float = -14
        /// `attack_ms` (100).
        public var attack: Duration = .milliseconds(100)
        /// `release_ms` (500).
        public var release: Duration = .milliseconds(500)
        public init() {}
    }

    /// `[ramps]`.
    public struct Ramps: Sendable, Equatable {
        /// `silence_ms` (20; at most 20).
        public var silence: Duration = .milliseconds(20)
        /// `volume_ms` (30).
        public var volume: Duration = .milliseconds(30)
        public init() {}
    }

    /// `[buses.NAME]`: what a session on the bus is when its client names no category or options.
    public struct BusSettings: Sendable, Equatable {
        /// `category`.
        public var category: HushCore.Category
        /// `mix_with_others`, `duck_others`.
        public var options: CategoryOptions
        public init(category: HushCore.Category, options: CategoryOptions = []) {
            self.category = category
            self.options = options
        }

        /// effect: ambient, mixing; music: playback; ringer: soloAmbient (the switch silences a ringtone).
        public static let defaults: [Bus: BusSettings] = [
            .effect: BusSettings(category: .ambient, options: .mixWithOthers),
            .music: BusSettings(category: .playback),
            .ringer: BusSettings(category: .soloAmbient),
        ]
    }

    /// The lines hushd drives, by their configuration names.
    public enum OutputName: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        /// Lit while an alert sounds muted by the silence switch.
        case alertLED = "alert_led"
        /// Lit while a stream hears the microphone.
        case micLED = "mic_led"
        public var description: String { rawValue }
    }

    /// `[outputs.NAME]` (`kind = "gpio"`).
    public struct OutputLineSettings: Sendable, Equatable {
        public var chip: String
        public var line: GPIOLineSelector
        /// `active_low` (default false: the line drives the LED high).
        public var activeLow = false
        public init(chip: String, line: GPIOLineSelector) {
            self.chip = chip
            self.line = line
        }
    }

    /// `[console]`.
    public struct Console: Sendable, Equatable {
        /// `device`: the serial port ("/dev/ttyAMA0"); nil ("") for none.
        public var device: String?
        /// `baud` (115200): one of ``BaudRate/supported``.
        public var baud = BaudRate.standard
        public init() {}
    }

    /// `[control]`.
    public struct Control: Sendable, Equatable {
        /// `socket` (/run/hush/control.sock).
        public var socket = "/run/hush/control.sock"
        /// `mode` (0660).
        public var mode: UInt32 = 0o660
        /// `group`: the socket's group; nil ("") leaves the socket in hushd's own group. Not given, it is "hush"
        /// where this machine has that group (the package and install.sh make it, and hushd.service runs in it), else
        /// hushd's own group: ``socketGroup(exists:)``.
        public var group: String? = "hush"
        /// Whether the configuration names `group`: a group named must exist, the default only applies where it does.
        public var groupGiven = false
        /// The group the socket is given, `exists` telling whether this machine has a group of that name.
        public func socketGroup(exists: (String) -> Bool) -> String? {
            guard let group, !groupGiven else { return group }
            return exists(group) ? group : nil
        }
        /// `max_clients` (64): every stream of the `hush` ALSA device is a connection too.
        public var maxClients = 64
        /// `max_clients_per_process` (16): connections one process (by pid) may have, so it cannot lock the
        /// others out.
        public var maxClientsPerProcess = 16
        /// `max_sessions_per_client` (8).
        public var maxSessionsPerClient = 8
        /// `max_line_bytes` (65536): a longer request line is refused.
        public var maxLineBytes = 65536
        /// `allowed_uids` ([]): uids allowed besides hushd's own, root and members of the socket's group.
        public var allowedUIDs: [UInt32] = []
        public init() {}
    }

    /// `[streams]`: what the daemon allows applications that play and record through the `hush` ALSA device.
    public struct Streams: Sendable, Equatable {
        /// `max_streams` (32): streams open at once, all processes together.
        public var maxStreams = 32
        /// `max_streams_per_process` (8): streams one process (by pid) may have open.
        public var maxStreamsPerProcess = 8
        /// `ring_kib_max` (512): the most memory one stream's ring may take, in KiB (16…512; the `hush` plugin
        /// offers buffers up to 512 KiB, hush_wire.h's HUSH_WIRE_MAX_RING_BYTES).
        public var ringKiBMax = 512
        public init() {}

        /// The most frames a ring of `frameBytes`-byte frames may hold.
        public func maxRingFrames(frameBytes: Int) -> Int { ringKiBMax * 1024 / max(1, frameBytes) }
    }

    /// `[capture]`: the microphone.
    public struct Capture: Sendable, Equatable {
        /// `pcm`: the ALSA PCM the microphone is read from ("hw:CARD=Mic,DEV=0", "default").
        public var pcm: String
        /// `periods`: periods in the capture device's buffer; nil for `[output] periods`.
        public var periods: Int?
        /// `privacy_control`: the capture card's switch turned off while the microphone privacy switch is on
        /// (policy R21), where the card has it; nil ("") for none.
        public var privacyControl: String? = "Capture Switch"
        public init(pcm: String, periods: Int? = nil) {
            self.pcm = pcm
            self.periods = periods
        }

        /// The card `privacyControl` is on: the card of `pcm`, when it names one.
        public var card: String? { HushdConfiguration.card(ofPCM: pcm) }
        /// `clock`: "match" resamples the microphone to the output's clock, "shared" trusts they are one; nil
        /// ("auto") matches when the microphone's PCM and an output's name different cards.
        public var matchClock: Bool?

        /// Whether the microphone is resampled to the output's clock, given the PCMs sound may go to (the output's
        /// and the routes'): when any of them names a card that is not the microphone's (a route to a card of the
        /// same clock settles at 0 ppm).
        public func matchesClock(outputs: [String]) -> Bool {
            if let matchClock { return matchClock }
            guard let microphone = card else { return false }
            return outputs.compactMap { HushdConfiguration.card(ofPCM: $0) }.contains { $0 != microphone }
        }
    }

    /// `[voice]`: echo cancellation and the high-pass filter always run in `voiceChat`; these two may be turned off.
    public struct Voice: Sendable, Equatable {
        /// `automatic_gain`: keep the talker's level (webrtc-audio-processing's gain control).
        public var automaticGain = true
        /// `noise_suppression`: suppress steady noise (fans, hum).
        public var noiseSuppression = true
        public init() {}
    }

    /// `[state]`.
    public struct State: Sendable, Equatable {
        /// `file` (/var/lib/hush/state); nil ("") keeps nothing across restarts.
        public var file: String? = "/var/lib/hush/state"
        /// `write_interval_ms` (1000): the file is written at most this often.
        public var writeInterval: Duration = .milliseconds(1000)
        public init() {}
    }

    /// `[alsa_controls]`.
    public struct ALSAControls: Sendable, Equatable {
        /// `enabled` (true).
        public var enabled = true
        /// `card`: nil ("") for the card of `[output] pcm`.
        public var card: String?
        public init() {}
    }

    /// `[sounds]`.
    public struct Sounds: Sendable, Equatable {
        /// `directories`.
        public var directories = ["/usr/share/hush/sounds", "/var/lib/hush/sounds"]
        /// `startup`: the sound hushd plays once when it is ready (policy R25); nil ("") for none. It must be in one
        /// of `directories`, as every sound hushd plays.
        public var startup: String?
        /// `hearing_warning`: the short sound hushd plays with each hearing warning (policy R30), on the ringer bus;
        /// nil ("") for none: the light, the socket's event and the console line still warn.
        public var hearingWarning: String?
        public init() {}
    }

    /// `[log]`.
    public struct Log: Sendable, Equatable {
        /// `level` (info).
        public var level = Logger.Level.info
        public init() {}
    }
}

// MARK: - What the rest of hushd takes

extension HushdConfiguration {
    /// The policy's tunables, from `[routes]`, `[volume]`, `[buttons]`, `[ducking]`, `[ramps]` and `[hearing]`.
    public var policy: PolicyConfiguration {
        var policy = PolicyConfiguration()
        policy.routes = routeOrder
        policy.curve = volume.curve
        policy.defaultSystemVolume = volume.defaultSystem
        policy.defaultRingerVolume = volume.defaultRinger
        policy.startupMaximum = volume.startupMaximum
        policy.idleButtonTarget = buttons.idleTarget
        policy.repeatDelay = buttons.repeatDelay
        policy.repeatInterval = buttons.repeatInterval
        policy.duckDepth = Gain(decibels: ducking.depthDecibels)
        policy.duckAttack = ducking.attack
        policy.duckRelease = ducking.release
        policy.silenceRamp = ramps.silence
        policy.volumeRamp = ramps.volume
        policy.hearing.privateRoutes = Set(routes.filter { $0.value.isPrivate ?? ($0.key == .headphones) }.keys)
        policy.hearing.fullScale = routes.compactMapValues(\.fullScaleDecibelsA)
        policy.hearing.assumedFullScale = hearing.assumedFullScale
        policy.hearing.startLimit = hearing.startLimit
        policy.hearing.momentaryLimit = hearing.momentaryLimit
        policy.hearing.momentarySeconds = hearing.momentarySeconds
        policy.hearing.ceiling = hearing.ceiling
        policy.hearing.warningSound = sounds.hearingWarning != nil
        return policy
    }

    /// The routes: speaker, headphones, then the others by name.
    public var routeOrder: [Route] {
        routes.keys.sorted { a, b in
            let rank = { (route: Route) in route == .speaker ? 0 : route == .headphones ? 1 : 2 }
            return (rank(a), a.name) < (rank(b), b.name)
        }
    }

    /// The device each route plays on: its PCM and format with the output's rate, channels and period.
    public var routeOutputs: [Route: PlaybackConfiguration] {
        routes.mapValues { settings in
            var playback = output.playback
            playback.pcm = settings.pcm
            playback.format = settings.format ?? output.format
            return playback
        }
    }

    /// The GPIO inputs, for ``GPIOInputLine``.
    public var gpioInputs: [GPIOInputConfiguration] {
        inputs.sorted { $0.key < $1.key }.compactMap { name, input in
            guard case .gpio(let gpio) = input else { return nil }
            let role: GPIOInputRole =
                switch name {
                case .silenceSwitch: .silenceSwitch
                case .volumeUp: .volumeButton(.up)
                case .volumeDown: .volumeButton(.down)
                case .headphoneJack, .headphoneSwitch, .headphoneSense: .headphoneSense
                case .mediaKeys: .mediaKey(gpio.mediaKey ?? .playPause)
                case .micPrivacy: .microphoneSwitch
                }
            return GPIOInputConfiguration(
                chip: gpio.chip,
                line: gpio.line,
                role: role,
                activeLow: gpio.activeLow,
                bias: gpio.bias,
                debounce: gpio.debounce
            )
        }
    }

    /// The evdev inputs, one configuration per device (several inputs often share one, such as gpio-keys'
    /// "hush-controls"); a device is grabbed or optional when any of its inputs says so.
    public var evdevInputs: [EvdevInputConfiguration] {
        var devices: [EvdevInputConfiguration] = []
        for (name, input) in inputs.sorted(by: { $0.key < $1.key }) {
            guard case .evdev(let evdev) = input else { continue }
            var index = devices.firstIndex { $0.device == evdev.device }
            if index == nil {
                devices.append(EvdevInputConfiguration(device: evdev.device, keyMap: [:]))
                index = devices.count - 1
            }
            guard let index else { continue }
            devices[index].grab = devices[index].grab || evdev.grab
            devices[index].optional = devices[index].optional || evdev.optional
            for code in evdev.codes {
                switch Self.evdevRole(name, code) {
                case .silenceSwitch: devices[index].silenceSwitch = code
                case let role?: devices[index].keyMap[code] = role
                case nil: continue
                }
            }
        }
        return devices
    }

    /// What `code` means for input `name`, or nil when it cannot mean anything there (the loader refuses such
    /// codes, so this is nil only for configurations built by hand).
    static func evdevRole(_ name: InputName, _ code: EvdevCode) -> EvdevRole? {
        let isSwitch = code.type == EvdevCode.switchType
        switch name {
        case .silenceSwitch: return isSwitch ? .silenceSwitch(activeValue: 1) : .muteKey
        case .volumeUp: return isSwitch ? nil : .volumeButton(.up)
        case .volumeDown: return isSwitch ? nil : .volumeButton(.down)
        case .headphoneJack, .headphoneSwitch, .headphoneSense: return isSwitch ? .headphoneSwitch : nil
        case .mediaKeys: return mediaKeyCodes[code.name].map { .mediaKey($0) }
        // A privacy switch must have a position hushd can read at start-up: a key (KEY_MICMUTE) has none.
        case .micPrivacy: return isSwitch ? .microphoneSwitch(activeValue: 1) : nil
        }
    }

    /// The evdev codes that can be media keys, by kernel name.
    static let mediaKeyCodes: [String: MediaKey] = [
        "KEY_PLAYPAUSE": .playPause, "KEY_PLAY": .play, "KEY_PAUSE": .pause, "KEY_NEXTSONG": .next,
        "KEY_PREVIOUSSONG": .previous,
    ]

    /// The ALSA control inputs, for ``ALSAControlSource``.
    public var alsaControlInputs: [ALSAControlConfiguration] {
        inputs.sorted { $0.key < $1.key }.compactMap { name, input in
            guard case .alsa(let alsa) = input else { return nil }
            return ALSAControlConfiguration(
                card: alsa.card,
                element: alsa.element,
                role: name == .silenceSwitch ? .silenceSwitch : .headphoneJack
            )
        }
    }

    /// The inputs that keys on hushd's terminal stand in for.
    public var terminalInputs: [InputName] {
        inputs.keys.sorted().filter { inputs[$0] == .terminal }
    }

    /// The card hushd's volume controls go on: `[alsa_controls] card`, else the card `[output] pcm` names; nil
    /// when they are disabled or the PCM names no card ("default").
    public var alsaControlsCard: String? {
        guard alsaControls.enabled else { return nil }
        return alsaControls.card ?? Self.card(ofPCM: output.pcm)
    }

    /// The card a PCM name is on: "hw:CARD=sndrpihifiberry,DEV=0" → "sndrpihifiberry", "plughw:1,0" → "1",
    /// "hw:Loopback,0,0" → "Loopback"; nil for names that are not hw/plughw ("default", "dmix", an asound.conf PCM).
    public static func card(ofPCM pcm: String) -> String? {
        let prefixes = ["hw:", "plughw:"]
        guard let prefix = prefixes.first(where: { pcm.hasPrefix($0) }) else { return nil }
        let arguments = pcm.dropFirst(prefix.count).split(separator: ",")
        guard let first = arguments.first, !first.isEmpty else { return nil }
        if first.hasPrefix("CARD=") {
            let card = first.dropFirst("CARD=".count)
            return card.isEmpty ? nil : String(card)
        }
        return first.contains("=") ? nil : String(first)
    }
}

// MARK: - The built-in default

extension HushdConfiguration {
    /// What hushd runs on with no configuration file: no hardware needed.
    ///
    /// Keys on hushd's terminal stand in for the switch, buttons, jack and media keys; sound goes to ALSA
    /// `default`, or, when that does not open, to `hushd-output.wav` beside the state file (never the current
    /// directory: `make run` starts in the checkout). The socket goes to /run/hush when it is writable, else
    /// $XDG_RUNTIME_DIR, else /tmp; the state file to ~/.local/state/hush, else /tmp. This is what `make run`
    /// starts.
    public static var builtIn: HushdConfiguration {
        var configuration = HushdConfiguration()
        configuration.board.name = "built-in"
        configuration.board.description = "no hardware: terminal keys for the controls, ALSA default or a WAV file"
        configuration.routes = [.speaker: RouteSettings(pcm: "default"), .headphones: RouteSettings(pcm: "default")]
        for name in InputName.allCases where name != .headphoneSwitch && name != .headphoneSense {
            configuration.inputs[name] = .terminal
        }
        let environment = Environment()
        configuration.control.socket = builtInSocket(environment)
        configuration.control.group = nil
        configuration.state.file = builtInStateFile(environment)
        configuration.output.fallbackWAV = builtInOutputFile(environment)
        configuration.alsaControls.enabled = false
        return configuration
    }

    /// What the built-in default reads from the process's environment (a value so tests can give their own).
    struct Environment {
        var runtimeDirectory: String?
        var home: String?
        var uid: UInt32
        var isWritable: (String) -> Bool

        init(
            runtimeDirectory: String? = Self.variable("XDG_RUNTIME_DIR"),
            home: String? = Self.variable("HOME"),
            uid: UInt32 = getuid(),
            isWritable: @escaping (String) -> Bool = { access($0, W_OK) == 0 }
        ) {
            self.runtimeDirectory = runtimeDirectory
            self.home = home
            self.uid = uid
            self.isWritable = isWritable
        }

        static func variable(_ name: String) -> String? { ControlSocketLocation.absoluteVariable(name) }
    }

    /// The rule is ``ControlSocketLocation``'s, the one hushctl follows to find this socket.
    static func builtInSocket(_ environment: Environment) -> String {
        ControlSocketLocation(
            runtimeDirectory: environment.runtimeDirectory,
            uid: environment.uid,
            isWritable: environment.isWritable
        ).daemonSocket
    }

    static func builtInStateFile(_ environment: Environment) -> String {
        if let home = environment.home, environment.isWritable(home) { return home + "/.local/state/hush/state" }
        return "/tmp/hush-\(environment.uid)-state"
    }

    /// The WAV fallback's file, beside the state file: the person's own, kept across runs, and out of the checkout.
    static func builtInOutputFile(_ environment: Environment) -> String {
        if let home = environment.home, environment.isWritable(home) {
            return home + "/.local/state/hush/hushd-output.wav"
        }
        return "/tmp/hush-\(environment.uid)-output.wav"
    }
}
