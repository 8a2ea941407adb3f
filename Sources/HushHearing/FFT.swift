#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A radix-2 complex FFT of one size, its twiddle factors and bit-reversal table made once: what the level meter
/// transforms each block with. `transform` allocates nothing.
struct FFT {
    let size: Int
    private let cosines: [Double]
    private let sines: [Double]
    private let reversed: [Int]

    /// An FFT of `size` points, a power of two from 2 up.
    init(size: Int) {
        precondition(size >= 2 && size & (size - 1) == 0, "an FFT's size is a power of two, not \(size)")
        self.size = size
        cosines = (0..<size / 2).map { cos(-2 * Double.pi * Double($0) / Double(size)) }
        sines = (0..<size / 2).map { sin(-2 * Double.pi * Double($0) / Double(size)) }
        let bits = size.trailingZeroBitCount
        reversed = (0..<size).map { index in
            var result = 0
            for bit in 0..<bits where index & (1 << bit) != 0 { result |= 1 << (bits - 1 - bit) }
            return result
        }
    }

    /// Transforms `real` and `imaginary` (each `size` long) in place: X[k] = sum x[n] e^(-2 pi i k n / size).
    func transform(_ real: inout [Double], _ imaginary: inout [Double]) {
        precondition(real.count == size && imaginary.count == size)
        real.withUnsafeMutableBufferPointer { re in
            imaginary.withUnsafeMutableBufferPointer { im in
                cosines.withUnsafeBufferPointer { cosines in
                    sines.withUnsafeBufferPointer { sines in
                        reversed.withUnsafeBufferPointer { reversed in
                            Self.transform(re, im, cosines, sines, reversed, size: size)
                        }
                    }
                }
            }
        }
    }

    private static func transform(
        _ re: UnsafeMutableBufferPointer<Double>,
        _ im: UnsafeMutableBufferPointer<Double>,
        _ cosines: UnsafeBufferPointer<Double>,
        _ sines: UnsafeBufferPointer<Double>,
        _ reversed: UnsafeBufferPointer<Int>,
        size: Int
    ) {
        // SAFETY: every index below is under `size`, which each buffer's count is (checked by the caller), and the
        // twiddles' index k * stride is under size / 2.
        let re = re.baseAddress!
        let im = im.baseAddress!
        let cosines = cosines.baseAddress!
        let sines = sines.baseAddress!
        for index in 0..<size {
            let other = reversed[index]
            if other > index {
                swap(&re[index], &re[other])
                swap(&im[index], &im[other])
            }
        }
        var length = 2
        while length <= size {
            let half = length / 2
            let stride = size / length
            var start = 0
            while start < size {
                var twiddle = 0
                for a in start..<start + half {
                    let c = cosines[twiddle]
                    let s = sines[twiddle]
                    twiddle += stride
                    let b = a + half
                    let tr = re[b] * c - im[b] * s
                    let ti = re[b] * s + im[b] * c
                    re[b] = re[a] - tr
                    im[b] = im[a] - ti
                    re[a] += tr
                    im[a] += ti
                }
                start += length
            }
            length *= 2
        }
    }
}
