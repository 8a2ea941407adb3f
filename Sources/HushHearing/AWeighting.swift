#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The A frequency weighting of IEC 61672-1: how much less a person hears each frequency than 1 kHz, the weighting
/// a sound level in dB(A) is measured with. Its analytic form (IEC 61672-1, Annex E): four poles (20.6 Hz twice,
/// 107.7 Hz, 737.9 Hz, 12194 Hz twice) and four zeros at 0 Hz, normalised to 0 dB at 1 kHz.
public enum AWeighting {
    /// The poles' frequencies in Hz, as the standard gives them (E.2).
    static let f1 = 20.598997
    static let f2 = 107.65265
    static let f3 = 737.86223
    static let f4 = 12194.217

    /// The weighting's relative response at `hertz`, unnormalised.
    private static func response(_ hertz: Double) -> Double {
        let f2 = hertz * hertz
        let numerator = Self.f4 * Self.f4 * f2 * f2
        let denominator =
            (f2 + Self.f1 * Self.f1) * ((f2 + Self.f2 * Self.f2) * (f2 + Self.f3 * Self.f3)).squareRoot()
            * (f2 + Self.f4 * Self.f4)
        return numerator / denominator
    }

    private static let atOneKilohertz = response(1000)

    /// The weighting at `hertz` as a power factor (1 at 1 kHz; 0 at 0 Hz).
    public static func power(atHertz hertz: Double) -> Double {
        guard hertz > 0 else { return 0 }
        let relative = response(hertz) / atOneKilohertz
        return relative * relative
    }

    /// The weighting at `hertz` in decibels (0 at 1 kHz, -39.5 at 31.5 Hz, -6.6 at 16 kHz).
    public static func decibels(atHertz hertz: Double) -> Double {
        10 * log10(power(atHertz: hertz))
    }
}
