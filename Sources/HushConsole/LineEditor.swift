/// Line editing for a serial terminal that may be as dumb as a teletype: a pure state machine fed the bytes a
/// person types, answering with the bytes to echo and the lines (and hot keys) they completed.
///
/// It never moves the cursor with escape sequences. What it writes is printable text, CR, LF, BS-space-BS to
/// rub out a character on the current row, and CR-spaces-CR to clear the row; where the prompt and line no longer
/// fit on one row (a wrapped line cannot be reached with CR), it starts a new row and prints them again.
///
/// - Keys: printable text and UTF-8 (kept whole), Backspace (BS or DEL), ^U kill the line, ^W kill a word,
///   ^C cancel the line, ^L or ^R print the line again, CR, LF or CRLF end it (a CRLF ends it once), Tab completes,
///   up and down arrows (`ESC [ A`, `ESC O A`, …) walk the history; other escape sequences are swallowed.
///   ^D on an empty line reports the end of input. On an empty line, the keys in `hotKeys` act at once.
package struct LineEditor {
    /// What a person's typing amounted to.
    package enum Event: Hashable, Sendable {
        /// A line ended with CR, LF or CRLF (blank lines are not reported).
        case line(String)
        /// A hot key pressed on an empty line.
        case hotKey(Character)
        /// ^D on an empty line.
        case endOfInput
    }

    package static let bell: UInt8 = 0x07

    /// Printed before each line.
    package let prompt: String
    /// The longest line, in UTF-8 bytes; typing past it rings the bell.
    package let maxLineBytes: Int
    /// The terminal's width: lines at least this long are reprinted on a new row rather than erased in place.
    package let columns: Int
    /// How many entered lines up-arrow can recall.
    package let historyLimit: Int
    /// Keys that act at once on an empty line, each with the text echoed for it (the command it stands for).
    package let hotKeys: [Character: String]
    /// The candidates for the word being typed, given the line so far (Tab): full words, filtered by prefix here.
    package let completer: (String) -> [String]

    /// The line being typed.
    package private(set) var line = ""
    /// Entered lines, oldest first.
    package private(set) var history: [String] = []
    /// Whether the prompt and line are on the screen (false before ``showPrompt()`` and after ``detach()``).
    package private(set) var isPromptShown = false

    private var historyIndex: Int?
    private var draft = ""
    private var pendingUTF8: [UInt8] = []
    private var expectedUTF8 = 0
    private var escape = EscapeState.none
    private var lastWasCR = false
    private var overflowed = false

    private enum EscapeState: Equatable {
        case none
        /// After ESC.
        case started
        /// After `ESC [`: parameter and intermediate bytes so far.
        case controlSequence(Int)
        /// After `ESC O` (the arrow keys in application mode).
        case singleShift
    }

    package init(
        prompt: String = "> ",
        maxLineBytes: Int = 256,
        columns: Int = 80,
        historyLimit: Int = 32,
        hotKeys: [Character: String] = [:],
        completer: @escaping (String) -> [String] = { _ in [] }
    ) {
        self.prompt = prompt
        self.maxLineBytes = maxLineBytes
        self.columns = max(columns, 2)
        self.historyLimit = historyLimit
        self.hotKeys = hotKeys
        self.completer = completer
    }

    // MARK: Screen

    /// Prints the prompt and the line being typed, if they are not on the screen.
    package mutating func showPrompt() -> [UInt8] {
        guard !isPromptShown else { return [] }
        isPromptShown = true
        return Array((prompt + line).utf8)
    }

    /// The terminal went away: whatever was half typed is dropped (the person who typed it is gone too), the
    /// history is kept, and the prompt counts as not shown.
    package mutating func detach() {
        isPromptShown = false
        line = ""
        historyIndex = nil
        draft = ""
        pendingUTF8 = []
        escape = .none
        lastWasCR = false
        overflowed = false
    }

    /// The bytes that print `text` above the line being typed: the prompt and line are cleared, each line of
    /// `text` is printed and ended with CRLF, and the prompt and line are printed again, so asynchronous messages
    /// never mangle what the person is typing. Control characters in `text` are shown as ^X, never sent.
    package func printAbove(_ text: String) -> [UInt8] {
        var output: [UInt8] = isPromptShown ? clearRow() : []
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        if text.hasSuffix("\n") { lines.removeLast() }
        for row in lines {
            output += LineEditor.visible(row.hasSuffix("\r") ? row.dropLast() : row)
            output += [0x0D, 0x0A]
        }
        if isPromptShown { output += Array((prompt + line).utf8) }
        return output
    }

    /// Characters shown on the prompt's row: the prompt and the line (one column per character).
    private var width: Int { prompt.count + line.count }

    /// Clears the prompt's row, or where the line has wrapped (the CR would only reach its last row) starts a new
    /// row: the old text stays above, harmlessly.
    private func clearRow() -> [UInt8] {
        guard width < columns else { return [0x0D, 0x0A] }
        return [0x0D] + [UInt8](repeating: 0x20, count: width) + [0x0D]
    }

    /// `text` as bytes a terminal only prints: C0 controls (but tab) and DEL as ^X, C1 controls as '?'.
    static func visible<S: StringProtocol>(_ text: S) -> [UInt8] {
        var bytes: [UInt8] = []
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x09: bytes.append(0x09)
            case 0..<0x20: bytes += [UInt8(ascii: "^"), UInt8(scalar.value + 0x40)]
            case 0x7F: bytes += Array("^?".utf8)
            case 0x80..<0xA0: bytes.append(UInt8(ascii: "?"))
            default: bytes += Array(String(scalar).utf8)
            }
        }
        return bytes
    }

    // MARK: Input

    /// Feeds typed bytes; returns what to echo (in order, interleaved with the new prompts after each line) and the
    /// events they completed.
    package mutating func feed<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> (output: [UInt8], events: [Event]) {
        var output: [UInt8] = []
        var events: [Event] = []
        if !isPromptShown { output += showPrompt() }
        for byte in bytes { take(byte, &output, &events) }
        return (output, events)
    }

    private mutating func take(_ byte: UInt8, _ output: inout [UInt8], _ events: inout [Event]) {
        let afterCR = lastWasCR
        lastWasCR = byte == 0x0D
        if escape != .none, continueEscape(byte, &output) { return }
        if byte >= 0x80 || !pendingUTF8.isEmpty {
            takeUTF8(byte, &output, &events)
            return
        }
        switch byte {
        case 0x0D: enter(&output, &events)
        case 0x0A: if !afterCR { enter(&output, &events) }
        case 0x08, 0x7F: rubOut(1, &output)
        case 0x15: rubOut(line.count, &output)
        case 0x17: rubOut(wordLength(), &output)
        case 0x03:
            output += Array("^C\r\n".utf8)
            line = ""
            historyIndex = nil
            overflowed = false
            output += Array(prompt.utf8)
        case 0x04:
            if line.isEmpty { events.append(.endOfInput) } else { output.append(LineEditor.bell) }
        case 0x0C, 0x12: output += [0x0D, 0x0A] + Array((prompt + line).utf8)
        case 0x09: complete(&output)
        case 0x1B: escape = .started
        case 0x20...0x7E: insert(Character(Unicode.Scalar(byte)), bytes: [byte], &output, &events)
        default: break  // other controls (NUL from a break, ^G, ^S…) mean nothing here
        }
    }

    /// Handles `byte` if it belongs to an escape sequence; false when it ended the sequence and must be taken as
    /// a key of its own (a control character interrupts a sequence, as ECMA-48 has it).
    private mutating func continueEscape(_ byte: UInt8, _ output: inout [UInt8]) -> Bool {
        if byte < 0x20 && byte != 0x1B {
            escape = .none
            return false
        }
        switch escape {
        case .none:
            return false
        case .started:
            switch byte {
            case UInt8(ascii: "["): escape = .controlSequence(0)
            case UInt8(ascii: "O"): escape = .singleShift
            case 0x1B: escape = .started
            default: escape = .none  // Alt+key: swallowed
            }
        case .controlSequence(let length):
            switch byte {
            case 0x20...0x3F:
                // Parameters and intermediates; a sequence longer than any real key is noise: drop it.
                escape = length < 16 ? .controlSequence(length + 1) : .none
            case 0x40...0x7E:
                escape = .none
                // Only plain up and down (no parameters, so not Shift+Up) walk the history.
                if length == 0 { arrow(byte, &output) }
            default:
                escape = .none
            }
        case .singleShift:
            escape = .none
            arrow(byte, &output)
        }
        return true
    }

    private mutating func arrow(_ final: UInt8, _ output: inout [UInt8]) {
        switch final {
        case UInt8(ascii: "A"): recall(older: true, &output)
        case UInt8(ascii: "B"): recall(older: false, &output)
        default: break  // left, right, function keys: no cursor movement on a dumb terminal
        }
    }

    private mutating func takeUTF8(_ byte: UInt8, _ output: inout [UInt8], _ events: inout [Event]) {
        if pendingUTF8.isEmpty {
            switch byte {
            case 0xC2...0xDF: expectedUTF8 = 2
            case 0xE0...0xEF: expectedUTF8 = 3
            case 0xF0...0xF4: expectedUTF8 = 4
            default: return  // a stray continuation or an impossible lead byte: dropped
            }
            pendingUTF8 = [byte]
            return
        }
        guard byte & 0xC0 == 0x80 else {
            // The sequence broke off: drop it and take this byte afresh.
            pendingUTF8 = []
            lastWasCR = false
            take(byte, &output, &events)
            return
        }
        pendingUTF8.append(byte)
        guard pendingUTF8.count == expectedUTF8 else { return }
        let bytes = pendingUTF8
        pendingUTF8 = []
        guard let text = String(validating: bytes, as: UTF8.self), let scalar = text.unicodeScalars.first,
            !(0x80..<0xA0).contains(scalar.value)
        else { return }  // overlong or surrogate encodings, C1 controls
        insert(Character(scalar), bytes: bytes, &output, &events)
    }

    private mutating func insert(
        _ character: Character,
        bytes: [UInt8],
        _ output: inout [UInt8],
        _ events: inout [Event]
    ) {
        if line.isEmpty, let echo = hotKeys[character] {
            output += Array(echo.utf8) + [0x0D, 0x0A] + Array(prompt.utf8)
            events.append(.hotKey(character))
            return
        }
        guard line.utf8.count + bytes.count <= maxLineBytes else {
            // One bell per overflow, not one per pasted character.
            if !overflowed { output.append(LineEditor.bell) }
            overflowed = true
            return
        }
        line.unicodeScalars.append(contentsOf: String(decoding: bytes, as: UTF8.self).unicodeScalars)
        output += bytes
    }

    private mutating func enter(_ output: inout [UInt8], _ events: inout [Event]) {
        output += [0x0D, 0x0A]
        let entered = line
        line = ""
        historyIndex = nil
        overflowed = false
        if !entered.allSatisfy({ $0 == " " || $0 == "\t" }) {
            events.append(.line(entered))
            if history.last != entered { history.append(entered) }
            if history.count > historyLimit { history.removeFirst(history.count - historyLimit) }
        }
        output += Array(prompt.utf8)
    }

    /// Removes the last `count` characters: BS-space-BS while the line is on one row, else a fresh row.
    private mutating func rubOut(_ count: Int, _ output: inout [UInt8]) {
        guard count > 0, !line.isEmpty else { return }
        let fitted = width < columns
        let removed = min(count, line.count)
        line.removeLast(removed)
        overflowed = false
        if fitted {
            for _ in 0..<removed { output += [0x08, 0x20, 0x08] }
        } else {
            output += [0x0D, 0x0A] + Array((prompt + line).utf8)
        }
    }

    /// The characters ^W removes: trailing blanks, then the word before them.
    private func wordLength() -> Int {
        var count = 0
        var index = line.endIndex
        while index > line.startIndex, line[line.index(before: index)] == " " {
            index = line.index(before: index)
            count += 1
        }
        while index > line.startIndex, line[line.index(before: index)] != " " {
            index = line.index(before: index)
            count += 1
        }
        return count
    }

    /// Replaces the line with `text` on the screen.
    private mutating func replaceLine(with text: String, _ output: inout [UInt8]) {
        output += clearRow()
        line = text
        overflowed = false
        output += Array((prompt + line).utf8)
    }

    private mutating func recall(older: Bool, _ output: inout [UInt8]) {
        if older {
            let index: Int
            switch historyIndex {
            case nil where !history.isEmpty:
                draft = line
                index = history.count - 1
            case let current? where current > 0:
                index = current - 1
            default:
                output.append(LineEditor.bell)
                return
            }
            historyIndex = index
            replaceLine(with: history[index], &output)
        } else {
            guard let current = historyIndex else {
                output.append(LineEditor.bell)
                return
            }
            if current + 1 < history.count {
                historyIndex = current + 1
                replaceLine(with: history[current + 1], &output)
            } else {
                historyIndex = nil
                replaceLine(with: draft, &output)
            }
        }
    }

    private mutating func complete(_ output: inout [UInt8]) {
        let partial = String(line.reversed().prefix(while: { $0 != " " }).reversed())
        let candidates = Array(Set(completer(line).filter { $0.hasPrefix(partial) })).sorted()
        guard !candidates.isEmpty else {
            output.append(LineEditor.bell)
            return
        }
        var common = candidates[0]
        for candidate in candidates.dropFirst() {
            common = String(zip(common, candidate).prefix(while: { $0 == $1 }).map(\.0))
        }
        var addition = String(common.dropFirst(partial.count))
        if candidates.count == 1 { addition += " " }
        if !addition.isEmpty {
            guard line.utf8.count + addition.utf8.count <= maxLineBytes else {
                output.append(LineEditor.bell)
                return
            }
            line += addition
            output += Array(addition.utf8)
            return
        }
        // Ambiguous and nothing to add: list the candidates, then the line again below them.
        output += [0x0D, 0x0A]
        var row = ""
        for candidate in candidates {
            if !row.isEmpty && row.count + 2 + candidate.count >= columns {
                output += Array(row.utf8) + [0x0D, 0x0A]
                row = ""
            }
            row += (row.isEmpty ? "" : "  ") + candidate
        }
        output += Array(row.utf8) + [0x0D, 0x0A] + Array((prompt + line).utf8)
    }
}
