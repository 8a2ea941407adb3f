import HushALSA
import HushCore

/// What a write to an output device came to: hushd's own terms, whichever device it is.
public enum PCMWriteResult: Equatable, Sendable {
    /// Every frame was queued.
    case written
    /// The device underran or was suspended; it has been recovered, this period is lost.
    case recovered
    /// The device is gone (unplugged, unbound); close it and retry opening later.
    case gone
    /// Another error that recovery did not fix (code is the negative errno).
    case failed(Int32)

    init(_ result: ALSAPlayback.WriteResult) {
        switch result {
        case .written: self = .written
        case .recovered: self = .recovered
        case .gone: self = .gone
        case .failed(let code): self = .failed(code)
        }
    }
}

/// An ALSA playback device as hushd's output (``PCMOutput``): the adapter's `ALSAPlayback`, its results in
/// ``PCMWriteResult``.
public final class ALSAOutput: PCMOutput {
    public let playback: ALSAPlayback

    /// Opens `configuration.pcm` and negotiates the nearest setup the device accepts.
    public init(_ configuration: PlaybackConfiguration) throws(HardwareError) {
        playback = try ALSAPlayback(configuration)
    }

    public init(_ playback: ALSAPlayback) { self.playback = playback }

    public var granted: PlaybackConfiguration { playback.granted }
    /// What was asked of the device (it is reopened with this after a loss).
    public var requested: PlaybackConfiguration { playback.requested }
    public var describeGrant: String { playback.describeGrant }

    /// - Important: audio thread; no allocation (a switch over the adapter's result).
    public func write(_ buffer: UnsafeRawPointer, frames: Int) -> PCMWriteResult {
        PCMWriteResult(playback.write(buffer, frames: frames))
    }

    public func close() { playback.close() }
    public func halt() { playback.halt() }
    public func resume() -> PCMWriteResult { PCMWriteResult(playback.resume()) }
}
