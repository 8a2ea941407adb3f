/// An error from a hardware adapter, phrased for the person at the serial console.
///
/// `operation` says what hush was doing, `device` what it was doing it to, `errno` the system's answer where
/// there is one, and `message` what it means and what to do about it.
public struct HardwareError: Error, Hashable, Sendable, CustomStringConvertible {
    public var operation: String
    public var device: String
    public var errno: Int32?
    public var message: String

    public init(operation: String, device: String, errno: Int32? = nil, message: String) {
        self.operation = operation
        self.device = device
        self.errno = errno
        self.message = message
    }

    /// "cannot request line 17 on gpiochip0: line is busy (used by 'gpio-keys') [errno 16]"
    public var description: String {
        "cannot \(operation) \(device): \(message)" + (errno.map { " [errno \($0)]" } ?? "")
    }
}

/// A source of input events: a GPIO line group, an evdev device or an ALSA control interface.
///
/// The daemon polls `pollDescriptor` for readability and then calls `readEvents(now:)`. Sources that time
/// things themselves (software debounce) also say when they next need to be called.
public protocol InputSource: AnyObject {
    /// What this source is, for logs: "gpiochip0 lines 17, 27 (silence switch, volume up)".
    var name: String { get }
    /// A file descriptor that becomes readable when events are pending, or nil for sources with none.
    var pollDescriptor: Int32? { get }
    /// The instant at which `readEvents(now:)` must be called even without readability (debounce windows).
    var nextDeadline: Instant? { get }
    /// The controls' current positions, read from the hardware at start-up (never assumed).
    func currentState(now: Instant) throws(HardwareError) -> [TimedInputEvent]
    /// The events that happened since the last call, in order.
    func readEvents(now: Instant) throws(HardwareError) -> [TimedInputEvent]
}

/// A digital output: an LED or a vibration motor that signals a silenced alert.
public protocol OutputLine: AnyObject {
    var name: String { get }
    func set(_ active: Bool) throws(HardwareError)
}

/// What a write to an output device came to (an ALSA PCM, the WAV fallback, a test's device).
public enum PCMWriteResult: Equatable, Sendable {
    /// Every frame was queued.
    case written
    /// The device underran or was suspended; it has been recovered, this period is lost.
    case recovered
    /// The device is gone (unplugged, unbound); close it and retry opening later.
    case gone
    /// Another error that recovery did not fix (code is the negative errno).
    case failed(Int32)
}
