import HushInput
import Testing

@Suite("evdev codes")
struct EvdevCodeTests {
    @Test(
        "kernel names parse to their type and code",
        arguments: [
            ("KEY_VOLUMEUP", UInt32(1), UInt32(115)), ("KEY_VOLUMEDOWN", 1, 114), ("KEY_MUTE", 1, 113),
            ("KEY_PLAYPAUSE", 1, 164), ("KEY_NEXTSONG", 1, 163), ("KEY_PREVIOUSSONG", 1, 165), ("KEY_PLAY", 1, 207),
            ("KEY_PAUSE", 1, 119), ("BTN_0", 1, 0x100), ("SW_HEADPHONE_INSERT", 5, 2), ("SW_MUTE_DEVICE", 5, 0x0e),
            ("SW_LID", 5, 0),
        ]
    )
    func parse(name: String, type: UInt32, code: UInt32) {
        #expect(EvdevCode(name: name) == EvdevCode(type: type, code: code))
        #expect(EvdevCode(type: type, code: code).name == name)
        #expect(EvdevCode(type: type, code: code).description == name)
    }

    @Test(
        "names hush cannot use are refused",
        arguments: ["KEY_NOT_A_KEY", "REL_X", "ABS_X", "EV_KEY", "key_volumeup", "KEY", "SW_", "", "115", " KEY_MUTE"]
    )
    func refused(name: String) {
        #expect(EvdevCode(name: name) == nil)
    }

    @Test("the named constants are the kernel's codes")
    func constants() {
        let named: [(EvdevCode, String)] = [
            (.volumeUp, "KEY_VOLUMEUP"), (.volumeDown, "KEY_VOLUMEDOWN"), (.mute, "KEY_MUTE"),
            (.playPause, "KEY_PLAYPAUSE"), (.play, "KEY_PLAY"), (.pause, "KEY_PAUSE"), (.nextSong, "KEY_NEXTSONG"),
            (.previousSong, "KEY_PREVIOUSSONG"), (.headphoneInsert, "SW_HEADPHONE_INSERT"),
            (.muteDevice, "SW_MUTE_DEVICE"),
        ]
        for (code, name) in named { #expect(EvdevCode(name: name) == code) }
        #expect(EvdevCode.keyType == 1 && EvdevCode.switchType == 5)
    }

    @Test("an unknown code is named by its numbers; codes sort by type, then code")
    func unknownAndOrder() {
        #expect(EvdevCode(type: 30, code: 1).name == "type 30 code 1")
        #expect(EvdevCode.volumeUp < EvdevCode.headphoneInsert)
        #expect(EvdevCode.mute < EvdevCode.volumeDown)
        #expect(
            [EvdevCode.muteDevice, .headphoneInsert, .volumeUp].sorted() == [.volumeUp, .headphoneInsert, .muteDevice]
        )
    }
}

/// Kernel names both ways, for the codes the board profiles use.
@Suite("evdev names")
struct EvdevNameTests {
    @Test(
        "evdev codes are found by their kernel names and print them",
        arguments: [
            ("KEY_VOLUMEUP", EvdevCode.volumeUp), ("KEY_VOLUMEDOWN", .volumeDown), ("KEY_PLAYPAUSE", .playPause),
            ("SW_HEADPHONE_INSERT", .headphoneInsert), ("KEY_NEXTSONG", .nextSong),
        ]
    )
    func evdevNames(name: String, code: EvdevCode) {
        #expect(EvdevCode(name: name) == code)
        #expect(code.name == name)
    }

    @Test("unknown evdev names are nil")
    func unknownEvdev() {
        #expect(EvdevCode(name: "KEY_NOT_A_KEY") == nil)
        #expect(EvdevCode(name: "REL_X") == nil)
        #expect(EvdevCode(type: 30, code: 1).name == "type 30 code 1")
    }
}
