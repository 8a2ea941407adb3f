import Foundation
import HushCore
import HushSystem

#if canImport(Glibc)
import Glibc
#endif

/// A client of hushd's stream protocol written by hand, for checks that break the protocol on purpose: it opens one
/// stream on a connection of its own (docs/protocol.md, "Streams"), takes the memfd and eventfd that come with the
/// reply and maps the memfd (header and ring) readable and writable, as the ALSA plugin does; after that it does
/// only what it is told. `HostileStreamTests` uses it on the host, `streams-hostile-clients-leave-others-clean` in
/// the virtual board (Sources/hush-vboard-streams/HostileChecks.swift).
///
/// Its streams are 48 kHz (unless told), stereo, S16_LE, named "hostile".
public final class RawStreamClient {
    /// Why the client could not talk to hushd at all (a refusal is not one: see ``refusal``).
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Bytes per frame of its streams (stereo S16_LE).
    public static let frameBytes = 4

    /// The connection to hushd's control socket.
    public private(set) var connection: Int32
    /// hushd's reply to `open-stream`, or the line it sent before closing a connection it refused.
    public private(set) var reply: [String: Any] = [:]
    /// The stream's id (0 when refused).
    public private(set) var id = 0
    public private(set) var memfd: Int32 = -1
    public private(set) var eventfd: Int32 = -1
    /// The memfd, mapped shared: the wire header, then the ring.
    public private(set) var mapped: UnsafeMutableRawPointer?
    /// The memfd's size.
    public private(set) var bytes = 0
    /// The ring's capacity, as the reply gives it.
    public private(set) var ringFrames = 0
    private var input: [UInt8] = []
    private var nextID = 1

    /// Whether hushd took the stream.
    public var opened: Bool { reply["ok"] as? Bool == true }

    /// The code of hushd's refusal ("too-many-streams"), nil when the stream opened.
    public var refusal: String? {
        opened ? nil : ((reply["error"] as? [String: Any])?["code"] as? String) ?? "?"
    }

    /// The bytes before the ring: the wire header, every byte of which a client can write. Told by the memfd's
    /// size less the ring's, so it needs no copy of the wire format (CHushWire's `HUSH_WIRE_HEADER_BYTES`).
    public var headerBytes: Int { bytes - ringFrames * Self.frameBytes }

    /// Connects to `socket` and sends `open-stream`; ``opened`` says whether hushd took it.
    ///
    /// - Throws: ``Failure`` when the connection fails or hushd sends no line within 5 s.
    public init(
        socket: String,
        direction: String,
        category: String,
        rate: Int = 48000,
        bufferFrames: Int = 4800
    ) throws {
        let fd: Int32
        do {
            fd = try UnixSocket.stream(for: socket)
            let result = try UnixSocket.withAddress(socket) { address, length in
                SystemCall.retrying { Glibc.connect(fd, address, length) }
            }
            if result != 0 {
                let code = errno
                close(fd)
                throw UnixSocket.error("connect to", socket, code)
            }
        } catch {
            throw Failure(description: "\(error)")
        }
        connection = fd
        var descriptors: [Int32] = []
        try send(
            #"{"command":"open-stream","id":\#(takeID()),"direction":"\#(direction)","category":"\#(category)","#
                + #""rate":\#(rate),"channels":2,"format":"S16_LE","bufferFrames":\#(bufferFrames),"name":"hostile"}"#
        )
        reply = try object(line(descriptors: &descriptors))
        guard opened else {
            descriptors.forEach { _ = close($0) }
            return
        }
        guard descriptors.count == 2 else {
            descriptors.forEach { _ = close($0) }
            throw Failure(description: "open-stream's reply came with \(descriptors.count) descriptors, not 2")
        }
        memfd = descriptors[0]
        eventfd = descriptors[1]
        let stream = reply["stream"] as? [String: Any] ?? [:]
        id = stream["id"] as? Int ?? 0
        ringFrames = stream["ringFrames"] as? Int ?? 0
        var info = stat()
        guard fstat(memfd, &info) == 0 else {
            throw Failure(description: "cannot stat the stream's memfd: \(String(cString: strerror(errno)))")
        }
        bytes = Int(info.st_size)
        let address = mmap(nil, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0)
        guard let address, address != MAP_FAILED else {
            throw Failure(description: "cannot map the stream's memfd: \(String(cString: strerror(errno)))")
        }
        mapped = address
    }

    deinit {
        if let mapped { munmap(mapped, bytes) }
        for fd in [memfd, eventfd, connection] where fd >= 0 { close(fd) }
    }

    /// Sends a `stream` request (`start`, `pause`, `stop`, …) and waits for its reply.
    ///
    /// - Throws: ``Failure`` when hushd refuses it or does not answer within 5 s.
    public func act(_ action: String) throws {
        let id = takeID()
        try send(#"{"command":"stream","id":\#(id),"stream":\#(self.id),"action":"\#(action)"}"#)
        var descriptors: [Int32] = []
        while true {
            let text = try line(descriptors: &descriptors)
            let answer = try object(text)
            guard answer["id"] as? Int == id else { continue }
            guard answer["ok"] as? Bool == true else { throw Failure(description: "hushd refused \(action): \(text)") }
            return
        }
    }

    /// Writes random bytes over the whole header again and again for `duration`, a pass every half millisecond:
    /// every field hushd might read is nonsense, the client's ring counter impossible. Returns the passes made.
    ///
    /// - Precondition: the stream opened (its memory is mapped).
    @discardableResult
    public func scribbleHeader(for duration: Duration, using generator: inout some RandomNumberGenerator) -> Int {
        guard let mapped else { preconditionFailure("the stream did not open: \(reply)") }
        let end = monotonicNow() + duration
        var passes = 0
        while monotonicNow() < end {
            for offset in stride(from: 0, to: headerBytes - 7, by: 8) {
                mapped.storeBytes(of: generator.next(), toByteOffset: offset, as: UInt64.self)
            }
            passes += 1
            usleep(500)
        }
        return passes
    }

    /// Tries to shrink the memfd to nothing under hushd, which would make hushd fault on the ring if it were let:
    /// the errno it failed with (EPERM: sealed against shrinking), 0 if it shrank.
    public func shrink() -> Int32 { ftruncate(memfd, 0) == 0 ? 0 : errno }

    /// One process opening `count` playback streams, one connection each, as fast as hushd answers: the ones hushd
    /// took (open while they are kept) and the codes of its refusals, in order ("no connection: …" for a
    /// connection that failed outright).
    public static func openMany(
        _ count: Int,
        socket: String,
        category: String = "ambient"
    ) -> (opened: [RawStreamClient], refusals: [String]) {
        var opened: [RawStreamClient] = []
        var refusals: [String] = []
        for _ in 0..<count {
            do {
                let stream = try RawStreamClient(socket: socket, direction: "playback", category: category)
                if let refusal = stream.refusal { refusals.append(refusal) } else { opened.append(stream) }
            } catch {
                refusals.append("no connection: \(error)")
            }
        }
        return (opened, refusals)
    }

    // MARK: The connection

    private func takeID() -> Int {
        defer { nextID += 1 }
        return nextID
    }

    private func send(_ line: String) throws {
        let bytes = Array((line + "\n").utf8)
        var offset = 0
        while offset < bytes.count {
            switch UnixSocket.send(connection, bytes[offset...]) {
            case .wrote(let count): offset += count
            case .wouldBlock:
                var ready = pollfd(fd: connection, events: Int16(POLLOUT), revents: 0)
                _ = poll(&ready, 1, 100)
            case .failed(let code):
                throw Failure(description: "cannot write to hushd: \(String(cString: strerror(code)))")
            }
        }
    }

    /// The next line from hushd, waiting up to 5 s; descriptors that came meanwhile are appended to `descriptors`.
    private func line(descriptors: inout [Int32]) throws -> String {
        let deadline = monotonicNow() + .seconds(5)
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            if let newline = input.firstIndex(of: 0x0A) {
                defer { input.removeSubrange(...newline) }
                return String(decoding: input[..<newline], as: UTF8.self)
            }
            guard monotonicNow() < deadline else { throw Failure(description: "no line from hushd within 5 s") }
            var ready = pollfd(fd: connection, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, 100) > 0 else { continue }
            switch UnixSocket.receive(connection, into: &buffer, descriptors: &descriptors) {
            case .bytes(let count): input += buffer[..<count]
            case .wouldBlock: continue
            case .endOfFile:
                throw Failure(description: "hushd closed the connection: \(String(decoding: input, as: UTF8.self))")
            case .failed(let code):
                throw Failure(description: "cannot read from hushd: \(String(cString: strerror(code)))")
            }
        }
    }

    private func object(_ line: String) throws -> [String: Any] {
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
            throw Failure(description: "not a JSON object from hushd: \(line)")
        }
        return object
    }
}
