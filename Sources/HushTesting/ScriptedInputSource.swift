import HushCore

/// An input source that replays a script of timed events, like an adapter reading real hardware would.
public final class ScriptedInputSource: InputSource, @unchecked Sendable {
    public let name: String
    public var pollDescriptor: Int32? { nil }
    private var state: [InputEvent]
    private var pending: [TimedInputEvent]
    /// The error the next read throws, to exercise error paths (a device unplugged, permission lost).
    public var nextError: HardwareError?

    /// A source whose controls start in `initialState` and that will report `script` as time reaches each event.
    public init(name: String, initialState: [InputEvent] = [], script: [TimedInputEvent] = []) {
        self.name = name
        state = initialState
        pending = script.sorted { $0.time < $1.time }
    }

    public var nextDeadline: Instant? { pending.first?.time }

    public func currentState(now: Instant) throws(HardwareError) -> [TimedInputEvent] {
        state.map { TimedInputEvent($0, at: now) }
    }

    public func readEvents(now: Instant) throws(HardwareError) -> [TimedInputEvent] {
        if let error = nextError {
            nextError = nil
            throw error
        }
        let due = pending.prefix { $0.time <= now }
        pending.removeFirst(due.count)
        return Array(due)
    }
}
