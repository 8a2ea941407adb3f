import FuzzSupport
import HushCore
import HushConfiguration

// hushd's configuration (TOML, through toml++ and CTOMLShim) as HushdConfiguration.load reads it after the file: UTF-8 text,
// at most 1 MiB. Run with the hush checkout as the working directory, so `board = "virtual"` and
// `include = "board/profiles/pi4-dac-hat.toml"` find the real profiles and the merge is fuzzed too.
//
// Properties beyond "no crash": every problem has a message and a file, and a problem in this file names one of
// its lines; a configuration that is accepted keeps the documented ranges, always has the speaker route, lists
// this file last among the files read, and parses the same twice.

let file = "fuzz.toml"

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConfig(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = bytes(data, size)
    guard let text = String(validating: input, as: UTF8.self) else { return 0 }
    let lines = lineCount(text)
    let configuration: HushdConfiguration
    do {
        configuration = try HushdConfiguration.parse(text, file: file)
    } catch {
        require(!error.problems.isEmpty, "an error with no problems", input: input)
        for problem in error.problems {
            require(!problem.message.isEmpty, "a problem without a message: \(problem)", input: input)
            require(!problem.file.isEmpty, "a problem without a file: \(problem)", input: input)
            if problem.file == file, let line = problem.line {
                require((1...lines).contains(line), "a problem on line \(line) of \(lines): \(problem)", input: input)
            }
        }
        return 0
    }
    let output = configuration.output
    require(configuration.routes[.speaker] != nil, "no speaker route", input: input)
    require((16...8192).contains(output.periodFrames), "period_frames \(output.periodFrames)", input: input)
    require((2...16).contains(output.periods), "periods \(output.periods)", input: input)
    require((8000...384_000).contains(output.sampleRate), "rate \(output.sampleRate)", input: input)
    require((1...2).contains(output.channels), "channels \(output.channels)", input: input)
    require(configuration.files.last == file, "files read: \(configuration.files)", input: input)
    do {
        let again = try HushdConfiguration.parse(text, file: file)
        require(again == configuration, "the same text parsed to another configuration", input: input)
    } catch {
        finding("the same text was accepted, then refused: \(error)", input: input)
    }
    return 0
}
