import HushCore
import HushTesting
import Testing

@Suite("Volume steps, gains and curves")
struct VolumeTests {
    @Test("steps clamp to 0…16 and refuse raw values outside it")
    func steps() {
        #expect(VolumeStep(clamping: -3) == .minimum)
        #expect(VolumeStep(clamping: 99) == .maximum)
        #expect(VolumeStep(rawValue: 17) == nil)
        #expect(VolumeStep(rawValue: -1) == nil)
        #expect(VolumeStep(clamping: 15).moved(by: 3) == .maximum)
        #expect(VolumeStep(clamping: 1).moved(by: -5) == .minimum)
    }

    @Test("gains convert to and from decibels", arguments: [(Float(-6.0206), Float(0.5)), (0, 1), (-20, 0.1)])
    func decibels(db: Float, linear: Float) {
        #expect(abs(Gain(decibels: db).linear - linear) < 1e-4)
        #expect(abs(Gain(linear: linear).decibels - db) < 1e-3)
    }

    @Test("silence is -infinity dB both ways, and prints so")
    func silence() {
        #expect(Gain(decibels: -.infinity) == .silent)
        #expect(Gain.silent.decibels == -.infinity)
        #expect(Gain.silent.description == "-inf dB")
        #expect(Gain(decibels: -14).description == "-14.0 dB")
        #expect(Gain.unity.description == "+0.0 dB")
    }

    @Test("a custom curve is validated with a message that says what is wrong")
    func curveValidation() throws {
        #expect(throws: VolumeCurve.InvalidCurve.self) { try VolumeCurve(anchors: [(2, -40), (16, 0)]) }
        #expect(throws: VolumeCurve.InvalidCurve.self) { try VolumeCurve(anchors: [(1, -40), (8, -50), (16, 0)]) }
        #expect(throws: VolumeCurve.InvalidCurve.self) { try VolumeCurve(anchors: [(1, -40), (16, 3)]) }
        do {
            _ = try VolumeCurve(anchors: [(1, -40), (8, -50), (16, 0)])
        } catch {
            #expect(
                error.description == "volume curve points must rise: step 1 (-40.0 dB) is followed by step 8 (-50.0 dB)"
            )
        }
        let linear = try VolumeCurve(anchors: [(1, -60), (16, 0)])
        #expect(linear.decibels(at: VolumeStep(clamping: 6)) == -40)
        #expect(linear.gain(at: .minimum) == .silent)
    }
}

@Suite("Sessions, categories and time")
struct SessionVocabularyTests {
    @Test(
        "which sessions mix, and which interrupt transiently",
        arguments: [
            (SessionConfiguration(bus: .effect, category: .ambient), true, false),
            (SessionConfiguration(bus: .effect, category: .soloAmbient), false, false),
            (SessionConfiguration(bus: .music, category: .playback), false, false),
            (SessionConfiguration(bus: .music, category: .playback, options: [.duckOthers]), true, false),
            (SessionConfiguration(bus: .music, category: .playback, options: [.mixWithOthers]), true, false),
            (SessionConfiguration(bus: .ringer, category: .soloAmbient), false, true),
            (SessionConfiguration(bus: .music, category: .playAndRecord), false, true),
            (SessionConfiguration(bus: .music, category: .record), false, false),
            (SessionConfiguration(bus: .effect, category: .playback, transient: true), false, true),
        ]
    )
    func mixing(configuration: SessionConfiguration, mixable: Bool, transient: Bool) {
        #expect(configuration.isMixable == mixable)
        #expect(configuration.interruptsTransiently == transient)
    }

    @Test("instants add durations and print as seconds")
    func instants() {
        let t = Instant.milliseconds(1500) + .milliseconds(25)
        #expect(t == .milliseconds(1525))
        #expect(t.description == "1.525s")
        #expect(Instant.milliseconds(3) - .zero == .milliseconds(3))
        #expect(Duration.milliseconds(250).nanoseconds == 250_000_000)
    }

    @Test("the manual clock moves only when told")
    func manualClock() {
        let clock = ManualClock()
        #expect(clock.now() == .zero)
        clock.advance(by: .milliseconds(10))
        clock.advance(to: .milliseconds(40))
        #expect(clock.now() == .milliseconds(40))
    }

    @Test("the seeded generator repeats itself for the same seed and differs for another")
    func seeded() {
        var a = SeededGenerator(seed: 9)
        var b = SeededGenerator(seed: 9)
        var c = SeededGenerator(seed: 10)
        let first = (0..<8).map { _ in a.next() }
        #expect(first == (0..<8).map { _ in b.next() })
        #expect(first != (0..<8).map { _ in c.next() })
    }

    @Test("a scripted input source reports its state, then events as time reaches them, then its error")
    func scriptedSource() throws {
        let source = ScriptedInputSource(
            name: "test switch",
            initialState: [.silenceSwitch(.silent)],
            script: [TimedInputEvent(.silenceSwitch(.ring), at: .milliseconds(20))]
        )
        #expect(try source.currentState(now: .zero).map(\.event) == [.silenceSwitch(.silent)])
        #expect(try source.readEvents(now: .milliseconds(10)).isEmpty)
        #expect(source.nextDeadline == .milliseconds(20))
        #expect(try source.readEvents(now: .milliseconds(25)).map(\.event) == [.silenceSwitch(.ring)])
        source.nextError = HardwareError(
            operation: "read events from",
            device: "gpiochip0",
            errno: 19,
            message: "the device is gone"
        )
        #expect(throws: HardwareError.self) { try source.readEvents(now: .milliseconds(30)) }
        #expect(source.nextError == nil)
    }

    @Test("hardware errors read as one sentence naming what, where and why")
    func hardwareError() {
        let error = HardwareError(
            operation: "request line 17 on",
            device: "gpiochip0",
            errno: 16,
            message: "line is busy (used by 'gpio-keys')"
        )
        #expect(
            error.description == "cannot request line 17 on gpiochip0: line is busy (used by 'gpio-keys') [errno 16]"
        )
    }
}
