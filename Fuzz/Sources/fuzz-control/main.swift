import FuzzSupport
import HushProtocol

// The control socket as hushd reads it: a client's bytes, split into lines by LineBuffer (in pieces, as reads
// deliver them), each line decoded as a request; and the same lines as hushctl reads hushd's, decoded as replies
// and events.
//
// Properties beyond "no crash":
// - the lines do not depend on how the bytes were cut into reads;
// - a request that decodes re-encodes to one line that decodes to the same request;
// - a refused request carries an error with a code and a message, and its reply line decodes back to that reply;
// - a server line that decodes re-encodes to a line that decodes to the same message.

/// Small, so the fuzzer reaches the too-long path; hushd's default is 64 KiB.
let maxLineBytes = 300
let codec = ControlCodec(maxLineBytes: maxLineBytes)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzControl(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = bytes(data, size)

    // The same bytes in one read and in reads of a size taken from the first byte.
    var whole = LineBuffer(maxLineBytes: maxLineBytes)
    let lines = whole.append(input)
    var pieces = LineBuffer(maxLineBytes: maxLineBytes)
    let step = Int(input.first ?? 1) % 17 + 1
    var pieced: [LineBuffer.Item] = []
    var start = 0
    while start < input.count {
        let end = min(input.count, start + step)
        pieced += pieces.append(input[start..<end])
        start = end
    }
    require(lines == pieced, "LineBuffer gave other lines for reads of \(step) bytes", input: input)
    require(whole.pendingCount == pieces.pendingCount, "LineBuffer kept a different tail", input: input)
    require(whole.pendingCount <= maxLineBytes, "LineBuffer holds \(whole.pendingCount) bytes", input: input)

    for item in lines {
        switch item {
        case .tooLong(let count):
            require(count > maxLineBytes, "a line of \(count) bytes was called too long", input: input)
        case .line(let line):
            require(line.count <= maxLineBytes, "a line of \(line.count) bytes passed the limit", input: input)
            require(!line.contains(0x0A), "a line holds a newline", input: input)
            checkRequest(line, input: input)
            checkServerMessage(line, input: input)
        }
    }
    return 0
}

func checkRequest(_ line: [UInt8], input: [UInt8]) {
    switch codec.decodeRequest(line) {
    case .success(let request):
        let encoded = ControlCodec().encode(request)
        require(encoded.last == 0x0A, "an encoded request does not end with a newline", input: input)
        let body = encoded.dropLast()
        require(!body.contains(0x0A), "an encoded request spans lines", input: input)
        switch ControlCodec().decodeRequest(body) {
        case .success(let again):
            require(
                again == request,
                "request \(request) re-encoded as \(String(decoding: body, as: UTF8.self)) reads back as \(again)",
                input: input
            )
        case .failure(let failure):
            finding(
                "request \(request) re-encoded as \(String(decoding: body, as: UTF8.self)) is refused: "
                    + failure.error.message,
                input: input
            )
        }
    case .failure(let failure):
        require(!failure.error.message.isEmpty, "a refusal without a message", input: input)
        require(!failure.error.code.rawValue.isEmpty, "a refusal without a code", input: input)
        // The reply hushd sends for the refusal must be a line hushctl reads back as the same reply.
        let reply = ControlReply.failure(failure.error, id: failure.id)
        let encoded = ControlCodec().encode(reply)
        require(!encoded.dropLast().contains(0x0A), "an error reply spans lines", input: input)
        do {
            let decoded = try ControlCodec().decodeMessage(encoded.dropLast())
            require(decoded == .reply(reply), "error reply \(reply) reads back as \(decoded)", input: input)
        } catch {
            finding("error reply \(reply) does not read back: \(error.message)", input: input)
        }
    }
}

func checkServerMessage(_ line: [UInt8], input: [UInt8]) {
    let message: ServerMessage
    do {
        message = try codec.decodeMessage(line)
    } catch {
        require(!error.message.isEmpty, "a server line refused without a message", input: input)
        return
    }
    let encoded: [UInt8]
    switch message {
    case .reply(let reply): encoded = ControlCodec().encode(reply)
    case .event(let event): encoded = ControlCodec().encode(event)
    }
    do {
        let again = try ControlCodec().decodeMessage(encoded.dropLast())
        require(
            again == message,
            "server message \(message) re-encoded as \(String(decoding: encoded, as: UTF8.self)) reads back as \(again)",
            input: input
        )
    } catch {
        finding(
            "server message \(message) re-encoded as \(String(decoding: encoded, as: UTF8.self)) is refused: "
                + error.message,
            input: input
        )
    }
}
