#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Which of the two user-facing volumes something refers to.
public enum VolumeKind: String, Sendable, CaseIterable, Hashable, CustomStringConvertible {
    /// Scales the effect and music buses; remembered per route (policy R2, R4, R5).
    case system
    /// Scales the ringer bus only (policy R2).
    case ringer

    public var description: String { rawValue }
}

/// A volume position as a person sets it with the buttons: 0 (silent) … 16 (full).
public struct VolumeStep: RawRepresentable, Hashable, Sendable, Comparable, CustomStringConvertible {
    public static let minimum = VolumeStep(clamping: 0)
    public static let maximum = VolumeStep(clamping: 16)
    /// The number of steps above silence.
    public static let count = 16

    public let rawValue: Int

    /// A step, or nil when `rawValue` is outside 0…16.
    public init?(rawValue: Int) {
        guard (0...VolumeStep.count).contains(rawValue) else { return nil }
        self.rawValue = rawValue
    }

    /// The nearest step to `value` within 0…16.
    public init(clamping value: Int) { rawValue = min(max(value, 0), VolumeStep.count) }

    /// This step moved by `delta` steps, stopping at the ends.
    public func moved(by delta: Int) -> VolumeStep { VolumeStep(clamping: rawValue + delta) }

    public var description: String { "\(rawValue)/\(VolumeStep.count)" }
    public static func < (a: VolumeStep, b: VolumeStep) -> Bool { a.rawValue < b.rawValue }
}

/// A linear amplitude factor (1 = unity). Constructed from decibels where people think in decibels.
public struct Gain: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var linear: Float

    public init(linear: Float) { self.linear = linear }

    /// `decibels` as a linear factor; -infinity gives silence.
    public init(decibels: Float) {
        linear = decibels == -.infinity ? 0 : powf(10, decibels / 20)
    }

    public static let unity = Gain(linear: 1)
    public static let silent = Gain(linear: 0)

    /// The gain in decibels (-infinity for silence).
    public var decibels: Float { linear <= 0 ? -.infinity : 20 * log10f(linear) }

    public static func * (a: Gain, b: Gain) -> Gain { Gain(linear: a.linear * b.linear) }
    public static func < (a: Gain, b: Gain) -> Bool { a.linear < b.linear }

    public var description: String {
        if linear <= 0 { return "-inf dB" }
        return DecimalText.fixed(decibels, places: 1, sign: true) + " dB"
    }
}

/// Maps volume steps to gain: straight lines in decibels between anchor points.
///
/// The default puts step 1 at -50 dB and step 16 at 0 dB, with finer steps near the top where people listen
/// most (the full table is in docs/policy.md). Step 0 is always silence.
public struct VolumeCurve: Hashable, Sendable {
    /// Anchor points (step, decibels), strictly increasing in both.
    public let anchors: [(step: Int, decibels: Float)]

    public static let `default` = VolumeCurve(
        uncheckedAnchors: [(1, -50), (4, -38), (8, -24), (12, -11), (16, 0)]
    )

    /// Why a curve was refused.
    public struct InvalidCurve: Error, Hashable, Sendable, CustomStringConvertible {
        public var description: String
    }

    /// A curve through `anchors`. The first must be step 1, the last step 16; steps and decibels must rise.
    public init(anchors: [(step: Int, decibels: Float)]) throws(InvalidCurve) {
        guard let first = anchors.first, let last = anchors.last, first.step == 1, last.step == VolumeStep.count
        else {
            throw InvalidCurve(description: "volume curve must start at step 1 and end at step \(VolumeStep.count)")
        }
        for (a, b) in zip(anchors, anchors.dropFirst()) where !(a.step < b.step && a.decibels < b.decibels) {
            throw InvalidCurve(
                description: "volume curve points must rise: step \(a.step) (\(a.decibels) dB) "
                    + "is followed by step \(b.step) (\(b.decibels) dB)"
            )
        }
        guard last.decibels <= 0 else {
            throw InvalidCurve(description: "volume curve must not amplify: step 16 is \(last.decibels) dB")
        }
        self.anchors = anchors
    }

    private init(uncheckedAnchors: [(step: Int, decibels: Float)]) { anchors = uncheckedAnchors }

    /// The level of `step` in decibels (-infinity for step 0).
    public func decibels(at step: VolumeStep) -> Float {
        guard step.rawValue > 0 else { return -.infinity }
        for (a, b) in zip(anchors, anchors.dropFirst()) where step.rawValue <= b.step {
            let t = Float(step.rawValue - a.step) / Float(b.step - a.step)
            return a.decibels + t * (b.decibels - a.decibels)
        }
        return anchors[anchors.count - 1].decibels
    }

    /// The linear gain of `step`.
    public func gain(at step: VolumeStep) -> Gain { Gain(decibels: decibels(at: step)) }

    public static func == (a: VolumeCurve, b: VolumeCurve) -> Bool {
        a.anchors.count == b.anchors.count
            && zip(a.anchors, b.anchors).allSatisfy { $0.step == $1.step && $0.decibels == $1.decibels }
    }

    public func hash(into hasher: inout Hasher) {
        for anchor in anchors {
            hasher.combine(anchor.step)
            hasher.combine(anchor.decibels)
        }
    }
}
