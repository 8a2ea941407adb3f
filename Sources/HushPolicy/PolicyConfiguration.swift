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
    /// Hearing safety on private routes (R27, R28, R29).
    public var hearing = HearingConfiguration()

    public init() {}
}

/// Hearing safety (R27, R28, R29): what each route is at the listener, which routes are private (worn, held to the
/// ear), and the limits. Every level is in dB(A) at the listener; docs/policy.md gives the defaults and why.
public struct HearingConfiguration: Hashable, Sendable {
    /// Routes whose sound goes straight into a person's ears: headphones, a handset, Bluetooth headphones. None
    /// by default here; hushd's configuration makes the route named headphones private unless it says otherwise.
    public var privateRoutes: Set<Route> = []
    /// What a full-scale 1 kHz sine is at the listener on each route the board profile calibrated.
    public var fullScale: [Route: Double] = [:]
    /// What hush assumes on a private route with no calibration: as loud as headphone amplifiers are likely to be
    /// (Android's fixed assumption), so that it warns early rather than late.
    public var assumedFullScale = 110.0
    /// A private route starts (at power-up, when plugged, when picked) at no more than this (R27).
    public var startLimit = 85.0
    /// A momentary level over this ... (R29)
    public var momentaryLimit = 100.0
    /// ... for more than this many seconds in a row starts a reduction.
    public var momentarySeconds = 5
    /// After a person turned the volume up again following a warning, the momentary warning comes again only once
    /// the level has stayed under the limit this long (a new listening).
    public var rearmAfter: Duration = .seconds(600)
    /// At this dose (5 = 500 %) the reduction is not optional: the volume stays at the start limit's step.
    public var enforcedDose = 5.0
    /// The fastest a reduction lowers the level, in dB per second: never a sudden jump.
    public var reductionRate = 1.0
    /// How long the alert light shows a warning (`[outputs.alert_led]`): a board without a screen.
    public var warningLight: Duration = .seconds(10)
    /// A sound plays with each warning (R30): hushd's configuration names one (`[sounds] hearing_warning`).
    public var warningSound = false
    /// A level nothing exceeds on any calibrated route, whatever the volume (a toy); nil for none (R28).
    public var ceiling: Double?

    public init() {}

    /// What a full-scale 1 kHz sine is at the listener on `route`: its calibration, the assumption on an
    /// uncalibrated private route, nil on an uncalibrated public one (nothing to protect or to hold to).
    public func fullScale(on route: Route) -> Double? {
        fullScale[route] ?? (privateRoutes.contains(route) ? assumedFullScale : nil)
    }
}
