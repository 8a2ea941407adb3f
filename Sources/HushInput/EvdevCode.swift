import CEvdev

/// An evdev event type and code, such as EV_KEY/KEY_VOLUMEUP or EV_SW/SW_HEADPHONE_INSERT.
///
/// Configuration names codes by their kernel names; logs print them the same way.
public struct EvdevCode: Hashable, Sendable, Comparable, CustomStringConvertible {
    package let type: UInt32
    package let code: UInt32

    package init(type: UInt32, code: UInt32) {
        self.type = type
        self.code = code
    }

    /// The code whose kernel name is `name` ("KEY_VOLUMEUP", "SW_HEADPHONE_INSERT", "BTN_0"), or nil.
    package init?(name: String) {
        let prefix = name.split(separator: "_", maxSplits: 1).first.map(String.init) ?? ""
        let type: Int32
        switch prefix {
        case "KEY", "BTN": type = EV_KEY
        case "SW": type = EV_SW
        default: return nil
        }
        let code = libevdev_event_code_from_name(UInt32(type), name)
        guard code >= 0 else { return nil }
        self.init(type: UInt32(type), code: UInt32(code))
    }

    /// EV_KEY and EV_SW, for callers that do not import the C module.
    package static let keyType = UInt32(EV_KEY)
    package static let switchType = UInt32(EV_SW)

    package static let play = EvdevCode(type: UInt32(EV_KEY), code: UInt32(KEY_PLAY))
    package static let pause = EvdevCode(type: UInt32(EV_KEY), code: UInt32(KEY_PAUSE))
    package static let muteDevice = EvdevCode(type: UInt32(EV_SW), code: UInt32(SW_MUTE_DEVICE))
    package static let volumeUp = EvdevCode(type: UInt32(EV_KEY), code: UInt32(KEY_VOLUMEUP))
    package static let volumeDown = EvdevCode(type: UInt32(EV_KEY), code: UInt32(KEY_VOLUMEDOWN))
    package static let mute = EvdevCode(type: UInt32(EV_KEY), code: UInt32(KEY_MUTE))
    package static let playPause = EvdevCode(type: UInt32(EV_KEY), code: UInt32(KEY_PLAYPAUSE))
    package static let nextSong = EvdevCode(type: UInt32(EV_KEY), code: UInt32(KEY_NEXTSONG))
    package static let previousSong = EvdevCode(type: UInt32(EV_KEY), code: UInt32(KEY_PREVIOUSSONG))
    package static let headphoneInsert = EvdevCode(type: UInt32(EV_SW), code: UInt32(SW_HEADPHONE_INSERT))

    /// The kernel's name for this code, e.g. "KEY_VOLUMEUP", or "type 1 code 999" when unknown.
    package var name: String {
        guard let cName = libevdev_event_code_get_name(type, code) else { return "type \(type) code \(code)" }
        return String(cString: cName)
    }

    public var description: String { name }

    /// Type first, then code: the order the kernel numbers them in.
    public static func < (a: EvdevCode, b: EvdevCode) -> Bool { (a.type, a.code) < (b.type, b.code) }
}
