import FuzzSupport
import HushCore
import HushRender

// A `hush-render` scenario, as `Scenario.load` reads it: the file's bytes as text.
//
// Properties beyond "no crash": an error names the file and a line the file has, with a message; a scenario that
// parses has its steps in file order, in time order, and ends no earlier than its last step.

let file = "scenarios/fuzz.txt"

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzScenario(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = bytes(data, size)
    // `Scenario.load` reads the file as UTF-8; invalid bytes become U+FFFD the same way.
    let text = String(decoding: input, as: UTF8.self)
    let lines = lineCount(text)
    let scenario: Scenario
    do {
        scenario = try Scenario.parse(text, file: file)
    } catch {
        require(error.file == file, "an error names file '\(error.file)', not '\(file)'", input: input)
        require((1...lines).contains(error.line), "an error names line \(error.line) of \(lines)", input: input)
        require(!error.message.isEmpty, "an error without a message on line \(error.line)", input: input)
        require(
            error.description.hasPrefix("\(file):\(error.line): "),
            "an error reads '\(error.description)'",
            input: input
        )
        return 0
    }
    var previous: Scenario.Step?
    for step in scenario.steps {
        require((1...lines).contains(step.line), "a step on line \(step.line) of \(lines)", input: input)
        require(step.time >= .zero, "a step at \(step.time), before the start", input: input)
        if let previous {
            require(step.line > previous.line, "step on line \(step.line) after line \(previous.line)", input: input)
            require(step.time >= previous.time, "step at \(step.time) after \(previous.time)", input: input)
        }
        if case .tone(let frequency)? = step.sound {
            require(frequency > 0 && frequency < 20_000, "a tone of \(frequency) Hz", input: input)
        }
        previous = step
    }
    if let last = scenario.steps.last {
        require(scenario.end >= last.time, "the end \(scenario.end) is before the last step", input: input)
    }
    return 0
}
