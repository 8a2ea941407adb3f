import CALSA
import HushCore
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// What an ALSA control element means to hush.
package enum ALSAControlRole: String, Hashable, Sendable {
    /// On = headphones plugged ("Headphone Jack").
    case headphoneJack
    /// On = silent.
    case silenceSwitch

    /// "headphone state", for messages.
    var stateName: String { self == .headphoneJack ? "headphone state" : "silence switch's position" }

    func event(on: Bool) -> InputEvent {
        switch self {
        case .headphoneJack: .headphones(on ? .plugged : .unplugged, source: .alsaControl)
        case .silenceSwitch: .silenceSwitch(on ? .silent : .ring)
        }
    }
}

/// Where a control input is: a card and an element.
public struct ALSAControlConfiguration: Hashable, Sendable {
    /// The card: an index ("0"), an id ("Loopback", "sndrpihifiberry") or "hw:…".
    package var card: String
    package var element: ALSAElementName
    package var role: ALSAControlRole
    /// How long to wait between attempts to reopen a card that went away.
    package var retryInterval: Duration

    package init(
        card: String,
        element: ALSAElementName = ALSAElementName("Headphone Jack"),
        role: ALSAControlRole = .headphoneJack,
        retryInterval: Duration = .seconds(1)
    ) {
        self.card = card
        self.element = element
        self.role = role
        self.retryInterval = retryInterval
    }
}

/// An input read from an ALSA control element, such as the codec's "Headphone Jack".
///
/// It reads the element's value at start-up, subscribes to the card's control events and reports value changes.
/// When the element is removed it says so and waits for it to be added again; when the card goes away (a USB
/// DAC unplugged, a driver unbound) it closes, retries every `retryInterval`, and reports the value again once
/// the card is back.
package final class ALSAControlSource: InputSource {
    package let configuration: ALSAControlConfiguration
    package private(set) var name: String
    private var control: ControlHandle?
    private var numid: UInt32?
    private var lastValue: Bool?
    private var retryAt: Instant?
    private let event: OpaquePointer
    private let logger: Logger

    /// Opens the card and finds the element. A card that is not there (yet) is waited for, as one that went away;
    /// throws when the card is there without the element, naming the elements it has, or cannot be opened.
    package init(_ configuration: ALSAControlConfiguration, logger: Logger) throws(HardwareError) {
        self.configuration = configuration
        self.logger = logger
        var event: OpaquePointer?
        snd_ctl_event_malloc(&event)
        guard let event else {
            throw HardwareError(
                operation: "allocate a control event for",
                device: configuration.card,
                errno: ENOMEM,
                message: "out of memory"
            )
        }
        self.event = event
        name = "\(configuration.card) control \(configuration.element)"
        let control: ControlHandle
        do {
            control = try ControlHandle(card: configuration.card, nonblocking: true)
        } catch  where error.errno == ENODEV || error.errno == ENOENT {
            // A card whose driver comes up after hushd (a DAC HAT probed late, a USB card plugged in later) is
            // waited for as one that went away: hushd starts without it instead of not at all.
            logger.error(
                "\(name): \(error.description); waiting for it (tried every \(configuration.retryInterval.milliseconds) ms), the \(configuration.role.stateName) is unknown until then"
            )
            retryAt = .zero
            return
        }
        name = "\(control.title) control \(configuration.element)"
        guard let numid = control.numid(of: configuration.element) else {
            throw HardwareError(
                operation: "find control \(configuration.element) on",
                device: control.title,
                errno: ENOENT,
                message: "no such control; controls present: "
                    + ControlHandle.describe(control.elementNames())
            )
        }
        try Self.subscribe(control)
        self.control = control
        self.numid = numid
        lastValue = try control.readBoolean(numid: numid)
        logger.info("\(name): ready, \(lastValue == true ? "on" : "off") at start")
    }

    deinit { snd_ctl_event_free(event) }

    package var pollDescriptor: Int32? { control?.pollDescriptor() }

    package var nextDeadline: Instant? { retryAt }

    package func currentState(now: Instant) throws(HardwareError) -> [TimedInputEvent] {
        guard let control, let numid else { return [] }
        let value = try control.readBoolean(numid: numid)
        lastValue = value
        return [TimedInputEvent(configuration.role.event(on: value), at: now)]
    }

    package func readEvents(now: Instant) throws(HardwareError) -> [TimedInputEvent] {
        guard let control else { return reopen(now: now) }
        var out: [TimedInputEvent] = []
        while true {
            let result = snd_ctl_read(control.handle, event)
            if result == 0 || result == -EAGAIN { break }
            if result < 0 {
                if result == -EINTR { continue }
                cardGone(now: now, result: result)
                return out
            }
            guard snd_ctl_event_get_type(event) == SND_CTL_EVENT_ELEM else { continue }
            let mask = snd_ctl_event_elem_get_mask(event)
            let eventNumid = snd_ctl_event_elem_get_numid(event)
            if mask == SND_CTL_EVENT_MASK_REMOVE {
                guard eventNumid == numid else { continue }
                numid = nil
                lastValue = nil
                logger.error("\(name) was removed: the \(configuration.role.stateName) is unknown until it comes back")
                continue
            }
            if numid == nil, mask & UInt32(SND_CTL_EVENT_MASK_ADD) != 0, matches(event) {
                numid = eventNumid
                logger.notice("\(name) is back")
            }
            guard eventNumid == numid, let numid else { continue }
            let value = try control.readBoolean(numid: numid)
            guard value != lastValue else { continue }
            lastValue = value
            out.append(TimedInputEvent(configuration.role.event(on: value), at: now))
        }
        return out
    }

    private func matches(_ event: OpaquePointer) -> Bool {
        String(cString: snd_ctl_event_elem_get_name(event)) == configuration.element.name
            && snd_ctl_event_elem_get_interface(event) == configuration.element.interface.raw
            && snd_ctl_event_elem_get_index(event) == configuration.element.index
    }

    private func cardGone(now: Instant, result: Int32) {
        logger.error(
            "\(name): \(ALSAErrors.message(result)); retrying every \(configuration.retryInterval.milliseconds) ms"
        )
        control = nil
        numid = nil
        lastValue = nil
        retryAt = now + configuration.retryInterval
    }

    /// Tries to get the card and element back; reports their value when it succeeds.
    private func reopen(now: Instant) -> [TimedInputEvent] {
        guard let due = retryAt, due <= now else { return [] }
        retryAt = now + configuration.retryInterval
        guard let control = try? ControlHandle(card: configuration.card, nonblocking: true),
            (try? Self.subscribe(control)) != nil
        else { return [] }
        self.control = control
        retryAt = nil
        name = "\(control.title) control \(configuration.element)"
        guard let numid = control.numid(of: configuration.element), let value = try? control.readBoolean(numid: numid)
        else {
            logger.warning("\(control.title) is back, but without control \(configuration.element); waiting for it")
            return []
        }
        self.numid = numid
        lastValue = value
        logger.notice("\(name) is back: \(value ? "on" : "off")")
        return [TimedInputEvent(configuration.role.event(on: value), at: now)]
    }

    private static func subscribe(_ control: ControlHandle) throws(HardwareError) {
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
}

extension ControlHandle {
    /// A list of element names for a message, without repeats.
    static func describe(_ names: [String]) -> String {
        var seen: Set<String> = []
        let unique = names.filter { seen.insert($0).inserted }
        return unique.isEmpty ? "none" : unique.map { "'\($0)'" }.joined(separator: ", ")
    }
}
