import HushCore
import HushInput
import Testing

// Device behaviour (uinput, SYN_DROPPED provoked by a flood, hot-plug) is checked on real drivers in the virtual
// board (hush-vboard-check evdev-*); here, the translation logic, which needs no device.
@Suite("evdev translation")
struct EvdevTranslatorTests {
    static let key = EvdevCode.keyType
    static let sw = EvdevCode.switchType
    static let synReport = EvdevCode(type: 0, code: 0)

    @Test("volume keys report press and release; the kernel's auto-repeat is dropped (R3)")
    func volumeKeys() {
        var translator = defaultTranslator()
        #expect(translator.translate(.volumeUp, value: 1) == .volumeButton(.up, .press))
        #expect(translator.translate(.volumeUp, value: 2) == nil)
        #expect(translator.translate(.volumeUp, value: 2) == nil)
        #expect(translator.translate(.volumeUp, value: 0) == .volumeButton(.up, .release))
        #expect(
            translator.translate(type: Self.key, code: EvdevCode.volumeDown.code, value: 1)
                == .volumeButton(.down, .press)
        )
        #expect(translator.heldKeys == [.volumeDown])
    }

    @Test("a volume key held before hush was watching is reported neither pressed nor released")
    func heldAtStart() {
        var translator = defaultTranslator()
        #expect(translator.translate(.volumeDown, value: 2) == nil)
        #expect(translator.translate(.volumeDown, value: 0) == nil)
        #expect(translator.translate(.volumeDown, value: 1) == .volumeButton(.down, .press))
        #expect(translator.translate(.volumeDown, value: 1) == nil, "a second press without a release is not news")
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
        #expect(translator.translate(code, value: 1) == .mediaKey(key))
        #expect(translator.translate(code, value: 2) == nil)
        #expect(translator.translate(code, value: 0) == nil)
        #expect(translator.translate(code, value: 1) == .mediaKey(key))
    }

    @Test("the mute key is push on, push off: each press flips the silence position, starting from ring")
    func muteKey() {
        var translator = defaultTranslator()
        #expect(translator.mutePosition == .ring)
        #expect(translator.translate(.mute, value: 1) == .silenceSwitch(.silent))
        #expect(translator.translate(.mute, value: 2) == nil)
        #expect(translator.translate(.mute, value: 0) == nil)
        #expect(translator.translate(.mute, value: 1) == .silenceSwitch(.ring))
        #expect(translator.translate(.mute, value: 0) == nil)
        #expect(translator.translate(.mute, value: 1) == .silenceSwitch(.silent))
        #expect(translator.mutePosition == .silent)
    }

    @Test("the headphone switch reports plugged and unplugged, from evdev")
    func headphoneSwitch() {
        var translator = defaultTranslator()
        #expect(translator.translate(.headphoneInsert, value: 1) == .headphones(.plugged, source: .evdev))
        #expect(translator.translate(.headphoneInsert, value: 0) == .headphones(.unplugged, source: .evdev))
        #expect(translator.reportedSwitches == [.headphoneInsert: 0])
    }

    @Test(
        "a silence switch's active value means silent",
        arguments: [(Int32(1), Int32(1), SilenceSwitchPosition.silent), (1, 0, .ring), (0, 0, .silent), (0, 1, .ring)]
    )
    func silenceSwitch(activeValue: Int32, value: Int32, position: SilenceSwitchPosition) {
        var translator = EvdevEventTranslator(
            roles: EvdevInputConfiguration(
                device: .name("x"),
                silenceSwitch: .muteDevice,
                silenceActiveValue: activeValue
            )
            .roles
        )
        #expect(
            translator.translate(type: Self.sw, code: EvdevCode.muteDevice.code, value: value)
                == .silenceSwitch(position)
        )
        #expect(
            EvdevEventTranslator.position(.silenceSwitch(activeValue: activeValue), value: value)
                == .silenceSwitch(position)
        )
    }

    @Test("codes without a role, and synchronisation events, mean nothing")
    func unmapped() throws {
        var translator = defaultTranslator()
        #expect(translator.translate(try #require(EvdevCode(name: "KEY_A")), value: 1) == nil)
        #expect(translator.translate(.muteDevice, value: 1) == nil, "no silence switch is configured by default")
        #expect(translator.translate(type: 0, code: 0, value: 0) == nil)  // EV_SYN SYN_REPORT
        #expect(translator.translate(type: 0, code: 3, value: 0) == nil)  // EV_SYN SYN_DROPPED
        #expect(EvdevEventTranslator.position(.volumeButton(.up), value: 1) == nil)
    }

    @Test("the state at start-up is every switch the device has, in code order; keys are not reported")
    func currentState() {
        var translator = EvdevEventTranslator(
            roles: EvdevInputConfiguration(device: .name("x"), silenceSwitch: .muteDevice).roles
        )
        #expect(translator.switchCodes == [.headphoneInsert, .muteDevice])
        let state = translator.currentState(switchValues: [.muteDevice: 1, .headphoneInsert: 1, .volumeUp: 1])
        #expect(state == [.headphones(.plugged, source: .evdev), .silenceSwitch(.silent)])
        #expect(translator.currentState(switchValues: [:]).isEmpty, "switches the device lacks are not reported")
    }

    @Test("after SYN_DROPPED, a release lost in the drop is still reported, and the final switch state is right")
    func resynchronisation() {
        var translator = EvdevEventTranslator(
            roles: EvdevInputConfiguration(device: .name("x"), silenceSwitch: .muteDevice).roles
        )
        _ = translator.currentState(switchValues: [.headphoneInsert: 0, .muteDevice: 0])
        #expect(translator.translate(.volumeUp, value: 1) == .volumeButton(.up, .press))
        // The kernel's buffer overflows: the release and a burst of jack flips are dropped. libevdev replays the
        // difference between what was read and the device's state, in sync mode, as ordinary events.
        let replayed: [(EvdevCode, Int32)] = [(.volumeUp, 0), (.headphoneInsert, 1)]
        let events = replayed.compactMap { translator.translate($0.0, value: $0.1) }
        #expect(events == [.volumeButton(.up, .release), .headphones(.plugged, source: .evdev)])
        #expect(translator.heldKeys.isEmpty)
        // The final positions: what was replayed is not reported twice; a switch whose change was not replayed is.
        #expect(
            translator.resynchronised(switchValues: [.headphoneInsert: 1, .muteDevice: 1]) == [.silenceSwitch(.silent)]
        )
        #expect(translator.resynchronised(switchValues: [.headphoneInsert: 1, .muteDevice: 1]).isEmpty)
    }

    @Test("a key pressed during a drop and still held arrives as a press, and its release later")
    func pressedDuringDrop() {
        var translator = defaultTranslator()
        #expect(translator.translate(.volumeDown, value: 1) == .volumeButton(.down, .press))  // replayed
        #expect(translator.resynchronised(switchValues: [:]).isEmpty)
        #expect(translator.translate(.volumeDown, value: 2) == nil)
        #expect(translator.translate(.volumeDown, value: 0) == .volumeButton(.down, .release))
    }

    @Test("reading: SYN_DROPPED switches to sync mode until the replay is over, then normal reading goes on")
    func drainAcrossDrop() {
        var translator = defaultTranslator()
        _ = translator.currentState(switchValues: [.headphoneInsert: 0])
        let script: [(EvdevReadMode, EvdevReadResult)] = [
            (.normal, .event(.volumeUp, value: 1, time: .milliseconds(10))),
            (.normal, .event(Self.synReport, value: 0, time: .milliseconds(10))),
            (.normal, .dropped(time: .milliseconds(50))),
            // The release and the plug happened in the flood; libevdev replays them, stamped with the drop's time.
            (.sync, .event(.volumeUp, value: 0, time: .milliseconds(50))),
            (.sync, .event(.headphoneInsert, value: 1, time: .milliseconds(50))),
            (.sync, .event(Self.synReport, value: 0, time: .milliseconds(50))),
            (.sync, .exhausted),
            (.normal, .event(.nextSong, value: 1, time: .milliseconds(60))),
            (.normal, .exhausted),
        ]
        var modes: [EvdevReadMode] = []
        let result = translator.drain(
            budget: 100,
            read: { mode in
                modes.append(mode)
                return modes.count <= script.count ? script[modes.count - 1].1 : .exhausted
            },
            switchValues: { [.headphoneInsert: 1] }
        )
        #expect(modes == script.map(\.0))
        #expect(
            result.events == [
                TimedInputEvent(.volumeButton(.up, .press), at: .milliseconds(10)),
                TimedInputEvent(.volumeButton(.up, .release), at: .milliseconds(50)),
                TimedInputEvent(.headphones(.plugged, source: .evdev), at: .milliseconds(50)),
                TimedInputEvent(.mediaKey(.next), at: .milliseconds(60)),
            ]
        )
        #expect(result.resynchronisations == [3])
        #expect(result.failure == nil)
    }

    @Test("reading: a switch whose change the replay did not carry is reported at its final position")
    func drainFinalSwitchState() {
        var translator = defaultTranslator()
        _ = translator.currentState(switchValues: [.headphoneInsert: 1])
        let script: [EvdevReadResult] = [.dropped(time: .milliseconds(5)), .exhausted, .exhausted]
        var reads = 0
        let result = translator.drain(
            budget: 100,
            read: { _ in
                reads += 1
                return script[min(reads, script.count) - 1]
            },
            switchValues: { [.headphoneInsert: 0] }
        )
        #expect(result.events == [TimedInputEvent(.headphones(.unplugged, source: .evdev), at: .milliseconds(5))])
        #expect(result.resynchronisations == [0])
    }

    @Test("reading stops after the budget in normal mode, but always finishes a resynchronisation")
    func drainBudget() {
        var translator = defaultTranslator()
        var reads = 0
        let endless = translator.drain(
            budget: 5,
            read: { _ in
                reads += 1
                return .event(Self.synReport, value: 0, time: .zero)
            },
            switchValues: { [:] }
        )
        #expect(reads == 5 && endless.events.isEmpty && endless.failure == nil)
        let script: [EvdevReadResult] = [
            .event(.playPause, value: 1, time: .zero), .dropped(time: .zero),
            .event(Self.synReport, value: 0, time: .zero), .event(Self.synReport, value: 0, time: .zero), .exhausted,
            .event(.nextSong, value: 1, time: .zero), .event(.previousSong, value: 1, time: .zero),
        ]
        reads = 0
        let result = translator.drain(
            budget: 2,
            read: { _ in
                reads += 1
                return script[reads - 1]
            },
            switchValues: { [:] }
        )
        #expect(result.events.map(\.event) == [.mediaKey(.playPause), .mediaKey(.next)])
        #expect(result.resynchronisations == [2])
        #expect(reads == 6)
    }

    @Test("reading stops at a failure, keeping what was read before it")
    func drainFailure() {
        var translator = defaultTranslator()
        let script: [EvdevReadResult] = [.event(.volumeDown, value: 1, time: .milliseconds(1)), .failed(errno: 19)]
        var reads = 0
        let result = translator.drain(
            budget: 100,
            read: { _ in
                reads += 1
                return script[reads - 1]
            },
            switchValues: { [:] }
        )
        #expect(result.events.map(\.event) == [.volumeButton(.down, .press)])
        #expect(result.failure == 19)
        #expect(translator.deviceLost() == [.volumeButton(.down, .release)])
    }

    @Test("a device that disappears releases the volume buttons still held, once")
    func deviceLost() {
        var translator = defaultTranslator()
        _ = translator.translate(.volumeUp, value: 1)
        _ = translator.translate(.volumeDown, value: 1)
        _ = translator.translate(.playPause, value: 1)
        #expect(translator.deviceLost() == [.volumeButton(.down, .release), .volumeButton(.up, .release)])
        #expect(translator.deviceLost().isEmpty)
        #expect(translator.translate(.volumeUp, value: 0) == nil)
    }

    @Test("a device that comes back reports its switches again, forgets held keys and keeps the mute position")
    func deviceReopened() {
        var translator = defaultTranslator()
        _ = translator.translate(.mute, value: 1)
        _ = translator.translate(.headphoneInsert, value: 0)
        _ = translator.deviceLost()
        #expect(
            translator.deviceOpened(switchValues: [.headphoneInsert: 0]) == [.headphones(.unplugged, source: .evdev)]
        )
        #expect(translator.translate(.volumeUp, value: 0) == nil, "held when it came back: not reported")
        #expect(translator.translate(.mute, value: 1) == .silenceSwitch(.ring))
    }

    @Test("the default key map, and a silence switch that replaces the mute key")
    func configurationRoles() {
        let defaults = EvdevInputConfiguration(device: .path("/dev/input/event3"))
        #expect(defaults.grab == false && defaults.optional == false && defaults.silenceSwitch == nil)
        #expect(defaults.silenceActiveValue == 1 && defaults.watchDirectory == "/dev/input")
        #expect(defaults.retryInterval == .milliseconds(100))
        let expected: [String: EvdevRole] = [
            "KEY_VOLUMEUP": .volumeButton(.up), "KEY_VOLUMEDOWN": .volumeButton(.down),
            "KEY_PLAYPAUSE": .mediaKey(.playPause), "KEY_PLAY": .mediaKey(.play), "KEY_PAUSE": .mediaKey(.pause),
            "KEY_NEXTSONG": .mediaKey(.next), "KEY_PREVIOUSSONG": .mediaKey(.previous), "KEY_MUTE": .muteKey,
            "SW_HEADPHONE_INSERT": .headphoneSwitch,
        ]
        #expect(Dictionary(uniqueKeysWithValues: defaults.roles.map { ($0.key.name, $0.value) }) == expected)
        let withSwitch = EvdevInputConfiguration(device: .name("x"), silenceSwitch: .muteDevice, silenceActiveValue: 0)
        #expect(withSwitch.roles[.muteDevice] == .silenceSwitch(activeValue: 0))
        #expect(withSwitch.roles[.mute] == nil, "a push-on/push-off key cannot share the silence state with a switch")
        #expect(withSwitch.roles.count == expected.count)
    }
}

/// The default mapping.
private func defaultTranslator() -> EvdevEventTranslator {
    EvdevEventTranslator(roles: EvdevInputConfiguration.defaultKeyMap)
}
