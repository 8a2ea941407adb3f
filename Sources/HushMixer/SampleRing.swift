import Synchronization

/// A lock-free single-producer, single-consumer ring of interleaved float frames: how a live capture or a file
/// decoded on another thread reaches the real-time engine.
///
/// A handle over memory allocated once: copies share the ring, nothing is reference-counted, and the owner calls
/// ``deallocate()`` once neither side uses it. The producer (a capture or decoder thread) writes whole frames; the
/// engine reads them, and what it cannot get in time it plays as silence and counts.
///
/// - Important: one producer thread, one consumer thread.
@frozen
public struct SampleRing: BitwiseCopyable, @unchecked Sendable {
    @usableFromInline let storage: UnsafeMutablePointer<Float>
    /// [0]: frames written; [1]: frames read; [2]: frames the consumer wanted but did not find (underflow); [3]:
    /// frames the producer had and could not fit (overflow: the ring was full, what it holds is older).
    @usableFromInline let counters: UnsafeMutablePointer<Atomic<Int>>
    public let channels: Int
    /// Capacity in frames (a power of two).
    public let capacity: Int

    /// A ring of at least `frames` frames of `channels` channels.
    public init(frames: Int, channels: Int) {
        var size = 2
        while size < frames { size <<= 1 }
        capacity = size
        self.channels = channels
        storage = .allocate(capacity: size * channels)
        storage.initialize(repeating: 0, count: size * channels)
        counters = .allocate(capacity: 4)
        for i in 0..<4 { (counters + i).initialize(to: Atomic(0)) }
    }

    public func deallocate() {
        counters.deinitialize(count: 4)
        counters.deallocate()
        storage.deallocate()
    }

    /// Frames waiting to be read.
    public var available: Int { counters[0].load(ordering: .acquiring) &- counters[1].load(ordering: .acquiring) }

    /// Frames the consumer asked for and did not get, since the start.
    public var underflows: Int { counters[2].load(ordering: .relaxed) }

    /// Frames the producer could not fit because the ring was full, since the start: while it grows, what waits is
    /// the oldest audio, not the latest.
    public var overflows: Int { counters[3].load(ordering: .relaxed) }

    /// Producer: copies up to `frames` frames in; returns how many fitted (the rest counts as overflow).
    public func write(_ source: UnsafePointer<Float>, frames: Int) -> Int {
        let written = counters[0].load(ordering: .relaxed)
        let read = counters[1].load(ordering: .acquiring)
        let count = min(frames, capacity - (written &- read))
        copy(count: count, at: written) { ring, offset, chunk in
            ring.update(from: source + offset * channels, count: chunk * channels)
        }
        counters[0].store(written &+ count, ordering: .releasing)
        if count < frames { counters[3].add(frames - count, ordering: .relaxed) }
        return count
    }

    /// Consumer: copies up to `frames` frames out; returns how many there were. Never blocks.
    public func read(into destination: UnsafeMutablePointer<Float>, frames: Int) -> Int {
        let read = counters[1].load(ordering: .relaxed)
        let written = counters[0].load(ordering: .acquiring)
        let count = min(frames, written &- read)
        copy(count: count, at: read) { ring, offset, chunk in
            (destination + offset * channels).update(from: ring, count: chunk * channels)
        }
        counters[1].store(read &+ count, ordering: .releasing)
        if count < frames { counters[2].add(frames - count, ordering: .relaxed) }
        return count
    }

    /// Consumer: counts `frames` wanted and not taken (a period the consumer let pass to let the ring fill again).
    public func countUnderflow(_ frames: Int) {
        counters[2].add(frames, ordering: .relaxed)
    }

    /// Consumer: drops the oldest frames so that at most `keeping` wait (a microphone's backlog nobody heard,
    /// after the audio thread was idle).
    public func discard(keeping: Int) {
        let read = counters[1].load(ordering: .relaxed)
        let written = counters[0].load(ordering: .acquiring)
        let excess = (written &- read) - keeping
        if excess > 0 { counters[1].store(read &+ excess, ordering: .releasing) }
    }

    /// Visits the (at most two) contiguous stretches of the ring that `count` frames from `position` cover.
    @inline(__always)
    private func copy(count: Int, at position: Int, _ body: (UnsafeMutablePointer<Float>, Int, Int) -> Void) {
        let start = position & (capacity - 1)
        let first = min(count, capacity - start)
        if first > 0 { body(storage + start * channels, 0, first) }
        if count > first { body(storage, first, count - first) }
    }
}
