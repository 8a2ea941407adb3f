import HushCore

/// What an evdev code means to hush.
public enum EvdevRole: Hashable, Sendable, CustomStringConvertible {
    /// KEY_VOLUMEUP, KEY_VOLUMEDOWN: press and release (hush repeats held buttons itself, policy R3).
    case volumeButton(VolumeButton)
    /// A media key, reported on press.
    case mediaKey(MediaKey)
    /// A momentary mute key (KEY_MUTE): each press flips the silence switch position, push on / push off.
    /// For boards whose only silence control is such a key; do not combine it with a silence switch.
    case muteKey
    /// SW_HEADPHONE_INSERT or similar: 1 = plugged.
    case headphoneSwitch
    /// A switch (e.g. SW_MUTE_DEVICE from a gpio-keys overlay) whose value `silentValue` means silent.
    case silenceSwitch(silentValue: Int32)

    /// Whether the code is a switch (EV_SW) whose position is read at start-up and after a reconnect.
    public var isSwitch: Bool {
        switch self {
        case .headphoneSwitch, .silenceSwitch: true
        default: false
        }
    }

    public var description: String {
        switch self {
        case .volumeButton(let button): "\(button) button"
        case .mediaKey(let key): "\(key) key"
        case .muteKey: "mute key"
        case .headphoneSwitch: "headphone switch"
        case .silenceSwitch: "silence switch"
        }
    }
}

/// Turns evdev events into hush input events. Pure, so it is tested without a device.
///
/// Kernel auto-repeat (EV_KEY value 2) is dropped: hush repeats held volume buttons on its own schedule
/// (policy R3). Events that libevdev synthesises while resynchronising after SYN_DROPPED go through here like any
/// other, so a release lost in a drop still arrives and the final switch positions are reported.
public struct EvdevEventTranslator: Hashable, Sendable {
    public let roles: [EvdevCode: EvdevRole]
    /// The position the mute key last set.
    public private(set) var mutePosition: SilenceSwitchPosition = .ring

    public init(roles: [EvdevCode: EvdevRole]) { self.roles = roles }

    /// The default mapping: volume keys, media keys, the mute key and the headphone switch.
    public static let defaultRoles: [EvdevCode: EvdevRole] = [
        .volumeUp: .volumeButton(.up), .volumeDown: .volumeButton(.down), .playPause: .mediaKey(.playPause),
        .play: .mediaKey(.play), .pause: .mediaKey(.pause), .nextSong: .mediaKey(.next),
        .previousSong: .mediaKey(.previous), .mute: .muteKey, .headphoneInsert: .headphoneSwitch,
    ]

    /// The hush event for one evdev event, or nil when it means nothing to hush.
    public mutating func translate(type: UInt32, code: UInt32, value: Int32) -> InputEvent? {
        guard let role = roles[EvdevCode(type: type, code: code)] else { return nil }
        if type == EvdevCode.keyType && value == 2 { return nil }
        return event(role, value: value)
    }

    /// The event a switch in position `value` reports (start-up, reconnect), or nil for keys.
    public func switchState(_ role: EvdevRole, value: Int32) -> InputEvent? {
        switch role {
        case .headphoneSwitch: .headphones(value != 0 ? .plugged : .unplugged, source: .evdev)
        case .silenceSwitch(let silentValue): .silenceSwitch(value == silentValue ? .silent : .ring)
        default: nil
        }
    }

    private mutating func event(_ role: EvdevRole, value: Int32) -> InputEvent? {
        switch role {
        case .volumeButton(let button):
            return .volumeButton(button, value != 0 ? .press : .release)
        case .mediaKey(let key):
            return value == 1 ? .mediaKey(key) : nil
        case .muteKey:
            guard value == 1 else { return nil }
            mutePosition = mutePosition == .ring ? .silent : .ring
            return .silenceSwitch(mutePosition)
        case .headphoneSwitch, .silenceSwitch:
            return switchState(role, value: value)
        }
    }
}
