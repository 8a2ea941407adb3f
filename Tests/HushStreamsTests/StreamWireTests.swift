import CHushWire
import Foundation
import HushCore
import HushMixer
import Synchronization
import Testing

@testable import HushStreams

#if canImport(Glibc)
import Glibc
#endif

/// The shared-memory header between hushd and the plugin (hush_wire.h): every word has one writer, the audio
/// thread's words arrive as one snapshot with their time, and a capture stream's samples leave as the mixer's do.
@Suite("The stream wire: one writer per word, the period's snapshot, the mixer's conversion")
struct StreamWireTests {
    static let rate = 48000

    static func memory(_ direction: StreamDirection, _ format: StreamSampleFormat = .s16LE) throws -> StreamMemory {
        try StreamMemory(
            StreamGeometry(
                id: StreamID(1),
                direction: direction,
                format: format,
                channels: 1,
                rate: rate,
                ringFrames: 1024,
                periodFrames: 64
            )
        )
    }

    static func now() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    @Test("the silence flag (control thread) and the microphone flag (audio thread) are words of their own")
    func flagsHaveOneWriterEach() throws {
        let memory = try Self.memory(.capture)
        let capture = try CaptureStream(memory: memory, mixerRate: Self.rate, maxFrames: 64)
        let speech = [Float](repeating: 0.25, count: 64)
        memory.setFlag(StreamMemory.silencedFlag, true)
        capture.allowed.store(true, ordering: .relaxed)
        speech.withUnsafeBufferPointer { capture.deliver($0.baseAddress, channels: 1, frames: 64) }
        #expect(memory.hasControlFlag(StreamMemory.silencedFlag))
        #expect(memory.snapshot.audio_flags == StreamMemory.microphoneFlag)
        // The audio thread's next period clears its flag; the control thread's stays as it set it, and back.
        capture.allowed.store(false, ordering: .relaxed)
        speech.withUnsafeBufferPointer { capture.deliver($0.baseAddress, channels: 1, frames: 64) }
        #expect(memory.hasControlFlag(StreamMemory.silencedFlag))
        #expect(memory.snapshot.audio_flags == 0)
        memory.setFlag(StreamMemory.silencedFlag, false)
        capture.allowed.store(true, ordering: .relaxed)
        speech.withUnsafeBufferPointer { capture.deliver($0.baseAddress, channels: 1, frames: 64) }
        #expect(!memory.hasControlFlag(StreamMemory.silencedFlag))
        #expect(memory.snapshot.audio_flags == StreamMemory.microphoneFlag)
        #expect(memory.snapshot.server_frames == 192)
    }

    @Test("a playback period publishes its position with the time it was reached")
    func playbackPublishesTime() throws {
        let memory = try Self.memory(.playback)
        let stream = try PlaybackStream(memory: memory, mixerRate: Self.rate, maxFrames: 64)
        hush_wire_store64(
            (UnsafeMutableRawPointer(memory.header) + MemoryLayout<hush_wire_header>.offset(of: \.client_frames)!)
                .assumingMemoryBound(to: UInt64.self),
            512
        )
        let out = UnsafeMutablePointer<Float>.allocate(capacity: 64)
        defer { out.deallocate() }
        let before = Self.now()
        #expect(stream.render(into: out, frames: 64) == 64)
        let after = Self.now()
        let snapshot = memory.snapshot
        #expect(snapshot.server_frames == 64)
        #expect(snapshot.server_time_ns >= before && snapshot.server_time_ns <= after)
        let sequence = (UnsafeMutableRawPointer(memory.header) + MemoryLayout<hush_wire_header>.offset(of: \.sequence)!)
            .assumingMemoryBound(to: UInt32.self)
        #expect(hush_wire_load32(sequence) == 2, "one snapshot, its sequence even")
    }

    /// The audio thread publishes snapshots whose words all derive from one number while another thread reads
    /// them: every snapshot read must be whole, never words of two periods.
    @Test("snapshots read while the audio thread publishes are never torn")
    func snapshotsAreWhole() throws {
        let memory = try Self.memory(.playback)
        let header = memory.header
        let published = 300_000
        final class Done: Sendable { let value = Atomic<Bool>(false) }
        let done = Done()
        let address = UInt(bitPattern: header)
        // A thread of its own, as the audio thread is: not a task that waits for the test's own thread to yield.
        let writer = Thread {
            let header = UnsafeMutablePointer<hush_wire_header>(bitPattern: address)!
            var sequence: UInt32 = 0
            for n in 1...UInt64(published) {
                var snapshot = hush_wire_snapshot(
                    server_frames: n,
                    played_frames: n &* 3,
                    server_time_ns: n &* 1000,
                    underrun_frames: n &+ 7,
                    overrun_frames: ~n,
                    delay_frames: UInt32(truncatingIfNeeded: n &* 5),
                    audio_flags: UInt32(truncatingIfNeeded: n),
                    current_period_frames: UInt32(truncatingIfNeeded: n &* 11)
                )
                sequence = hush_wire_publish(header, sequence, &snapshot)
            }
            done.value.store(true, ordering: .releasing)
        }
        writer.start()
        var reads = 0
        var torn = 0
        var unsettled = 0
        var distinct = Set<UInt64>()
        while !done.value.load(ordering: .acquiring) || reads == 0 {
            var snapshot = hush_wire_snapshot()
            // This writer publishes back to back, not once a period: a reader may find it mid-snapshot on each of
            // its tries, and then says so (hushd's audio thread takes a few stores per period).
            guard hush_wire_read_snapshot(header, &snapshot) == 1 else {
                unsettled += 1
                continue
            }
            let n = snapshot.server_frames
            let whole =
                snapshot.played_frames == n &* 3 && snapshot.server_time_ns == n &* 1000
                && snapshot.underrun_frames == n &+ 7 && snapshot.overrun_frames == (n == 0 ? 0 : ~n)
                && snapshot.delay_frames == UInt32(truncatingIfNeeded: n &* 5)
                && snapshot.audio_flags == UInt32(truncatingIfNeeded: n)
                && snapshot.current_period_frames == UInt32(truncatingIfNeeded: n &* 11)
            if !(whole || n == 0) { torn += 1 }
            distinct.insert(n)
            reads += 1
        }
        print(
            "snapshots: \(published) published back to back, \(reads) read whole, \(distinct.count) different ones "
                + "seen, \(torn) torn; \(unsettled) reads found the writer mid-snapshot in each of their tries"
        )
        #expect(torn == 0)
        #expect(distinct.count > 1, "the reader saw the writer move")
        #expect(unsettled < reads, "most reads find a whole snapshot")
    }

    /// What the mixer writes for a device is what a capture stream writes for an application: the same full scale
    /// (1.0 → the largest positive value, -1.0 → its negation) and the same rounding (to nearest, ties to even).
    @Test("capture streams convert samples as the mixer does for playback", arguments: StreamSampleFormat.allCases)
    func captureConvertsAsTheMixer(format: StreamSampleFormat) throws {
        let memory = try Self.memory(.capture, format)
        let capture = try CaptureStream(memory: memory, mixerRate: Self.rate, maxFrames: 64)
        capture.allowed.store(true, ordering: .relaxed)
        var samples: [Float] = [
            0, 1, -1, 0.5, -0.5, 0.25, 1.5, -1.5, 0.75 / 32767, -0.75 / 32767, 0.4 / 32767, 1.25 / 32767,
            0.999_999, -0.999_999, 3.0e-10, -3.0e-10,
        ]
        var generator = SystemRandomNumberGenerator()
        while samples.count < 64 { samples.append(Float.random(in: -1...1, using: &generator)) }
        samples.withUnsafeBufferPointer { capture.deliver($0.baseAddress, channels: 1, frames: 64) }
        let bytes = 64 * format.bytes
        let mixer = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 8)
        defer { mixer.deallocate() }
        samples.withUnsafeBufferPointer {
            SampleConversion.write($0.baseAddress!, count: 64, to: mixer, format: format.sampleFormat)
        }
        let ring = UnsafeRawBufferPointer(start: memory.ring, count: bytes)
        #expect(Array(ring) == Array(UnsafeRawBufferPointer(start: mixer, count: bytes)))
        switch format {
        case .s16LE:
            let values = (0..<10).map {
                Int16(littleEndian: ring.loadUnaligned(fromByteOffset: 2 * $0, as: Int16.self))
            }
            print("S16_LE: 0, ±1, ±0.5, 0.25, ±1.5, ±0.75 LSB → \(values)")
            #expect(values == [0, 32767, -32767, 16384, -16384, 8192, 32767, -32767, 1, -1])
        case .s32LE:
            let values = (0..<3).map { Int32(littleEndian: ring.loadUnaligned(fromByteOffset: 4 * $0, as: Int32.self)) }
            print("S32_LE: 0, ±1 → \(values)")
            #expect(values == [0, 2_147_483_647, -2_147_483_647])
        case .floatLE:
            let values = (0..<16).map { ring.loadUnaligned(fromByteOffset: 4 * $0, as: Float.self) }
            #expect(values == Array(samples.prefix(16)))
        }
    }

    /// The way in: a playback stream's samples become floats by the mixer's ``SampleConversion/read``: integers over
    /// 2^15 or 2^31 (the most negative exactly -1), floats with NaN silenced and anything past full scale clipped.
    @Test("playback streams read samples with the mixer's conversion", arguments: StreamSampleFormat.allCases)
    func playbackReadsAsTheMixer(format: StreamSampleFormat) throws {
        let memory = try Self.memory(.playback, format)
        let stream = try PlaybackStream(memory: memory, mixerRate: Self.rate, maxFrames: 64)
        let bytes = 64 * format.bytes
        var generator = SystemRandomNumberGenerator()
        for i in 0..<bytes {
            memory.ring.storeBytes(of: UInt8.random(in: 0...255, using: &generator), toByteOffset: i, as: UInt8.self)
        }
        let anchors: [Float]
        switch format {
        case .s16LE:
            for (i, value) in [Int16.min, .max, 16384, -1, 0].enumerated() {
                memory.ring.storeBytes(of: value.littleEndian, toByteOffset: 2 * i, as: Int16.self)
            }
            anchors = [-1, Float(32767) / 32768, 0.5, Float(-1) / 32768, 0]
        case .s32LE:
            for (i, value) in [Int32.min, .max, 1 << 30, 0].enumerated() {
                memory.ring.storeBytes(of: value.littleEndian, toByteOffset: 4 * i, as: Int32.self)
            }
            anchors = [-1, 1, 0.5, 0]
        case .floatLE:
            for (i, value) in [Float.nan, 2, -3, 0.25, -Float.infinity].enumerated() {
                memory.ring.storeBytes(of: value.bitPattern.littleEndian, toByteOffset: 4 * i, as: UInt32.self)
            }
            anchors = [0, 1, -1, 0.25, -1]
        }
        hush_wire_store64(
            (UnsafeMutableRawPointer(memory.header) + MemoryLayout<hush_wire_header>.offset(of: \.client_frames)!)
                .assumingMemoryBound(to: UInt64.self),
            64
        )
        var rendered = [Float](repeating: .nan, count: 64)
        var expected = [Float](repeating: .nan, count: 64)
        #expect(rendered.withUnsafeMutableBufferPointer { stream.render(into: $0.baseAddress!, frames: 64) } == 64)
        expected.withUnsafeMutableBufferPointer {
            SampleConversion.read(memory.ring, count: 64, format: format.sampleFormat, into: $0.baseAddress!)
        }
        #expect(rendered == expected)
        print("\(format) read: \(Array(rendered.prefix(anchors.count)))")
        #expect(Array(rendered.prefix(anchors.count)) == anchors)
    }
}
