#if canImport(Glibc)
import Glibc
#endif

/// Reports a broken property of a parser and stops the run: libFuzzer takes the abort as a crash, keeps the
/// input as crash-<sha1> and prints it.
///
/// Only harnesses call this: hush itself must answer any input with a value or an error, never a trap.
public func finding(_ message: String, input: [UInt8]) -> Never {
    let shown = String(decoding: input.prefix(400), as: UTF8.self)
    let report = Array("FUZZ FINDING: \(message)\ninput (\(input.count) bytes, first 400 as UTF-8): \(shown)\n".utf8)
    // SAFETY: the pointer and count come from `report`, alive for the call; a short write only cuts the report.
    _ = report.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
    abort()
}

/// Checks `condition`, a property every input must keep; a failure is a finding.
public func require(
    _ condition: Bool,
    _ message: @autoclosure () -> String,
    input: [UInt8]
) {
    if !condition { finding(message(), input: input) }
}

/// The bytes libFuzzer passes, as an array.
public func bytes(_ data: UnsafePointer<UInt8>?, _ size: Int) -> [UInt8] {
    guard let data, size > 0 else { return [] }
    // SAFETY: libFuzzer guarantees `data` points to `size` readable bytes for the duration of the call.
    return Array(UnsafeBufferPointer(start: data, count: size))
}

/// The number of lines in `text` as an editor counts them (a final line without a newline counts).
public func lineCount(_ text: String) -> Int {
    text.utf8.split(separator: 0x0A, omittingEmptySubsequences: false).count
}
