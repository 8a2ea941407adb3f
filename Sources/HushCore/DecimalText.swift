/// Numbers as people read them in hush's output, the one formatter for them: the same text on every machine and in
/// every locale (no printf, no Foundation), rounded half away from zero, and no "-" on a value that rounds to 0.
///
/// hushctl's status, the console, the log, `hush-render`'s summary and timeline all use it.
public enum DecimalText {
    /// `value` with exactly `places` decimals: "12.346", "0.500", "3"; with `sign`, "+" before a value that is
    /// not negative ("+0.0", "-24.0").
    public static func fixed<Value: BinaryFloatingPoint>(_ value: Value, places: Int, sign: Bool = false) -> String {
        guard let (negative, whole, fraction) = digits(value, places: places) else { return "\(Double(value))" }
        let text = fraction.isEmpty ? whole : whole + "." + fraction
        return (negative ? "-" : sign ? "+" : "") + text
    }

    /// `value` with at most `places` decimals, trailing zeros dropped: "4", "4.5", "1.33".
    public static func trimmed<Value: BinaryFloatingPoint>(_ value: Value, places: Int) -> String {
        guard let (negative, whole, digits) = digits(value, places: places) else { return "\(Double(value))" }
        var fraction = Substring(digits)
        while fraction.last == "0" { fraction.removeLast() }
        return (negative ? "-" : "") + whole + (fraction.isEmpty ? "" : "." + fraction)
    }

    /// The rounded value's sign, whole part and `places` fraction digits; nil for a value that is not finite or
    /// does not fit an Int64 once scaled (then the caller writes Swift's own text: "inf", "-inf", "nan", "1e+30").
    private static func digits<Value: BinaryFloatingPoint>(
        _ value: Value,
        places: Int
    ) -> (negative: Bool, whole: String, fraction: String)? {
        precondition((0...18).contains(places), "DecimalText: \(places) decimal places")
        var scale: Int64 = 1
        for _ in 0..<places { scale *= 10 }
        // Scaled in the value's own type, so a Float rounds as Float arithmetic does (-3.35 as a Float is
        // -3.3499999, and times 10 in Float is exactly -33.5).
        guard value.isFinite, let scaled = Int64(exactly: (value * Value(scale)).rounded()) else { return nil }
        let magnitude = scaled.magnitude
        let whole = String(magnitude / scale.magnitude)
        guard places > 0 else { return (scaled < 0, whole, "") }
        let fraction = String(magnitude % scale.magnitude)
        return (scaled < 0, whole, String(repeating: "0", count: places - fraction.count) + fraction)
    }
}
