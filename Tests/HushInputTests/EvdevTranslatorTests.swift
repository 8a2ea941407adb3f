import HushCore
import HushInput
import Logging
import Testing

#if canImport(Glibc)
import Glibc
#endif

// Device behaviour (uinput, SYN_DROPPED, hot-plug) is checked on real drivers in the virtual board
// (hush-vboard-check evdev-*); here, the translation logic and what needs no device.
@Suite("evdev translation")
struct EvdevTranslatorTests {
    static let key = EvdevCode.keyType
    static let sw = EvdevCode.switchType

    @Test("volume keys report press and release; the kernel's auto-repeat is dropped")
    func volumeKeys() {
        var translator = defaultTranslator()
        let volumeUp = EvdevCode.volumeUp.code
        #expect(translator.translate(type: Self.key, code: volumeUp, value: 1) == .volumeButton(.up, .press))
        #expect(translator.translate(type: Self.key, code: volumeUp, value: 2) == nil)
        #expect(translator.translate(type: Self.key, code: volumeUp, value: 0) == .volumeButton(.up, .release))
    }

    @Test(
        "media keys report on press only",
        arguments: [
            (EvdevCode.playPause, MediaKey.playPause), (.nextSong, .next), (.previousSong, .previous), (.play, .play),
            (.pause, .pause),
        ]
    )
    func mediaKeys(code: EvdevCode, key: MediaKey) {
        var translator = defaultTranslator()
        #expect(translator.translate(type: code.type, code: code.code, value: 1) == .mediaKey(key))
        #expect(translator.translate(type: code.type, code: code.code, value: 2) == nil)
        #expect(translator.translate(type: code.type, code: code.code, value: 0) == nil)
    }

    @Test("the mute key flips the silence position on each press")
    func muteKey() {
        var translator = defaultTranslator()
        let mute = EvdevCode.mute.code
        #expect(translator.translate(type: Self.key, code: mute, value: 1) == .silenceSwitch(.silent))
        #expect(translator.translate(type: Self.key, code: mute, value: 0) == nil)
        #expect(translator.translate(type: Self.key, code: mute, value: 1) == .silenceSwitch(.ring))
    }

    @Test("the headphone switch and a configured silence switch report positions")
    func switches() {
        var translator = EvdevEventTranslator(roles: [
            .headphoneInsert: .headphoneSwitch, .muteDevice: .silenceSwitch(silentValue: 1),
        ])
        #expect(
            translator.translate(type: Self.sw, code: EvdevCode.headphoneInsert.code, value: 1)
                == .headphones(.plugged, source: .evdev)
        )
        #expect(
            translator.translate(type: Self.sw, code: EvdevCode.headphoneInsert.code, value: 0)
                == .headphones(.unplugged, source: .evdev)
        )
        #expect(
            translator.translate(type: Self.sw, code: EvdevCode.muteDevice.code, value: 1) == .silenceSwitch(.silent)
        )
        #expect(translator.translate(type: Self.sw, code: EvdevCode.muteDevice.code, value: 0) == .silenceSwitch(.ring))
        #expect(translator.switchState(.silenceSwitch(silentValue: 0), value: 0) == .silenceSwitch(.silent))
        #expect(translator.switchState(.volumeButton(.up), value: 1) == nil)
    }

    @Test("codes without a role mean nothing")
    func unmapped() {
        var translator = defaultTranslator()
        #expect(translator.translate(type: Self.key, code: EvdevCode(name: "KEY_A")!.code, value: 1) == nil)
        #expect(translator.translate(type: Self.sw, code: EvdevCode.muteDevice.code, value: 1) == nil)
    }

    @Test("a resynchronisation's deltas arrive like any event: a release lost in a drop is still reported")
    func resyncDeltas() {
        // libevdev's sync mode replays the difference between its state and the kernel's as ordinary events.
        var translator = defaultTranslator()
        let press = translator.translate(type: Self.key, code: EvdevCode.volumeDown.code, value: 1)
        let syncedRelease = translator.translate(type: Self.key, code: EvdevCode.volumeDown.code, value: 0)
        #expect(press == .volumeButton(.down, .press))
        #expect(syncedRelease == .volumeButton(.down, .release))
    }

    @Test("opening a path that does not exist says so")
    func missingPath() {
        #expect {
            _ = try EvdevInputSource(
                EvdevInputConfiguration(device: .path("/nonexistent/event7"), watchDirectory: "/tmp"),
                logger: Logger(label: "test")
            )
        } throws: { error in
            (error as? HardwareError)?.description
                == "cannot open input device /nonexistent/event7: no such input device [errno 2]"
        }
    }

    @Test("an optional device that is missing does not stop start-up")
    func optionalMissing() throws {
        let source = try EvdevInputSource(
            EvdevInputConfiguration(device: .name("not-here"), optional: true, watchDirectory: "/tmp"),
            logger: Logger(label: "test")
        )
        #expect(source.openPath == nil)
        #expect(try source.currentState(now: .zero).isEmpty)
        #expect(try source.readEvents(now: .zero).isEmpty)
    }

    @Test("uinput without the module is a clear error", .enabled(if: access("/dev/uinput", F_OK) != 0))
    func noUinput() throws {
        #expect {
            _ = try UInputDevice(name: "x", codes: [.volumeUp])
        } throws: { error in
            (error as? HardwareError)?.message == "no /dev/uinput: load the uinput module (modprobe uinput)"
        }
    }
}

/// The default mapping.
private func defaultTranslator() -> EvdevEventTranslator {
    EvdevEventTranslator(roles: EvdevEventTranslator.defaultRoles)
}
