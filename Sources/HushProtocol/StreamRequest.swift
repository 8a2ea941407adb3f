import HushCore

/// What `open-stream` asks for: a stream of the `hush` ALSA device, with the session it plays (or records) in and
/// the geometry the application chose (docs/protocol.md, "Streams").
///
/// The request keeps `bus` optional: hushd picks ``HushCore/Category/defaultBus`` when the client names none.
/// Everything here has been checked against the limits below, which are the ones `hush_wire.h` states; what depends
/// on hushd's configuration (`[streams]`: how many, how long a ring) is hushd's to check.
public struct StreamRequest: Hashable, Sendable, CustomStringConvertible {
    public var direction: StreamDirection
    public var category: HushCore.Category
    /// The bus to play on; nil lets hushd pick the category's (``HushCore/Category/defaultBus``).
    public var bus: Bus?
    public var options: CategoryOptions
    public var transient: Bool
    /// The session's mode (R22): `MODE=` on the device; `hush:voice` asks for voiceChat.
    public var mode: SessionMode
    /// The session's own level (R26): `GAIN=` on the device.
    public var level: SessionLevel
    /// The application's name, for logs and status (the plugin sends the program's).
    public var name: String?
    /// An existing session to join instead of activating one; then `bus`, `options`, `transient`, `mode` and the
    /// level are absent.
    public var session: SessionID?
    /// Frames per second.
    public var rate: Int
    /// 1 or 2.
    public var channels: Int
    public var format: StreamSampleFormat
    /// The application's buffer: the ring's capacity it asks for.
    public var bufferFrames: Int
    /// The application's period, when it chose one: how often it wants to be woken.
    public var periodFrames: Int?

    public init(
        direction: StreamDirection,
        category: HushCore.Category,
        bus: Bus? = nil,
        options: CategoryOptions = [],
        transient: Bool = false,
        mode: SessionMode = .default,
        level: SessionLevel = .unity,
        name: String? = nil,
        session: SessionID? = nil,
        rate: Int,
        channels: Int,
        format: StreamSampleFormat,
        bufferFrames: Int,
        periodFrames: Int? = nil
    ) {
        self.direction = direction
        self.category = category
        self.bus = bus
        self.options = options
        self.transient = transient
        self.mode = mode
        self.level = level
        self.name = name
        self.session = session
        self.rate = rate
        self.channels = channels
        self.format = format
        self.bufferFrames = bufferFrames
        self.periodFrames = periodFrames
    }

    /// The session `open-stream` activates when it names none: the named bus, else the category's.
    public var sessionConfiguration: SessionConfiguration {
        SessionConfiguration(
            bus: bus ?? category.defaultBus,
            category: category,
            options: options,
            transient: transient,
            mode: mode,
            level: level
        )
    }

    /// "playback 44100 Hz 2 ch S16_LE, 4096 frames".
    public var description: String {
        "\(direction) \(rate) Hz \(channels) ch \(format), \(bufferFrames) frames"
            + (periodFrames.map { " in periods of \($0)" } ?? "")
    }

    // MARK: Limits

    // The wire's limits, as Sources/CHushWire/hush_wire.h defines them (HUSH_WIRE_MIN_RATE and the rest): HushProtocol
    // does not import CHushWire, so they are repeated here; StreamRequestTests reads the header and holds them equal.

    /// `rate`: HUSH_WIRE_MIN_RATE…HUSH_WIRE_MAX_RATE.
    public static let rates: ClosedRange<Int> = 8000...192_000
    /// `channels`: 1…HUSH_WIRE_MAX_CHANNELS.
    public static let channelCounts: ClosedRange<Int> = 1...2
    /// `bufferFrames`: HUSH_WIRE_MIN_RING_FRAMES…HUSH_WIRE_MAX_RING_FRAMES.
    public static let bufferFrameCounts: ClosedRange<Int> = 256...262_144
    /// `periodFrames`: at least this, at most half of `bufferFrames` (two periods at least, as ALSA needs).
    public static let minimumPeriodFrames = 16

    /// The periods a buffer of `bufferFrames` allows.
    public static func periodFrameCounts(bufferFrames: Int) -> ClosedRange<Int> {
        minimumPeriodFrames...max(minimumPeriodFrames, bufferFrames / 2)
    }

    // MARK: The ALSA device's names

    /// A name the `hush` ALSA device takes for its CATEGORY (`hush:music`), and what it asks `open-stream` for.
    public struct DeviceName: Hashable, Sendable {
        public var name: String
        public var category: HushCore.Category
        /// nil: the device names no bus, and hushd picks the category's (``HushCore/Category/defaultBus``).
        public var bus: Bus?
        /// The mode the name asks for when `MODE=` gives none.
        public var mode: SessionMode = .default
    }

    /// The `hush` device's CATEGORY names (deploy/alsa/50-hush.conf, docs/applications.md): each category as hushd
    /// spells it, and the aliases that pick a bus too. The plugin (C, no Swift) has the same table in pcm_hush.c;
    /// PluginRequestLineTests parses the lines the plugin builds from it and holds the two equal.
    public static let deviceNames: [DeviceName] =
        HushCore.Category.allCases.map { DeviceName(name: $0.rawValue, category: $0, bus: nil) } + [
            DeviceName(name: "music", category: .playback, bus: .music),
            DeviceName(name: "effects", category: .ambient, bus: .effect),
            DeviceName(name: "ringtone", category: .soloAmbient, bus: .ringer),
            DeviceName(name: "alarm", category: .playback, bus: .ringer),
            DeviceName(name: "voice", category: .playAndRecord, bus: .music, mode: .voiceChat),
        ]
}

/// The stream `open-stream` made, as its reply carries it; the descriptors come with the same line.
public struct StreamReport: Codable, Hashable, Sendable {
    /// The stream's id, for `stream` and `close-stream`, status and the log.
    public var id: UInt64
    /// The session it plays (or records) in: the one it activated, or the one it joined.
    public var session: UInt64
    /// The ring's capacity in frames, as the memfd's header says.
    public var ringFrames: Int
    /// hushd's period at the stream's rate: how often frames move.
    public var periodFrames: Int

    public init(id: StreamID, session: SessionID, ringFrames: Int, periodFrames: Int) {
        self.id = id.rawValue
        self.session = session.rawValue
        self.ringFrames = ringFrames
        self.periodFrames = periodFrames
    }
}

extension StreamDirection: Codable {}
extension StreamSampleFormat: Codable {}
