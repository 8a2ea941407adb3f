import Testing

@testable import HushOutput

/// The privacy switch at the microphone's source (R21): what the capture thread reads while the switch is on, and
/// what the device held when it was turned off, goes into the ring as silence.
@Suite("The privacy switch at the microphone's source")
struct SourceMuteTests {
    @Test("silence while on, for the read that saw it turn off and for the device's buffer after; live after that")
    func edges() {
        // A device of 4 periods of 64 frames, read a period at a time.
        var gate = SourceMute(bufferFrames: 256)
        var silenced: [Bool] = []
        func read(_ muted: Bool) { silenced.append(gate.silences(frames: 64, mutedNow: muted)) }
        read(false)
        read(false)
        #expect(silenced == [false, false], "live while off")
        for _ in 0..<3 { read(true) }
        #expect(silenced.suffix(3) == [true, true, true], "silence while on")
        // Turned off: this read (captured in part while on) and the 256 frames the device may hold are silence.
        for _ in 0..<7 { read(false) }
        #expect(silenced.suffix(7) == [true, true, true, true, true, false, false])
        // On again in the middle of the tail: the tail starts over when it goes off.
        read(true)
        read(false)
        read(false)
        read(true)
        read(false)
        #expect(silenced.suffix(5) == [true, true, true, true, true])
        for _ in 0..<5 { read(false) }
        #expect(silenced.suffix(5) == [true, true, true, true, false])
    }

    @Test("short reads count by frames: the tail is the device's buffer, not a number of reads")
    func shortReads() {
        var gate = SourceMute(bufferFrames: 100)
        let whileOn = gate.silences(frames: 30, mutedNow: true)
        let turningOff = gate.silences(frames: 30, mutedNow: false)
        #expect(whileOn)
        #expect(turningOff, "the read that saw it turn off")
        let tail = (0..<6).map { _ in gate.silences(frames: 30, mutedNow: false) }
        // 100 frames after: four reads of 30 (the fourth holds the last 10 of them), then live.
        #expect(tail == [true, true, true, true, false, false])
    }
}
