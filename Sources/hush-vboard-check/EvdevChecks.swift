import HushCore
import HushInput
import HushPolicy
import HushTesting

func keysSource(grab: Bool = false) throws -> EvdevInputSource {
    try EvdevInputSource(EvdevInputConfiguration(device: .name(keysName), grab: grab), logger: logger)
}

let evdevChecks: [Check] = [
    Check(name: "evdev-keys-and-switch") {
        let keys = try UInputDevice(name: keysName, codes: keyCodes)
        settle()
        let source = try keysSource(grab: true)
        try keys.key(.volumeUp, pressed: true)
        try keys.key(.volumeUp, pressed: false)
        try keys.key(.playPause, pressed: true)
        try keys.key(.playPause, pressed: false)
        try keys.key(.nextSong, pressed: true)
        try keys.key(.nextSong, pressed: false)
        try keys.emit(.headphoneInsert, value: 1)
        try keys.sync()
        let events = try drain(source).map(\.event)
        let expected: [InputEvent] = [
            .volumeButton(.up, .press), .volumeButton(.up, .release), .mediaKey(.playPause), .mediaKey(.next),
            .headphones(.plugged, source: .evdev),
        ]
        try require(events == expected, "got \(events)")
    },
    Check(name: "evdev-switch-read-at-start") {
        for plugged: Int32 in [1, 0] {
            let keys = try UInputDevice(name: keysName, codes: keyCodes, switches: [.headphoneInsert: plugged])
            settle()
            let source = try keysSource()
            let state = try source.currentState(now: monotonicNow()).map(\.event)
            try require(
                state == [.headphones(plugged == 1 ? .plugged : .unplugged, source: .evdev)],
                "switch \(plugged) at start read as \(state)"
            )
            keys.destroy()
            settle()
        }
    },
    Check(name: "evdev-hold-repeats-per-r3") {
        let keys = try UInputDevice(name: keysName, codes: keyCodes)
        settle()
        let source = try keysSource()
        try keys.key(.volumeUp, pressed: true)
        let start = monotonicNow()
        // The kernel's own auto-repeat (value 2) every 33 ms: hush must ignore it and repeat on its own schedule.
        // The source is read throughout, as the daemon does.
        var events: [TimedInputEvent] = []
        while monotonicNow() - start < .milliseconds(1050) {
            sleep(.milliseconds(33))
            try keys.emit(.volumeUp, value: 2)
            try keys.sync()
            events += try source.readEvents(now: monotonicNow())
        }
        try keys.key(.volumeUp, pressed: false)
        events += try drain(source)
        try require(
            events.map(\.event) == [.volumeButton(.up, .press), .volumeButton(.up, .release)],
            "auto-repeat must not reach hush: got \(describe(events))"
        )
        var policy = AudioPolicy(
            configuration: PolicyConfiguration(),
            persisted: PersistedVolumes(system: [.speaker: VolumeStep(clamping: 1)], ringer: VolumeStep(clamping: 1))
        )
        _ = policy.start(at: events[0].time)
        for event in events { _ = policy.handle(.input(event.event), at: event.time) }
        let held = (events[1].time - events[0].time).milliseconds
        let expected = 1 + (held >= 500 ? 1 + Int((held - 500) / 100) : 0)
        try require(
            policy.systemVolume.rawValue == 1 + expected,
            "held \(held) ms: \(expected) steps expected (R3: one, then after 500 ms every 100 ms), volume is \(policy.systemVolume)"
        )
        print("  held \(held) ms by kernel timestamps → \(expected) steps")
    },
    Check(name: "evdev-syn-dropped-resync") {
        let keys = try UInputDevice(name: keysName, codes: keyCodes)
        settle()
        let source = try keysSource()
        // Press volume up (read), then flood the device's buffer so the kernel drops events — the release among
        // them — and end with the switch plugged: after resynchronising, the final state must still be right.
        try keys.key(.volumeUp, pressed: true)
        let pressed = try drain(source).map(\.event)
        try require(pressed == [.volumeButton(.up, .press)], "the press before the flood gave \(pressed)")
        for round in 0..<3000 {
            try keys.emit(.headphoneInsert, value: Int32(round % 2))
            try keys.sync()
            if round == 1500 { try keys.key(.volumeUp, pressed: false) }
        }
        try keys.emit(.headphoneInsert, value: 1)
        try keys.sync()
        let events = try drain(source).map(\.event)
        try require(
            source.resynchronisations >= 1,
            "the flood did not provoke SYN_DROPPED (\(events.count) events read)"
        )
        let jack = events.last { if case .headphones = $0 { true } else { false } }
        try require(jack == .headphones(.plugged, source: .evdev), "final jack state \(String(describing: jack))")
        let volume = events.last { if case .volumeButton = $0 { true } else { false } }
        try require(
            volume == .volumeButton(.up, .release),
            "the release was lost: last volume event \(String(describing: volume))"
        )
        print("  \(events.count) events after \(source.resynchronisations) resynchronisation(s)")
    },
    Check(name: "evdev-device-gone-and-back") {
        var keys: UInputDevice? = try UInputDevice(name: keysName, codes: keyCodes, switches: [.headphoneInsert: 0])
        settle()
        let source = try keysSource()
        keys?.destroy()
        keys = nil
        settle()
        _ = try drain(source, quiet: .milliseconds(200), waitForDeadlines: false)
        try require(source.openPath == nil, "the source still holds the removed device")
        keys = try UInputDevice(name: keysName, codes: keyCodes, switches: [.headphoneInsert: 1])
        let back = try drain(source, quiet: .milliseconds(400)).map(\.event)
        try require(source.openPath != nil, "the device was not reopened")
        try require(back == [.headphones(.plugged, source: .evdev)], "after reconnecting: \(back)")
        try keys?.key(.volumeDown, pressed: true)
        let press = try drain(source).map(\.event)
        try require(press == [.volumeButton(.down, .press)], "events after reconnecting: \(press)")
    },
    Check(name: "evdev-device-appears-late") {
        // An optional device absent at start-up (a USB remote not yet plugged in) is opened when it appears.
        let source = try EvdevInputSource(
            EvdevInputConfiguration(device: .name(keysName), optional: true),
            logger: logger
        )
        try require(source.openPath == nil, "nothing to open yet")
        let keys = try UInputDevice(name: keysName, codes: keyCodes, switches: [.headphoneInsert: 1])
        let found = try drain(source, quiet: .milliseconds(400)).map(\.event)
        try require(source.openPath != nil, "the device that appeared was not opened")
        try require(found == [.headphones(.plugged, source: .evdev)], "on appearing: \(found)")
        try keys.key(.playPause, pressed: true)
        let key = try drain(source).map(\.event)
        try require(key == [.mediaKey(.playPause)], "events from the late device: \(key)")
    },
    Check(name: "evdev-missing-device") {
        do {
            _ = try EvdevInputSource(EvdevInputConfiguration(device: .name("no-such-device")), logger: logger)
            throw CheckFailure("a missing device was found")
        } catch let error as HardwareError {
            try require(
                error.description.contains("no input device has that name; devices present: "),
                "message was: \(error)"
            )
            print("  \(error)")
        }
        do {
            _ = try EvdevInputSource(EvdevInputConfiguration(device: .path("/dev/input/event99")), logger: logger)
            throw CheckFailure("a missing path was opened")
        } catch let error as HardwareError {
            try require(
                error.description == "cannot open input device /dev/input/event99: no such input device [errno 2]",
                "message was: \(error)"
            )
        }
    },
]
