/// One of the mixer's three output buses. Every session plays on exactly one.
public enum Bus: String, Sendable, CaseIterable, Hashable, CustomStringConvertible {
    /// Short sounds: clicks, chimes, game effects. Scaled by the system volume.
    case effect
    /// Long-form audio: music, radio, speech, calls. Scaled by the system volume.
    case music
    /// Ringtones and alarms. Scaled by the ringer volume only.
    case ringer

    /// Which volume scales this bus (policy R2).
    public var volumeKind: VolumeKind { self == .ringer ? .ringer : .system }

    public var description: String { rawValue }
}
