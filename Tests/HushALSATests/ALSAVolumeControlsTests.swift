import HushCore
import HushTesting
import Logging
import Testing

@testable import HushALSA

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

    @Test("a missing card is waited for, logged once naming the cards there are; a client of it is an error")
    func missingCard() throws {
        let values = HushControlValues(system: .maximum, ringer: .minimum, silent: false)
        let (logger, log) = RecordingLogHandler.logger()
        let controls = try ALSAVolumeControls(card: "NoSuchCard", values: values, logger: logger)
        #expect(controls.pollDescriptor == nil)
        #expect(controls.nextDeadline == .zero)
        #expect(controls.readChanges(now: .milliseconds(1)).isEmpty)
        #expect(controls.nextDeadline == .milliseconds(1001), "tried again a second later")
        try controls.set(.system, VolumeStep(clamping: 3))
        #expect(controls.values.system == VolumeStep(clamping: 3), "kept for when the card appears")
        #expect(controls.readChanges(now: .milliseconds(1001)).isEmpty)
        let errors = log.messages(at: .error)
        #expect(errors.count == 1, "\(errors)")
        #expect(
            errors.first?.hasPrefix(
                "NoSuchCard hush controls: cannot find sound card 'NoSuchCard': no such card; cards present: "
            ) == true
        )
        #expect(errors.first?.hasSuffix("the controls are added when it appears (tried every 1000 ms)") == true)
        #expect {
            _ = try ALSAElementClient(card: "hw:NoSuchCard")
        } throws: { error in
            (error as? HardwareError)?.description.hasPrefix("cannot find sound card 'hw:NoSuchCard': no such card")
                == true
        }
    }

    /// A curve whose every step rises by another amount than the step before: the most items a scale can need.
    static let jagged = try! VolumeCurve(
        anchors: (1...VolumeStep.count).map { ($0, Float(-64 + 4 * $0) - ($0 % 2 == 0 ? 0.5 : 0)) }
    )

    @Test(
        "the dB scale amixer reads is hush's curve, step by step, with step 0 as mute",
        arguments: [VolumeCurve.default, try! VolumeCurve(anchors: [(1, -60), (2, -41.3), (16, -3)]), jagged]
    )
    func decibelScale(_ curve: VolumeCurve) {
        let tlv = ALSAVolumeControls.decibelScale(curve)
        // alsa-lib's simple mixer (amixer sget, alsamixer) ignores larger scales.
        #expect(tlv.count * 4 <= ALSAVolumeControls.maximumScaleSize)
        #expect(ALSAVolumeControls.decibels(of: 0, in: tlv) == nil)
        for step in 1...VolumeStep.count {
            let expected = curve.decibels(at: VolumeStep(clamping: step))
            let read = ALSAVolumeControls.decibels(of: step, in: tlv)
            #expect(
                read.map { abs($0 - expected) <= 0.005 } == true,
                "step \(step): \(String(describing: read)) dB, curve \(expected) dB"
            )
        }
    }

    @Test("the default curve takes one item per straight segment, the most jagged one nine")
    func decibelScaleSize() {
        // Two header words and six per item: mute plus four segments.
        #expect(ALSAVolumeControls.decibelScale(.default).count == 2 + 5 * 6)
        #expect(ALSAVolumeControls.decibelScale(Self.jagged).count == 2 + 9 * 6)
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
