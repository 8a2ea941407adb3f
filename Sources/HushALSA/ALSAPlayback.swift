import CALSA
import HushCore

#if canImport(Glibc)
import Glibc
#endif

/// What hush asks of a playback device.
public struct PlaybackConfiguration: Hashable, Sendable {
    /// An ALSA PCM name: "default", "hw:CARD=sndrpihifiberry,DEV=0", "plughw:0", or one from an asound.conf.
    package var pcm: String
    package var sampleRate: Int
    package var channels: Int
    package var format: SampleFormat
    package var periodFrames: Int
    package var periods: Int

    package init(
        pcm: String = "default",
        sampleRate: Int = 48000,
        channels: Int = 2,
        format: SampleFormat = .s16LE,
        periodFrames: Int = 64,
        periods: Int = 3
    ) {
        self.pcm = pcm
        self.sampleRate = sampleRate
        self.channels = channels
        self.format = format
        self.periodFrames = periodFrames
        self.periods = periods
    }

    package var description: String {
        "\(pcm): \(sampleRate) Hz, \(channels) ch, \(format), \(periodFrames)-frame periods × \(periods)"
    }
}

/// An open ALSA playback device (`snd_pcm_t`), set up as near to the configuration as the device allows.
///
/// - Important: after `init`, `write` and `recover` are called from the audio thread only.
package final class ALSAPlayback {
    /// What the device granted (it may differ from what was asked: see ``describeGrant``).
    package let granted: PlaybackConfiguration
    package let requested: PlaybackConfiguration
    private var pcm: OpaquePointer?

    /// Opens `configuration.pcm` and negotiates the nearest setup the device accepts.
    package init(_ configuration: PlaybackConfiguration) throws(HardwareError) {
        requested = configuration
        let (handle, granted) = try Self.open(configuration, capture: false)
        pcm = handle
        self.granted = granted
        let result = snd_pcm_prepare(handle)
        guard result == 0 else {
            // Fully initialised: deinit closes the device.
            throw HardwareError(
                operation: "prepare playback device",
                device: "'\(configuration.pcm)'",
                errno: -result,
                message: ALSAErrors.message(result)
            )
        }
    }

    deinit { close() }

    /// Closes the device now, whoever still holds this object: a removed card (an unbound driver, an unplugged USB
    /// DAC) is freed by the kernel only when its last handle closes, and only then can it come back. Later writes
    /// report `.gone`.
    package func close() {
        guard let pcm else { return }
        snd_pcm_close(pcm)
        self.pcm = nil
    }

    /// "asked 48000 Hz, 2 ch, S16_LE, 64×3; granted 48000 Hz, 2 ch, S16_LE, 64×3" — for the log.
    package var describeGrant: String {
        func short(_ c: PlaybackConfiguration) -> String {
            "\(c.sampleRate) Hz, \(c.channels) ch, \(c.format), \(c.periodFrames)×\(c.periods)"
        }
        return "asked \(short(requested)); granted \(short(granted))"
    }

    /// Bytes per frame in the granted format.
    package var frameBytes: Int { granted.channels * granted.format.bytesPerSample }

    /// Queues `frames` frames from `buffer`, blocking until the device takes them.
    package func write(_ buffer: UnsafeRawPointer, frames: Int) -> PCMWriteResult {
        guard let pcm else { return .gone }
        var offset = 0
        while offset < frames {
            let result = snd_pcm_writei(pcm, buffer + offset * frameBytes, snd_pcm_uframes_t(frames - offset))
            if result >= 0 {
                offset += Int(result)
                continue
            }
            let code = Int32(result)
            if code == -EINTR { continue }
            if code == -ENODEV || code == -EBADFD || code == -ENXIO { return .gone }
            // -EPIPE: underrun; -ESTRPIPE: suspended. Recover silently; the caller counts and fades in.
            let recovered = snd_pcm_recover(pcm, code, 1)
            if recovered == 0 { return .recovered }
            return recovered == -ENODEV ? .gone : .failed(recovered)
        }
        return .written
    }

    /// Stops the device at once, dropping what is queued, and keeps it open (the card stays hushd's, its setup
    /// stays made): the audio thread going idle after nothing but silence was queued.
    package func halt() {
        guard let pcm else { return }
        snd_pcm_drop(pcm)
    }

    /// Makes a halted device ready again: it starts when the next writes have filled its buffer.
    package func resume() -> PCMWriteResult {
        guard let pcm else { return .gone }
        let result = snd_pcm_prepare(pcm)
        if result == 0 { return .written }
        return result == -ENODEV || result == -EBADFD || result == -ENXIO ? .gone : .failed(result)
    }

    /// Frames queued and not yet played (the output latency now), or nil when the device cannot say.
    package func queuedFrames() -> Int? {
        guard let pcm else { return nil }
        var available: snd_pcm_sframes_t = 0
        var delay: snd_pcm_sframes_t = 0
        guard snd_pcm_avail_delay(pcm, &available, &delay) == 0 else { return nil }
        return Int(delay)
    }

    /// Opens a PCM for playback or capture and negotiates its setup; the handle is closed again on failure.
    static func open(
        _ configuration: PlaybackConfiguration,
        capture: Bool
    ) throws(HardwareError)
        -> (OpaquePointer, PlaybackConfiguration)
    {
        var handle: OpaquePointer?
        let stream = capture ? SND_PCM_STREAM_CAPTURE : SND_PCM_STREAM_PLAYBACK
        let result = snd_pcm_open(&handle, configuration.pcm, stream, 0)
        guard result == 0, let handle else {
            throw HardwareError(
                operation: capture ? "open capture device" : "open playback device",
                device: "'\(configuration.pcm)'",
                errno: -result,
                message: openFailure(result)
            )
        }
        do {
            return (handle, try negotiate(handle, configuration, capture: capture))
        } catch {
            snd_pcm_close(handle)
            throw error
        }
    }

    /// Why `snd_pcm_open` failed, in words that say what to look at (alsa-lib's own lines are off: ALSALibrary).
    static func openFailure(_ result: Int32) -> String {
        switch -result {
        case EBUSY:
            "the device is busy: another program uses it ('fuser -v /dev/snd/*' names it; stop it, or share the card through a dmix PCM)"
        case ENODEV: "no such sound card, or it is gone; cards present: \(ControlHandle.cards())"
        case ENOENT:
            "no such PCM, or it names a card that is not there ('aplay -L' lists the PCMs); cards present: "
                + ControlHandle.cards()
        default: ALSAErrors.message(result)
        }
    }

    static func negotiate(
        _ pcm: OpaquePointer,
        _ asked: PlaybackConfiguration,
        capture: Bool = false
    ) throws(HardwareError)
        -> PlaybackConfiguration
    {
        var hw: OpaquePointer?
        snd_pcm_hw_params_malloc(&hw)
        defer { snd_pcm_hw_params_free(hw) }
        guard let hw else {
            throw HardwareError(
                operation: "configure",
                device: "'\(asked.pcm)'",
                errno: ENOMEM,
                message: "out of memory"
            )
        }
        func check(_ result: Int32, _ what: String) throws(HardwareError) {
            guard result >= 0 else {
                throw HardwareError(
                    operation: "set \(what) on",
                    device: "'\(asked.pcm)'",
                    errno: -result,
                    message: ALSAErrors.message(result)
                )
            }
        }
        try check(snd_pcm_hw_params_any(pcm, hw), "parameters")
        try check(snd_pcm_hw_params_set_access(pcm, hw, SND_PCM_ACCESS_RW_INTERLEAVED), "interleaved access")
        var granted = asked
        let preference = [asked.format] + SampleFormat.allCases.filter { $0 != asked.format }
        guard let format = preference.first(where: { snd_pcm_hw_params_test_format(pcm, hw, $0.alsa) == 0 }) else {
            throw HardwareError(
                operation: "choose a sample format for",
                device: "'\(asked.pcm)'",
                errno: EINVAL,
                message: "it takes none of S16_LE, S24_3LE, S32_LE, FLOAT_LE (try the plughw: device)"
            )
        }
        try check(snd_pcm_hw_params_set_format(pcm, hw, format.alsa), "format \(format)")
        granted.format = format
        var channels = UInt32(asked.channels)
        try check(snd_pcm_hw_params_set_channels_near(pcm, hw, &channels), "\(asked.channels) channels")
        guard channels == 1 || channels == 2 else {
            throw HardwareError(
                operation: "set channels on",
                device: "'\(asked.pcm)'",
                errno: EINVAL,
                message: "it offers \(channels) channels; hush plays mono or stereo (use the plughw: device)"
            )
        }
        granted.channels = Int(channels)
        var rate = UInt32(asked.sampleRate)
        var direction: Int32 = 0
        try check(snd_pcm_hw_params_set_rate_near(pcm, hw, &rate, &direction), "rate \(asked.sampleRate) Hz")
        granted.sampleRate = Int(rate)
        var period = snd_pcm_uframes_t(asked.periodFrames)
        try check(snd_pcm_hw_params_set_period_size_near(pcm, hw, &period, &direction), "period size")
        granted.periodFrames = Int(period)
        var periods = UInt32(asked.periods)
        try check(snd_pcm_hw_params_set_periods_near(pcm, hw, &periods, &direction), "period count")
        granted.periods = Int(periods)
        try check(snd_pcm_hw_params(pcm, hw), "the negotiated parameters")

        var sw: OpaquePointer?
        snd_pcm_sw_params_malloc(&sw)
        defer { snd_pcm_sw_params_free(sw) }
        guard let sw else {
            throw HardwareError(
                operation: "configure",
                device: "'\(asked.pcm)'",
                errno: ENOMEM,
                message: "out of memory"
            )
        }
        try check(snd_pcm_sw_params_current(pcm, sw), "software parameters")
        // Playback starts once a full buffer is queued; capture at the first read. Wake whenever a period is ready.
        let threshold = capture ? 1 : granted.periodFrames * granted.periods
        try check(snd_pcm_sw_params_set_start_threshold(pcm, sw, snd_pcm_uframes_t(threshold)), "start threshold")
        try check(snd_pcm_sw_params_set_avail_min(pcm, sw, snd_pcm_uframes_t(granted.periodFrames)), "wake-up point")
        try check(snd_pcm_sw_params(pcm, sw), "software parameters")
        return granted
    }
}

extension SampleFormat {
    var alsa: snd_pcm_format_t {
        switch self {
        case .s16LE: SND_PCM_FORMAT_S16_LE
        case .s24_3LE: SND_PCM_FORMAT_S24_3LE
        case .s32LE: SND_PCM_FORMAT_S32_LE
        case .floatLE: SND_PCM_FORMAT_FLOAT_LE
        }
    }
}
