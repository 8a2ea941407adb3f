import HushCore
import HushGPIO
import Testing

@Suite("Debouncer")
struct DebouncerTests {
    /// Feeds edges (time in µs, level) and window expiries, collecting what is reported.
    static func run(_ edges: [(Int64, Bool)], initial: Bool = false, until end: Int64) -> [(Int64, Bool)] {
        var debouncer = Debouncer(window: .milliseconds(10), initial: initial)
        var out: [(Int64, Bool)] = []
        for (micros, level) in edges {
            let time = Instant(nanoseconds: micros * 1000)
            while let deadline = debouncer.deadline, deadline < time {
                if let settled = debouncer.expire(at: deadline) { out.append((deadline.nanoseconds / 1000, settled)) }
            }
            if let reported = debouncer.edge(to: level, at: time) { out.append((micros, reported)) }
        }
        while let deadline = debouncer.deadline, deadline.nanoseconds <= end * 1000 {
            if let settled = debouncer.expire(at: deadline) { out.append((deadline.nanoseconds / 1000, settled)) }
        }
        return out
    }

    @Test("the leading edge is reported at once: debounce adds no latency")
    func leadingEdge() {
        let out = Self.run([(1000, true)], until: 100_000)
        #expect(out.map(\.0) == [1000] && out.map(\.1) == [true])
    }

    @Test("a bounce train of 20 flips within 5 ms, settling pressed, is one event")
    func bounceTrain() {
        var edges: [(Int64, Bool)] = []
        for i in 0..<21 { edges.append((Int64(i) * 240, i % 2 == 0)) }  // 0 µs … 4.8 ms, ends true
        let out = Self.run(edges, until: 100_000)
        #expect(out.count == 1)
        #expect(out.first?.1 == true && out.first?.0 == 0)
    }

    @Test("two presses 50 ms apart are two presses")
    func twoPresses() {
        let out = Self.run([(0, true), (20_000, false), (50_000, true), (70_000, false)], until: 200_000)
        #expect(out.map(\.1) == [true, false, true, false])
        #expect(out.map(\.0) == [0, 20_000, 50_000, 70_000])
    }

    @Test("a change that settles inside the window is reported when the window ends")
    func settlesInWindow() {
        // A 3 ms tap: pressed at 0, released at 3 ms while the window holds off.
        let out = Self.run([(0, true), (3000, false)], until: 100_000)
        #expect(out.map(\.1) == [true, false])
        #expect(out.map(\.0) == [0, 10_000])
    }

    @Test("a bounce that ends back where it started after the window reports nothing more")
    func glitch() {
        let out = Self.run([(0, true), (1000, false), (2000, true)], until: 100_000)
        #expect(out.map(\.1) == [true])
    }

    @Test("an edge to the level already reported is nothing")
    func sameLevel() {
        let out = Self.run([(0, false), (50_000, false)], initial: false, until: 100_000)
        #expect(out.isEmpty)
    }

    @Test("the hardware level read when a window ends wins over the edges seen")
    func hardwareLevel() {
        var debouncer = Debouncer(window: .milliseconds(10), initial: false)
        #expect(debouncer.edge(to: true, at: .zero) == true)
        #expect(debouncer.expire(at: .milliseconds(10), level: false) == false)
        #expect(debouncer.deadline == .milliseconds(20))
    }
}

@Suite("GPIO roles")
struct GPIORoleTests {
    @Test(
        "what each role reports for active and inactive",
        arguments: [
            (
                GPIOInputRole.silenceSwitch, InputEvent?.some(.silenceSwitch(.silent)),
                InputEvent?.some(.silenceSwitch(.ring))
            ),
            (.volumeButton(.up), .volumeButton(.up, .press), .volumeButton(.up, .release)),
            (.mediaKey(.playPause), .mediaKey(.playPause), nil),
            (.headphoneSense, .headphones(.plugged, source: .gpio), .headphones(.unplugged, source: .gpio)),
        ]
    )
    func events(role: GPIOInputRole, active: InputEvent?, inactive: InputEvent?) {
        #expect(role.event(active: true) == active)
        #expect(role.event(active: false) == inactive)
    }

    @Test("a missing chip is an error that lists the chips there are")
    func missingChip() {
        #expect {
            _ = try GPIOInputLine(
                GPIOInputConfiguration(chip: "gpiochip99", line: .offset(0), role: .silenceSwitch),
                logger: .init(label: "test")
            )
        } throws: { error in
            guard let error = error as? HardwareError else { return false }
            return error.description.hasPrefix("cannot open GPIO chip 'gpiochip99': no such GPIO chip; chips present: ")
        }
    }
}
