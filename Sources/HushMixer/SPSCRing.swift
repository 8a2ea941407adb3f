import Synchronization

/// A lock-free single-producer, single-consumer ring of plain values.
///
/// One thread pushes, one other thread pops; neither ever blocks, allocates or takes a lock. The control side
/// sends commands to the real-time engine through one, and the engine reports back through another.
///
/// It is a handle over memory allocated once in `init`: copies share the ring, nothing is reference-counted (so
/// the real-time path never retains or releases), and the owner calls ``deallocate()`` exactly once.
///
/// - Important: exactly one producer thread and one consumer thread. A full ring refuses the push (the caller
///   decides: the control side retries later; the engine counts the loss).
@frozen
public struct SPSCRing<Element: BitwiseCopyable>: @unchecked Sendable {
    @usableFromInline let storage: UnsafeMutablePointer<Element>
    /// [0]: the next slot the producer writes; [1]: the next slot the consumer reads.
    @usableFromInline let indices: UnsafeMutablePointer<Atomic<Int>>
    @usableFromInline let mask: Int
    public let capacity: Int

    /// A ring of `capacity` slots, rounded up to a power of two.
    public init(capacity: Int) {
        var size = 2
        while size < capacity { size <<= 1 }
        self.capacity = size
        mask = size - 1
        storage = .allocate(capacity: size)
        indices = .allocate(capacity: 2)
        indices.initialize(to: Atomic(0))
        (indices + 1).initialize(to: Atomic(0))
    }

    /// Frees the ring. Call once, when neither side uses it any more.
    public func deallocate() {
        indices.deinitialize(count: 2)
        indices.deallocate()
        storage.deallocate()
    }

    /// Appends `element`; false when the ring is full.
    @_transparent
    public func push(_ element: Element) -> Bool {
        let h = indices[0].load(ordering: .relaxed)
        let t = indices[1].load(ordering: .acquiring)
        guard h &- t < capacity else { return false }
        (storage + (h & mask)).initialize(to: element)
        indices[0].store(h &+ 1, ordering: .releasing)
        return true
    }

    /// The oldest element, or nil when the ring is empty.
    @_transparent
    public func pop() -> Element? {
        let t = indices[1].load(ordering: .relaxed)
        let h = indices[0].load(ordering: .acquiring)
        guard t != h else { return nil }
        let element = storage[t & mask]
        indices[1].store(t &+ 1, ordering: .releasing)
        return element
    }

    /// How many elements wait (a snapshot).
    public var count: Int { indices[0].load(ordering: .acquiring) &- indices[1].load(ordering: .acquiring) }
}
