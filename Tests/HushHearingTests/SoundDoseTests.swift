import Testing

@testable import HushHearing

/// The week's sound dose: 100 % is 80 dB(A) for 40 h, equal energy, a rolling 7 days kept per hour.
@Suite("the sound dose")
struct SoundDoseTests {
    /// Feeds `hours` of sound at `decibelsA`, a second at a time as the meter reports it, from `start`.
    static func listen(_ dose: inout SoundDose, _ decibelsA: Double, hours: Double, start: Int64 = 500_000) {
        for second in 0..<Int(hours * 3600) {
            dose.add(decibelsA: decibelsA, seconds: 1, hour: start + Int64(second / 3600))
        }
    }

    @Test("80 dB(A) for 40 h is 100 % and 83 dB(A) for 20 h is 100 %, within 1 %")
    func reference() {
        var eighty = SoundDose()
        Self.listen(&eighty, 80, hours: 40)
        #expect(abs(eighty.fraction(at: 500_039) - 1) <= 0.01, "\(eighty)")
        var louder = SoundDose()
        Self.listen(&louder, 83, hours: 20)
        #expect(abs(louder.fraction(at: 500_019) - 1) <= 0.01, "\(louder)")
        var loudest = SoundDose()
        Self.listen(&loudest, 100, hours: 0.4)
        #expect(abs(loudest.fraction(at: 500_000) - 1) <= 0.01, "100 dB(A) for 24 minutes: \(loudest)")
    }

    @Test("a week rolls: what was heard 7 days ago leaves the dose, hour by hour")
    func rolling() {
        var dose = SoundDose()
        Self.listen(&dose, 86, hours: 2, start: 1000)  // 4 x 80 dB(A) for 2 h: 20 %
        #expect(abs(dose.fraction(at: 1001) - 0.2) < 0.002)
        #expect(abs(dose.fraction(at: 1000 + 167) - 0.2) < 0.002, "the 168th hour still counts the first")
        #expect(abs(dose.fraction(at: 1000 + 168) - 0.1) < 0.002, "then the first hour leaves")
        #expect(dose.fraction(at: 1000 + 169) == 0)
        dose.add(decibelsA: 80, seconds: 3600, hour: 1000 + 200)
        #expect(dose.hours.count == 1, "hours out of the window are forgotten when sound is added")
    }

    @Test("the state file's text reads back the same dose; a bad word is refused, named")
    func encoding() throws {
        var dose = SoundDose()
        Self.listen(&dose, 90, hours: 3)
        let text = dose.encoded
        #expect(text.split(separator: ",").count == 3)
        #expect(try SoundDose(encoded: text) == dose)
        #expect(try SoundDose(encoded: "") == SoundDose())
        for bad in ["500000", "500000:-1", "x:0.5", "500000:nan", "500000:0.5,", "1:2:3"] {
            #expect(throws: SoundDose.Malformed.self, "\(bad)") { try SoundDose(encoded: bad) }
        }
        do {
            _ = try SoundDose(encoded: "500000:0.1,oops")
        } catch {
            #expect(error.description == "'oops' is not HOUR:DOSE (hours since 1970, a dose of 0 or more)")
        }
    }

    @Test("silence and nonsense add nothing")
    func nothing() {
        var dose = SoundDose()
        dose.add(decibelsA: -.infinity, seconds: 1, hour: 1)
        dose.add(decibelsA: .nan, seconds: 1, hour: 1)
        dose.add(decibelsA: 90, seconds: 0, hour: 1)
        #expect(dose.hours.isEmpty)
    }
}
