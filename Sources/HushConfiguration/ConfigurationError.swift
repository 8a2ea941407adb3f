/// One thing wrong with a configuration: where it is and what to do about it.
///
/// Printed as `FILE:LINE: [SECTION] KEY = VALUE: what is wrong`, for example
/// `hushd.toml:12: [output] period_frames = 7: must be a whole number from 16 to 8192`, the shape compilers use,
/// so editors and people find the line at once.
public struct ConfigurationProblem: Hashable, Sendable, CustomStringConvertible {
    /// The file, as it was named (a path, or the name given to ``HushdConfiguration/parse(_:file:)``).
    public var file: String
    /// 1-based; nil when the problem is about the whole file (it cannot be read).
    public var line: Int?
    /// 1-based; given for TOML syntax errors.
    public var column: Int?
    /// The table the key is in ("output", "inputs.volume_up"); nil for the top level or the whole file.
    public var section: String?
    /// The key; nil when the problem is about a section or the file.
    public var key: String?
    /// What is wrong, starting with the section, key and value when there are any.
    public var message: String

    public init(
        file: String,
        line: Int? = nil,
        column: Int? = nil,
        section: String? = nil,
        key: String? = nil,
        message: String
    ) {
        self.file = file
        self.line = line
        self.column = column
        self.section = section
        self.key = key
        self.message = message
    }

    public var description: String {
        var place = file
        if let line { place += ":\(line)" }
        if let column { place += ":\(column)" }
        return "\(place): \(message)"
    }
}

/// Why a configuration cannot be used: every problem found, in file and line order.
///
/// The loader does not stop at the first problem: a person fixing a file wants the whole list at once.
public struct ConfigurationError: Error, Hashable, Sendable, CustomStringConvertible {
    public var problems: [ConfigurationProblem]

    public init(_ problems: [ConfigurationProblem]) {
        self.problems = problems.sorted { a, b in
            if a.file != b.file { return a.file < b.file }
            if (a.line ?? 0, a.column ?? 0) != (b.line ?? 0, b.column ?? 0) {
                return (a.line ?? 0, a.column ?? 0) < (b.line ?? 0, b.column ?? 0)
            }
            return a.message < b.message
        }
    }

    public init(_ problem: ConfigurationProblem) { self.init([problem]) }

    /// One problem per line.
    public var description: String { problems.map(\.description).joined(separator: "\n") }
}
