import Foundation
import HushCore
import Testing

@testable import HushProtocol

/// open-stream's limits are the wire's: HushProtocol does not import CHushWire, so it repeats hush_wire.h's
/// numbers, and this suite reads the header and holds the two equal.
@Suite("stream requests and hush_wire.h")
struct StreamRequestTests {
    /// `#define NAME VALUE` lines of Sources/CHushWire/hush_wire.h, by name (a trailing `u` dropped).
    static func wireDefines() throws -> [String: Int] {
        let header = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/CHushWire/hush_wire.h")
        let text = try String(contentsOf: header, encoding: .utf8)
        var defines: [String: Int] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("#define HUSH_WIRE_") {
            let words = line.split(separator: " ")
            guard words.count >= 3 else { continue }
            var value = words[2]
            if value.hasSuffix("u") { value = value.dropLast() }
            if let number = value.hasPrefix("0x") ? Int(value.dropFirst(2), radix: 16) : Int(value) {
                defines[String(words[1])] = number
            }
        }
        return defines
    }

    @Test("rates, channels and ring sizes are hush_wire.h's")
    func limitsMatchTheWire() throws {
        let wire = try Self.wireDefines()
        #expect(StreamRequest.rates.lowerBound == wire["HUSH_WIRE_MIN_RATE"])
        #expect(StreamRequest.rates.upperBound == wire["HUSH_WIRE_MAX_RATE"])
        #expect(StreamRequest.channelCounts.upperBound == wire["HUSH_WIRE_MAX_CHANNELS"])
        #expect(StreamRequest.bufferFrameCounts.lowerBound == wire["HUSH_WIRE_MIN_RING_FRAMES"])
        #expect(StreamRequest.bufferFrameCounts.upperBound == wire["HUSH_WIRE_MAX_RING_FRAMES"])
    }

    @Test("the edges of every range are accepted, one past them refused")
    func edges() {
        let codec = ControlCodec()
        func line(rate: Int, channels: Int, buffer: Int, period: Int?) -> String {
            #"{"command":"open-stream","direction":"playback","category":"playback","format":"S16_LE","#
                + #""rate":\#(rate),"channels":\#(channels),"bufferFrames":\#(buffer)"#
                + (period.map { #","periodFrames":\#($0)"# } ?? "") + "}"
        }
        func accepted(_ text: String) -> Bool {
            if case .success = codec.decodeRequest(Array(text.utf8)) { return true }
            return false
        }
        let rates = StreamRequest.rates
        let buffers = StreamRequest.bufferFrameCounts
        for rate in [rates.lowerBound, 44_100, rates.upperBound] {
            #expect(accepted(line(rate: rate, channels: 2, buffer: 4096, period: nil)), "rate \(rate)")
        }
        for rate in [rates.lowerBound - 1, rates.upperBound + 1, 0, -48_000] {
            #expect(!accepted(line(rate: rate, channels: 2, buffer: 4096, period: nil)), "rate \(rate)")
        }
        #expect(accepted(line(rate: 48_000, channels: 1, buffer: buffers.lowerBound, period: 16)))
        #expect(accepted(line(rate: 48_000, channels: 2, buffer: buffers.upperBound, period: buffers.upperBound / 2)))
        #expect(
            !accepted(line(rate: 48_000, channels: 2, buffer: buffers.upperBound, period: buffers.upperBound / 2 + 1))
        )
        #expect(!accepted(line(rate: 48_000, channels: 2, buffer: buffers.lowerBound - 1, period: nil)))
        #expect(!accepted(line(rate: 48_000, channels: 2, buffer: buffers.upperBound + 1, period: nil)))
        #expect(!accepted(line(rate: 48_000, channels: 3, buffer: 4096, period: nil)))
        #expect(!accepted(line(rate: 48_000, channels: 2, buffer: 4096, period: 0)))
    }

    @Test("every direction and category: capture needs a category that records, playback refuses record")
    func directionsAndCategories() {
        let codec = ControlCodec()
        for direction in StreamDirection.allCases {
            for category in HushCore.Category.allCases {
                let text =
                    #"{"command":"open-stream","direction":"\#(direction)","category":"\#(category)","#
                    + #""rate":48000,"channels":2,"format":"S16_LE","bufferFrames":4096}"#
                let result = codec.decodeRequest(Array(text.utf8))
                let allowed = direction == .capture ? category.records : category != .record
                switch result {
                case .success(let request):
                    #expect(allowed, "\(direction) \(category) was accepted")
                    guard case .openStream(let stream) = request.command else {
                        Issue.record("not open-stream: \(request)")
                        continue
                    }
                    #expect(stream.direction == direction && stream.category == category)
                    #expect(stream.sessionConfiguration.bus == category.defaultBus)
                case .failure(let failure):
                    #expect(!allowed, "\(direction) \(category): \(failure.error)")
                    #expect(failure.error.field == "category")
                }
            }
        }
    }
}
