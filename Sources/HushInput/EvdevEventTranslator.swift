import HushCore

/// What an evdev code means to hush.
package enum EvdevRole: Hashable, Sendable, CustomStringConvertible {
    /// KEY_VOLUMEUP, KEY_VOLUMEDOWN: press and release. hush repeats a held button itself (policy R3), so the
    /// kernel's auto-repeat is ignored.
    case volumeButton(VolumeButton)
    /// A media key (KEY_PLAYPAUSE, KEY_NEXTSONG, …), reported when pressed; releases and auto-repeat are ignored.
    case mediaKey(MediaKey)
    /// A momentary mute key (KEY_MUTE), push on / push off: each press flips the silence switch position, starting
    /// from ring (a momentary key has no position to read). For boards whose only silence control is such a key;
    /// when a silence switch is configured, mute keys are ignored (see ``EvdevInputConfiguration/roles``).
    case muteKey
    /// SW_HEADPHONE_INSERT or similar: a non-zero value means plugged.
    case headphoneSwitch
    /// A switch such as SW_MUTE_DEVICE from a gpio-keys overlay; `activeValue` is the value that means silent.
    case silenceSwitch(activeValue: Int32)
    /// The microphone privacy switch (SW_MUTE_DEVICE, the kernel's "device disabled" switch, or any switch code);
    /// `activeValue` is the value that means muted (policy R21).
    case microphoneSwitch(activeValue: Int32)

    /// Whether the code has a position (a switch) that is read from the device at start-up and after a reconnect.
    package var isSwitch: Bool {
        switch self {
        case .headphoneSwitch, .silenceSwitch, .microphoneSwitch: true
        case .volumeButton, .mediaKey, .muteKey: false
        }
    }

    package var description: String {
        switch self {
        case .volumeButton(let button): "\(button) button"
        case .mediaKey(let key): "\(key) key"
        case .muteKey: "mute key"
        case .headphoneSwitch: "headphone switch"
        case .silenceSwitch(let activeValue): "silence switch (silent at \(activeValue))"
        case .microphoneSwitch(let activeValue): "microphone privacy switch (muted at \(activeValue))"
        }
    }
}

/// Turns evdev events into hush input events. Pure, so it is tested without a device.
///
/// - Key value 1 is a press, 0 a release, 2 the kernel's auto-repeat, which is dropped: hush repeats a held volume
///   button on its own schedule (policy R3).
/// - Only keys pressed while hush was watching are released: a volume button already held when the device was
///   opened is reported neither pressed nor released.
/// - After SYN_DROPPED, libevdev replays the difference between what hush last read and the device's state as
///   ordinary events; they go through ``translate(_:value:)`` like any other, so a release lost in the drop still
///   arrives. ``resynchronised(switchValues:)`` then reports any switch whose final position still differs from
///   what hush last reported.
/// - When the device goes away, ``deviceLost()`` releases the volume buttons still held, so the policy does not
///   repeat a button nobody is pressing.
package struct EvdevEventTranslator: Hashable, Sendable {
    /// What each code means.
    package let roles: [EvdevCode: EvdevRole]
    /// The silence position the mute key last set.
    package private(set) var mutePosition: SilenceSwitchPosition
    /// The volume buttons pressed and not yet released.
    package private(set) var heldKeys: Set<EvdevCode> = []
    /// The switch values last reported.
    package private(set) var reportedSwitches: [EvdevCode: Int32] = [:]

    /// A translator for `roles`; the mute key starts from `mutePosition`.
    package init(roles: [EvdevCode: EvdevRole], mutePosition: SilenceSwitchPosition = .ring) {
        self.roles = roles
        self.mutePosition = mutePosition
    }

    /// The codes whose role is a switch, in code order.
    package var switchCodes: [EvdevCode] { roles.filter { $0.value.isSwitch }.keys.sorted() }

    /// The hush event for one evdev event, or nil when it means nothing to hush.
    package mutating func translate(type: UInt32, code: UInt32, value: Int32) -> InputEvent? {
        translate(EvdevCode(type: type, code: code), value: value)
    }

    /// The hush event for one evdev event, or nil when it means nothing to hush.
    package mutating func translate(_ code: EvdevCode, value: Int32) -> InputEvent? {
        guard let role = roles[code] else { return nil }
        let autoRepeat = code.type == EvdevCode.keyType && value == 2
        switch role {
        case .volumeButton(let button):
            if value == 1 {
                return heldKeys.insert(code).inserted ? .volumeButton(button, .press) : nil
            } else if value == 0 {
                return heldKeys.remove(code) != nil ? .volumeButton(button, .release) : nil
            }
            return nil
        case .mediaKey(let key):
            return value == 1 ? .mediaKey(key) : nil
        case .muteKey:
            guard value == 1 else { return nil }
            mutePosition = mutePosition == .ring ? .silent : .ring
            return .silenceSwitch(mutePosition)
        case .headphoneSwitch, .silenceSwitch, .microphoneSwitch:
            guard !autoRepeat else { return nil }
            reportedSwitches[code] = value
            return Self.position(role, value: value)
        }
    }

    /// The positions of the switches, to report as the controls' state (start-up); `switchValues` holds the values
    /// read from the device for the switch codes it has.
    package mutating func currentState(switchValues: [EvdevCode: Int32]) -> [InputEvent] {
        switchCodes.compactMap { code in
            guard let value = switchValues[code], let role = roles[code] else { return nil }
            reportedSwitches[code] = value
            return Self.position(role, value: value)
        }
    }

    /// The device was opened or reopened: keys held now were pressed before hush was watching and are forgotten,
    /// and every switch position is reported (again; the policy ignores a repeated position).
    package mutating func deviceOpened(switchValues: [EvdevCode: Int32]) -> [InputEvent] {
        heldKeys = []
        return currentState(switchValues: switchValues)
    }

    /// A resynchronisation after SYN_DROPPED ended with the device's switches at `switchValues`: the positions that
    /// differ from those last reported. Normally none, as libevdev's replayed changes have already been translated.
    package mutating func resynchronised(switchValues: [EvdevCode: Int32]) -> [InputEvent] {
        switchCodes.compactMap { code in
            guard let value = switchValues[code], reportedSwitches[code] != value, let role = roles[code] else {
                return nil
            }
            reportedSwitches[code] = value
            return Self.position(role, value: value)
        }
    }

    /// The device went away: releases for the volume buttons still held, which will never be released otherwise.
    package mutating func deviceLost() -> [InputEvent] {
        defer { heldKeys = [] }
        return heldKeys.sorted().compactMap { code in
            guard case .volumeButton(let button) = roles[code] else { return nil }
            return .volumeButton(button, .release)
        }
    }

    /// Reads a device until nothing is left, resynchronising after SYN_DROPPED, and translates what it read.
    ///
    /// `read` performs one libevdev_next_event in the mode asked for. After ``EvdevReadResult/dropped(time:)`` the
    /// changes the drop hid are read in sync mode until ``EvdevReadResult/exhausted``; then any switch whose
    /// position (from `switchValues`) still differs from what was reported is reported, and normal reading goes on.
    /// Normal reading stops after `budget` events, so a device that never stops cannot starve the caller; the rest
    /// stay readable.
    package mutating func drain(
        budget: Int,
        read: (EvdevReadMode) -> EvdevReadResult,
        switchValues: () -> [EvdevCode: Int32]
    ) -> EvdevDrainResult {
        var result = EvdevDrainResult()
        var mode = EvdevReadMode.normal
        var dropTime = Instant.zero
        var changes = 0
        var budget = budget
        while mode == .sync || budget > 0 {
            switch read(mode) {
            case .event(let code, let value, let time):
                if mode == .sync { changes += 1 } else { budget -= 1 }
                if let event = translate(code, value: value) { result.events.append(TimedInputEvent(event, at: time)) }
            case .dropped(let time):
                // The SYN_DROPPED itself: what changed meanwhile comes next, in sync mode.
                dropTime = time
                mode = .sync
                changes = 0
            case .exhausted:
                guard mode == .sync else { return result }
                result.events += resynchronised(switchValues: switchValues()).map { TimedInputEvent($0, at: dropTime) }
                result.resynchronisations.append(changes)
                mode = .normal
            case .failed(let errno):
                result.failure = errno
                return result
            }
        }
        return result
    }

    /// The event a switch in position `value` reports, or nil for roles without a position.
    package static func position(_ role: EvdevRole, value: Int32) -> InputEvent? {
        switch role {
        case .headphoneSwitch: .headphones(value != 0 ? .plugged : .unplugged, source: .evdev)
        case .silenceSwitch(let activeValue): .silenceSwitch(value == activeValue ? .silent : .ring)
        case .microphoneSwitch(let activeValue):
            .microphoneSwitch(value == activeValue ? .muted : .live, source: .evdev)
        case .volumeButton, .mediaKey, .muteKey: nil
        }
    }
}

/// How libevdev is asked for the next event: normally, or in sync mode while it replays what a SYN_DROPPED hid.
package enum EvdevReadMode: Hashable, Sendable {
    /// LIBEVDEV_READ_FLAG_NORMAL.
    case normal
    /// LIBEVDEV_READ_FLAG_SYNC.
    case sync
}

/// What one libevdev_next_event call gave, in the translator's terms.
package enum EvdevReadResult: Hashable, Sendable {
    /// An event: LIBEVDEV_READ_STATUS_SUCCESS, or in sync mode LIBEVDEV_READ_STATUS_SYNC (a replayed change).
    case event(EvdevCode, value: Int32, time: Instant)
    /// SYN_DROPPED: LIBEVDEV_READ_STATUS_SYNC in normal mode; the kernel dropped events.
    case dropped(time: Instant)
    /// -EAGAIN: nothing more to read now (in sync mode: the replay is over).
    case exhausted
    /// The read failed with this errno (ENODEV: the device is gone).
    case failed(errno: Int32)
}

/// What ``EvdevEventTranslator/drain(budget:read:switchValues:)`` read.
package struct EvdevDrainResult: Hashable, Sendable {
    /// The hush events, in order.
    package var events: [TimedInputEvent] = []
    /// One entry per SYN_DROPPED resynchronised: how many changes libevdev replayed.
    package var resynchronisations: [Int] = []
    /// The errno that ended reading, or nil when everything pending was read (or the budget spent).
    package var failure: Int32?

    package init() {}
}
