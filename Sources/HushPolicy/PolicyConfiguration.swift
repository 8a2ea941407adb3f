import HushCore

/// The tunable parts of the policy; every field has the default documented in docs/policy.md.
public struct PolicyConfiguration: Hashable, Sendable {
    /// The routes a person can pick (R13). Must contain `speaker`; `headphones` is needed for R4/R5.
    public var routes: [Route] = [.speaker, .headphones]
    /// Steps → decibels (R2).
    public var curve: VolumeCurve = .default
    /// The system volume on a route with no remembered volume.
    public var defaultSystemVolume = VolumeStep(clamping: 8)
    /// The ringer volume when none is remembered.
    public var defaultRingerVolume = VolumeStep(clamping: 10)
    /// No volume starts above this (R12), so a device never powers up blaring.
    public var startupMaximum = VolumeStep(clamping: 12)
    /// What the volume buttons control when nothing plays (R3).
    public var idleButtonTarget: VolumeKind = .system
    /// How long a volume button is held before it repeats (R3).
    public var repeatDelay: Duration = .milliseconds(500)
    /// How often a held volume button repeats (R3).
    public var repeatInterval: Duration = .milliseconds(100)
    /// How far ducking lowers other sessions (R7).
    public var duckDepth = Gain(decibels: -14)
    /// How fast ducking lowers (R7).
    public var duckAttack: Duration = .milliseconds(100)
    /// How fast ducking lets go (R7).
    public var duckRelease: Duration = .milliseconds(500)
    /// How fast the silence switch mutes and unmutes (R1; at most 20 ms).
    public var silenceRamp: Duration = .milliseconds(20)
    /// How fast a volume change is applied (R2).
    public var volumeRamp: Duration = .milliseconds(30)

    public init() {}
}
