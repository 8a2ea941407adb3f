import HushCore
import Testing

/// The one number formatter: the texts hushctl, the console, the log and `hush-render` print, byte for byte.
@Suite("decimal text")
struct DecimalTextTests {
    @Test("fixed places: padded, rounded half away from zero, no minus on a value that rounds to zero")
    func fixed() {
        let cases: [(Double, Int, String)] = [
            (12.3456, 3, "12.346"), (0.5, 3, "0.500"), (3, 0, "3"), (2.5, 0, "3"), (-2.5, 0, "-3"),
            (0.0005, 3, "0.001"), (-0.0004, 3, "0.000"), (-0.0, 1, "0.0"), (-1.25, 1, "-1.3"), (1.05, 2, "1.05"),
            (3725.4, 3, "3725.400"), (0.007, 3, "0.007"), (0.07, 3, "0.070"), (123_456_789.125, 3, "123456789.125"),
        ]
        for (value, places, text) in cases {
            #expect(DecimalText.fixed(value, places: places) == text, "\(value) to \(places) places")
        }
    }

    @Test("fixed places with a sign: + for zero and above")
    func signed() {
        #expect(DecimalText.fixed(-24.0, places: 1, sign: true) == "-24.0")
        #expect(DecimalText.fixed(0.0, places: 1, sign: true) == "+0.0")
        #expect(DecimalText.fixed(-0.04, places: 1, sign: true) == "+0.0")
        #expect(DecimalText.fixed(-0.05, places: 1, sign: true) == "-0.1")
        #expect(DecimalText.fixed(6.02, places: 1, sign: true) == "+6.0")
    }

    @Test("at most so many places: trailing zeros and the point dropped")
    func trimmed() {
        let cases: [(Double, Int, String)] = [
            (4, 2, "4"), (4.5, 2, "4.5"), (1.333, 2, "1.33"), (1.005, 2, "1"), (0.05, 2, "0.05"), (-0.05, 2, "-0.05"),
            (-0.004, 2, "0"), (10.10, 2, "10.1"), (-24, 1, "-24"), (-3.25, 1, "-3.3"), (799.96, 1, "800"),
            (0.125, 3, "0.125"), (1234.5, 0, "1235"),
        ]
        for (value, places, text) in cases {
            #expect(DecimalText.trimmed(value, places: places) == text, "\(value) to \(places) places")
        }
    }

    /// A Float is scaled as a Float: -3.35 is stored as -3.3499999, which times 10 is -33.5 in Float arithmetic but
    /// -33.499999 in Double. Gain's text has always rounded the Float way.
    @Test("a Float rounds in Float arithmetic")
    func float() {
        #expect(DecimalText.fixed(Float(-3.35), places: 1) == "-3.4")
        #expect(DecimalText.fixed(Double(Float(-3.35)), places: 1) == "-3.3")
        #expect(DecimalText.trimmed(Float(0.1), places: 3) == "0.1")
    }

    @Test("what has no decimal form, or does not fit, is written as Swift writes it")
    func outsideTheRange() {
        #expect(DecimalText.fixed(-Double.infinity, places: 1) == "-inf")
        #expect(DecimalText.trimmed(Double.nan, places: 2) == "nan")
        #expect(DecimalText.fixed(1e30, places: 3) == "1e+30")
        #expect(DecimalText.trimmed(Float.infinity, places: 1) == "inf")
    }

    @Test("Gain and Instant print with it")
    func users() {
        #expect(Gain(decibels: -17.5).description == "-17.5 dB")
        #expect(Gain(decibels: 0.04).description == "+0.0 dB")
        #expect(Instant.milliseconds(1525).description == "1.525s")
        #expect(Instant(nanoseconds: 1_525_900_000).description == "1.525s")
        #expect(Instant.milliseconds(7).description == "0.007s")
    }
}
