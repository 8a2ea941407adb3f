import HushCore
import HushGPIO
import HushTesting

#if canImport(Glibc)
import Glibc
#endif

func input(_ name: String, _ role: GPIOInputRole, bias: GPIOBias = .asIs) throws -> GPIOInputLine {
    try GPIOInputLine(
        GPIOInputConfiguration(chip: simChip, line: .name(name), role: role, activeLow: true, bias: bias),
        logger: logger
    )
}

let gpioChecks: [Check] = [
    Check(name: "gpio-library") {
        // Which libgpiod the checks below ran against: the one this program was built for
        // (board/virtual/libgpiod2/run.sh runs them against 2.x as well as bookworm's 1.6), loaded at run time.
        let version = GPIOLibrary.version
        try require(
            version.hasPrefix("\(GPIOLibrary.apiGeneration)."),
            "built for the libgpiod \(GPIOLibrary.apiGeneration).x API, running with libgpiod \(version)"
        )
        print("  libgpiod \(version) (API \(GPIOLibrary.apiGeneration))")
    },
    Check(name: "gpio-initial-level") {
        let sim = try SimLine("silence-switch")
        for active in [true, false, true] {
            try sim.set(active: active)
            let line = try input("silence-switch", .silenceSwitch)
            let state = try line.currentState(now: monotonicNow()).map(\.event)
            try require(
                state == [.silenceSwitch(active ? .silent : .ring)],
                "switch \(active ? "closed" : "open") at start, adapter read \(state)"
            )
        }
    },
    Check(name: "gpio-bias-pull-up") {
        let sim = try SimLine("headphone-sense")
        try sim.set(active: true)
        let line = try input("headphone-sense", .headphoneSense, bias: .pullUp)
        try require(
            try !line.isActive(),
            "requesting pull-up should leave an open active-low line inactive; sim value \(sim.value ?? "?")"
        )
    },
    Check(name: "gpio-one-event-per-flip") {
        let sim = try SimLine("volume-up")
        try sim.set(active: false)
        let line = try input("volume-up", .volumeButton(.up))
        // When each flip was written, by the check's clock: under TCG a 30 ms sleep can last far longer, and the
        // kernel's timestamps must follow what really happened, not the sleep asked for. A sleep that overran by
        // more than 5 ms is the emulated machine stalling, and a stall can fall between a write and the kernel's
        // timestamp of its edge (gpio-sim's interrupt runs in a thread): such a take is written again.
        let (events, written) = try measure("ten flips 30 ms apart") {
            _ = try drain(line)
            var written: [Instant] = []
            for flip in 0..<10 {
                try sim.set(active: flip % 2 == 0)
                written.append(monotonicNow())
                sleep(.milliseconds(30))
            }
            let events = try drain(line)
            let overruns = zip(written, written.dropFirst()).map { ($1 - $0).milliseconds }.filter { $0 > 35 }
            let stalled = overruns.isEmpty ? [] : ["30 ms sleeps lasted \(overruns) ms: the VM stalled"]
            return ((events, written), stalled)
        }
        let expected: [InputEvent] = (0..<10).map { .volumeButton(.up, $0 % 2 == 0 ? .press : .release) }
        try require(events.map(\.event) == expected, "10 flips gave: \(describe(events))")
        let gaps = zip(events, events.dropFirst()).map { ($1.time - $0.time).milliseconds }
        let writtenGaps = zip(written, written.dropFirst()).map { ($1 - $0).milliseconds }
        try require(
            zip(gaps, writtenGaps).allSatisfy { abs($0 - $1) <= 10 },
            "kernel timestamps \(gaps) ms apart for flips written \(writtenGaps) ms apart (10 ms allowed)"
        )
        let age = (monotonicNow() - events[0].time).milliseconds
        try require(age >= 0 && age < 10_000, "timestamps are not CLOCK_MONOTONIC: first event \(age) ms ago")
    },
    Check(name: "gpio-bounce-train") {
        let sim = try SimLine("volume-down")
        try sim.set(active: false)
        let line = try input("volume-down", .volumeButton(.down))
        // A bounce is quicker than the debounce: a train the VM stretched past 8 ms (a stall of the emulated machine)
        // is no bounce, so it is written again (released first) rather than judged.
        let (span, events) = try measure("the bounce train") {
            try sim.set(active: false)
            _ = try drain(line)
            let start = monotonicNow()
            for flip in 0...20 { try sim.set(active: flip % 2 == 0) }  // 20 bounces, settling pressed
            let span = monotonicNow() - start
            let events = try drain(line)
            let slow =
                span < .milliseconds(8) ? [] : ["the VM took \(span.milliseconds) ms for the 21 writes (8 allowed)"]
            return ((span, events), slow)
        }
        try require(
            events.map(\.event) == [.volumeButton(.down, .press)],
            "20 flips in \(span.milliseconds) ms gave: \(describe(events))"
        )
        print("  bounce train of 21 writes took \(span.nanoseconds / 1000) µs")
    },
    Check(name: "gpio-two-presses-50ms-apart") {
        let sim = try SimLine("volume-up")
        try sim.set(active: false)
        let line = try input("volume-up", .volumeButton(.up))
        // As for the ten flips: a take in which a write or a sleep overran by more than 5 ms (the emulated machine
        // stalled, perhaps between a write and the kernel's timestamp of its edge) is written again.
        let (events, pressed) = try measure("two presses 50 ms apart") {
            try sim.set(active: false)
            _ = try drain(line)
            var pressed: [Instant] = []
            var overruns: [String] = []
            func step(_ what: String, asked: Int, _ body: () throws -> Void) rethrows {
                let start = monotonicNow()
                try body()
                let took = (monotonicNow() - start).milliseconds
                if took > asked + 5 { overruns.append("\(what) took \(took) ms") }
            }
            for _ in 0..<2 {
                try step("a press's write", asked: 0) { try sim.set(active: true) }
                pressed.append(monotonicNow())
                step("a 20 ms sleep", asked: 20) { sleep(.milliseconds(20)) }
                try step("a release's write", asked: 0) { try sim.set(active: false) }
                step("a 30 ms sleep", asked: 30) { sleep(.milliseconds(30)) }
            }
            let events = try drain(line)
            let stalled = overruns.isEmpty ? [] : ["\(overruns.joined(separator: ", ")): the VM stalled"]
            return ((events, pressed), stalled)
        }
        let presses = events.filter { $0.event == .volumeButton(.up, .press) }
        try require(presses.count == 2, "two presses gave: \(describe(events))")
        let gap = (presses[1].time - presses[0].time).milliseconds
        // About 50 ms, or what the check's own clock says the VM made of it.
        let written = (pressed[1] - pressed[0]).milliseconds
        try require(abs(gap - written) <= 10, "presses \(gap) ms apart by the kernel, written \(written) ms apart")
    },
    Check(name: "gpio-line-busy") {
        let first = try input("headphone-sense", .headphoneSense)
        do {
            _ = try input("headphone-sense", .headphoneSense)
            throw CheckFailure("the second request of a held line succeeded")
        } catch let error as HardwareError {
            try require(error.description.contains("line is busy (used by 'hushd')"), "message was: \(error)")
            print("  \(error)")
        }
        _ = first
    },
    Check(name: "gpio-missing-line") {
        do {
            _ = try input("no-such-line", .silenceSwitch)
            throw CheckFailure("a missing line was found")
        } catch let error as HardwareError {
            try require(
                error.description.contains("no line has that name; named lines: silence-switch"),
                "message was: \(error)"
            )
            print("  \(error)")
        }
    },
    Check(name: "gpio-output-led") {
        let sim = try SimLine("led")
        let led = try GPIOOutputLine(chip: simChip, line: .name("led"))
        try led.set(true)
        try require(sim.value == "1", "LED on, gpio-sim value \(sim.value ?? "?")")
        try led.set(false)
        try require(sim.value == "0", "LED off, gpio-sim value \(sim.value ?? "?")")
    },
]
