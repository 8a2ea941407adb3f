// hush-mixbench: the figures docs/performance.md records, measured in one run on one machine.
//
//   hush-mixbench compare DIR        three 60 s stereo files: hush's offline mix against `sox -m`, as a ratio
//   hush-mixbench render SECONDS     `hush-render` throughput over a scenario of that length
//   hush-mixbench periods N          render N 64-frame periods of 3 stereo voices with ramps (for valgrind)
//   hush-mixbench requests N         N rounds of typical control request lines read by hushd's JSON reader and by
//                                    Foundation's JSONDecoder (what hushd used before), as a ratio
//   hush-mixbench messages N         N rounds of typical lines from hushd (events and a status reply) written by
//                                    ControlCodec (JSONEncoder), then read back by ControlCodec.decodeMessage
//                                    (JSONReader's strict check, then JSONDecoder) and by JSONDecoder alone
//   hush-mixbench streams N K RATE   render N 64-frame periods of K applications' playback streams (S16 stereo at
//                                    RATE, the ring kept full) and one of hushd's own voices (for valgrind: the
//                                    cost of a stream against the cost of a voice)
//   hush-mixbench latency            frames between an impulse's entry and its place in the mix, for hushd's own
//                                    voice and for a stream at 48, 44.1, 16 and 8 kHz (what a stream adds)
//   hush-mixbench digest SEEDS       random command sequences through the engine (every format, mono and stereo
//                                    sources and outputs, ramps, fades, loops, rings, loud sums): one checksum of
//                                    all output bytes and reports, to show an optimisation changed no byte
import Foundation
import HushAudioFile
import HushCore
import HushHearing
import HushMixer
import HushProtocol
import HushRender
import HushStreams

func seconds(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

func stereoTone(_ hz: Double, seconds: Double) -> AudioBuffer {
    let frames = Int(seconds * 48000)
    var samples = [Float](repeating: 0, count: frames * 2)
    for n in 0..<frames {
        let value = 0.3 * Float(sin(2 * Double.pi * hz * Double(n) / 48000))
        samples[2 * n] = value
        samples[2 * n + 1] = value
    }
    return AudioBuffer(interleaved: samples, channels: 2, sampleRate: 48000)
}

/// Mixes `files` with hush's engine (three buses, unity gains) into a 16-bit WAV: decode, mix, write.
func hushMix(_ files: [String], to output: String) throws {
    let t0 = DispatchTime.now().uptimeNanoseconds
    // Decode the files at the same time, one per core, as an offline tool should.
    nonisolated(unsafe) let results = UnsafeMutableBufferPointer<Result<AudioBuffer, SoundFileError>?>.allocate(
        capacity: files.count
    )
    results.initialize(repeating: nil)
    defer { results.deallocate() }
    DispatchQueue.concurrentPerform(iterations: files.count) { index in
        results[index] = Result { () throws(SoundFileError) in try SoundFile.load(files[index], sampleRate: 48000) }
    }
    let buffers = try results.map { try $0!.get() }
    let t1 = DispatchTime.now().uptimeNanoseconds
    defer {
        if ProcessInfo.processInfo.environment["HUSH_MIXBENCH_TRACE"] != nil {
            print("load \(Double(t1 - t0) / 1e9) s")
        }
    }
    let frames = buffers.map(\.frameCount).max() ?? 0
    var out = [Int16](repeating: 0, count: frames * 2)
    // Mixed in two halves at once, one engine each: the engine keeps no state across frames but its ramps and
    // fades, and here every gain is steady, so each half is exactly what one engine would render for it.
    let half = frames / 2
    out.withUnsafeMutableBufferPointer { pointer in
        nonisolated(unsafe) let output = pointer.baseAddress!
        DispatchQueue.concurrentPerform(iterations: 2) { part in
            let start = part == 0 ? 0 : half
            let end = part == 0 ? half : frames
            mixPart(buffers, from: start, to: end, into: output + start * 2)
        }
    }
    let t2 = DispatchTime.now().uptimeNanoseconds
    try SoundFile.writePCM16(out, channels: 2, sampleRate: 48000, to: output)
    let t3 = DispatchTime.now().uptimeNanoseconds
    if ProcessInfo.processInfo.environment["HUSH_MIXBENCH_TRACE"] != nil {
        print("mix \(Double(t2 - t1) / 1e9) s, write \(Double(t3 - t2) / 1e9) s")
    }
}

/// Frames `start..<end` of the mix of `buffers` (each on its own bus, unity gains, no fades) into `output`.
func mixPart(_ buffers: [AudioBuffer], from start: Int, to end: Int, into output: UnsafeMutablePointer<Int16>) {
    let period = 4096
    let engine = MixerEngine(format: MixerFormat(sampleRate: 48000, channels: 2, maxFrames: period))
    for (index, buffer) in buffers.enumerated() where start < buffer.frameCount {
        // The voice starts where this part does: its source begins `start` frames into the sound.
        var source = VoiceSource(buffer)
        source.samples += start * buffer.channels
        source.frameCount -= start
        let voice = Int32(index)
        _ = engine.commands.push(.attach(voice: voice, bus: Int32(index % 3), source: source, loop: false, gain: 1))
        _ = engine.commands.push(.play(voice: voice, fadeFrames: 0))
    }
    var frame = start
    while frame < end {
        let count = min(period, end - frame)
        engine.render(frames: count, into: output + (frame - start) * 2, sampleFormat: .s16LE)
        frame += count
        while engine.telemetry.pop() != nil {}
    }
}

/// Three looping tones on the three buses, the silence switch and the volume buttons every quarter second.
func benchScenario(seconds length: Double) throws -> Scenario {
    var text = "0 activate 1 music playback tone=440 loop\n0 activate 2 effect ambient tone=1000 loop\n"
    text += "0 activate 3 ringer playback mix tone=1500 loop\n0 play 1\n0 play 2\n0 play 3\n"
    var t = 1.0
    while t < length - 1 {
        text += "\(t) silence on\n\(t + 0.25) silence off\n\(t + 0.5) up\n\(t + 0.75) down\n"
        t += 1
    }
    text += "\(length) end\n"
    return try Scenario.parse(text, file: "bench.txt")
}

func run(_ arguments: [String]) throws {
    switch arguments.first {
    case "compare":
        let directory = arguments.count > 1 ? arguments[1] : NSTemporaryDirectory() + "hush-mixbench"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let files = [220.0, 330.0, 440.0].enumerated().map { "\(directory)/voice\($0.offset).wav" }
        for (index, hz) in [220.0, 330.0, 440.0].enumerated() {
            try SoundFile.write(stereoTone(hz, seconds: 60), to: files[index], encoding: .pcm16)
        }
        var hushTimes: [Double] = []
        var soxTimes: [Double] = []
        for _ in 0..<3 {
            hushTimes.append(try seconds { try hushMix(files, to: "\(directory)/hush.wav") })
            soxTimes.append(
                try seconds {
                    let sox = Process()
                    sox.executableURL = URL(fileURLWithPath: "/usr/bin/sox")
                    sox.arguments = ["-m"] + files + ["-r", "48000", "-b", "16", "\(directory)/sox.wav"]
                    try sox.run()
                    sox.waitUntilExit()
                    guard sox.terminationStatus == 0 else { throw CommandFailure(text: "sox failed") }
                }
            )
        }
        let hush = hushTimes.min()!
        let sox = soxTimes.min()!
        print(
            String(
                format:
                    "offline mix of 3 × 60 s stereo 48 kHz files: hush %.3f s, sox -m %.3f s, hush %.1f× faster (best of 3)",
                hush,
                sox,
                sox / hush
            )
        )
    case "requests":
        let rounds = arguments.count > 1 ? Int(arguments[1]) ?? 20000 : 20000
        // What clients send most: status, sessions, play, volume, subscribe; and one malformed line.
        let lines: [[UInt8]] = [
            #"{"command":"status","id":1}"#,
            #"{"command":"activate","id":2,"bus":"music","category":"playback","options":["duckOthers"]}"#,
            #"{"command":"play","id":3,"session":7,"sound":"chimes/doorbell.wav","loop":false}"#,
            #"{"command":"volume","id":4,"step":9}"#,
            #"{"command":"subscribe","id":5,"events":["route-changed","volume-changed","silence-changed"]}"#,
            #"{"command":"play","session":7,"sound":"a.wav""#,
        ].map { Array($0.utf8) }
        let codec = ControlCodec()
        var accepted = 0
        let ours = seconds {
            for _ in 0..<rounds {
                for line in lines where (try? JSONReader.read(line)) != nil { accepted += 1 }
            }
        }
        var peerAccepted = 0
        let peer = seconds {
            for _ in 0..<rounds {
                for line in lines where (try? JSONDecoder().decode(JSONValue.self, from: Data(line))) != nil {
                    peerAccepted += 1
                }
            }
        }
        var decoded = 0
        let whole = seconds {
            for _ in 0..<rounds {
                for line in lines {
                    if case .success = codec.decodeRequest(line) { decoded += 1 }
                }
            }
        }
        let count = Double(rounds * lines.count)
        guard accepted == peerAccepted, decoded == rounds * (lines.count - 1) else {
            print("hush-mixbench: the readers disagree: \(accepted), \(peerAccepted) and \(decoded) lines read")
            exit(1)
        }
        print(
            String(
                format: "request lines read: JSONReader %.2f us/line, Foundation JSONDecoder %.2f us/line "
                    + "(ratio %.1fx); decodeRequest with field checks %.2f us/line",
                ours / count * 1e6,
                peer / count * 1e6,
                peer / ours,
                whole / count * 1e6
            )
        )
    case "messages":
        // hushd writes these lines with JSONEncoder and hushctl reads them with JSONReader (the strict check, which
        // names the column of a mistake) and then JSONDecoder: what the check adds to JSONDecoder alone.
        let rounds = arguments.count > 1 ? Int(arguments[1]) ?? 20000 : 20000
        let lines = benchMessages()
        let codec = ControlCodec()
        var written = 0
        let writes = seconds {
            for _ in 0..<rounds {
                for message in lines {
                    switch message {
                    case .reply(let reply): written += codec.encode(reply).count
                    case .event(let event): written += codec.encode(event).count
                    }
                }
            }
        }
        let encoded = lines.map { message -> [UInt8] in
            switch message {
            case .reply(let reply): codec.encode(reply).dropLast()
            case .event(let event): codec.encode(event).dropLast()
            }
        }
        var read = 0
        let reads = try seconds {
            for _ in 0..<rounds {
                for (index, line) in encoded.enumerated() where try codec.decodeMessage(line) == lines[index] {
                    read += 1
                }
            }
        }
        var decoderRead = 0
        let decoder = JSONDecoder()
        let decoderReads = try seconds {
            for _ in 0..<rounds {
                for (index, line) in encoded.enumerated() {
                    let data = Data(line)
                    let message: ServerMessage =
                        if case .event = lines[index] {
                            .event(try decoder.decode(ControlEvent.self, from: data))
                        } else {
                            .reply(try decoder.decode(ControlReply.self, from: data))
                        }
                    if message == lines[index] { decoderRead += 1 }
                }
            }
        }
        let count = Double(rounds * lines.count)
        guard written == rounds * (encoded.map(\.count).reduce(0, +) + lines.count), read == rounds * lines.count,
            decoderRead == read
        else {
            print("hush-mixbench: the lines do not read back: \(read) and \(decoderRead) lines read")
            exit(1)
        }
        print(
            String(
                format:
                    "server lines written: ControlCodec.encode %.2f us/line; read back: decodeMessage %.2f us/line, "
                    + "JSONDecoder alone %.2f us/line (the strict check adds %.0f%%)",
                writes / count * 1e6,
                reads / count * 1e6,
                decoderReads / count * 1e6,
                (reads / decoderReads - 1) * 100
            )
        )
    case "render":
        let length = Double(arguments.count > 1 ? arguments[1] : "60") ?? 60
        let scenario = try benchScenario(seconds: length)
        var elapsed = 0.0
        for _ in 0..<3 {
            let renderer = ScenarioRenderer(scenario: scenario)
            let time = try seconds { _ = try renderer.render() }
            elapsed = elapsed == 0 ? time : min(elapsed, time)
        }
        print(
            String(
                format:
                    "hush-render: %.0f s of audio (3 voices, 64-frame periods, %d events) in %.3f s: %.0f s of audio per second",
                length,
                scenario.steps.count,
                elapsed,
                length / elapsed
            )
        )
    case "periods":
        let count = Int(arguments.count > 1 ? arguments[1] : "1000") ?? 1000
        let engine = MixerEngine(format: MixerFormat(sampleRate: 48000, channels: 2, maxFrames: 64))
        let controller = MixerController(engine: engine)
        for index in 0..<3 {
            try controller.attach(
                SessionID(UInt64(index)),
                bus: Bus.allCases[index],
                buffer: stereoTone(200 + 100 * Double(index), seconds: 1),
                loop: true
            )
            controller.apply(.resume(SessionID(UInt64(index))))
        }
        let output = UnsafeMutableRawPointer.allocate(byteCount: 64 * 4, alignment: 16)
        for period in 0..<count {
            let gain: Float = period % 2 == 0 ? 0.5 : 1
            for index in 0..<3 {
                _ = engine.commands.push(.setVoiceGain(voice: Int32(index), gain: gain, rampFrames: 64))
            }
            _ = engine.commands.push(.setBusGain(bus: 1, gain: gain, rampFrames: 64))
            engine.render(frames: 64, into: output, sampleFormat: .s16LE)
            while engine.telemetry.pop() != nil {}
        }
        withExtendedLifetime(controller) {}
        print("rendered \(count) periods")
    case "streams":
        let count = Int(arguments.count > 1 ? arguments[1] : "1000") ?? 1000
        let streams = Int(arguments.count > 2 ? arguments[2] : "8") ?? 8
        let rate = Int(arguments.count > 3 ? arguments[3] : "48000") ?? 48000
        let bench = try StreamBench(streams: streams, rate: rate)
        for _ in 0..<count { bench.period() }
        let consumed = bench.streams.map { $0.memory.serverPosition }
        let underruns = bench.streams.map { $0.underrunFrames.load(ordering: .relaxed) }
        print(
            "rendered \(count) periods of \(streams) streams at \(rate) Hz; consumed \(consumed.first ?? 0) frames each, \(underruns.reduce(0, +)) frames short"
        )
    case "hearing":
        // The level meter (hearing safety) on stereo music-like audio: SECONDS of it, fed in 64-frame periods.
        let length = Int(arguments.count > 1 ? arguments[1] : "10") ?? 10
        let channels = 2
        var samples = [Float](repeating: 0, count: 48000 * channels)
        var noise = SplitMix(state: 7)
        for frame in 0..<48000 {
            let tone = 0.3 * sin(2 * Double.pi * 440 * Double(frame) / 48000)
            for channel in 0..<channels {
                samples[frame * channels + channel] = Float(tone) + 0.05 * (noise.unit() - 0.5)
            }
        }
        var meter = LevelMeter(sampleRate: 48000, channels: channels)
        var seconds = 0
        var last = 0.0
        for _ in 0..<length {
            samples.withUnsafeBufferPointer { buffer in
                var start = 0
                while start < buffer.count {
                    meter.append(UnsafeBufferPointer(rebasing: buffer[start..<start + 64 * channels])) {
                        seconds += 1
                        last = $0
                    }
                    start += 64 * channels
                }
            }
        }
        print("level meter: \(seconds) s of 48 kHz stereo measured, the last at \(String(format: "%.2f", last)) dB")
    case "latency":
        for rate in [48000, 44100, 16000, 8000] {
            let lag = try StreamBench.impulseLag(rate: rate)
            print(
                "stream at \(rate) Hz: its impulse is \(lag) frames later in the mix than the same impulse in hushd's own voice"
            )
        }
    case "digest":
        let seeds = Int(arguments.count > 1 ? arguments[1] : "200") ?? 200
        var hash = FNV()
        for seed in 0..<seeds { digest(seed: UInt64(seed), into: &hash) }
        let rendered = try ScenarioRenderer(scenario: benchScenario(seconds: 20)).render()
        var renderHash = FNV()
        rendered.withUnsafeBytes { renderHash.add($0) }
        print(
            String(
                format: "digest of %d random sequences: %016llx; of a 20 s hush-render: %016llx",
                seeds,
                hash.value,
                renderHash.value
            )
        )
    default:
        print("usage: hush-mixbench compare [DIR] | render [SECONDS] | periods N | digest SEEDS")
    }
}

struct CommandFailure: Error { var text: String }

/// FNV-1a over bytes: a checksum to compare runs of two builds, not a security measure.
struct FNV {
    var value: UInt64 = 0xcbf2_9ce4_8422_2325
    mutating func add(_ bytes: UnsafeRawBufferPointer) {
        for byte in bytes { value = (value ^ UInt64(byte)) &* 0x100_0000_01b3 }
    }
    mutating func add<T>(_ value: T) { withUnsafeBytes(of: value) { add($0) } }
}

/// A small deterministic generator (SplitMix64), so a digest is the same on every machine.
struct SplitMix {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
    mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
    mutating func unit() -> Float { Float(next() >> 40) / Float(1 << 24) }
}

/// One random sequence: an engine of random shape, random sources, 300 periods of random lengths with random
/// commands between them; every output byte and every report goes into `hash`.
func digest(seed: UInt64, into hash: inout FNV) {
    var random = SplitMix(state: seed)
    let channels = 1 + random.below(2)
    let maxFrames = [64, 128, 256, 4096][random.below(4)]
    let engine = MixerEngine(
        format: MixerFormat(sampleRate: 48000, channels: channels, maxFrames: maxFrames),
        voiceCount: 6
    )
    let formats: [SampleFormat] = [.s16LE, .s24_3LE, .s32LE, .floatLE]
    let sampleFormat = formats[random.below(4)]
    var buffers: [AudioBuffer] = []
    for _ in 0..<5 {
        let sourceChannels = 1 + random.below(2)
        let frames = 1 + random.below(3000)
        let loudness: Float = random.below(3) == 0 ? 1 : 0.5
        var samples = [Float](repeating: 0, count: frames * sourceChannels)
        for i in samples.indices { samples[i] = loudness * (2 * random.unit() - 1) }
        if random.below(4) == 0 { samples[0] = -0.0 }
        buffers.append(AudioBuffer(interleaved: samples, channels: sourceChannels, sampleRate: 48000))
    }
    let ringChannels = 1 + random.below(2)
    let ring = SampleRing(frames: 8192, channels: ringChannels)
    defer { ring.deallocate() }
    let output = UnsafeMutableRawPointer.allocate(byteCount: maxFrames * channels * 4, alignment: 16)
    defer { output.deallocate() }
    for voice in 0..<6 {
        let source = voice < 5 ? VoiceSource(buffers[voice]) : VoiceSource(ring)
        _ = engine.commands.push(
            .attach(
                voice: Int32(voice),
                bus: Int32(voice % 3),
                source: source,
                loop: random.below(2) == 0,
                gain: random.unit()
            )
        )
    }
    var ringFeed = [Float](repeating: 0, count: 512 * ringChannels)
    for period in 0..<300 {
        for _ in 0..<random.below(5) {
            let voice = Int32(random.below(6))
            let frames = Int32(random.below(4) == 0 ? 0 : random.below(3 * maxFrames))
            switch random.below(8) {
            case 0, 1:
                _ = engine.commands.push(.setVoiceGain(voice: voice, gain: random.unit() * 1.5, rampFrames: frames))
            case 2:
                _ = engine.commands.push(
                    .setBusGain(bus: Int32(random.below(3)), gain: random.unit(), rampFrames: frames)
                )
            case 3, 4: _ = engine.commands.push(.play(voice: voice, fadeFrames: frames))
            case 5: _ = engine.commands.push(.pause(voice: voice, fadeFrames: frames))
            case 6: _ = engine.commands.push(.stop(voice: voice, fadeFrames: frames))
            default: if period % 50 == 49 { engine.fadeInOutput(frames: frames) }
            }
        }
        if random.below(2) == 0 {
            for i in ringFeed.indices { ringFeed[i] = 2 * random.unit() - 1 }
            _ = ringFeed.withUnsafeBufferPointer { ring.write($0.baseAddress!, frames: 1 + random.below(512)) }
        }
        let frames = random.below(3) == 0 ? maxFrames : 1 + random.below(maxFrames)
        engine.render(frames: frames, into: output, sampleFormat: sampleFormat)
        hash.add(UnsafeRawBufferPointer(start: output, count: frames * channels * sampleFormat.bytesPerSample))
        while let report = engine.telemetry.pop() {
            switch report {
            case .finished(let voice):
                hash.add(1 as UInt8)
                hash.add(voice)
            case .released(let voice):
                hash.add(2 as UInt8)
                hash.add(voice)
            case .peaks(let effect, let music, let ringer):
                hash.add(3 as UInt8)
                hash.add(effect.bitPattern)
                hash.add(music.bitPattern)
                hash.add(ringer.bitPattern)
            }
        }
    }
}

do {
    try run(Array(CommandLine.arguments.dropFirst()))
} catch {
    print("hush-mixbench: \(error)")
    exit(1)
}

/// What hushd sends most: events of every common kind, a volume reply and a status with three sessions.
func benchMessages() -> [ServerMessage] {
    func session(_ id: UInt64, _ bus: Bus, _ category: HushCore.Category, _ state: String) -> ControlStatus.Session {
        ControlStatus.Session(
            id: SessionID(id),
            client: ClientID(id + 100),
            pid: Int32(1000 + id),
            uid: 1000,
            gid: 1000,
            name: "client \(id)",
            configuration: SessionConfiguration(bus: bus, category: category),
            state: state,
            sound: "sounds/chime-\(id).wav"
        )
    }
    let status = ControlStatus(
        version: "0.1.0",
        uptimeSeconds: 3725.4,
        silenceSwitch: .ring,
        jack: .plugged,
        route: .headphones,
        routeOverridden: false,
        systemVolume: VolumeStep(clamping: 8),
        systemGainDecibels: -24,
        ringerVolume: VolumeStep(clamping: 12),
        ringerGainDecibels: -6.5,
        buttonsControl: .system,
        secondaryAudioShouldBeSilenced: true,
        sessions: [
            session(1, .music, .playback, "playing"), session(2, .effect, .ambient, "paused"),
            session(3, .ringer, .playback, "playing"),
        ],
        output: ControlStatus.Output(
            pcm: "hw:0,0",
            open: true,
            sampleRate: 48000,
            channels: 2,
            periodFrames: 64,
            periods: 3,
            xruns: 2,
            losses: 0,
            latencyMilliseconds: 4
        ),
        clients: 3
    )
    return [
        .event(.volumeChanged(.system, VolumeStep(clamping: 9), route: .speaker)),
        .event(.routeChanged(RouteChange(previous: .speaker, current: .headphones, reason: .newDeviceAvailable))),
        .event(.silenceChanged(.silent)),
        .event(.interruptionBegan(SessionID(3), cause: .session(SessionID(4)))),
        .event(
            .decision(
                DecisionReport(
                    rule: "R5",
                    title: "headphones-unplugged",
                    command: "pause session 3",
                    reason: "headphones unplugged: playback pauses",
                    cause: "headphones unplugged (reported by gpio)",
                    time: 12.346
                )
            )
        ),
        .reply(ControlReply(id: .number(4), volume: VolumeReport(kind: .system, step: .maximum, gainDecibels: 0))),
        .reply(ControlReply(id: .number(5), status: status)),
    ]
}

/// K playback streams kept full by a "client" (outside what valgrind is asked to look at: the render loop is the
/// same loop either way), and one of hushd's own voices, in one engine.
final class StreamBench {
    /// hush_wire.h: the client's frame counter is at byte 64 of the header, and the ring starts at byte 4096 (both
    /// static-asserted there). A static, not a global: main.swift's globals are set only when their line runs.
    static let clientFramesOffset = 64
    let engine = MixerEngine(format: MixerFormat(sampleRate: 48000, channels: 2, maxFrames: 64))
    let controller: MixerController
    var streams: [PlaybackStream] = []
    var clients: [(base: UnsafeMutableRawPointer, written: UInt64)] = []
    let output = UnsafeMutableRawPointer.allocate(byteCount: 64 * 4, alignment: 16)

    init(streams count: Int, rate: Int) throws {
        controller = MixerController(engine: engine)
        try controller.attach(SessionID(1000), bus: .effect, buffer: stereoTone(300, seconds: 1), loop: true)
        controller.apply(.resume(SessionID(1000)))
        for index in 0..<count {
            let (stream, base) = try Self.playbackStream(
                id: index + 1,
                format: .s16LE,
                channels: 2,
                rate: rate,
                ringFrames: 4096
            )
            // A quiet noise-like ramp, so the mix does real work.
            let ring = (base + 4096).assumingMemoryBound(to: Int16.self)
            for i in 0..<(4096 * 2) { ring[i] = Int16(truncatingIfNeeded: (i &* 2_654_435_761) >> 20) }
            streams.append(stream)
            clients.append((base, 0))
            try controller.attach(SessionID(UInt64(index + 1)), bus: .music, pull: stream.voice)
            controller.apply(.resume(SessionID(UInt64(index + 1))))
        }
    }

    /// A playback stream at the mixer's 48 kHz and 64-frame periods, and its memory mapped as a client maps it.
    static func playbackStream(
        id: Int,
        format: StreamSampleFormat,
        channels: Int,
        rate: Int,
        ringFrames: Int
    ) throws -> (PlaybackStream, UnsafeMutableRawPointer) {
        let memory = try StreamMemory(
            StreamGeometry(
                id: StreamID(UInt64(id)),
                direction: .playback,
                format: format,
                channels: channels,
                rate: rate,
                ringFrames: ringFrames,
                periodFrames: 65
            )
        )
        let stream = try PlaybackStream(memory: memory, mixerRate: 48000, maxFrames: 64)
        let base = mmap(
            nil,
            memory.geometry.totalBytes,
            PROT_READ | PROT_WRITE,
            MAP_SHARED,
            memory.memoryDescriptor,
            0
        )!
        return (stream, base)
    }

    func period() {
        for index in clients.indices {
            let consumed = streams[index].memory.serverPosition
            clients[index].written = consumed + 4096
            let field = clients[index].base + Self.clientFramesOffset
            field.assumingMemoryBound(to: UInt64.self).pointee = clients[index].written
        }
        engine.render(frames: 64, into: output, sampleFormat: .s16LE)
        while engine.telemetry.pop() != nil {}
    }

    /// Where an impulse lands in the mix when it is the first frame of a stream at `rate`, against the same
    /// impulse as the first frame of one of hushd's own sounds attached in the same period: the frames a stream
    /// adds. A converted stream's impulse is the peak of the converter's response.
    static func impulseLag(rate: Int) throws -> Int {
        func mix(stream: Bool) throws -> [Float] {
            let engine = MixerEngine(format: MixerFormat(sampleRate: 48000, channels: 1, maxFrames: 64))
            let controller = MixerController(engine: engine)
            var keep: [AnyObject] = []
            if stream {
                let (playback, base) = try playbackStream(
                    id: 1,
                    format: .floatLE,
                    channels: 1,
                    rate: rate,
                    ringFrames: 8192
                )
                let ring = (base + 4096).assumingMemoryBound(to: Float.self)
                ring[0] = 1
                let field = base + Self.clientFramesOffset
                field.assumingMemoryBound(to: UInt64.self).pointee = 8192
                keep.append(playback)
                try controller.attach(SessionID(1), bus: .music, pull: playback.voice)
            } else {
                var samples = [Float](repeating: 0, count: 8192)
                samples[0] = 1
                try controller.attach(
                    SessionID(1),
                    bus: .music,
                    buffer: AudioBuffer(interleaved: samples, channels: 1, sampleRate: 48000),
                    loop: false
                )
            }
            controller.mixer_resumeWithoutFade(SessionID(1))
            let output = UnsafeMutablePointer<Float>.allocate(capacity: 64)
            var all: [Float] = []
            for _ in 0..<40 {
                engine.render(frames: 64, into: UnsafeMutableRawPointer(output), sampleFormat: .floatLE)
                all += UnsafeBufferPointer(start: output, count: 64)
            }
            withExtendedLifetime((controller, keep)) {}
            return all
        }
        func peak(_ samples: [Float]) -> Int { samples.indices.max { abs(samples[$0]) < abs(samples[$1]) } ?? 0 }
        return peak(try mix(stream: true)) - peak(try mix(stream: false))
    }
}

extension MixerController {
    /// Plays a session's voice from its first frame at full level (no fade-in), for impulse timing.
    func mixer_resumeWithoutFade(_ session: SessionID) {
        resumeFade = .zero
        apply(.resume(session))
    }
}
