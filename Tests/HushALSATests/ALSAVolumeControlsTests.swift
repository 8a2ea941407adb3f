import HushALSA
import HushCore
import Logging
import Testing

// The controls themselves need a card: the virtual board checks them on snd-aloop and snd-dummy
// (hush-vboard-check volume-controls-*). Here, what needs none.
@Suite("hush's volume controls without a card")
struct ALSAVolumeControlsTests {
    @Test("the controls have the names amixer and alsamixer group as playback volumes and a switch")
    func names() {
        #expect(ALSAVolumeControls.systemElement.description == "'Hush System Playback Volume' (MIXER)")
        #expect(ALSAVolumeControls.ringerElement.description == "'Hush Ringer Playback Volume' (MIXER)")
        #expect(ALSAVolumeControls.silenceElement.description == "'Hush Silence Switch' (MIXER)")
    }

    @Test("a missing card is an error that names it and lists the cards there are")
    func missingCard() {
        let values = HushControlValues(system: .maximum, ringer: .minimum, silent: false)
        #expect {
            _ = try ALSAVolumeControls(card: "NoSuchCard", values: values, logger: Logger(label: "test"))
        } throws: { error in
            (error as? HardwareError)?.description.hasPrefix(
                "cannot find sound card 'NoSuchCard': no such card; cards present: "
            ) == true
        }
        #expect {
            _ = try ALSAElementClient(card: "hw:NoSuchCard")
        } throws: { error in
            (error as? HardwareError)?.description.hasPrefix("cannot find sound card 'hw:NoSuchCard': no such card")
                == true
        }
    }

    @Test("values are read and set per volume kind")
    func values() {
        var values = HushControlValues(system: VolumeStep(clamping: 3), ringer: VolumeStep(clamping: 9), silent: true)
        #expect(values[.system].rawValue == 3 && values[.ringer].rawValue == 9)
        values[.ringer] = .maximum
        #expect(values == HushControlValues(system: VolumeStep(clamping: 3), ringer: .maximum, silent: true))
        #expect(values.description == "system 3, ringer 16, silence switch on")
        let change = VolumeControlChange(.ringer, VolumeStep(clamping: 5), at: .milliseconds(1500))
        #expect(change.description == "1.500s ringer volume set to 5/16 on the mixer control")
    }
}
