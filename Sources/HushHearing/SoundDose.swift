#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How loud a route is at the listener: the sound level in dB(A) a full-scale 1 kHz sine produces at the ear
/// (headphones, a handset) or at 1 m (a speaker). A board profile gives it per route; without one, hush assumes
/// ``conservativeDefault``, as loud as any headphone amplifier is likely to be, so that it warns early rather than
/// late, and says so.
public struct HearingCalibration: Hashable, Sendable, CustomStringConvertible {
    /// What a full-scale 1 kHz sine is at the listener, in dB(A).
    public var fullScaleDecibelsA: Double
    /// Whether a board profile measured it (false: the conservative default).
    public var measured: Bool

    /// 110 dB(A) at full scale: Android's fixed assumption, the conservative end of headphone amplifiers.
    public static let conservativeDefault = HearingCalibration(fullScaleDecibelsA: 110, measured: false)

    public init(fullScaleDecibelsA: Double, measured: Bool = true) {
        self.fullScaleDecibelsA = fullScaleDecibelsA
        self.measured = measured
    }

    /// The sound level at the listener of audio whose meter level (``LevelMeter``) is `meter`.
    public func decibelsA(meter: Double) -> Double { meter + fullScaleDecibelsA }

    public var description: String {
        "\(fullScaleDecibelsA) dB(A) at full scale" + (measured ? "" : " (not calibrated: the conservative default)")
    }
}

/// A listener's sound dose over a rolling week, after IEC 62368-1 and EN 50332-3 as Android keeps it: 100 % is
/// 80 dB(A) for 40 hours, and every 3 dB more halves the time (equal energy: a dose is energy, 10^(L/10) × time).
///
/// Kept per hour of the wall clock (hours since 1970, so it survives restarts and power cuts with the state file):
/// 168 buckets at most, each the dose its hour added. The dose is what the last 168 hours add up to.
public struct SoundDose: Hashable, Sendable, CustomStringConvertible {
    /// 80 dB(A) for 40 h is 100 %.
    public static let referenceDecibelsA = 80.0
    public static let referenceSeconds = 40.0 * 3600
    /// The rolling window: 7 days.
    public static let windowHours: Int64 = 7 * 24

    /// The dose each hour added, by hour since 1970 (1 = 100 %).
    public private(set) var hours: [Int64: Double] = [:]

    public init() {}

    /// The dose `seconds` of sound at `decibelsA` add.
    public static func dose(decibelsA: Double, seconds: Double) -> Double {
        pow(10, (decibelsA - referenceDecibelsA) / 10) * seconds / referenceSeconds
    }

    /// Adds `seconds` of sound at `decibelsA` heard in `hour`; hours that left the window are forgotten.
    public mutating func add(decibelsA: Double, seconds: Double, hour: Int64) {
        guard decibelsA.isFinite, seconds > 0 else { return }
        hours[hour, default: 0] += Self.dose(decibelsA: decibelsA, seconds: seconds)
        forget(before: hour)
    }

    /// Drops the hours that are out of the window at `hour`.
    public mutating func forget(before hour: Int64) {
        let oldest = hour - Self.windowHours + 1
        if hours.keys.contains(where: { $0 < oldest }) { hours = hours.filter { $0.key >= oldest } }
    }

    /// The dose of the week that ends with `hour` (1 = 100 %).
    public func fraction(at hour: Int64) -> Double {
        let oldest = hour - Self.windowHours + 1
        return hours.filter { $0.key >= oldest && $0.key <= hour }.values.reduce(0, +)
    }

    public var description: String {
        let total = hours.values.reduce(0, +)
        return "\((total * 1000).rounded() / 10) % over \(hours.count) hour(s)"
    }

    // MARK: The state file

    /// Why a stored dose was not read.
    public struct Malformed: Error, Hashable, Sendable, CustomStringConvertible {
        public var description: String
    }

    /// The dose as the state file keeps it: "HOUR:DOSE" pairs separated by commas, oldest first, the dose with
    /// nine significant digits ("492107:0.0125,492108:0.5").
    public var encoded: String {
        hours.keys.sorted().map { "\($0):\(Self.text(hours[$0]!))" }.joined(separator: ",")
    }

    private static func text(_ value: Double) -> String {
        var text = "\(value)"
        if text.hasSuffix(".0") { text.removeLast(2) }
        return text
    }

    /// A dose read back from ``encoded``; a word that is not "HOUR:DOSE" with a dose of 0 or more is refused,
    /// named.
    public init(encoded text: String) throws(Malformed) {
        guard !text.isEmpty else { return }
        for pair in text.split(separator: ",", omittingEmptySubsequences: false) {
            let parts = pair.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count == 2, let hour = Int64(parts[0]), let dose = Double(parts[1]), dose.isFinite, dose >= 0
            else {
                throw Malformed(description: "'\(pair)' is not HOUR:DOSE (hours since 1970, a dose of 0 or more)")
            }
            hours[hour, default: 0] += dose
        }
    }
}
