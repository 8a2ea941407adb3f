import HushConsole
import Testing

/// The line editor as a pure state machine: bytes in, echo bytes and events out, compared byte for byte.
@Suite("line editor")
struct LineEditorTests {
    /// An editor with the prompt shown, as the console has it once connected.
    static func editor(columns: Int = 80, maxLineBytes: Int = 256) -> LineEditor {
        var editor = LineEditor(
            maxLineBytes: maxLineBytes,
            columns: columns,
            hotKeys: ConsoleRequest.hotKeys,
            completer: ConsoleRequest.completions(for:)
        )
        #expect(editor.showPrompt() == Array("> ".utf8))
        return editor
    }

    /// Feeds `input` and returns the echo as text (bytes kept exactly; control bytes stay as they are).
    static func type(_ editor: inout LineEditor, _ input: [UInt8]) -> (String, [LineEditor.Event]) {
        let (output, events) = editor.feed(input)
        return (String(decoding: output, as: UTF8.self), events)
    }

    static func type(_ editor: inout LineEditor, _ input: String) -> (String, [LineEditor.Event]) {
        type(&editor, Array(input.utf8))
    }

    @Test("printable text is echoed and CR ends the line with CRLF and a new prompt")
    func typingAndEnter() {
        var editor = Self.editor()
        let (echo, events) = Self.type(&editor, "status\r")
        #expect(echo == "status\r\n> ")
        #expect(events == [.line("status")])
        #expect(editor.line.isEmpty)
    }

    @Test("CR, LF and CRLF each end a line exactly once; LF CR is two line ends of which one is blank")
    func lineEndings() {
        for (ending, expected) in [("\r", 3), ("\n", 3), ("\r\n", 3)] {
            var editor = Self.editor()
            let (_, events) = Self.type(&editor, "version\(ending)status\(ending)sessions\(ending)")
            #expect(events.count == expected, "ending \(Array(ending.utf8))")
            #expect(events == [.line("version"), .line("status"), .line("sessions")])
        }
        var editor = Self.editor()
        let (echo, events) = Self.type(&editor, "status\r\n")
        #expect(echo == "status\r\n> ")
        #expect(events == [.line("status")])
        // The CR and the LF arriving in separate reads still count once.
        var split = Self.editor()
        #expect(Self.type(&split, "status\r").1 == [.line("status")])
        #expect(Self.type(&split, "\n") == ("", []))
        // LF CR (some terminals' order): the LF ends the line, the CR is a blank line, which is not reported.
        var reversed = Self.editor()
        #expect(Self.type(&reversed, "status\n\r") == ("status\r\n> \r\n> ", [.line("status")]))
        // A blank line prints a new prompt and reports nothing.
        #expect(Self.type(&split, "\r") == ("\r\n> ", []))
        #expect(Self.type(&split, "   \r") == ("   \r\n> ", []))
    }

    @Test("Backspace (BS) and Delete (DEL) rub out one character with BS-space-BS; on an empty line nothing")
    func backspace() {
        var editor = Self.editor()
        #expect(Self.type(&editor, "volx").0 == "volx")
        #expect(Self.type(&editor, [0x7F]).0 == "\u{8} \u{8}")
        #expect(Self.type(&editor, [0x08]).0 == "\u{8} \u{8}")
        #expect(editor.line == "vo")
        #expect(Self.type(&editor, [0x08, 0x08, 0x08, 0x7F]).0 == "\u{8} \u{8}\u{8} \u{8}")
        #expect(editor.line.isEmpty)
    }

    @Test("^U kills the line, ^W the last word and the blanks after it")
    func killLineAndWord() {
        var editor = Self.editor()
        _ = Self.type(&editor, "volume up  ")
        #expect(Self.type(&editor, [0x17]).0 == String(repeating: "\u{8} \u{8}", count: 4))
        #expect(editor.line == "volume ")
        #expect(Self.type(&editor, [0x17]).0 == String(repeating: "\u{8} \u{8}", count: 7))
        #expect(editor.line.isEmpty)
        _ = Self.type(&editor, "ringer 3")
        #expect(Self.type(&editor, [0x15]).0 == String(repeating: "\u{8} \u{8}", count: 8))
        #expect(editor.line.isEmpty)
        #expect(Self.type(&editor, "x\r").1 == [.line("x")])
    }

    @Test("^C drops the line: ^C, CRLF and a new prompt, nothing reported")
    func controlC() {
        var editor = Self.editor()
        let (echo, events) = Self.type(&editor, "play song.flac\u{3}")
        #expect(echo == "play song.flac^C\r\n> ")
        #expect(events.isEmpty)
        #expect(editor.line.isEmpty)
        #expect(editor.history.isEmpty)
    }

    @Test("^L and ^R print the prompt and the line again on a new row")
    func reprint() {
        var editor = Self.editor()
        _ = Self.type(&editor, "route hea")
        #expect(Self.type(&editor, [0x0C]).0 == "\r\n> route hea")
        #expect(Self.type(&editor, [0x12]).0 == "\r\n> route hea")
        #expect(editor.line == "route hea")
    }

    @Test("^D on an empty line is the end of input; on a typed line it rings the bell")
    func controlD() {
        var editor = Self.editor()
        #expect(Self.type(&editor, "st\u{4}") == ("st\u{7}", []))
        _ = Self.type(&editor, [0x15])
        #expect(Self.type(&editor, [0x04]) == ("", [.endOfInput]))
    }

    @Test("Tab completes a unique command with a space, extends a shared prefix, lists the ambiguous")
    func tabCompletion() {
        var editor = Self.editor()
        #expect(Self.type(&editor, "ver\t").0 == "version ")
        #expect(editor.line == "version ")
        _ = Self.type(&editor, [0x15])
        // "s" → silence, sessions, status, stop: nothing to add, so they are listed and the line printed again.
        #expect(Self.type(&editor, "s\t").0 == "s\r\nsessions  silence  status  stop\r\n> s")
        // "se" → sessions.
        #expect(Self.type(&editor, "e\t").0 == "essions ")
        _ = Self.type(&editor, [0x15])
        // "r" → release, ringer, route: common prefix is only "r": listed.
        #expect(Self.type(&editor, "re\t").0 == "re" + "lease ")
        _ = Self.type(&editor, [0x15])
        // Arguments complete too.
        #expect(Self.type(&editor, "route he\t").0 == "route he" + "adphones ")
        _ = Self.type(&editor, [0x15])
        #expect(Self.type(&editor, "log level wa\t").0 == "log level wa" + "rning ")
        _ = Self.type(&editor, [0x15])
        // Nothing matches: the bell.
        #expect(Self.type(&editor, "xyz\t").0 == "xyz\u{7}")
    }

    @Test("up and down arrows (ESC [ A, ESC O A) walk 32 entries of history and come back to the draft")
    func history() {
        var editor = Self.editor()
        for number in 0..<40 { _ = Self.type(&editor, "volume \(number % 17)x\(number)\r") }
        #expect(editor.history.count == 32)
        #expect(editor.history.first == "volume \(8 % 17)x8")
        _ = Self.type(&editor, "dra")
        // Up: the row is cleared (CR, spaces over "> dra", CR) and the last entry printed.
        #expect(Self.type(&editor, "\u{1B}[A").0 == "\r     \r> volume 5x39")
        #expect(Self.type(&editor, "\u{1B}OA").0 == "\r" + String(repeating: " ", count: 13) + "\r> volume 4x38")
        #expect(editor.line == "volume 4x38")
        #expect(Self.type(&editor, "\u{1B}[B").0 == "\r" + String(repeating: " ", count: 13) + "\r> volume 5x39")
        #expect(Self.type(&editor, "\u{1B}OB").0 == "\r" + String(repeating: " ", count: 13) + "\r> dra")
        // Below the newest entry: the bell.
        #expect(Self.type(&editor, "\u{1B}[B").0 == "\u{7}")
        // Up 32 times reaches the oldest; once more rings the bell.
        for _ in 0..<32 { _ = Self.type(&editor, "\u{1B}[A") }
        #expect(editor.line == "volume 8x8")
        #expect(Self.type(&editor, "\u{1B}[A").0 == "\u{7}")
        // Enter on a recalled line runs it; a repeat of the last entry is not stored twice.
        #expect(Self.type(&editor, "\r").1 == [.line("volume 8x8")])
        _ = Self.type(&editor, "volume 8x8\r")
        #expect(editor.history.suffix(2) == ["volume 5x39", "volume 8x8"])
    }

    @Test("unknown escape sequences are swallowed, not echoed; a control character ends a sequence")
    func unknownEscapes() {
        var editor = Self.editor()
        // Left, right, Home, F5, Shift+Up, Alt+x, a bracketed-paste marker.
        let keys = ["\u{1B}[D", "\u{1B}[C", "\u{1B}[H", "\u{1B}[15~", "\u{1B}[1;2A", "\u{1B}x", "\u{1B}[200~"]
        for key in keys {
            #expect(Self.type(&editor, key) == ("", []), "key \(Array(key.utf8))")
        }
        #expect(editor.line.isEmpty)
        // ESC then CR: the CR is a line end of its own.
        #expect(Self.type(&editor, "ab\u{1B}\r").1 == [.line("ab")])
        // A runaway sequence is abandoned after 16 bytes; the rest is typed.
        _ = Self.type(&editor, "\u{1B}[" + String(repeating: "1", count: 17) + "ok")
        #expect(editor.line == "ok")
    }

    @Test("UTF-8 is kept whole: echoed as typed, rubbed out one character at a time; broken sequences are dropped")
    func utf8() {
        var editor = Self.editor()
        let name = "Café Ü 🎵.flac"
        let (echo, _) = Self.type(&editor, "play \(name)")
        #expect(echo == "play \(name)")
        #expect(editor.line == "play \(name)")
        #expect(
            Self.type(&editor, [0x7F, 0x7F, 0x7F, 0x7F, 0x7F, 0x7F]).0 == String(repeating: "\u{8} \u{8}", count: 6)
        )
        #expect(editor.line == "play Café Ü ")
        // A multi-byte character split across reads.
        let note = Array("é".utf8)
        #expect(Self.type(&editor, [note[0]]).0 == "")
        #expect(Self.type(&editor, [note[1]]).0 == "é")
        // A lead byte followed by ASCII: the lead byte is dropped, the ASCII kept; stray continuation bytes and
        // an overlong encoding are dropped.
        #expect(Self.type(&editor, [0xC3, UInt8(ascii: "a"), 0x80, 0xBF, 0xC0, 0xAF, 0xE0, 0x80, 0xAF]).0 == "a")
        #expect(editor.line == "play Café Ü éa")
    }

    @Test("a line is capped at its byte limit with one bell per overflow")
    func overflow() {
        var editor = Self.editor(maxLineBytes: 10)
        let (echo, _) = Self.type(&editor, "0123456789abcdef")
        #expect(echo == "0123456789\u{7}")
        #expect(editor.line == "0123456789")
        // A two-byte character does not fit in the last byte either.
        _ = Self.type(&editor, [0x7F])
        #expect(Self.type(&editor, "é").0 == "\u{7}")
        #expect(Self.type(&editor, "x").0 == "x")
        #expect(Self.type(&editor, "\r").1 == [.line("012345678x")])
    }

    @Test("hot keys act on an empty line only, echoing the command they stand for")
    func hotKeys() {
        var editor = Self.editor()
        #expect(Self.type(&editor, "+") == ("tap up\r\n> ", [.hotKey("+")]))
        #expect(Self.type(&editor, "!-") == ("silence toggle\r\n> tap down\r\n> ", [.hotKey("!"), .hotKey("-")]))
        // Inside a line they are text.
        #expect(Self.type(&editor, "volume +\r") == ("volume +\r\n> ", [.line("volume +")]))
        #expect(editor.history.last == "volume +")
    }

    @Test("a message printed while typing clears the row, prints itself with CRLF and puts the line back")
    func printAboveTyping() {
        var editor = Self.editor()
        _ = Self.type(&editor, "volu")
        let message = "12:03:04.120 [R5] pause session 3 — headphones unplugged"
        let output = String(decoding: editor.printAbove(message), as: UTF8.self)
        #expect(output == "\r      \r" + message + "\r\n> volu")
        // Several lines, a trailing newline, control characters shown, not sent.
        let more = String(decoding: editor.printAbove("one\ntwo\u{1B}[2J\n"), as: UTF8.self)
        #expect(more == "\r      \rone\r\ntwo^[[2J\r\n> volu")
        // The person carries on typing where they were.
        #expect(Self.type(&editor, "me\r").1 == [.line("volume")])
    }

    @Test("before the prompt is shown a message is just its lines; a wrapped line starts a new row instead")
    func printWithoutPromptAndWrapped() {
        var editor = LineEditor(columns: 20)
        #expect(String(decoding: editor.printAbove("hush 0.1.0"), as: UTF8.self) == "hush 0.1.0\r\n")
        _ = editor.showPrompt()
        _ = Self.type(&editor, "play a-long-file-name.flac")
        // 28 columns on a 20-column terminal: CR would only reach the second row, so a new row is started.
        let output = String(decoding: editor.printAbove("note"), as: UTF8.self)
        #expect(output == "\r\nnote\r\n> play a-long-file-name.flac")
        // Rubbing out on a wrapped line reprints it on a new row too.
        #expect(Self.type(&editor, [0x7F]).0 == "\r\n> play a-long-file-name.fla")
    }

    @Test("detach drops the half-typed line and keeps the history; the next feed shows the prompt first")
    func detach() {
        var editor = Self.editor()
        _ = Self.type(&editor, "status\rvol")
        editor.detach()
        #expect(!editor.isPromptShown)
        #expect(editor.line.isEmpty)
        #expect(editor.history == ["status"])
        #expect(Self.type(&editor, "x") == ("> x", []))
    }
}
