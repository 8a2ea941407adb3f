import HushALSA
import HushCore
import HushTesting
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

    @Test("a card that is not there is waited for: the log says so once, with the cards there are; tried each second")
    func missingCard() throws {
        let (logger, log) = RecordingLogHandler.logger()
        let configuration = ALSAControlConfiguration(card: "NoSuchCard", retryInterval: .seconds(1))
        let source = try ALSAControlSource(configuration, logger: logger)
        #expect(source.pollDescriptor == nil)
        #expect(try source.currentState(now: .zero).isEmpty, "no state while the card is missing")
        #expect(source.nextDeadline == .zero, "tried at the loop's first turn")
        #expect(try source.readEvents(now: .milliseconds(5)).isEmpty)
        #expect(source.nextDeadline == .milliseconds(1005))
        #expect(try source.readEvents(now: .milliseconds(500)).isEmpty)
        #expect(source.nextDeadline == .milliseconds(1005), "not before it is due")
        #expect(try source.readEvents(now: .milliseconds(1005)).isEmpty)
        #expect(source.nextDeadline == .milliseconds(2005))
        let errors = log.messages(at: .error)
        #expect(errors.count == 1)
        #expect(
            errors.first?.hasPrefix(
                "NoSuchCard control 'Headphone Jack' (CARD): cannot find sound card 'NoSuchCard': no such card; cards present: "
            ) == true,
            "\(errors)"
        )
        #expect(
            errors.first?.hasSuffix("waiting for it (tried every 1000 ms), the headphone state is unknown until then")
                == true
        )
    }
}
