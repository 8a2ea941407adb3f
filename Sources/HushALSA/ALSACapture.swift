import CALSA
import HushCore

#if canImport(Glibc)
import Glibc
#endif

/// An open ALSA capture device: the capture side of snd-aloop in the virtual board's tests, and the source of a
/// live input voice (mpd or librespot playing into a loopback).
package final class ALSACapture {
    package let granted: PlaybackConfiguration
    private let pcm: OpaquePointer
    /// Overruns (and other errors) recovered from in ``read(into:frames:)``: each stopped the device for a while.
    package private(set) var recoveries = 0

    /// Opens `configuration.pcm` for capture with the nearest setup it accepts.
    package init(_ configuration: PlaybackConfiguration) throws(HardwareError) {
        (pcm, granted) = try ALSAPlayback.open(configuration, capture: true)
        _ = snd_pcm_prepare(pcm)
    }

    deinit { snd_pcm_close(pcm) }

    /// Reads exactly `frames` frames into `buffer` (blocking), recovering from overruns; returns the frames read
    /// before an unrecoverable error.
    package func read(into buffer: UnsafeMutableRawPointer, frames: Int) -> Int {
        let frameBytes = granted.channels * granted.format.bytesPerSample
        var offset = 0
        while offset < frames {
            let result = snd_pcm_readi(pcm, buffer + offset * frameBytes, snd_pcm_uframes_t(frames - offset))
            if result >= 0 {
                offset += Int(result)
            } else if result == -Int(EINTR) {
                continue
            } else if snd_pcm_recover(pcm, Int32(result), 1) != 0 {
                return offset
            } else {
                recoveries += 1
            }
        }
        return offset
    }
}
