import HushCore

/// Why a request failed, as the reply's `error` carries it: a stable code for programs and a message for people.
///
/// The message names the problem: which field, what was expected, what arrived, and what to do.
public struct ControlError: Error, Codable, Hashable, Sendable, CustomStringConvertible {
    public var code: Code
    public var message: String
    /// The request field at fault, when one is.
    public var field: String?

    public init(_ code: Code, _ message: String, field: String? = nil) {
        self.code = code
        self.message = message
        self.field = field
    }

    /// A policy rejection (unknown session, interrupted, …) as an error reply.
    public init(_ rejection: Rejection) {
        let code: Code =
            switch rejection.code {
            case .unknownSession: .unknownSession
            case .duplicateSession: .duplicateSession
            case .interrupted: .interrupted
            case .unknownRoute: .unknownRoute
            case .notPermitted: .notPermitted
            }
        self.init(code, rejection.message)
    }

    public var description: String { "\(code.rawValue): \(message)" }

    /// An error code: kebab-case words, stable across versions. Open-ended, so a newer hushd's codes still decode.
    public struct Code: RawRepresentable, Codable, Hashable, Sendable, ExpressibleByStringLiteral,
        CustomStringConvertible
    {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public init(stringLiteral value: String) { rawValue = value }
        public init(from decoder: any Decoder) throws {
            rawValue = try decoder.singleValueContainer().decode(String.self)
        }
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(rawValue)
        }
        public var description: String { rawValue }

        // The line itself.
        /// The line is not JSON (or not UTF-8).
        public static let malformedJSON: Code = "malformed-json"
        /// The line is JSON but not an object.
        public static let notAnObject: Code = "not-an-object"
        /// The line is longer than the server's limit; it was discarded up to its newline.
        public static let lineTooLong: Code = "line-too-long"

        // The request's fields.
        /// `command` names no command this server knows.
        public static let unknownCommand: Code = "unknown-command"
        /// A required field is absent.
        public static let missingField: Code = "missing-field"
        /// A field has the wrong JSON type.
        public static let wrongType: Code = "wrong-type"
        /// A field has the right type but a value out of range or not one of the allowed names.
        public static let invalidValue: Code = "invalid-value"
        /// A field this command does not take (typos must not pass silently).
        public static let unknownField: Code = "unknown-field"
        /// Two fields that exclude each other (`sound` and `tone`, `step` and `delta`).
        public static let conflictingFields: Code = "conflicting-fields"

        // The connection.
        /// The server already has its maximum number of clients; the connection is closed.
        public static let tooManyClients: Code = "too-many-clients"
        /// The peer's uid is not allowed to use hushd, or the request is not allowed; see the message.
        public static let notPermitted: Code = "not-permitted"

        // The daemon's answers (the policy's rejections and the handler's own).
        public static let unknownSession: Code = "unknown-session"
        public static let duplicateSession: Code = "duplicate-session"
        public static let interrupted: Code = "interrupted"
        public static let unknownRoute: Code = "unknown-route"
        /// The session exists but belongs to another connection.
        public static let notYourSession: Code = "not-your-session"
        /// The client has as many sessions as the limit allows.
        public static let tooManySessions: Code = "too-many-sessions"
        /// The sound could not be played: a file that does not open or decode, a path outside the sound
        /// directories.
        public static let cannotPlay: Code = "cannot-play"
        /// The stream does not exist, or belongs to another connection (each connection has its own streams).
        public static let unknownStream: Code = "unknown-stream"
        /// A limit on streams was reached: all of hushd's, or one process's (`[streams]`); the message says which.
        public static let tooManyStreams: Code = "too-many-streams"
        /// hushd could not set the stream up (a ring bigger than `[streams] ring_kib_max`, no memory for
        /// it, no descriptors left); the message says why.
        public static let cannotStream: Code = "cannot-stream"
        /// The stream's state does not allow the action (`resume` on a stream that is not paused, `start` on a
        /// running one); the message says what state it is in.
        public static let wrongStreamState: Code = "wrong-stream-state"
        /// Something failed inside hushd; the message says what.
        public static let internalError: Code = "internal-error"
    }
}
