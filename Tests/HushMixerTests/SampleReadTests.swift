import HushCore
import HushMixer
import Testing

/// SampleConversion.read, the way into the mix from an application's stream, against `write`, the way out.
@Suite("SampleConversion.read")
struct SampleReadTests {
    static func read(_ bytes: [UInt8], _ format: SampleFormat) -> [Float] {
        let count = bytes.count / format.bytesPerSample
        var out = [Float](repeating: .nan, count: count)
        bytes.withUnsafeBytes { input in
            out.withUnsafeMutableBufferPointer {
                SampleConversion.read(input.baseAddress!, count: count, format: format, into: $0.baseAddress!)
            }
        }
        return out
    }

    @Test("24-bit samples: sign-extended over 2^23")
    func s24() {
        // -2^23, 2^23 - 1, 2^22, -1, little-endian in three bytes.
        let bytes: [UInt8] = [0x00, 0x00, 0x80, 0xFF, 0xFF, 0x7F, 0x00, 0x00, 0x40, 0xFF, 0xFF, 0xFF]
        #expect(Self.read(bytes, .s24_3LE) == [-1, Float(8_388_607) / 8_388_608, 0.5, Float(-1) / 8_388_608])
    }

    /// Read over 2^15, written over 32767: every 16-bit value comes back within one step, most of them exactly.
    @Test("every 16-bit sample read and written again comes back within one step")
    func s16RoundTrip() {
        let values = (Int(Int16.min)...Int(Int16.max)).map { Int16($0) }
        let bytes = values.flatMap { [UInt8(truncatingIfNeeded: $0), UInt8(truncatingIfNeeded: $0 >> 8)] }
        var floats = Self.read(bytes, .s16LE)
        var back = [Int16](repeating: 0, count: values.count)
        floats.withUnsafeMutableBufferPointer { samples in
            back.withUnsafeMutableBytes {
                SampleConversion.write(samples.baseAddress!, count: values.count, to: $0.baseAddress!, format: .s16LE)
            }
        }
        let steps = zip(values, back).map { abs(Int($0) - Int($1)) }
        let exact = steps.filter { $0 == 0 }.count
        print("16-bit read then written: \(exact) of \(values.count) exact, the rest one step off")
        #expect(steps.allSatisfy { $0 <= 1 })
        #expect(exact > values.count / 2)
    }
}
