/// The error `body` throws when it is an `E`, or nil when it throws nothing or something else.
///
/// What `let error = #expect(throws: E.self) { … }` gives from Swift 6.1 on; Swift 6.0's `#expect(throws:)` returns
/// nothing, and hush builds with both (docs/architecture.md, "Two compilers"). The checks on the error that follow
/// fail on nil, so a body that does not throw still fails the test.
public func thrownError<E: Error, R>(_ type: E.Type, _ body: () throws -> R) -> E? {
    do {
        _ = try body()
        return nil
    } catch {
        return error as? E
    }
}
