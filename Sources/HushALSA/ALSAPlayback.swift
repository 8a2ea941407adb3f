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
    /// The device's period: the shortest the audio thread writes (R24's floor), and its wake-up granularity.
    package var periodFrames: Int
    /// The queue while the period is the shortest, in periods: the thread wakes when `periods − 1` are left.
    package var periods: Int
    /// The longest period the audio thread may write at once (R24's ceiling), `periodFrames` × 2ⁿ; equal to
    /// `periodFrames` for a fixed period. Granted: what the device's buffer has room for.
    package var maxPeriodFrames: Int
    /// The device's buffer. Granted: what the device gave; asked: computed from the rest.
    package var bufferFrames: Int

    package init(
        pcm: String = "default",
        sampleRate: Int = 48000,
        channels: Int = 2,
        format: SampleFormat = .s16LE,
        periodFrames: Int = 64,
        periods: Int = 3,
        maxPeriodFrames: Int? = nil
    ) {
        self.pcm = pcm
        self.sampleRate = sampleRate
        self.channels = channels
        self.format = format
        self.periodFrames = periodFrames
        self.periods = periods
        self.maxPeriodFrames = max(periodFrames, maxPeriodFrames ?? periodFrames)
        bufferFrames = 0
        bufferFrames = queueFrames(forPeriod: self.maxPeriodFrames)
    }

    /// Whether the period can grow beyond `periodFrames` (R24).
    package var adaptive: Bool { maxPeriodFrames > periodFrames }

    /// How far the queue drains before the audio thread mixes and writes a period of `frames`: `periods − 1`
    /// device periods, as with a fixed period, and a quarter of what a longer period adds on top, rounded up to
    /// whole device periods — mixing a long period takes longer, and must be over before the queue runs out.
    package func wakeLevel(forPeriod frames: Int) -> Int {
        let margin = max(1, periods - 1) * periodFrames
        let extra = max(0, frames - periodFrames)
        let quarter = (extra / 4 + periodFrames - 1) / periodFrames * periodFrames
        return margin + quarter
    }

    /// The most frames queued while periods of `frames` are written: the wake level and the period on top. Also
    /// how far behind the mix the speaker is at the moment a period is written (a stream's delay).
    package func queueFrames(forPeriod frames: Int) -> Int { wakeLevel(forPeriod: frames) + frames }

    package var description: String {
        let ceiling = adaptive ? ", up to \(maxPeriodFrames)" : ""
        return
            "\(pcm): \(sampleRate) Hz, \(channels) ch, \(format), \(periodFrames)-frame periods × \(periods)\(ceiling)"
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
    /// The device's software parameters, made at open so that changing the wake level (``setPeriod(_:)``) on the
    /// audio thread allocates nothing.
    private var softwareParameters: OpaquePointer?

    /// Opens `configuration.pcm` and negotiates the nearest setup the device accepts.
    package init(_ configuration: PlaybackConfiguration) throws(HardwareError) {
        requested = configuration
        let (handle, granted) = try Self.open(configuration, capture: false)
        pcm = handle
        self.granted = granted
        snd_pcm_sw_params_malloc(&softwareParameters)
        if let softwareParameters { snd_pcm_sw_params_current(handle, softwareParameters) }
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

    deinit {
        close()
        if let softwareParameters { snd_pcm_sw_params_free(softwareParameters) }
    }

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
            let ceiling = c.adaptive ? " up to \(c.maxPeriodFrames) in \(c.bufferFrames)" : ""
            return "\(c.sampleRate) Hz, \(c.channels) ch, \(c.format), \(c.periodFrames)×\(c.periods)\(ceiling)"
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

    /// Makes ``waitForRoom()`` return when the queue has drained to the wake level of periods of `frames`
    /// (``PlaybackConfiguration/wakeLevel(forPeriod:)``): the device's wake-up point (`avail_min`), set with the
    /// parameters made at open. Audio thread, when the period in force changes.
    package func setPeriod(_ frames: Int) -> PCMWriteResult {
        guard let pcm else { return .gone }
        guard granted.adaptive, let softwareParameters else { return .written }
        let room = granted.bufferFrames - granted.wakeLevel(forPeriod: frames)
        snd_pcm_sw_params_set_avail_min(pcm, softwareParameters, snd_pcm_uframes_t(max(room, granted.periodFrames)))
        let result = snd_pcm_sw_params(pcm, softwareParameters)
        if result == 0 { return .written }
        return result == -ENODEV || result == -EBADFD || result == -ENXIO ? .gone : .failed(result)
    }

    /// Waits until the queue has drained to the wake level (``setPeriod(_:)``): the device paces the audio thread
    /// here, before it mixes, when the period can grow (a write would not block in a buffer with room for the
    /// longest period). A device with a fixed period paces in ``write(_:frames:)``, as it always has. An underrun
    /// or a suspend found here is recovered like one found by a write.
    package func waitForRoom() -> PCMWriteResult {
        guard let pcm else { return .gone }
        guard granted.adaptive else { return .written }
        while true {
            let result = snd_pcm_wait(pcm, 1000)
            if result >= 0 { return .written }
            if result == -EINTR { continue }
            if result == -ENODEV || result == -EBADFD || result == -ENXIO { return .gone }
            let recovered = snd_pcm_recover(pcm, result, 1)
            if recovered == 0 { return .recovered }
            return recovered == -ENODEV ? .gone : .failed(recovered)
        }
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
        if asked.adaptive && !capture {
            // Room for the longest period and the wake level it needs (R24), at the device's own period.
            granted.maxPeriodFrames = max(
                granted.periodFrames,
                asked.maxPeriodFrames / asked.periodFrames * granted.periodFrames
            )
            var buffer = snd_pcm_uframes_t(granted.queueFrames(forPeriod: granted.maxPeriodFrames))
            try check(snd_pcm_hw_params_set_buffer_size_near(pcm, hw, &buffer), "buffer size")
            try check(snd_pcm_hw_params(pcm, hw), "the negotiated parameters")
            granted.bufferFrames = Int(buffer)
            // The longest period that still fits what the device gave.
            var ceiling = granted.periodFrames
            while ceiling * 2 <= granted.maxPeriodFrames
                && granted.queueFrames(forPeriod: ceiling * 2) <= granted.bufferFrames
            {
                ceiling *= 2
            }
            granted.maxPeriodFrames = ceiling
        } else {
            var periods = UInt32(asked.periods)
            try check(snd_pcm_hw_params_set_periods_near(pcm, hw, &periods, &direction), "period count")
            granted.periods = Int(periods)
            try check(snd_pcm_hw_params(pcm, hw), "the negotiated parameters")
            granted.maxPeriodFrames = granted.periodFrames
            granted.bufferFrames = granted.periodFrames * granted.periods
        }

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
        // Playback starts once the shortest period's queue is there (a full buffer, for a fixed period); capture at
        // the first read. Wake when the queue is down to the shortest period's wake level (for a fixed period:
        // whenever a period is free).
        let threshold = capture ? 1 : granted.periodFrames * granted.periods
        try check(snd_pcm_sw_params_set_start_threshold(pcm, sw, snd_pcm_uframes_t(threshold)), "start threshold")
        let room =
            capture ? granted.periodFrames : granted.bufferFrames - granted.wakeLevel(forPeriod: granted.periodFrames)
        try check(
            snd_pcm_sw_params_set_avail_min(pcm, sw, snd_pcm_uframes_t(max(room, granted.periodFrames))),
            "wake-up point"
        )
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
