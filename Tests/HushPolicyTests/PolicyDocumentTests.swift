import Foundation
import HushCore
import Testing

/// docs/policy.md and the code must agree: the same rules, the same names, the same curve; and every rule has a
/// test suite named after it.
@Suite("docs/policy.md agrees with the code")
struct PolicyDocumentTests {
    static let root: String = {
        var path = #filePath
        for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }
        return path
    }()

    static func read(_ relative: String) -> String {
        (try? String(contentsOfFile: root + "/" + relative, encoding: .utf8)) ?? ""
    }

    /// The first two cells of every table row: identifier and name.
    static func documentedRules() -> [(id: String, name: String)] {
        read("docs/policy.md").split(separator: "\n").compactMap { line in
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 3, let first = cells.first, first.first == "R" || first.first == "M",
                first.dropFirst().allSatisfy(\.isNumber), first.count > 1
            else { return nil }
            return (first, cells[1])
        }
    }

    @Test("every rule in the code is in the table with its name, and nothing else is")
    func rulesAgree() {
        let documented = Self.documentedRules()
        #expect(!documented.isEmpty, "docs/policy.md has no rule table")
        #expect(documented.map(\.id) == Rule.allCases.map(\.rawValue))
        for rule in Rule.allCases {
            #expect(documented.contains { $0.id == rule.rawValue && $0.name == rule.title }, "\(rule)")
        }
    }

    @Test("every rule has a test suite named after it")
    func everyRuleTested() {
        let tests =
            Self.read("Tests/HushPolicyTests/RuleTests.swift")
            + Self.read("Tests/HushPolicyTests/MeetingCaseTests.swift")
            + Self.read("Tests/HushPolicyTests/StreamRuleTests.swift")
            + Self.read("Tests/HushPolicyTests/MicrophoneRuleTests.swift")
        for rule in Rule.allCases {
            #expect(tests.contains("@Suite(\"\(rule.rawValue) \(rule.title)\")"), "no suite for \(rule)")
        }
    }

    @Test("the documented curve is the code's curve")
    func curveAgrees() {
        let row = Self.read("docs/policy.md").split(separator: "\n").first { $0.hasPrefix("| dB |") }
        let cells =
            row.map { $0.split(separator: "|").dropFirst().map { $0.trimmingCharacters(in: .whitespaces) } } ?? []
        #expect(cells.count == 17)
        for (step, cell) in cells.enumerated() where step > 0 {
            let value = Float(cell.replacingOccurrences(of: "−", with: "-")) ?? .nan
            let code = VolumeCurve.default.decibels(at: VolumeStep(clamping: step))
            #expect(abs(value - code) <= 0.051, "step \(step): docs \(cell), code \(code)")
        }
    }
}
