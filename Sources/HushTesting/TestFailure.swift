/// Why a test's helper could not go on: what was being done and what was seen. HushTesting does not link Swift
/// Testing (the virtual board's programs use it too), so its helpers throw this where a test would `#require`.
public struct TestFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
