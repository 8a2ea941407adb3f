// FoundationEssentials, not Foundation: its JSONEncoder and JSONDecoder without Foundation's ICU data.
import FoundationEssentials
import HushCore

/// The control socket's limits: what one client may send, hold and leave unread.
public struct ControlLimits: Hashable, Sendable {
    /// The longest request line, in bytes without its newline. A longer line is discarded up to its newline and
    /// answered with a `line-too-long` error.
    public var maxLineBytes: Int
    /// Connections at once; one more is answered with a `too-many-clients` error line and closed.
    public var maxClients: Int
    /// Connections one process (the peer's pid) may have open at once; one more is answered with a
    /// `too-many-clients` error line and closed, so one process (an application opening many streams, each a
    /// connection) cannot lock the others out.
    public var maxClientsPerProcess: Int
    /// Sessions one connection may hold (enforced by the daemon's handler, which knows the sessions).
    public var maxSessionsPerClient: Int
    /// Output queued for one client that it has not read yet; past this the client is cut off (a subscriber
    /// that stopped reading must not make hushd hold its events forever).
    public var maxQueuedBytes: Int

    public init(
        maxLineBytes: Int = 65_536,
        maxClients: Int = 64,
        maxClientsPerProcess: Int = 16,
        maxSessionsPerClient: Int = 8,
        maxQueuedBytes: Int = 262_144
    ) {
        self.maxLineBytes = maxLineBytes
        self.maxClients = maxClients
        self.maxClientsPerProcess = maxClientsPerProcess
        self.maxSessionsPerClient = maxSessionsPerClient
        self.maxQueuedBytes = maxQueuedBytes
    }
}

/// A line from hushd: a reply to a request, or an event.
public enum ServerMessage: Hashable, Sendable {
    case reply(ControlReply)
    case event(ControlEvent)
}

/// Encodes and decodes the protocol's lines: one JSON object per line, ended by "\n".
///
/// Encoding is deterministic (keys sorted), so the same message always gives the same bytes. Requests are read by
/// hush's own strict `JSONReader`, which names the column of a mistake and runs for every line a client sends;
/// everything else goes through FoundationEssentials' `JSONEncoder` and `JSONDecoder`. hush had its own writer and
/// decoder for those too, about twice as fast on lines hushd sends a few of a second (docs/performance.md,
/// 2026-11-25): not worth their 720 lines.
public struct ControlCodec: Sendable {
    /// The protocol's version, reported by `hello`. Raised when a change would break existing clients.
    public static let protocolVersion = 1

    public var maxLineBytes: Int

    public init(maxLineBytes: Int = ControlLimits().maxLineBytes) {
        self.maxLineBytes = maxLineBytes
    }

    // MARK: Encoding

    /// One reply line, "\n" included.
    public func encode(_ reply: ControlReply) -> [UInt8] { Self.line(reply) }

    /// One event line, "\n" included.
    public func encode(_ event: ControlEvent) -> [UInt8] { Self.line(event) }

    /// The status object alone, "\n" included (what `hushctl --json status` prints).
    public func encode(_ status: ControlStatus) -> [UInt8] { Self.line(status) }

    /// One request line, "\n" included.
    public func encode(_ request: ControlRequest) -> [UInt8] { Self.line(request.json) }

    private static func line(_ value: some Encodable) -> [UInt8] {
        // The message types hold only strings, whole numbers, rounded finite Doubles, booleans and arrays of them:
        // encoding cannot fail.
        var bytes = [UInt8](try! json(value))
        bytes.append(0x0A)
        return bytes
    }

    /// `value` as the protocol writes JSON, without a newline: keys sorted, no whitespace, "/" not escaped, whole
    /// numbers without a fraction ("3", also for the Double 3.0).
    static func json(_ value: some Encodable) throws -> Data { try encoder.encode(value) }

    /// Shared: JSONEncoder and JSONDecoder are Sendable, and their options are set once, here.
    private static let encoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()
    private static let decoder = JSONDecoder()

    // MARK: Decoding

    /// Reads one request line (without its newline). Failures carry the error to reply with and the request's id
    /// when it could be read.
    public func decodeRequest(_ line: some Collection<UInt8>) -> Result<ControlRequest, RequestFailure> {
        guard line.count <= maxLineBytes else {
            return .failure(RequestFailure(id: nil, error: Self.tooLong(line.count, limit: maxLineBytes)))
        }
        let value: JSONValue
        do {
            value = try JSONReader.read(line)
        } catch {
            return .failure(RequestFailure(id: nil, error: Self.malformed(line, error.description)))
        }
        return RequestParser.parse(value)
    }

    /// Reads one line from hushd (without its newline): a reply or an event.
    public func decodeMessage(_ line: some Collection<UInt8>) throws(ControlError) -> ServerMessage {
        guard line.count <= maxLineBytes else { throw Self.tooLong(line.count, limit: maxLineBytes) }
        let value: JSONValue
        do {
            value = try JSONReader.read(line)
        } catch {
            throw Self.malformed(line, error.description)
        }
        guard case .object(let members) = value else {
            throw ControlError(.notAnObject, "hushd sent \(value.typeName), not an object: \(value.preview)")
        }
        // The line is read twice: by JSONReader, as strictly as hushd reads requests and naming the column of a
        // mistake, then by JSONDecoder through the messages' Decodable conformances, which names a missing or
        // mistyped field by its path. hushctl reads a few lines a second; the second pass costs microseconds.
        let kind = members["event"] != nil ? "an event" : "a reply"
        do {
            if members["event"] != nil { return .event(try Self.decoder.decode(ControlEvent.self, from: Data(line))) }
            if members[ControlReply.marker] != nil {
                return .reply(try Self.decoder.decode(ControlReply.self, from: Data(line)))
            }
        } catch {
            // Valid JSON, but not a message this hushctl knows: most likely hushd and hushctl come from different
            // versions, which the person reading this can check.
            throw ControlError(
                .malformedJSON,
                "hushd sent \(kind) this hushctl cannot read (\(Self.detail(error))): \(Self.shown(line)); "
                    + "are hushd and hushctl from the same build?"
            )
        }
        throw ControlError(.malformedJSON, "hushd sent a line that is neither a reply nor an event")
    }

    /// The error for a line of `count` bytes over `limit`.
    public static func tooLong(_ count: Int, limit: Int) -> ControlError {
        ControlError(
            .lineTooLong,
            "the line is \(count) bytes long, over the limit of \(limit) bytes; it was discarded"
        )
    }

    /// Why a message did not decode: the field, by its path, and what was wrong with it.
    private static func detail(_ error: any Error) -> String {
        // "events.1", not JSONDecoder's "events.Index 1".
        func field(_ path: [any CodingKey]) -> String {
            path.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
        }
        switch error as? DecodingError {
        case .keyNotFound(let key, let context)?:
            return "field '\(field(context.codingPath + [key]))' is missing"
        case .dataCorrupted(let context)? where context.codingPath.isEmpty:
            // JSONReader has read the line, so it is JSON. JSONDecoder says it is not, without the field, when a
            // number does not fit its field's type (1.5 or -1 for a session id: swift-foundation issue 274).
            return "a number does not fit its field"
        case .typeMismatch(_, let context)?, .valueNotFound(_, let context)?, .dataCorrupted(let context)?:
            guard !context.codingPath.isEmpty else { return context.debugDescription }
            return "field '\(field(context.codingPath))': \(context.debugDescription)"
        default:
            return "\(error)"
        }
    }

    private static func malformed(_ line: some Collection<UInt8>, _ detail: String) -> ControlError {
        guard String(validating: line, as: UTF8.self) != nil else {
            return ControlError(.malformedJSON, "the line is not valid UTF-8")
        }
        return ControlError(
            .malformedJSON,
            "the line is not a JSON object (\(detail)): \(shown(line)); send one object per line, "
                + "such as {\"command\":\"status\"}"
        )
    }

    /// The start of `line`, for an error message.
    private static func shown(_ line: some Collection<UInt8>) -> String {
        let text = String(decoding: line.prefix(60), as: UTF8.self)
        return line.count > 60 ? text + "…" : text
    }
}

/// Splits a byte stream into lines, with a limit: the part of a line past the limit is dropped as it arrives
/// (never held), and the line is reported as too long when its newline comes.
public struct LineBuffer: Sendable {
    /// A complete line, or a line that was too long (its length).
    public enum Item: Hashable, Sendable {
        case line([UInt8])
        case tooLong(Int)
    }

    public let maxLineBytes: Int
    private var pending: [UInt8] = []
    /// Bytes of the current line seen so far while discarding it.
    private var discarding: Int?

    public init(maxLineBytes: Int) {
        self.maxLineBytes = maxLineBytes
    }

    /// Bytes held for a line not yet ended.
    public var pendingCount: Int { pending.count }

    /// Takes `bytes` and returns the lines they complete, in order. A "\r" before "\n" is dropped.
    public mutating func append(_ bytes: some Collection<UInt8>) -> [Item] {
        var items: [Item] = []
        var start = bytes.startIndex
        while start != bytes.endIndex {
            let newline = bytes[start...].firstIndex(of: 0x0A)
            let end = newline ?? bytes.endIndex
            let piece = bytes[start..<end]
            if let seen = discarding {
                discarding = seen + piece.count
            } else if pending.count + piece.count > maxLineBytes {
                discarding = pending.count + piece.count
                pending.removeAll(keepingCapacity: false)
            } else {
                pending.append(contentsOf: piece)
            }
            guard let newline else { break }
            if let seen = discarding {
                items.append(.tooLong(seen))
                discarding = nil
            } else {
                if pending.last == 0x0D { pending.removeLast() }
                items.append(.line(pending))
                pending.removeAll(keepingCapacity: true)
            }
            start = bytes.index(after: newline)
        }
        return items
    }
}
