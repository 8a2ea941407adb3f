import Foundation
import Testing

@testable import HushHearing

/// The A weighting against IEC 61672-1's table, through the meter hushd runs; the meter's scale with tones and
/// pink noise at known levels; the calibration.
@Suite("the A-weighted level meter")
struct LevelMeterTests {
    /// IEC 61672-1 Table 3: the A weighting at the third-octave frequencies, 31.5 Hz to 16 kHz, named by their
    /// nominal frequency; the table is for the exact ones, 1 kHz × 10^(n/10) (``exact``).
    static let table: [(hertz: Double, decibels: Double)] = [
        (31.5, -39.4), (40, -34.6), (50, -30.2), (63, -26.2), (80, -22.5), (100, -19.1), (125, -16.1),
        (160, -13.4), (200, -10.9), (250, -8.6), (315, -6.6), (400, -4.8), (500, -3.2), (630, -1.9), (800, -0.8),
        (1000, 0), (1250, 0.6), (1600, 1.0), (2000, 1.2), (2500, 1.3), (3150, 1.2), (4000, 1.0), (5000, 0.5),
        (6300, -0.1), (8000, -1.1), (10000, -2.5), (12500, -4.3), (16000, -6.6),
    ]

    /// The exact frequency of the table's row `index` (31.5 Hz is 31.62 Hz).
    static func exact(_ index: Int) -> Double { 1000 * pow(10, Double(index - 15) / 10) }

    /// The levels `meter` reports for `samples` (interleaved).
    static func measure(_ samples: [Float], rate: Int = 48000, channels: Int = 1) -> [Double] {
        var meter = LevelMeter(sampleRate: rate, channels: channels)
        var levels: [Double] = []
        samples.withUnsafeBufferPointer { buffer in
            // In periods of 480 frames, as hushd hands the mix on.
            var start = 0
            while start < buffer.count {
                let end = min(buffer.count, start + 480 * channels)
                meter.append(UnsafeBufferPointer(rebasing: buffer[start..<end])) { levels.append($0) }
                start = end
            }
        }
        return levels
    }

    static func sine(_ hertz: Double, amplitude: Double, seconds: Double, rate: Int = 48000) -> [Float] {
        (0..<Int(seconds * Double(rate))).map {
            Float(amplitude * sin(2 * Double.pi * hertz * Double($0) / Double(rate)))
        }
    }

    @Test("the weighting's formula is the table's, within its rounding to 0.1 dB")
    func formula() {
        for (index, (hertz, decibels)) in Self.table.enumerated() {
            #expect(abs(AWeighting.decibels(atHertz: Self.exact(index)) - decibels) <= 0.051, "\(hertz) Hz")
        }
        #expect(AWeighting.power(atHertz: 0) == 0)
        #expect(abs(AWeighting.decibels(atHertz: 1000)) < 1e-9)
    }

    @Test("tones at the table's frequencies read the table's weighting within 0.5 dB, through the meter")
    func tones() {
        var worst = 0.0
        for (index, (hertz, decibels)) in Self.table.enumerated() {
            let levels = Self.measure(Self.sine(Self.exact(index), amplitude: 0.5, seconds: 1))
            let level = levels.first ?? -999
            let error = level - (-6.02 + decibels)
            worst = max(worst, abs(error))
            #expect(levels.count == 1 && abs(error) <= 0.5, "\(hertz) Hz: \(level) dB, \(error) dB off")
        }
        print("the meter against IEC 61672-1, 31.5 Hz to 16 kHz: worst \(String(format: "%.3f", worst)) dB off")
    }

    @Test("a full-scale 1 kHz sine reads 0; the scale is 20 log of the amplitude; silence reads -200")
    func scale() {
        #expect(abs((Self.measure(Self.sine(1000, amplitude: 1, seconds: 1)).first ?? -999)) < 0.02)
        #expect(abs((Self.measure(Self.sine(1000, amplitude: 0.01, seconds: 1)).first ?? -999) + 40) < 0.02)
        #expect(Self.measure([Float](repeating: 0, count: 48000)) == [-200])
        #expect(Self.measure(Self.sine(1000, amplitude: 0.5, seconds: 0.9)).isEmpty, "no whole second yet")
        #expect(Self.measure(Self.sine(1000, amplitude: 0.5, seconds: 3)).count == 3)
    }

    @Test("at 44.1 and 16 kHz too")
    func otherRates() {
        for rate in [44100, 16000] {
            for hertz in [63.0, 1000, 4000] {
                let level = Self.measure(Self.sine(hertz, amplitude: 0.5, seconds: 1, rate: rate), rate: rate).first
                let expected = -6.02 + AWeighting.decibels(atHertz: hertz)
                #expect(abs((level ?? -999) - expected) <= 0.5, "\(rate) Hz, \(hertz) Hz tone: \(level ?? -999)")
            }
        }
    }

    @Test("stereo: the louder ear counts, whichever it is")
    func louderEar() {
        let loud = Self.sine(1000, amplitude: 0.5, seconds: 1)
        let quiet = Self.sine(250, amplitude: 0.05, seconds: 1)
        for leftLoud in [true, false] {
            var interleaved: [Float] = []
            for index in loud.indices {
                interleaved += leftLoud ? [loud[index], quiet[index]] : [quiet[index], loud[index]]
            }
            let level = Self.measure(interleaved, channels: 2).first ?? -999
            #expect(abs(level + 6.02) < 0.05, "left louder: \(leftLoud): \(level)")
        }
    }

    @Test("pink noise reads the A-weighted level of its spectrum within 0.5 dB")
    func pinkNoise() {
        // Pink noise made in the frequency domain, so its spectrum, and so its A-weighted level, is known: every
        // bin of a 2^16-point block from 20 Hz to 20 kHz with power 1/f and a random phase, transformed back.
        let size = 65536
        let rate = 48000.0
        var generator = SystemRandomNumberGenerator()
        var real = [Double](repeating: 0, count: size)
        var imaginary = [Double](repeating: 0, count: size)
        var weighted = 0.0
        var total = 0.0
        for bin in 1..<size / 2 {
            let hertz = Double(bin) * rate / Double(size)
            guard hertz >= 20, hertz <= 20000 else { continue }
            let magnitude = (1 / hertz).squareRoot()
            let phase = Double.random(in: 0..<(2 * Double.pi), using: &generator)
            real[bin] = magnitude * cos(phase)
            imaginary[bin] = magnitude * sin(phase)
            real[size - bin] = real[bin]
            imaginary[size - bin] = -imaginary[bin]
            total += 2 * magnitude * magnitude
            weighted += 2 * magnitude * magnitude * AWeighting.power(atHertz: hertz)
        }
        // The inverse transform: conjugate, transform, conjugate, divide by the size.
        for index in 0..<size { imaginary[index] = -imaginary[index] }
        FFT(size: size).transform(&real, &imaginary)
        // Scale to an RMS of 0.1 (-20 dBFS), a level music has; the block repeats seamlessly for 3 s.
        let meanSquare = total / Double(size) / Double(size)
        let scale = 0.1 / (meanSquare.squareRoot() * Double(size))
        let block = real.map { Float($0 * scale) }
        let samples = Array((0..<3).flatMap { _ in block }.prefix(3 * 48000))
        let expected = 10 * log10(0.01 * weighted / total / LevelMeter.fullScaleSine)
        let levels = Self.measure(samples)
        print("pink noise at -20 dBFS RMS: \(levels) dB, its spectrum's A-weighted level \(expected) dB")
        #expect(levels.count == 3 && levels.allSatisfy { abs($0 - expected) <= 0.5 }, "\(levels) vs \(expected)")
    }

    @Test("the calibration: a route whose full scale is 100 dB(A) plays a half-scale 1 kHz tone at 94 dB(A)")
    func calibration() {
        let route = HearingCalibration(fullScaleDecibelsA: 100)
        let level = Self.measure(Self.sine(1000, amplitude: 0.5, seconds: 1)).first ?? -999
        #expect(abs(route.decibelsA(meter: level) - 93.98) < 0.05)
        #expect(!HearingCalibration.conservativeDefault.measured)
        #expect(HearingCalibration.conservativeDefault.description.contains("not calibrated"))
    }
}
