import Foundation
import HushCore
import TOMLKit

/// The output settings of a board profile (its `[output]` table): what `hushd render` needs to render as the
/// board would play. The daemon's full configuration loader reads the rest of the profile.
public struct BoardOutput: Hashable, Sendable {
    public var name: String
    /// The profile's output PCM, if it names one.
    public var pcm: String?
    public var sampleRate = 48000
    public var channels = 2
    public var periodFrames = 64
    public var format = SampleFormat.s16LE

    /// Why a profile could not be used: the file, and what is wrong.
    public struct ProfileError: Error, Hashable, Sendable, CustomStringConvertible {
        public var description: String
    }

    /// Where `--board NAME` looks, in order.
    public static let searchPath = ["board/profiles", "/usr/share/hush/boards", "/etc/hush/boards"]

    /// Loads `board`: a path to a .toml file, or a profile name looked up in ``searchPath``.
    public static func load(_ board: String) throws(ProfileError) -> BoardOutput {
        let candidates = board.hasSuffix(".toml") ? [board] : searchPath.map { "\($0)/\(board).toml" }
        guard let path = candidates.first(where: { FileManager.default.fileExists(atPath: $0) }) else {
            throw ProfileError(
                description: "no board profile '\(board)' (looked in \(candidates.joined(separator: ", ")))"
            )
        }
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw ProfileError(description: "\(path): cannot read it: \(error.localizedDescription)")
        }
        let table: TOMLTable
        do {
            table = try TOMLTable(string: text)
        } catch let error as TOMLParseError {
            throw ProfileError(description: "\(path):\(error.source.begin.line): \(error.description)")
        } catch {
            throw ProfileError(description: "\(path): \(error)")
        }
        var output = BoardOutput(name: path)
        guard let section = table["output"]?.table else { return output }
        func integer(_ key: String, _ range: ClosedRange<Int>) throws(ProfileError) -> Int? {
            guard let value = section[key] else { return nil }
            guard let number = value.int, range.contains(number) else {
                throw ProfileError(
                    description: "\(path): [output] \(key) must be a whole number in \(range), not \(value)"
                )
            }
            return number
        }
        output.pcm = section["pcm"]?.string
        output.sampleRate = try integer("rate", 8000...384_000) ?? output.sampleRate
        output.channels = try integer("channels", 1...2) ?? output.channels
        output.periodFrames = try integer("period_frames", 16...8192) ?? output.periodFrames
        if let format = section["format"] {
            guard let name = format.string, let parsed = SampleFormat(rawValue: name) else {
                throw ProfileError(
                    description: "\(path): [output] format must be one of "
                        + SampleFormat.allCases.map(\.rawValue).joined(separator: ", ") + ", not \(format)"
                )
            }
            output.format = parsed
        }
        return output
    }
}
