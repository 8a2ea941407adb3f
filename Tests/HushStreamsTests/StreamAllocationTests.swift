import CAllocationCounter
import CHushWire
import HushCore
import HushMixer
import HushStreams
import HushTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The audio thread's work for applications' streams allocates nothing: eight playback streams (four converted
/// from 44.1, 22.05, 16 and 8 kHz, four at the mixer's rate, in every sample format) mixed by the engine, and four
/// capture streams and a relay onto the music bus fed with a mono microphone through the capture router, period
/// after period while the "clients" keep writing and reading. Counted with the test executable's own malloc (Tests/CAllocationCounter) on this thread.
@Suite("Streams on the audio thread: no allocation")
struct StreamAllocationTests {
    static let rate = 48000
    static let period = 64

    /// A client's side of a playback stream: writes a ramp of frames into the ring as room appears.
    final class Writer {
        let memory: StreamMemory
        let base: UnsafeMutableRawPointer
        var written: UInt64 = 0

        init(_ memory: StreamMemory) throws {
            self.memory = memory
            guard
                let mapped = mmap(
                    nil,
                    memory.geometry.totalBytes,
                    PROT_READ | PROT_WRITE,
                    MAP_SHARED,
                    memory.memoryDescriptor,
                    0
                ), mapped != MAP_FAILED
            else { throw TestFailure("cannot map the stream") }
            base = mapped
        }

        deinit { munmap(base, memory.geometry.totalBytes) }

        func field<T>(_ path: KeyPath<hush_wire_header, T>) -> UnsafeMutablePointer<T> {
            (base + MemoryLayout<hush_wire_header>.offset(of: path)!).assumingMemoryBound(to: T.self)
        }

        /// Playback: fills what is free (the bytes are whatever the ring held: the level does not matter here).
        func write() {
            let consumed = hush_wire_load64(field(\.server_frames))
            let free = UInt64(memory.geometry.ringFrames) - (written - consumed)
            written += free
            hush_wire_store64(field(\.client_frames), written)
        }

        /// Capture: reads everything there is.
        func read() {
            hush_wire_store64(field(\.client_frames), hush_wire_load64(field(\.server_frames)))
        }
    }

    @Test("8 playback and 4 capture streams and a relay: 0 allocations and 0 frees in 2000 periods after warm-up")
    func noAllocation() throws {
        let engine = MixerEngine(format: MixerFormat(sampleRate: Self.rate, channels: 2, maxFrames: Self.period))
        let controller = MixerController(engine: engine)
        let formats: [StreamSampleFormat] = [.s16LE, .s32LE, .floatLE, .s16LE]
        var playback: [PlaybackStream] = []
        var writers: [Writer] = []
        for (index, rate) in [44100, 22050, 16000, 8000, 48000, 48000, 48000, 48000].enumerated() {
            let memory = try StreamMemory(
                StreamGeometry(
                    id: StreamID(UInt64(index + 1)),
                    direction: .playback,
                    format: formats[index % 4],
                    channels: 1 + index % 2,
                    rate: rate,
                    ringFrames: 4096,
                    periodFrames: 65
                )
            )
            let stream = try PlaybackStream(memory: memory, mixerRate: Self.rate, maxFrames: Self.period)
            stream.counting.store(true, ordering: .relaxed)
            playback.append(stream)
            writers.append(try Writer(memory))
            let session = SessionID(UInt64(index + 1))
            try controller.attach(session, bus: .music, pull: stream.voice)
            controller.apply(.resume(session))
        }
        let microphone = SampleRing(frames: 4096, channels: 1)
        defer { microphone.deallocate() }
        let speech = [Float](repeating: 0.25, count: Self.period)
        let router = CaptureRouter(microphone: microphone, maxFrames: Self.period)
        let relay = CaptureRelay(channels: 2, maxFrames: Self.period, ringFrames: 512)
        relay.allowed.store(true, ordering: .relaxed)
        router.add(relay)
        try controller.attach(SessionID(50), bus: .music, ring: relay.ring)
        controller.apply(.resume(SessionID(50)))
        var readers: [Writer] = []
        var captures: [CaptureStream] = []
        for (index, rate) in [16000, 48000, 44100, 8000].enumerated() {
            let memory = try StreamMemory(
                StreamGeometry(
                    id: StreamID(UInt64(100 + index)),
                    direction: .capture,
                    format: formats[index],
                    channels: 1 + index % 2,
                    rate: rate,
                    ringFrames: 2048,
                    periodFrames: 65
                )
            )
            let capture = try CaptureStream(memory: memory, mixerRate: Self.rate, maxFrames: Self.period)
            capture.running.store(true, ordering: .relaxed)
            capture.allowed.store(index % 2 == 0, ordering: .relaxed)
            router.add(capture)
            captures.append(capture)
            readers.append(try Writer(memory))
        }
        let routers = CaptureRouters([router])
        let hook = routers.hook
        let output = UnsafeMutableRawPointer.allocate(byteCount: Self.period * 2 * 4, alignment: 16)
        defer { output.deallocate() }
        func render() {
            engine.render(frames: Self.period, into: output, sampleFormat: .s16LE)
            hook.call(hook.context, Self.period)
        }
        func period() {
            _ = speech.withUnsafeBufferPointer { microphone.write($0.baseAddress!, frames: Self.period) }
            render()
        }
        // Warm-up: commands applied, converters primed, every stream moving.
        for _ in 0..<200 {
            for writer in writers { writer.write() }
            for reader in readers { reader.read() }
            period()
        }
        var allocations: Int64 = 0
        var frees: Int64 = 0
        for _ in 0..<2000 {
            // The clients' work happens on their own threads in life; here it is outside the counted part.
            for writer in writers { writer.write() }
            for reader in readers { reader.read() }
            // The microphone's own thread writes its period.
            _ = speech.withUnsafeBufferPointer { microphone.write($0.baseAddress!, frames: Self.period) }
            let before = (hush_allocations_on_this_thread(), hush_frees_on_this_thread())
            render()
            allocations += hush_allocations_on_this_thread() - before.0
            frees += hush_frees_on_this_thread() - before.1
        }
        let consumed = playback.map { $0.memory.serverPosition }
        print("streams: 2000 periods, \(allocations) allocations, \(frees) frees; consumed \(consumed)")
        #expect(allocations == 0 && frees == 0)
        // Every stream moved at its own rate: 2200 periods of 64 frames at 48 kHz is 2.93 s.
        for (stream, position) in zip(playback, consumed) {
            let expected = Double(2200 * Self.period) * Double(stream.geometry.rate) / Double(Self.rate)
            #expect(abs(Double(position) - expected) < 300, "\(stream.geometry.rate) Hz: \(position) of \(expected)")
        }
        for capture in captures {
            let expected = Double(2200 * Self.period) * Double(capture.geometry.rate) / Double(Self.rate)
            let position = Double(capture.memory.serverPosition)
            #expect(abs(position - expected) < 300, "capture \(capture.geometry.rate) Hz: \(position) of \(expected)")
        }
        let relayed = (
            hearing: relay.hearing.load(ordering: .relaxed), dropped: relay.droppedFrames.load(ordering: .relaxed)
        )
        #expect(relayed.hearing && relayed.dropped == 0, "the relay: \(relayed)")
        let hearing = captures.map { $0.hearing.load(ordering: .relaxed) }
        #expect(hearing == [true, false, true, false])
        withExtendedLifetime((controller, routers, playback, captures, relay)) {}
    }
}

/// What a client writes into its ring cannot hurt the mix: samples that are not numbers become silence, anything
/// beyond full scale is clipped, so a broken or hostile float stream adds at most its own full-scale noise.
@Suite("A playback stream's samples are sanitised")
struct StreamSampleSanitisingTests {
    @Test("NaN, infinities and huge floats come out of the stream's voice finite and within full scale")
    func floatsAreSanitised() throws {
        let memory = try StreamMemory(
            StreamGeometry(
                id: StreamID(1),
                direction: .playback,
                format: .floatLE,
                channels: 1,
                rate: 48000,
                ringFrames: 256,
                periodFrames: 65
            )
        )
        let stream = try PlaybackStream(memory: memory, mixerRate: 48000, maxFrames: 64)
        let client = try StreamAllocationTests.Writer(memory)
        let ring = (client.base + 4096).assumingMemoryBound(to: Float.self)
        let hostile: [Float] = [.nan, -.nan, .infinity, -.infinity, 1e30, -1e30, .signalingNaN, 0.5]
        for index in 0..<64 { ring[index] = hostile[index % hostile.count] }
        hush_wire_store64(client.field(\.client_frames), 64)
        let voice = stream.voice
        let out = UnsafeMutablePointer<Float>.allocate(capacity: 64)
        defer { out.deallocate() }
        let got = voice.render(voice.context, out, 64)
        #expect(got == 64)
        let samples = Array(UnsafeBufferPointer(start: out, count: 64))
        #expect(samples.allSatisfy { $0.isFinite && abs($0) <= 1 }, "\(samples.prefix(8))")
        #expect(Array(samples.prefix(8)) == [0, 0, 1, -1, 1, -1, 0, 0.5])
    }
}
