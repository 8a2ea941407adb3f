// hushd's microphone on the virtual board, as the streams scenario, the voice scenario and the latency figure give
// it one (hush-vboard-streams, hush-vboard-voice, hush-vboard-latency): the loopback cable it records and the one
// a check plays into, the gpio-sim lines of its light and its privacy switch, and the configuration that adds them.

/// The microphone: the checks play into the loopback's device 1 (substream 0) and hushd records what comes out of
/// device 0's capture side. hushd's output uses the other direction (device 0 playback, captured on device 1), so
/// the two cables of substream 0 carry the speaker one way and the microphone the other.
package let microphonePlayback = "hw:Loopback,1,0"
package let microphonePCM = "hw:Loopback,0,0"
/// The gpio-sim line the microphone light drives (`[outputs.mic_led]`).
package let microphoneLightLine = "mic-led"
/// The gpio-sim line of the microphone privacy switch (`[inputs.mic_privacy]`, active low: pulled down is on).
package let privacySwitchLine = "mic-privacy"
/// Its debounce, as configured below: part of the bound on how soon silence begins.
package let privacyDebounceMilliseconds = 10

/// What the streams scenario (and the latency figure) add to hushd's configuration (over the virtual profile, as the
/// e2e scenario has it).
package let microphoneConfiguration = """

    [capture]
    pcm = "\(microphonePCM)"

    [outputs.mic_led]
    kind = "gpio"
    chip = "\(simChip)"
    line = "\(microphoneLightLine)"

    [inputs.mic_privacy]
    kind = "gpio"
    chip = "\(simChip)"
    line = "\(privacySwitchLine)"
    active_low = true
    bias = "as-is"
    debounce_ms = \(privacyDebounceMilliseconds)

    """
