import Foundation
import Glibc
import HushCore
import Testing

@testable import HushALSA

/// ALSA playback on the host through alsa-lib's `file` PCM (no sound card needed): the parameters negotiated and
/// the bytes written. Real devices (snd-aloop, snd-dummy) are exercised in the virtual board.
@Suite("ALSA playback through the file plugin", .serialized)
struct ALSAPlaybackTests {
    /// Points alsa-lib at a configuration defining `name`: a file PCM over the null PCM.
    static func configure(_ name: String) -> String {
        let directory = NSTemporaryDirectory() + "hush-alsa-\(getpid())"
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let output = directory + "/\(name).raw"
        try? FileManager.default.removeItem(atPath: output)
        let conf = """
            pcm.\(name) {
                type file
                slave.pcm { type null }
                file "\(output)"
                format "raw"
            }
            """
        let path = directory + "/\(name).conf"
        try? conf.write(toFile: path, atomically: true, encoding: .utf8)
        setenv("ALSA_CONFIG_PATH", path, 1)
        return output
    }

    @Test("what was asked is granted and reported", arguments: SampleFormat.allCases)
    func negotiation(format: SampleFormat) throws {
        _ = Self.configure("hushnear")
        let playback = try ALSAPlayback(PlaybackConfiguration(pcm: "hushnear", format: format, periodFrames: 128))
        #expect(playback.granted.format == format)
        #expect(playback.granted.periodFrames == 128 && playback.granted.periods == 3)
        #expect(
            playback.describeGrant == "asked 48000 Hz, 2 ch, \(format), 128×3; granted 48000 Hz, 2 ch, \(format), 128×3"
        )
    }

    @Test("written periods reach the device byte for byte")
    func write() throws {
        let output = Self.configure("hushfile")
        // The file plugin writes what the device has "played"; closing the device flushes the rest.
        try Self.writePeriods(to: "hushfile")
        let bytes = try Data(contentsOf: URL(fileURLWithPath: output))
        #expect(bytes.count == 50 * 64 * 4, "\(bytes.count) bytes written")
        let values = bytes.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        #expect(values.count == 6400)
        let expected = (0..<3200).flatMap { frame -> [Int16] in [Int16(frame), -Int16(frame)] }
        #expect(values == expected)
    }

    static func writePeriods(to pcm: String) throws {
        let playback = try ALSAPlayback(PlaybackConfiguration(pcm: pcm, periodFrames: 64, periods: 3))
        var samples = [Int16](repeating: 0, count: 64 * 2)
        for period in 0..<50 {
            for frame in 0..<64 {
                samples[2 * frame] = Int16(period * 64 + frame)
                samples[2 * frame + 1] = -Int16(period * 64 + frame)
            }
            let result = samples.withUnsafeBytes { playback.write($0.baseAddress!, frames: 64) }
            #expect(result == .written)
        }
    }

    @Test("close lets go of the device at once, though the object lives on; later writes report it gone")
    func closeNow() throws {
        let output = Self.configure("hushclose")
        let playback = try ALSAPlayback(PlaybackConfiguration(pcm: "hushclose", periodFrames: 64, periods: 3))
        let samples = [Int16](repeating: 7, count: 64 * 2)
        #expect(samples.withUnsafeBytes { playback.write($0.baseAddress!, frames: 64) } == .written)
        playback.close()
        // Closing flushed the file plugin: the period is on disk while `playback` is still referenced.
        #expect(try Data(contentsOf: URL(fileURLWithPath: output)).count == 64 * 4)
        #expect(samples.withUnsafeBytes { playback.write($0.baseAddress!, frames: 64) } == .gone)
        #expect(playback.queuedFrames() == nil)
        playback.close()
    }

    @Test("a missing PCM or card is named, with what to look at and the cards there are")
    func missing() {
        _ = Self.configure("hushnothing")
        #expect {
            _ = try ALSAPlayback(PlaybackConfiguration(pcm: "nosuchpcm"))
        } throws: { error in
            (error as? HardwareError)?.description
                == "cannot open playback device 'nosuchpcm': no such PCM, or it names a card that is not there "
                + "('aplay -L' lists the PCMs); cards present: none [errno 2]"
        }
        // hw:NoSuchCard,0,0 fails with ENODEV under the system's alsa.conf (this suite runs with a file of its own).
        #expect(ALSAPlayback.openFailure(-ENODEV) == "no such sound card, or it is gone; cards present: none")
        #expect(ALSAPlayback.openFailure(-EBUSY).hasPrefix("the device is busy: another program uses it"))
    }
}
