/// Every behaviour rule of the policy, named once. The same identifiers appear in the reason of every decision,
/// in the logs, in docs/policy.md and in the test that proves the rule.
///
/// R1–R16 are the rules of sessions, R17–R20 and R23 those of applications' streams through the `hush` ALSA device,
/// R21 and R22 those of the microphone, R24 that of the output's period, R25 that of hushd's own start-up sound, R26 a session's own level, R27–R30
/// those of hearing safety;
/// M1–M9 decide what happens where two rules meet.
public enum Rule: String, Sendable, Hashable, CaseIterable, Comparable, CustomStringConvertible {
    case r1 = "R1"
    case r2 = "R2"
    case r3 = "R3"
    case r4 = "R4"
    case r5 = "R5"
    case r6 = "R6"
    case r7 = "R7"
    case r8 = "R8"
    case r9 = "R9"
    case r10 = "R10"
    case r11 = "R11"
    case r12 = "R12"
    case r13 = "R13"
    case r14 = "R14"
    case r15 = "R15"
    case r16 = "R16"
    case m1 = "M1"
    case m2 = "M2"
    case m3 = "M3"
    case m4 = "M4"
    case m5 = "M5"
    case m6 = "M6"
    case m7 = "M7"
    case m8 = "M8"
    case m9 = "M9"
    case r17 = "R17"
    case r18 = "R18"
    case r19 = "R19"
    case r20 = "R20"
    case r23 = "R23"
    case r21 = "R21"
    case r22 = "R22"
    case r24 = "R24"
    case r25 = "R25"
    case r26 = "R26"
    case r27 = "R27"
    case r28 = "R28"
    case r29 = "R29"
    case r30 = "R30"

    /// A short name for logs: "R1 silence-switch".
    public var title: String {
        switch self {
        case .r1: "silence-switch"
        case .r2: "volume-scales-buses"
        case .r3: "volume-buttons"
        case .r4: "headphones-plugged"
        case .r5: "headphones-unplugged"
        case .r6: "non-mixable-interrupts"
        case .r7: "duck-others"
        case .r8: "interruption-end"
        case .r9: "resume-after-interruption"
        case .r10: "client-gone"
        case .r11: "media-keys"
        case .r12: "start-up"
        case .r13: "route-override"
        case .r14: "secondary-audio-hint"
        case .r15: "session-requests"
        case .r16: "silent-alert-light"
        case .r17: "stream-session"
        case .r18: "stream-transport"
        case .r19: "stream-state"
        case .r20: "microphone-gate"
        case .r21: "microphone-privacy"
        case .r22: "capture-mode"
        case .r23: "late-application"
        case .r24: "output-period"
        case .r25: "start-up-sound"
        case .r26: "session-level"
        case .r27: "hearing-start-level"
        case .r28: "hearing-ceiling"
        case .r29: "hearing-exposure"
        case .r30: "hearing-warning-sound"
        case .m1: "silenced-session-takes-no-floor"
        case .m2: "silence-keeps-the-floor"
        case .m3: "unplug-while-interrupted"
        case .m4: "transient-holds-the-floor"
        case .m5: "play-while-interrupted"
        case .m6: "duplicate-jack-report"
        case .m7: "unplug-during-duck"
        case .m8: "buttons-follow-audible-ringer"
        case .m9: "silence-during-ducking"
        }
    }

    public var description: String { "\(rawValue) \(title)" }

    public static func < (a: Rule, b: Rule) -> Bool {
        let order = Rule.allCases
        return order.firstIndex(of: a)! < order.firstIndex(of: b)!
    }
}
