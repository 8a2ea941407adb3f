import Foundation
import HushVoice
import Testing

/// The cost of voice processing, and speexdsp's echo canceller as the peer: CPU time per second of processed voice
/// on this machine, beside each one's ERLE and near-end figures on the same echo path. Printed, never asserted on
/// time (the machine is shared); what is asserted is that both cancel, so the comparison means something.
/// docs/performance.md ("Voice processing") records the figures.
@Suite("Voice processing: cost, beside speexdsp")
struct VoiceCostTests {
    @Test func cpuPerSecondOfVoiceBesideSpeexDSP() throws {
        let scene = Scenes.plain
        // Warm up (first-touch pages, the library's tables), then take the best of three: the least disturbed.
        _ = try runVoice(scene)
        var webrtc: [EchoFigures] = []
        var speex: [EchoFigures] = []
        let nearAlone = try runVoice(scene, microphone: scene.nearAlone, reference: Scenes.silence)
        let speexNearAlone = runSpeex(scene, microphone: scene.nearAlone, reference: Scenes.silence)
        for _ in 0..<3 {
            webrtc.append(figures(scene, try runVoice(scene), nearAloneOutput: nearAlone.output))
            speex.append(figures(scene, runSpeex(scene), nearAloneOutput: speexNearAlone.output))
        }
        let best = { (runs: [EchoFigures]) in runs.min { $0.cpuPerSecond < $1.cpuPerSecond }! }
        print("voice cost, 48 kHz, 10 ms blocks, mono reference:")
        print(
            "  webrtc-audio-processing \(VoiceProcessor.libraryGeneration) (voiceChat: AEC, NS, high-pass, AGC): \(best(webrtc))"
        )
        print("  speexdsp (echo canceller, 100 ms filter, preprocessor: denoise, residual echo): \(best(speex))")
        #expect(best(webrtc).erle > 20)
        #expect(best(speex).erle > 20)
    }
}
