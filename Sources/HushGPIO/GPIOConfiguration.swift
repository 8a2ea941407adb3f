import HushCore

/// Which line on a chip: by offset, or by the name the device tree gave it.
public enum GPIOLineSelector: Hashable, Sendable, CustomStringConvertible {
    case offset(UInt32)
    case name(String)

    public var description: String {
        switch self {
        case .offset(let offset): "line \(offset)"
        case .name(let name): "line '\(name)'"
        }
    }
}

/// The pull resistor to ask for. Where the kernel or the pin controller cannot set it, the board needs an
/// external resistor (see docs/wiring.md).
public enum GPIOBias: String, Hashable, Sendable, CaseIterable {
    case asIs = "as-is"
    case disabled
    case pullUp = "pull-up"
    case pullDown = "pull-down"
}

/// What a GPIO input means to hush.
package enum GPIOInputRole: Hashable, Sendable, CustomStringConvertible {
    /// Active = silent.
    case silenceSwitch
    /// Active = pressed.
    case volumeButton(VolumeButton)
    /// Active = pressed; reported on press.
    case mediaKey(MediaKey)
    /// Active = headphones plugged.
    case headphoneSense
    /// Active = the microphone privacy switch is on: no client hears the microphone (policy R21).
    case microphoneSwitch

    /// The input event for the line being `active`, or nil when that edge means nothing (a media key's release).
    package func event(active: Bool) -> InputEvent? {
        switch self {
        case .silenceSwitch: .silenceSwitch(active ? .silent : .ring)
        case .volumeButton(let button): .volumeButton(button, active ? .press : .release)
        case .mediaKey(let key): active ? .mediaKey(key) : nil
        case .headphoneSense: .headphones(active ? .plugged : .unplugged, source: .gpio)
        case .microphoneSwitch: .microphoneSwitch(active ? .muted : .live, source: .gpio)
        }
    }

    /// Whether the line's position at start-up is reported (switches and jack), or not (buttons).
    package var reportsInitialState: Bool {
        switch self {
        case .silenceSwitch, .headphoneSense, .microphoneSwitch: true
        case .volumeButton, .mediaKey: false
        }
    }

    package var description: String {
        switch self {
        case .silenceSwitch: "silence switch"
        case .volumeButton(let button): "\(button) button"
        case .mediaKey(let key): "\(key) key"
        case .headphoneSense: "headphone sense"
        case .microphoneSwitch: "microphone privacy switch"
        }
    }
}

/// One GPIO input: where it is, how it is wired, what it means.
public struct GPIOInputConfiguration: Hashable, Sendable {
    /// The chip: a name ("gpiochip0"), number ("0"), path ("/dev/gpiochip0") or label ("pinctrl-bcm2711").
    package var chip: String
    package var line: GPIOLineSelector
    package var role: GPIOInputRole
    /// Active when the line is low (a switch to ground with a pull-up): the usual wiring on a Pi.
    package var activeLow: Bool
    package var bias: GPIOBias
    package var debounce: Duration
    /// The consumer name the kernel shows for the line (gpioinfo).
    package var consumer: String

    package init(
        chip: String,
        line: GPIOLineSelector,
        role: GPIOInputRole,
        activeLow: Bool = true,
        bias: GPIOBias = .pullUp,
        debounce: Duration = .milliseconds(10),
        consumer: String = "hushd"
    ) {
        self.chip = chip
        self.line = line
        self.role = role
        self.activeLow = activeLow
        self.bias = bias
        self.debounce = debounce
        self.consumer = consumer
    }
}
