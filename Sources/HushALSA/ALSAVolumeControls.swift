import CALSA
import HushCore
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// A volume that someone other than hushd set on one of hush's controls (`amixer cset`, alsamixer).
///
/// The daemon hands it to the policy as `PolicyEvent.setVolume(kind, step)`, as if a person had pressed the
/// buttons until the volume got there, and then writes the policy's answer back with
/// ``ALSAVolumeControls/set(_:_:)`` (the policy may cap or refuse the value).
package struct VolumeControlChange: Hashable, Sendable, CustomStringConvertible {
    package var kind: VolumeKind
    package var step: VolumeStep
    /// When hush read the change (the kernel does not timestamp control events).
    package var time: Instant

    package init(_ kind: VolumeKind, _ step: VolumeStep, at time: Instant) {
        self.kind = kind
        self.step = step
        self.time = time
    }

    package var description: String { "\(time) \(kind) volume set to \(step) on the mixer control" }
}

/// What hush's controls show: the current system volume (of the current route), the ringer volume, the switch.
package struct HushControlValues: Hashable, Sendable, CustomStringConvertible {
    package var system: VolumeStep
    package var ringer: VolumeStep
    package var silent: Bool

    package init(system: VolumeStep, ringer: VolumeStep, silent: Bool) {
        self.system = system
        self.ringer = ringer
        self.silent = silent
    }

    package subscript(kind: VolumeKind) -> VolumeStep {
        get { kind == .system ? system : ringer }
        set { if kind == .system { system = newValue } else { ringer = newValue } }
    }

    package var description: String {
        "system \(system.rawValue), ringer \(ringer.rawValue), silence switch \(silent ? "on" : "off")"
    }
}

/// hushd's volumes and silence switch as ALSA user controls on the output card, where stock `amixer` and
/// `alsamixer` show them:
///
/// | control (MIXER interface)        | type                          | others may |
/// |----------------------------------|-------------------------------|------------|
/// | "Hush System Playback Volume"    | integer 0…16 (``VolumeStep``) | read, write |
/// | "Hush Ringer Playback Volume"    | integer 0…16                  | read, write |
/// | "Hush Silence Switch"            | boolean                       | read only  |
///
/// hushd writes them when its volumes change. A value someone else writes to a volume control comes back from
/// ``readChanges(now:)`` as a ``VolumeControlChange`` for the policy. hush tells its own writes from others by
/// value: each control remembers the value last written or reported, and an event that shows that value is an
/// echo of hush's own write.
///
/// Read-only: a user control cannot usefully be created read-only — without write access nobody, its creator
/// included, can ever change its value (the kernel gives it no `put`). The kernel instead locks a new user
/// control to the control handle that created it (`snd_ctl_elem_lock`): other handles get EPERM when they write,
/// until that handle closes. hush keeps the lock on the silence switch and gives it up on the two volumes.
/// When hushd dies, the kernel drops the lock and the controls stay; the next hushd takes them over.
///
/// When the card goes away, the controls go with it; hush closes its handle at once (a driver's unbind waits for
/// that), retries every `retryInterval`, and creates the controls again, with the current values, when the card
/// is back.
///
/// - Important: Not thread-safe: one owner (hushd's loop) calls it.
package final class ALSAVolumeControls {
    package static let systemElement = ALSAElementName("Hush System Playback Volume", interface: .mixer)
    package static let ringerElement = ALSAElementName("Hush Ringer Playback Volume", interface: .mixer)
    package static let silenceElement = ALSAElementName("Hush Silence Switch", interface: .mixer)

    /// The card as configured: an index, an id or "hw:…".
    package let card: String
    package let retryInterval: Duration
    /// "card 0 'Loopback' hush controls", for logs.
    package private(set) var name: String
    /// What the controls show, or will show once the card is back.
    package private(set) var values: HushControlValues

    private let decibelScale: [UInt32]
    private var attached: AttachedControls?
    private var retryAt: Instant?
    private let event: OpaquePointer
    private let logger: Logger

    /// Opens `card` and puts the three controls on it with `values`, taking over controls a previous hushd left.
    ///
    /// A card that does not exist (yet) is waited for as one that went away, and logged naming the cards there
    /// are. Throws when the card cannot be opened (permissions), or the controls cannot be added (the card's limit
    /// on user controls; another running hushd holds them).
    /// - Parameter curve: the volume curve hush applies; the controls carry it as their dB scale, so
    ///   `amixer` and `alsamixer` show each step's level in dB.
    package init(
        card: String,
        values: HushControlValues,
        curve: VolumeCurve = .default,
        retryInterval: Duration = .seconds(1),
        logger: Logger
    ) throws(HardwareError) {
        self.card = card
        self.values = values
        decibelScale = Self.decibelScale(curve)
        self.retryInterval = retryInterval
        self.logger = logger
        var event: OpaquePointer?
        snd_ctl_event_malloc(&event)
        guard let event else {
            throw HardwareError(
                operation: "allocate a control event for",
                device: card,
                errno: ENOMEM,
                message: "out of memory"
            )
        }
        self.event = event
        name = "\(card) hush controls"
        let control: ControlHandle
        do {
            control = try ControlHandle(card: card, nonblocking: true)
        } catch  where error.errno == ENODEV || error.errno == ENOENT {
            // A card whose driver comes up after hushd: waited for as one that went away.
            logger.error(
                "\(name): \(error.description); the controls are added when it appears (tried every \(retryInterval.milliseconds) ms)"
            )
            retryAt = .zero
            return
        }
        attached = try attach(control)
        name = "\(control.title) hush controls"
        logger.info("\(name): ready (\(values))")
    }

    deinit { snd_ctl_event_free(event) }

    /// Readable when control events are pending (including the card going away); nil while the card is gone.
    package var pollDescriptor: Int32? { attached?.control.pollDescriptor() }

    /// When ``readChanges(now:)`` must run to retry a card that went away.
    package var nextDeadline: Instant? { retryAt }

    /// Whether the controls are on the card now.
    package var isPresent: Bool { attached != nil }

    /// Shows `step` as the `kind` volume. While the card is gone the value is kept for when it returns.
    ///
    /// Throws when the card refuses the write for another reason than being gone.
    package func set(_ kind: VolumeKind, _ step: VolumeStep) throws(HardwareError) {
        values[kind] = step
        guard let attached else { return }
        let slot: Slot = kind == .system ? .system : .ringer
        guard attached.shown[slot] != step.rawValue else { return }
        attached.shown[slot] = step.rawValue
        try write(slot, step.rawValue, on: attached)
    }

    /// Shows the silence switch's position.
    package func setSilence(_ silent: Bool) throws(HardwareError) {
        values.silent = silent
        guard let attached, attached.shown[.silence] != (silent ? 1 : 0) else { return }
        attached.shown[.silence] = silent ? 1 : 0
        try write(.silence, silent ? 1 : 0, on: attached)
    }

    /// The volumes others set since the last call, in order; also notices the card going and coming back.
    ///
    /// Never throws: a card that fails is treated as gone and retried, and logged.
    package func readChanges(now: Instant) -> [VolumeControlChange] {
        guard let attached else {
            reopen(now: now)
            return []
        }
        var changes: [VolumeControlChange] = []
        var lost = false
        while true {
            let result = snd_ctl_read(attached.control.handle, event)
            if result == 0 || result == -EAGAIN { break }
            if result == -EINTR { continue }
            if result < 0 {
                cardGone(now: now, reason: ALSAErrors.message(result))
                return changes
            }
            guard snd_ctl_event_get_type(event) == SND_CTL_EVENT_ELEM else { continue }
            let mask = snd_ctl_event_elem_get_mask(event)
            let numid = snd_ctl_event_elem_get_numid(event)
            guard let slot = attached.numids.first(where: { $0.value == numid })?.key else { continue }
            if mask == SND_CTL_EVENT_MASK_REMOVE {
                lost = true
                continue
            }
            guard mask & UInt32(SND_CTL_EVENT_MASK_VALUE) != 0, slot != .silence else { continue }
            let value: Int
            do {
                value = try attached.control.readInteger(numid: numid)
            } catch {
                cardGone(now: now, reason: error.message)
                return changes
            }
            // The value hush last wrote or reported: the echo of its own write, or nothing new.
            guard value != attached.shown[slot] else { continue }
            attached.shown[slot] = value
            let kind: VolumeKind = slot == .system ? .system : .ringer
            let step = VolumeStep(clamping: value)
            values[kind] = step
            changes.append(VolumeControlChange(kind, step, at: now))
            let clamped = step.rawValue == value ? "" : " (clamped to \(step.rawValue))"
            logger.info("\(name): \(slot.element.name) set to \(value)\(clamped) from outside hushd")
        }
        if lost {
            // Someone removed a control (the volumes are not locked, so `amixer` or another program can): put it
            // back with hush's value.
            logger.warning("\(name): a hush control was removed from outside hushd; adding it again")
            do {
                self.attached = try attach(attached.control, subscribed: true)
            } catch {
                logger.error("\(name): \(error); retrying every \(retryInterval.milliseconds) ms")
                self.attached = nil
                retryAt = now + retryInterval
            }
        }
        return changes
    }

    /// Removes the controls from the card (at shutdown: controls nobody serves would mislead).
    package func remove() {
        guard let attached else { return }
        for slot in Slot.allCases {
            guard let numid = attached.numids[slot] else { continue }
            let result = attached.control.removeElement(numid: numid)
            if result < 0 && result != -ENOENT && result != -ENODEV {
                logger.warning("\(name): cannot remove \(slot.element): \(ALSAErrors.message(result))")
            }
        }
        self.attached = nil
        retryAt = nil
    }

    // MARK: Creating the controls

    /// The three controls hush owns; the switch first, as only it is locked while a hushd runs.
    enum Slot: CaseIterable {
        case silence, system, ringer

        var element: ALSAElementName {
            switch self {
            case .system: ALSAVolumeControls.systemElement
            case .ringer: ALSAVolumeControls.ringerElement
            case .silence: ALSAVolumeControls.silenceElement
            }
        }
    }

    /// An open card with hush's controls on it.
    final class AttachedControls {
        let control: ControlHandle
        var numids: [Slot: UInt32] = [:]
        /// The value each control shows as far as hush knows: what it wrote or last reported.
        var shown: [Slot: Int] = [:]
        init(control: ControlHandle) { self.control = control }
    }

    private func value(of slot: Slot) -> Int {
        switch slot {
        case .system: values.system.rawValue
        case .ringer: values.ringer.rawValue
        case .silence: values.silent ? 1 : 0
        }
    }

    /// Makes sure the three controls are on `control`'s card, shaped and locked as hush needs, with hush's values;
    /// then subscribes to the card's events.
    private func attach(_ control: ControlHandle, subscribed: Bool = false) throws(HardwareError) -> AttachedControls {
        let attached = AttachedControls(control: control)
        // Every control is in place before any value is written, so a hushd refused because another one holds
        // the switch (checked first) leaves the other's values alone.
        for slot in Slot.allCases { attached.numids[slot] = try ensure(slot, on: control) }
        for slot in [Slot.system, .ringer] {
            guard let numid = attached.numids[slot] else { continue }
            let result = control.writeTLV(numid: numid, decibelScale)
            // Without it the controls work; amixer only shows no dB.
            if result < 0 {
                logger.warning("\(control.title): no dB scale on \(slot.element): \(ALSAErrors.message(result))")
            }
        }
        for slot in Slot.allCases {
            attached.shown[slot] = value(of: slot)
            try write(slot, value(of: slot), on: attached)
        }
        if !subscribed {
            let result = snd_ctl_subscribe_events(control.handle, 1)
            guard result == 0 else {
                throw HardwareError(
                    operation: "subscribe to control events of",
                    device: control.title,
                    errno: -result,
                    message: ALSAErrors.message(result)
                )
            }
        }
        return attached
    }

    /// The numid of `slot`'s control on the card: an existing one of the right shape (left by a hushd that
    /// stopped without removing it) is taken over, anything else of that name is replaced.
    private func ensure(_ slot: Slot, on control: ControlHandle) throws(HardwareError) -> UInt32 {
        let element = slot.element
        let maximum = slot == .silence ? 1 : VolumeStep.count
        func failure(_ doing: String, _ result: Int32) -> HardwareError {
            HardwareError(
                operation: "\(doing) control \(element) on",
                device: control.title,
                errno: -result,
                message: ALSAErrors.message(result)
            )
        }
        if let info = control.elementInfo(element) {
            let lockedByOther = info.ownerPID > 0 && !info.isOwnLock
            let fits =
                info.isUser && info.count == 1 && info.isWritable
                && (slot == .silence ? info.isBoolean : info.isInteger && info.minimum == 0 && info.maximum == maximum)
            if lockedByOther {
                throw HardwareError(
                    operation: "take over control \(element) on",
                    device: control.title,
                    errno: EBUSY,
                    message: "process \(info.ownerPID) holds it; is another hushd running on this card?"
                )
            }
            if fits {
                logger.info("\(control.title): using \(element), already on the card (left by an earlier hushd?)")
                if slot == .silence && !info.isOwnLock {
                    let result = control.lockElement(numid: info.numid, lock: true)
                    guard result == 0 else { throw failure("lock", result) }
                }
                return info.numid
            }
            guard info.isUser else {
                throw HardwareError(
                    operation: "add control \(element) to",
                    device: control.title,
                    errno: EEXIST,
                    message: "the driver has a control of that name; hush cannot replace it"
                )
            }
            logger.notice("\(control.title): replacing \(element), which has another shape than hush's")
            let removed = control.removeElement(numid: info.numid)
            guard removed == 0 else { throw failure("replace", removed) }
        }
        let added = slot == .silence ? control.addBoolean(element) : control.addInteger(element, maximum: maximum)
        guard added == 0, let numid = control.elementInfo(element)?.numid else {
            if added == -ENOMEM {
                throw HardwareError(
                    operation: "add control \(element) to",
                    device: control.title,
                    errno: ENOMEM,
                    message: "the card has no room left for user controls (snd module option max_user_ctl_alloc_size)"
                )
            }
            throw failure("add", added)
        }
        // A new user control is locked to the handle that added it: keep that only on the switch.
        if slot != .silence {
            let result = control.lockElement(numid: numid, lock: false)
            guard result == 0 else { throw failure("unlock", result) }
        }
        return numid
    }

    private func write(_ slot: Slot, _ value: Int, on attached: AttachedControls) throws(HardwareError) {
        guard let numid = attached.numids[slot] else { return }
        do {
            try attached.control.writeInteger(numid: numid, value)
        } catch let error where error.errno == ENODEV {
            // The card is going; readChanges sees the same and starts the retries.
            logger.debug("\(name): \(slot.element) not written, the card is going away")
        }
    }

    // MARK: The dB scale

    /// The largest dB-range TLV alsa-lib's simple mixer (amixer sget, alsamixer) accepts (`MAX_TLV_RANGE_SIZE`
    /// in alsa-lib's tlv.c), in bytes.
    static let maximumScaleSize = 256

    /// The curve as an ALSA TLV (`SNDRV_CTL_TLVT_DB_RANGE`): step 0 as mute, then one dB-scale item per run of
    /// steps whose levels rise by the same amount (to 0.01 dB, the TLV's unit) — the default curve's four straight
    /// segments take four items.
    ///
    /// Every item but the last covers at least two steps (two levels always make a run), so any curve needs at
    /// most nine items, 224 bytes: within ``maximumScaleSize``.
    static func decibelScale(_ curve: VolumeCurve) -> [UInt32] {
        // sound/tlv.h's SNDRV_CTL_TLVD_DB_SCALE_MUTE: the range's lowest value is silence. alsa-lib's headers do
        // not name it.
        let muteFlag: UInt32 = 0x10000
        let levels = (1...VolumeStep.count).map {
            Int32((curve.decibels(at: VolumeStep(clamping: $0)) * 100).rounded())
        }
        func item(from first: Int, to last: Int, minimum: Int32, step: Int32, mute: Bool) -> [UInt32] {
            [
                UInt32(first), UInt32(last), UInt32(SND_CTL_TLVT_DB_SCALE), 8, UInt32(bitPattern: minimum),
                UInt32(bitPattern: step) | (mute ? muteFlag : 0),
            ]
        }
        var items = item(from: 0, to: 0, minimum: levels[0], step: 0, mute: true)
        var first = 1
        while first <= VolumeStep.count {
            let rise = first < VolumeStep.count ? levels[first] - levels[first - 1] : 0
            var last = first
            while last < VolumeStep.count && levels[last] - levels[last - 1] == rise { last += 1 }
            items += item(from: first, to: last, minimum: levels[first - 1], step: rise, mute: false)
            first = last + 1
        }
        return [UInt32(SND_CTL_TLVT_DB_RANGE), UInt32(items.count * 4)] + items
    }

    /// A step's level in dB as alsa-lib reads it from `tlv` (nil for mute or an unreadable scale); for tests.
    static func decibels(of step: Int, in tlv: [UInt32]) -> Float? {
        var tlv = tlv
        var gain = 0
        let result = tlv.withUnsafeMutableBufferPointer {
            snd_tlv_convert_to_dB($0.baseAddress, 0, VolumeStep.count, step, &gain)
        }
        guard result == 0, gain != SND_CTL_TLV_DB_GAIN_MUTE else { return nil }
        return Float(gain) / 100
    }

    // MARK: The card going and coming back

    private func cardGone(now: Instant, reason: String) {
        logger.error(
            "\(name): \(reason); the controls are gone with the card; retrying every \(retryInterval.milliseconds) ms"
        )
        attached = nil
        retryAt = now + retryInterval
    }

    private func reopen(now: Instant) {
        guard let due = retryAt, due <= now else { return }
        retryAt = now + retryInterval
        guard let control = try? ControlHandle(card: card, nonblocking: true) else { return }
        do {
            attached = try attach(control)
            retryAt = nil
            name = "\(control.title) hush controls"
            logger.notice("\(name): the card is back; controls added again (\(values))")
        } catch {
            logger.error("\(control.title) is back, but \(error); retrying every \(retryInterval.milliseconds) ms")
        }
    }
}

/// Reads and writes a card's control elements by name through a handle of its own, as `amixer cget`/`cset` do.
///
/// The virtual-board checks use it to play the part of another program; a board tool could use it to set a
/// codec's switches.
package final class ALSAElementClient {
    /// What `amixer cget` prints in its first lines.
    package struct Info: Hashable, Sendable {
        package var numid: UInt32
        package var isBoolean: Bool
        package var isInteger: Bool
        package var minimum: Int
        package var maximum: Int
        package var isWritable: Bool
        /// The process holding the element's lock, when a handle other than this one holds it.
        package var lockedBy: pid_t?
        package var isUser: Bool
    }

    private let control: ControlHandle

    /// Opens `card`: an index ("0"), an id ("Loopback") or "hw:…".
    package init(card: String) throws(HardwareError) {
        control = try ControlHandle(card: card, nonblocking: false)
    }

    /// The element's shape and access, or nil when the card has no such element.
    package func info(_ element: ALSAElementName) -> Info? {
        guard let info = control.elementInfo(element) else { return nil }
        return Info(
            numid: info.numid,
            isBoolean: info.isBoolean,
            isInteger: info.isInteger,
            minimum: info.minimum,
            maximum: info.maximum,
            isWritable: info.isWritable,
            lockedBy: info.ownerPID > 0 && !info.isOwnLock ? info.ownerPID : nil,
            isUser: info.isUser
        )
    }

    /// The element's first value (booleans as 0 or 1).
    package func read(_ element: ALSAElementName) throws(HardwareError) -> Int {
        try control.readInteger(numid: numid(element))
    }

    /// Writes the element's first value. A locked element refuses with a message naming the process holding it.
    package func write(_ element: ALSAElementName, _ value: Int) throws(HardwareError) {
        let numid = try numid(element)
        do {
            try control.writeInteger(numid: numid, value)
        } catch let error where error.errno == EPERM {
            if let holder = info(element)?.lockedBy {
                throw HardwareError(
                    operation: "write control \(element) on",
                    device: control.title,
                    errno: EPERM,
                    message: "it is read-only to others: process \(holder) holds its lock"
                )
            }
            throw error
        }
    }

    /// The level in dB that the element's dB scale gives `value`, as `amixer` shows it; nil for mute.
    /// Throws when the element has no dB scale.
    package func decibels(_ element: ALSAElementName, at value: Int) throws(HardwareError) -> Float? {
        let numid = try numid(element)
        guard let info = info(element) else { return nil }
        var tlv = [UInt32](repeating: 0, count: 1024)
        var gain = 0
        let result: Int32 =
            tlv.withUnsafeMutableBufferPointer { buffer in
                control.readTLV(numid: numid, into: buffer).flatMap { read in
                    read < 0
                        ? read : snd_tlv_convert_to_dB(buffer.baseAddress, info.minimum, info.maximum, value, &gain)
                }
            } ?? -ENOMEM
        guard result == 0 else {
            throw HardwareError(
                operation: "read the dB scale of control \(element) on",
                device: control.title,
                errno: -result,
                message: ALSAErrors.message(result)
            )
        }
        return gain == SND_CTL_TLV_DB_GAIN_MUTE ? nil : Float(gain) / 100
    }

    /// Sets every channel of a switch or integer element to `value`, as `amixer cset name=… on` does: a route's
    /// mixer switches ("Speaker Playback Switch" off for headphones). The value is checked against the element's
    /// type and range first, so a wrong configuration is named rather than clamped by the driver.
    package func set(_ element: ALSAElementName, to value: Int) throws(HardwareError) {
        let numid = try numid(element)
        guard let info = control.elementInfo(element) else { throw notFound(element) }
        let problem: String? =
            if !info.isBoolean && !info.isInteger {
                "it is neither a switch nor an integer control"
            } else if !info.isWritable {
                "it is read-only"
            } else if value < info.minimum || value > info.maximum {
                info.isBoolean
                    ? "a switch takes on or off, not \(value)"
                    : "\(value) is outside its range \(info.minimum)…\(info.maximum)"
            } else {
                nil
            }
        if let problem {
            throw HardwareError(operation: "set control \(element) on", device: control.title, message: problem)
        }
        do {
            try control.writeInteger(numid: numid, value, channels: Int(info.count))
        } catch let error where error.errno == EPERM && info.ownerPID > 0 && !info.isOwnLock {
            throw HardwareError(
                operation: "set control \(element) on",
                device: control.title,
                errno: EPERM,
                message: "it is locked by process \(info.ownerPID)"
            )
        }
    }

    /// Every channel's value of the element (booleans as 0 or 1).
    package func readAll(_ element: ALSAElementName) throws(HardwareError) -> [Int] {
        let numid = try numid(element)
        let count = control.elementInfo(element).map { Int($0.count) } ?? 1
        return try control.readIntegers(numid: numid, channels: count)
    }

    /// Removes a user element from the card (`amixer` cannot; other programs can, when it is not locked).
    package func remove(_ element: ALSAElementName) throws(HardwareError) {
        let result = control.removeElement(numid: try numid(element))
        guard result == 0 else {
            throw HardwareError(
                operation: "remove control \(element) from",
                device: control.title,
                errno: -result,
                message: result == -EBUSY ? "another program holds its lock" : ALSAErrors.message(result)
            )
        }
    }

    private func numid(_ element: ALSAElementName) throws(HardwareError) -> UInt32 {
        guard let info = control.elementInfo(element) else { throw notFound(element) }
        return info.numid
    }

    private func notFound(_ element: ALSAElementName) -> HardwareError {
        HardwareError(
            operation: "find control \(element) on",
            device: control.title,
            errno: ENOENT,
            message: "no such control; controls present: " + ControlHandle.describe(control.elementNames())
        )
    }
}

// MARK: Raw calls

/// What `snd_ctl_elem_info` says about an element.
struct ElementInfo {
    var numid: UInt32
    var isBoolean: Bool
    var isInteger: Bool
    var count: UInt32
    var minimum: Int
    var maximum: Int
    var isWritable: Bool
    var isUser: Bool
    /// The process whose handle holds the element's lock, or 0.
    var ownerPID: pid_t
    /// Whether the lock is held by the handle that asked.
    var isOwnLock: Bool
}

extension ControlHandle {
    /// An id for `element` (by name, interface and index) or for `numid`, given to `body`.
    private func withID<T>(
        _ element: ALSAElementName? = nil,
        numid: UInt32 = 0,
        _ body: (OpaquePointer) -> T
    ) -> T? {
        var id: OpaquePointer?
        snd_ctl_elem_id_malloc(&id)
        defer { snd_ctl_elem_id_free(id) }
        guard let id else { return nil }
        if let element {
            snd_ctl_elem_id_set_interface(id, element.interface.raw)
            snd_ctl_elem_id_set_name(id, element.name)
            snd_ctl_elem_id_set_index(id, element.index)
        } else {
            snd_ctl_elem_id_set_numid(id, numid)
        }
        return body(id)
    }

    func elementInfo(_ element: ALSAElementName) -> ElementInfo? {
        var info: OpaquePointer?
        snd_ctl_elem_info_malloc(&info)
        defer { snd_ctl_elem_info_free(info) }
        guard let info else { return nil }
        let found: Bool? = withID(element) { id in
            snd_ctl_elem_info_set_id(info, id)
            return snd_ctl_elem_info(handle, info) == 0
        }
        guard found == true else { return nil }
        let type = snd_ctl_elem_info_get_type(info)
        return ElementInfo(
            numid: snd_ctl_elem_info_get_numid(info),
            isBoolean: type == SND_CTL_ELEM_TYPE_BOOLEAN,
            isInteger: type == SND_CTL_ELEM_TYPE_INTEGER,
            count: snd_ctl_elem_info_get_count(info),
            minimum: type == SND_CTL_ELEM_TYPE_INTEGER ? snd_ctl_elem_info_get_min(info) : 0,
            maximum: type == SND_CTL_ELEM_TYPE_INTEGER ? snd_ctl_elem_info_get_max(info) : 1,
            isWritable: snd_ctl_elem_info_is_writable(info) != 0,
            isUser: snd_ctl_elem_info_is_user(info) != 0,
            ownerPID: snd_ctl_elem_info_is_locked(info) != 0 ? max(snd_ctl_elem_info_get_owner(info), 1) : 0,
            isOwnLock: snd_ctl_elem_info_is_owner(info) != 0
        )
    }

    /// Adds a one-value integer user element `0…maximum`, step 1; alsa-lib's result.
    func addInteger(_ element: ALSAElementName, maximum: Int) -> Int32 {
        withID(element) { snd_ctl_elem_add_integer(handle, $0, 1, 0, maximum, 1) } ?? -ENOMEM
    }

    /// Adds a one-value boolean user element; alsa-lib's result.
    func addBoolean(_ element: ALSAElementName) -> Int32 {
        withID(element) { snd_ctl_elem_add_boolean(handle, $0, 1) } ?? -ENOMEM
    }

    func removeElement(numid: UInt32) -> Int32 {
        withID(numid: numid) { snd_ctl_elem_remove(handle, $0) } ?? -ENOMEM
    }

    /// Takes (`lock`) or gives up an element's write lock; alsa-lib's result.
    func lockElement(numid: UInt32, lock: Bool) -> Int32 {
        withID(numid: numid) { lock ? snd_ctl_elem_lock(handle, $0) : snd_ctl_elem_unlock(handle, $0) } ?? -ENOMEM
    }

    /// Reads an element's TLV data into `buffer`; alsa-lib's result.
    func readTLV(numid: UInt32, into buffer: UnsafeMutableBufferPointer<UInt32>) -> Int32? {
        withID(numid: numid) { snd_ctl_elem_tlv_read(handle, $0, buffer.baseAddress, UInt32(buffer.count * 4)) }
    }

    /// Replaces an element's TLV data (`tlv` = type, length in bytes, data); alsa-lib's result.
    func writeTLV(numid: UInt32, _ tlv: [UInt32]) -> Int32 {
        withID(numid: numid) { id in tlv.withUnsafeBufferPointer { snd_ctl_elem_tlv_write(handle, id, $0.baseAddress) }
        }
            ?? -ENOMEM
    }

    /// The first value of an integer or boolean element.
    func readInteger(numid: UInt32) throws(HardwareError) -> Int {
        try readIntegers(numid: numid, channels: 1)[0]
    }

    /// The first `channels` values of an integer or boolean element.
    func readIntegers(numid: UInt32, channels: Int) throws(HardwareError) -> [Int] {
        var value: OpaquePointer?
        snd_ctl_elem_value_malloc(&value)
        defer { snd_ctl_elem_value_free(value) }
        guard let value else {
            throw HardwareError(
                operation: "read control \(numid) on",
                device: title,
                errno: ENOMEM,
                message: "out of memory"
            )
        }
        let result: Int32 =
            withID(numid: numid) { id in
                snd_ctl_elem_value_set_id(value, id)
                return snd_ctl_elem_read(handle, value)
            } ?? -ENOMEM
        guard result == 0 else {
            throw HardwareError(
                operation: "read control \(numid) on",
                device: title,
                errno: -result,
                message: ALSAErrors.message(result)
            )
        }
        return (0..<max(channels, 1)).map { snd_ctl_elem_value_get_integer(value, UInt32($0)) }
    }

    /// Writes the first `channels` values of an integer or boolean element (both are `long` in the value).
    func writeInteger(numid: UInt32, _ newValue: Int, channels: Int = 1) throws(HardwareError) {
        var value: OpaquePointer?
        snd_ctl_elem_value_malloc(&value)
        defer { snd_ctl_elem_value_free(value) }
        guard let value else {
            throw HardwareError(
                operation: "write control \(numid) on",
                device: title,
                errno: ENOMEM,
                message: "out of memory"
            )
        }
        let result: Int32 =
            withID(numid: numid) { id in
                snd_ctl_elem_value_set_id(value, id)
                for channel in 0..<max(channels, 1) { snd_ctl_elem_value_set_integer(value, UInt32(channel), newValue) }
                return snd_ctl_elem_write(handle, value)
            } ?? -ENOMEM
        guard result >= 0 else {
            throw HardwareError(
                operation: "write control \(numid) on",
                device: title,
                errno: -result,
                message: result == -EPERM
                    ? "the control is locked by another program" : ALSAErrors.message(result)
            )
        }
    }
}
