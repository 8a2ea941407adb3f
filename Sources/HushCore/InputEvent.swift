/// The silence switch's two positions (the iPhone's Ring/Silent switch).
public enum SilenceSwitchPosition: String, Sendable, Hashable, CustomStringConvertible {
    /// Sound as usual.
    case ring
    /// Silence non-essential sound and ringtones (policy R1).
    case silent

    public var description: String { rawValue }
}

/// The microphone privacy switch's two positions (a laptop's or a smart speaker's microphone-off switch).
public enum MicrophoneSwitchPosition: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// The microphone may be heard, by the sessions the policy lets hear it.
    case live
    /// No client hears the microphone, whatever it asks (policy R21).
    case muted

    public var description: String { rawValue }
}

/// What reported the microphone privacy switch: the board's switch (a GPIO line, an evdev switch such as
/// SW_MUTE_DEVICE), or a person at the console.
public enum MicrophoneSwitchSource: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case gpio, evdev, console

    /// Whether this is the board's own switch, which the console cannot overrule (R21).
    public var isBoard: Bool { self != .console }
    public var description: String { rawValue }
}

/// A volume button.
public enum VolumeButton: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case up, down

    /// One step in this button's direction.
    public var delta: Int { self == .up ? 1 : -1 }
    public var description: String { "volume \(rawValue)" }
}

/// A button edge. Holding is a press not yet released: the policy repeats it itself (policy R3), whatever the
/// kernel's auto-repeat does.
public enum ButtonTransition: String, Sendable, Hashable, CustomStringConvertible {
    case press, release
    public var description: String { rawValue }
}

/// A media key (evdev KEY_PLAYPAUSE, KEY_NEXTSONG, KEY_PREVIOUSSONG; also KEY_PLAY and KEY_PAUSE).
public enum MediaKey: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case playPause, play, pause, next, previous
    public var description: String { rawValue }
}

/// Whether something is in the headphone jack.
public enum JackState: String, Sendable, Hashable, CustomStringConvertible {
    case plugged, unplugged
    public var description: String { rawValue }
}

/// What reported the headphone jack: an ALSA control such as "Headphone Jack", evdev SW_HEADPHONE_INSERT,
/// a GPIO sense line, or a person at the console.
public enum JackSource: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case alsaControl, evdev, gpio, console
    public var description: String { rawValue }
}

/// Something that happened on the device's physical controls, as an adapter reports it.
public enum InputEvent: Hashable, Sendable, CustomStringConvertible {
    case silenceSwitch(SilenceSwitchPosition)
    case volumeButton(VolumeButton, ButtonTransition)
    case mediaKey(MediaKey)
    case headphones(JackState, source: JackSource)
    /// The microphone privacy switch moved (evdev SW_MUTE_DEVICE, a GPIO line), or a person at the console moved
    /// its stand-in.
    case microphoneSwitch(MicrophoneSwitchPosition, source: MicrophoneSwitchSource)

    public var description: String {
        switch self {
        case .silenceSwitch(let position): "silence switch \(position)"
        case .volumeButton(let button, let transition): "\(button) \(transition)"
        case .mediaKey(let key): "media key \(key)"
        case .headphones(let state, let source): "headphones \(state) (reported by \(source))"
        case .microphoneSwitch(let position, let source): "microphone switch \(position) (reported by \(source))"
        }
    }
}

/// An input event with the time it happened (the kernel's timestamp where there is one).
public struct TimedInputEvent: Hashable, Sendable, CustomStringConvertible {
    public var time: Instant
    public var event: InputEvent
    public init(_ event: InputEvent, at time: Instant) {
        self.event = event
        self.time = time
    }
    public var description: String { "\(time) \(event)" }
}
