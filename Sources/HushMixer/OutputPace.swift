import Synchronization

/// The output's period in force and the queue behind the mix (R24): written by the audio thread when either
/// changes, read by applications' streams each period to tell their clients how far behind the speaker is and how
/// far to interpolate between two of hushd's periods. Atomics only: no lock on either side.
public final class OutputPace: Sendable {
    /// Frames the audio thread mixes per wake-up now (0 before its first period).
    public let periodFrames = Atomic<Int>(0)
    /// Frames between a period's mix and the speaker at the moment it is written: the device's queue.
    public let queuedFrames = Atomic<Int>(0)

    public init() {}

    /// Audio thread: the period in force and the queue it keeps.
    public func set(period: Int, queued: Int) {
        queuedFrames.store(queued, ordering: .relaxed)
        periodFrames.store(period, ordering: .relaxed)
    }
}
