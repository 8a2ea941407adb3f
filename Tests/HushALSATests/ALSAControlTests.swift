import HushALSA
import HushCore
import Logging
import Testing

// The real-driver behaviour (snd-aloop, snd-dummy) is checked in the virtual board (hush-vboard-check alsa-*);
// here, what needs no sound card.
@Suite("ALSA controls without a card")
struct ALSAControlTests {
    @Test("element names print the way amixer users know them")
    func names() {
        #expect(ALSAElementName("Headphone Jack").description == "'Headphone Jack' (CARD)")
        #expect(ALSAElementName("Master", interface: .mixer, index: 1).description == "'Master' (MIXER, index 1)")
    }

    @Test("a missing card is an error that says so and lists the cards there are")
    func missingCard() {
        #expect {
            _ = try ALSAControlSource(ALSAControlConfiguration(card: "NoSuchCard"), logger: Logger(label: "test"))
        } throws: { error in
            guard let error = error as? HardwareError else { return false }
            return error.description.hasPrefix("cannot find sound card 'NoSuchCard': no such card; cards present: ")
        }
    }
}
