import HushCore

/// hushd's answer to one request: `ok`, the request's `id`, and what the command returns, or an error.
///
/// Only the fields the command returns are present on the wire: `{"id":7,"ok":true,"session":3}`.
public struct ControlReply: Codable, Hashable, Sendable {
    public var id: RequestID?
    public var ok: Bool
    public var error: ControlError?
    /// `hello`, `version`.
    public var hello: HelloReport?
    /// `activate`: the new session.
    public var session: UInt64?
    /// `volume`.
    public var volume: VolumeReport?
    /// `route`.
    public var route: RouteReport?
    /// `status`.
    public var status: ControlStatus?
    /// `subscribe`: the event kinds now sent to this client.
    public var events: [ControlEventKind]?
    /// `open-stream`: the stream made; its descriptors are in ``descriptors``.
    public var stream: StreamReport?
    /// `stream` with `prepare`: the frame count the stream continues from, where the client's own counter goes
    /// (playback: the client's counter, which hushd's consumption jumps to; capture: what hushd has written).
    /// Counters only grow; the header's `server_frames` catches up when hushd next runs the stream.
    public var position: UInt64?
    /// Descriptors sent with this reply's line (SCM_RIGHTS, with its first byte), in order: for `open-stream`, the
    /// memfd and the eventfd. Not part of the JSON.
    ///
    /// - Important: The control server owns them once the reply is returned to it: it closes each after sending
    ///   it, or when the connection is gone. Give it duplicates (`dup`) of descriptors you keep.
    public var descriptors: [Int32] = []

    /// The JSON members; ``descriptors`` travel beside the line, not in it.
    enum CodingKeys: String, CodingKey {
        case id, ok, error, hello, session, volume, route, status, events, stream, position
    }

    public init(
        id: RequestID? = nil,
        hello: HelloReport? = nil,
        session: SessionID? = nil,
        volume: VolumeReport? = nil,
        route: RouteReport? = nil,
        status: ControlStatus? = nil,
        events: [ControlEventKind]? = nil,
        stream: StreamReport? = nil,
        position: UInt64? = nil,
        descriptors: [Int32] = []
    ) {
        self.id = id
        ok = true
        self.hello = hello
        self.session = session?.rawValue
        self.volume = volume
        self.route = route
        self.status = status
        self.events = events
        self.stream = stream
        self.position = position
        self.descriptors = descriptors
    }

    /// A successful reply with nothing to return.
    public static func ok(id: RequestID? = nil) -> ControlReply { ControlReply(id: id) }

    /// An error reply.
    public static func failure(_ error: ControlError, id: RequestID? = nil) -> ControlReply {
        var reply = ControlReply(id: id)
        reply.ok = false
        reply.error = error
        return reply
    }

    /// A reply's JSON key for the "this is a reply" marker; events carry `event` instead.
    static let marker = "ok"
}

/// Who answered: `hello` and `version`.
public struct HelloReport: Codable, Hashable, Sendable {
    /// hushd's version.
    public var version: String
    /// The protocol's version (``ControlCodec/protocolVersion``).
    public var `protocol`: Int
    /// This connection's client id, as hushd's log and status name it.
    public var client: UInt64

    public init(version: String, protocol: Int = ControlCodec.protocolVersion, client: ClientID) {
        self.version = version
        self.protocol = `protocol`
        self.client = client.rawValue
    }
}

/// A volume as `volume` reports it.
public struct VolumeReport: Codable, Hashable, Sendable {
    public var kind: VolumeKind
    public var step: Int
    /// The step's gain on the volume curve in dB; absent for step 0 (silence).
    public var gainDecibels: Double?

    public init(kind: VolumeKind, step: VolumeStep, gainDecibels: Float) {
        self.kind = kind
        self.step = step.rawValue
        self.gainDecibels = ControlStatus.rounded(gainDecibels)
    }
}

/// The route as `route` reports it.
public struct RouteReport: Codable, Hashable, Sendable {
    /// The route sound goes to now.
    public var current: String
    /// Whether a person picked it (`route` with `override`), rather than the jack.
    public var overridden: Bool

    public init(current: Route, overridden: Bool) {
        self.current = current.name
        self.overridden = overridden
    }
}

extension VolumeKind: Codable {}
extension Bus: Codable {}
extension HushCore.Category: Codable {}
extension SilenceSwitchPosition: Codable {}
extension MicrophoneSwitchPosition: Codable {}
extension SessionMode: Codable {}
extension JackState: Codable {}
extension RouteChangeReason: Codable {}
extension MediaKey: Codable {}
