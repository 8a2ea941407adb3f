import HushALSA
import HushCore
import HushMixer
import HushOutput
import Logging
import Synchronization

/// The samples of the first `capacity` writes of a float device, kept in memory allocated up front (the audio
/// thread that writes allocates nothing) and read back by the write's index. The fake devices of the audio-thread
/// tests keep what they were given with it.
final class KeptWrites: @unchecked Sendable {
    let capacity: Int
    /// Samples in one write: frames × channels.
    let perWrite: Int
    /// Writes kept so far.
    let count = Atomic<Int>(0)
    private let samples: UnsafeMutablePointer<Float>

    init(capacity: Int, perWrite: Int) {
        self.capacity = capacity
        self.perWrite = perWrite
        samples = .allocate(capacity: capacity * perWrite)
        samples.initialize(repeating: .nan, count: capacity * perWrite)
    }

    deinit { samples.deallocate() }

    /// Keeps `buffer` (`perWrite` floats) as the next write while there is room. The writing thread's side.
    func keep(_ buffer: UnsafeRawPointer) {
        let kept = count.load(ordering: .relaxed)
        guard kept < capacity else { return }
        (samples + kept * perWrite).update(from: buffer.assumingMemoryBound(to: Float.self), count: perWrite)
        count.store(kept + 1, ordering: .releasing)
    }

    /// Every sample of kept write `index` (0-based); NaN where nothing was kept.
    func write(_ index: Int) -> [Float] {
        Array(UnsafeBufferPointer(start: samples + index * perWrite, count: perWrite))
    }
}

extension AudioOutputThread {
    /// The audio thread of the tests: on `output`, at normal priority, reopening a lost device with `open` (by
    /// default it cannot).
    static func forTest(
        _ engine: MixerEngine,
        _ output: any PCMOutput,
        open: @escaping @Sendable (PlaybackConfiguration) -> (any PCMOutput)? = { _ in nil }
    ) -> AudioOutputThread {
        AudioOutputThread(
            engine: engine,
            output: output,
            requested: output.granted,
            priority: 0,
            logger: Logger(label: "test"),
            open: open
        )
    }
}

/// An engine with room for `maxFrames`-frame periods, playing a steady 0.5 on both channels (a fade-in shows in the
/// first samples of a period, a gap or a click anywhere), and the controller that keeps the sound alive.
func steadyEngine(maxFrames: Int) throws -> (MixerEngine, MixerController) {
    let engine = MixerEngine(format: MixerFormat(sampleRate: 48000, channels: 2, maxFrames: maxFrames))
    let controller = MixerController(engine: engine)
    let steady = AudioBuffer(frameCount: 4800, channels: 2, sampleRate: 48000) {
        $0.update(repeating: 0.5, count: 9600)
    }
    try controller.attach(SessionID(1), bus: .music, buffer: steady, loop: true)
    controller.apply(.resume(SessionID(1)))
    return (engine, controller)
}
