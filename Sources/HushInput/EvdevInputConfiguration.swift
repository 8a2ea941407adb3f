import HushCore

/// Which input device: a node path, or the name the kernel gives the device ("gpio-keys", "hush-controls").
public enum EvdevDeviceSelector: Hashable, Sendable, CustomStringConvertible {
    /// A device node such as "/dev/input/event3" (or a stable link such as "/dev/input/by-path/…").
    case path(String)
    /// The device whose name (EVIOCGNAME, as `evtest` prints it) is this; the first /dev/input/event* node that
    /// matches is opened.
    case name(String)

    public var description: String {
        switch self {
        case .path(let path): path
        case .name(let name): "'\(name)'"
        }
    }
}

/// One evdev input device and what its keys and switches mean.
public struct EvdevInputConfiguration: Hashable, Sendable {
    /// The device to read.
    package var device: EvdevDeviceSelector
    /// Take the device for hush alone (EVIOCGRAB), so that no other program (a console, a desktop) also acts on its
    /// keys.
    package var grab: Bool
    /// What each key or switch means; codes not in the map are ignored.
    package var keyMap: [EvdevCode: EvdevRole]
    /// The switch that is the silence switch (for example SW_MUTE_DEVICE from a gpio-keys overlay), or nil.
    package var silenceSwitch: EvdevCode?
    /// The silence switch value that means silent.
    package var silenceActiveValue: Int32
    /// Start even when the device is absent, and open it when it appears. Otherwise a missing device stops start-up.
    package var optional: Bool
    /// Where device nodes appear and disappear; devices are looked up by name here.
    package var watchDirectory: String
    /// How soon to try again when a node appeared but could not be opened yet: udev sets its owner and mode just
    /// after the kernel creates it.
    package var retryInterval: Duration

    /// The default key map: volume keys, media keys, the mute key (push on / push off) and the headphone switch.
    package static let defaultKeyMap: [EvdevCode: EvdevRole] = [
        .volumeUp: .volumeButton(.up), .volumeDown: .volumeButton(.down), .playPause: .mediaKey(.playPause),
        .play: .mediaKey(.play), .pause: .mediaKey(.pause), .nextSong: .mediaKey(.next),
        .previousSong: .mediaKey(.previous), .mute: .muteKey, .headphoneInsert: .headphoneSwitch,
    ]

    package init(
        device: EvdevDeviceSelector,
        grab: Bool = false,
        keyMap: [EvdevCode: EvdevRole] = defaultKeyMap,
        silenceSwitch: EvdevCode? = nil,
        silenceActiveValue: Int32 = 1,
        optional: Bool = false,
        watchDirectory: String = "/dev/input",
        retryInterval: Duration = .milliseconds(100)
    ) {
        self.device = device
        self.grab = grab
        self.keyMap = keyMap
        self.silenceSwitch = silenceSwitch
        self.silenceActiveValue = silenceActiveValue
        self.optional = optional
        self.watchDirectory = watchDirectory
        self.retryInterval = retryInterval
    }

    /// The roles in effect: ``keyMap`` plus the ``silenceSwitch``.
    ///
    /// With a silence switch configured, mute keys are dropped: the switch's position and a push-on/push-off key
    /// cannot both own the silence state (the key would flip it away from where the switch stands).
    package var roles: [EvdevCode: EvdevRole] {
        guard let silenceSwitch else { return keyMap }
        var roles = keyMap.filter { $0.value != .muteKey }
        roles[silenceSwitch] = .silenceSwitch(activeValue: silenceActiveValue)
        return roles
    }
}
