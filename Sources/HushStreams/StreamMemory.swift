import CHushWire
import CLinux
import HushAudioFile
import HushCore

#if canImport(Glibc)
import Glibc
#endif

/// Why a stream could not be set up.
public struct StreamError: Error, Hashable, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// The shape of one stream, as hushd decided it (never read back from the shared memory, which the client can
/// write).
public struct StreamGeometry: Hashable, Sendable {
    public var id: StreamID
    public var direction: StreamDirection
    public var format: StreamSampleFormat
    public var channels: Int
    public var rate: Int
    public var ringFrames: Int
    /// The mixer's period at the stream's rate, rounded up: how often the stream moves.
    public var periodFrames: Int

    public init(
        id: StreamID,
        direction: StreamDirection,
        format: StreamSampleFormat,
        channels: Int,
        rate: Int,
        ringFrames: Int,
        periodFrames: Int
    ) {
        self.id = id
        self.direction = direction
        self.format = format
        self.channels = channels
        self.rate = rate
        self.ringFrames = ringFrames
        self.periodFrames = periodFrames
    }

    public var frameBytes: Int { channels * format.bytes }

    /// The rate converter between a stream and the mixer, or nil when their rates are the same.
    static func converter(channels: Int, from input: Int, to output: Int) throws(StreamError) -> RateConverter? {
        guard input != output else { return nil }
        do {
            return try RateConverter(channels: channels, from: input, to: output)
        } catch {
            throw StreamError(error.description)
        }
    }
    public var totalBytes: Int { Int(HUSH_WIRE_HEADER_BYTES) + ringFrames * frameBytes }

    /// The wire's number for the format.
    var wireFormat: UInt32 {
        switch format {
        case .s16LE: UInt32(HUSH_WIRE_S16_LE.rawValue)
        case .s32LE: UInt32(HUSH_WIRE_S32_LE.rawValue)
        case .floatLE: UInt32(HUSH_WIRE_FLOAT_LE.rawValue)
        }
    }

    /// Checks what a client asked for against what the wire and hushd take; the error says which value and why.
    public func validate(maxRingBytes: Int) throws(StreamError) {
        guard (Int(HUSH_WIRE_MIN_RATE)...Int(HUSH_WIRE_MAX_RATE)).contains(rate) else {
            throw StreamError("a rate of \(rate) Hz is outside \(HUSH_WIRE_MIN_RATE)–\(HUSH_WIRE_MAX_RATE) Hz")
        }
        guard (1...Int(HUSH_WIRE_MAX_CHANNELS)).contains(channels) else {
            throw StreamError("\(channels) channels: hush streams are mono or stereo")
        }
        guard (Int(HUSH_WIRE_MIN_RING_FRAMES)...Int(HUSH_WIRE_MAX_RING_FRAMES)).contains(ringFrames) else {
            throw StreamError(
                "a buffer of \(ringFrames) frames is outside \(HUSH_WIRE_MIN_RING_FRAMES)–\(HUSH_WIRE_MAX_RING_FRAMES)"
            )
        }
        let bytes = ringFrames * frameBytes
        guard bytes <= min(maxRingBytes, Int(HUSH_WIRE_MAX_RING_BYTES)) else {
            throw StreamError(
                "a buffer of \(ringFrames) frames takes \(bytes / 1024) KiB, over the \(maxRingBytes / 1024) KiB "
                    + "[streams] ring_kib_max allows (\(ringFrames * 1000 / rate) ms at \(rate) Hz); ask for a smaller one"
            )
        }
    }
}

/// One stream's shared memory — a sealed memfd with the wire header and the ring, mapped — and its eventfd.
///
/// Every word of the header has one writer (hush_wire.h): hushd's control thread writes the geometry once, here,
/// then the stream's state and control flags (``setState(_:)``, ``setFlag(_:_:)``); hushd's audio thread writes
/// the period's counters as one snapshot (``publish(_:)``); the client writes its own line, which hushd reads
/// (`client_frames`, `client_flags` and `wake_frames`) through ``clientFrames`` and friends, and checks before use
/// (``PlaybackStream``, ``CaptureStream``).
public final class StreamMemory: @unchecked Sendable {
    public let geometry: StreamGeometry
    /// The descriptors to pass to the client (hushd keeps its own; the server sends duplicates).
    public let memoryDescriptor: Int32
    public let eventDescriptor: Int32
    let base: UnsafeMutableRawPointer
    let ring: UnsafeMutableRawPointer
    // Each shared field, by address (the header is plain integers; hush_wire.h's functions give the ordering).
    let clientFramesField: UnsafeMutablePointer<UInt64>
    let clientFlagsField: UnsafeMutablePointer<UInt32>
    let wakeFramesField: UnsafeMutablePointer<UInt32>
    let header: UnsafeMutablePointer<hush_wire_header>
    let serverFramesField: UnsafeMutablePointer<UInt64>
    let stateField: UnsafeMutablePointer<UInt32>
    let controlFlagsField: UnsafeMutablePointer<UInt32>

    /// The control thread's own copy of `control_flags` (the only writer keeps it; never read back).
    private var controlFlags: UInt32 = 0
    /// The audio thread's own count of snapshots (even; never read back from the shared memory).
    private var sequence: UInt32 = 0

    public init(_ geometry: StreamGeometry) throws(StreamError) {
        self.geometry = geometry
        let bytes = geometry.totalBytes
        let memfd = clinux_sealed_memfd("hush-\(geometry.id.rawValue)", off_t(bytes))
        guard memfd >= 0 else {
            throw StreamError("cannot make the stream's shared memory: \(String(cString: strerror(-memfd)))")
        }
        let eventfd = clinux_eventfd()
        guard eventfd >= 0 else {
            close(memfd)
            throw StreamError("cannot make the stream's eventfd: \(String(cString: strerror(-eventfd)))")
        }
        // Populated now, on the control side: the audio thread is the first to write most of these pages, and a
        // page fault there waits for the process's memory map, which this thread may hold (an mmap, a munmap) for
        // as long as it takes; hushd's mlockall then keeps them.
        guard let mapped = mmap(nil, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, memfd, 0),
            mapped != MAP_FAILED
        else {
            let reason = String(cString: strerror(errno))
            close(memfd)
            close(eventfd)
            throw StreamError("cannot map the stream's shared memory (\(bytes) bytes): \(reason)")
        }
        memoryDescriptor = memfd
        eventDescriptor = eventfd
        base = mapped
        ring = mapped + Int(HUSH_WIRE_HEADER_BYTES)
        func field<T>(_ path: KeyPath<hush_wire_header, T>) -> UnsafeMutablePointer<T> {
            (mapped + MemoryLayout<hush_wire_header>.offset(of: path)!).assumingMemoryBound(to: T.self)
        }
        clientFramesField = field(\.client_frames)
        clientFlagsField = field(\.client_flags)
        wakeFramesField = field(\.wake_frames)
        serverFramesField = field(\.server_frames)
        stateField = field(\.server_state)
        controlFlagsField = field(\.control_flags)

        let header = mapped.assumingMemoryBound(to: hush_wire_header.self)
        self.header = header
        header.pointee.magic = HUSH_WIRE_MAGIC
        header.pointee.version = HUSH_WIRE_VERSION
        header.pointee.header_bytes = HUSH_WIRE_HEADER_BYTES
        header.pointee.direction = geometry.direction == .playback ? 0 : 1
        header.pointee.format = geometry.wireFormat
        header.pointee.channels = UInt32(geometry.channels)
        header.pointee.rate = UInt32(geometry.rate)
        header.pointee.frame_bytes = UInt32(geometry.frameBytes)
        header.pointee.ring_frames = UInt32(geometry.ringFrames)
        header.pointee.period_frames = UInt32(geometry.periodFrames)
        header.pointee.stream_id = geometry.id.rawValue
        setState(.prepared)
    }

    deinit {
        munmap(base, geometry.totalBytes)
        close(memoryDescriptor)
        close(eventDescriptor)
    }

    /// What the stream does now, for the client to read.
    public enum State: UInt32, Sendable {
        case prepared = 0
        case running = 1
        case held = 2
        case paused = 3
        case closed = 4
    }

    /// Control thread only (`server_state`'s one writer): tells the client what hushd does with the stream, and
    /// wakes it.
    public func setState(_ state: State) {
        hush_wire_store32(stateField, state.rawValue)
        signal()
    }

    public var state: State { State(rawValue: hush_wire_load32(stateField)) ?? .closed }

    /// Control thread only (`control_flags`' one writer): sets or clears a control flag (``silencedFlag``). The
    /// word is this thread's alone, so the change is made on its own copy and stored whole.
    public func setFlag(_ flag: UInt32, _ on: Bool) {
        precondition(flag & ~Self.controlFlags == 0, "control_flags holds the control thread's flags only")
        controlFlags = on ? controlFlags | flag : controlFlags & ~flag
        hush_wire_store32(controlFlagsField, controlFlags)
    }

    /// Audio thread only (the one writer of the header's audio line): publishes a period's counters and flags as
    /// one snapshot, which the client reads whole (hush_wire_read_snapshot).
    @inline(__always)
    func publish(_ snapshot: inout hush_wire_snapshot) {
        snapshot.server_time_ns = Self.now()
        sequence = hush_wire_publish(header, sequence, &snapshot)
    }

    /// The snapshot as the client reads it (tests).
    package var snapshot: hush_wire_snapshot {
        var snapshot = hush_wire_snapshot()
        _ = hush_wire_read_snapshot(header, &snapshot)
        return snapshot
    }

    /// Control side: whether `control_flags` has `flag` (tests).
    package func hasControlFlag(_ flag: UInt32) -> Bool { hush_wire_load32(controlFlagsField) & flag != 0 }

    /// CLOCK_MONOTONIC in nanoseconds, the clock the plugin interpolates its delay with.
    @inline(__always)
    static func now() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
    }

    public static let silencedFlag = UInt32(HUSH_WIRE_SERVER_SILENCED.rawValue)
    public static let microphoneFlag = UInt32(HUSH_WIRE_SERVER_MICROPHONE.rawValue)
    static let controlFlags = silencedFlag
    static let waitingFlag = UInt32(HUSH_WIRE_CLIENT_WAITING.rawValue)
    static let drainingFlag = UInt32(HUSH_WIRE_CLIENT_DRAINING.rawValue)

    /// Wakes the client (its poll descriptor becomes readable). Never blocks.
    @inline(__always)
    public func signal() { clinux_eventfd_signal(eventDescriptor) }

    /// The client's counter, as it wrote it (unchecked).
    @inline(__always)
    var clientFrames: UInt64 { hush_wire_load64(clientFramesField) }
    @inline(__always)
    var clientFlags: UInt32 { hush_wire_load32(clientFlagsField) }
    @inline(__always)
    var wakeFrames: Int { Int(hush_wire_load32(wakeFramesField)) }

    /// Control side: the client's counter now (for a prepare's position).
    public var clientPosition: UInt64 { clientFrames }
    /// Control side: hushd's counter as last published.
    public var serverPosition: UInt64 { hush_wire_load64(serverFramesField) }
    /// Control side: whether the client said it drains.
    public var isDraining: Bool { clientFlags & Self.drainingFlag != 0 }
}
