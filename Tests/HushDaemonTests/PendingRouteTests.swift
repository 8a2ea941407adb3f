import Foundation
import HushALSA
import HushCore
import HushOutput
import HushTesting
import Logging
import Synchronization
import Testing

@testable import HushDaemon

/// A route whose PCM will not open: the sound stays where it is, the PCM is tried again with backoff until it opens
/// or the route changes back, and status, the console and the log say so. Real PCMs held by another program are
/// checked on the virtual board (e2e-route-waits-for-a-held-pcm in board/virtual/scenarios/e2e.sh).
@Suite("A route whose PCM is busy", .serialized)
struct PendingRouteTests {
    /// Devices by PCM name, busy or missing as a test says, each taking periods at the pace of a real device.
    /// Opened from the control side and, for a lost or late device, from the audio thread: hence the lock.
    final class Devices: Sendable {
        struct State {
            /// PCMs that answer EBUSY; the count is how many more opens fail (Int.max: until freed).
            var busy: [String: Int] = [:]
            /// PCMs with no card: every open fails with ENODEV.
            var missing: Set<String> = []
            /// The period a device grants, when not the one asked for.
            var grantedPeriod: Int?
            /// Every open asked for, in order.
            var attempts: [String] = []
            var opened: [PacedOutput] = []
        }
        let state = Mutex(State())

        var attempts: [String] { state.withLock { $0.attempts } }
        func set(_ change: (inout State) -> Void) { state.withLock { change(&$0) } }

        func open(_ configuration: PlaybackConfiguration) throws(HardwareError) -> any PCMOutput {
            let refusal: HardwareError? = state.withLock { state in
                state.attempts.append(configuration.pcm)
                if state.missing.contains(configuration.pcm) {
                    return HardwareError(
                        operation: "open playback device",
                        device: "'\(configuration.pcm)'",
                        errno: ENODEV,
                        message: "no such device"
                    )
                }
                guard let left = state.busy[configuration.pcm], left > 0 else { return nil }
                state.busy[configuration.pcm] = left == Int.max ? left : left - 1
                return HardwareError(
                    operation: "open playback device",
                    device: "'\(configuration.pcm)'",
                    errno: EBUSY,
                    message: "the device is busy: another program uses it"
                )
            }
            if let refusal { throw refusal }
            var granted = configuration
            granted.periodFrames = state.withLock { $0.grantedPeriod } ?? configuration.periodFrames
            let device = PacedOutput(granted)
            state.withLock { $0.opened.append(device) }
            return device
        }

        func device(_ pcm: String) -> PacedOutput? { state.withLock { $0.opened.last { $0.granted.pcm == pcm } } }
    }

    /// A device that takes a period per period of time, as a blocking ALSA write does, and counts them.
    final class PacedOutput: PCMOutput, @unchecked Sendable {
        let granted: PlaybackConfiguration
        let writes = Atomic<Int>(0)
        let closed = Atomic<Bool>(false)
        init(_ configuration: PlaybackConfiguration) { granted = configuration }

        func write(_ buffer: UnsafeRawPointer, frames: Int) -> PCMWriteResult {
            writes.add(1, ordering: .relaxed)
            usleep(UInt32(frames * 1_000_000 / granted.sampleRate))
            return .written
        }

        func close() { closed.store(true, ordering: .relaxed) }
    }

    static let speaker = "speaker-pcm"
    static let headphones = "headphones-pcm"

    /// A daemon on a manual clock whose speaker and headphones routes have PCMs of their own, started on the
    /// speaker; then the headphones are plugged while their PCM answers EBUSY `busy` times.
    struct Rig {
        let devices = Devices()
        let clock = ManualClock()
        let daemon: Daemon
        let log: RecordingLogHandler.Box

        init(busy: Int) throws {
            var setup = Daemon.Setup()
            setup.output = PlaybackConfiguration(pcm: speaker, periodFrames: 240, periods: 2)
            setup.routeOutputs = [.speaker: setup.output, .headphones: setup.output]
            setup.routeOutputs[.headphones]?.pcm = headphones
            setup.realtimePriority = 0
            setup.openPlayback = { [devices] (configuration) throws(HardwareError) in
                try devices.open(configuration)
            }
            let (logger, log) = RecordingLogHandler.logger()
            self.log = log
            daemon = Daemon(setup: setup, inputs: [], clock: clock, logger: logger)
            try daemon.start()
            devices.set { $0.busy[headphones] = busy }
            daemon.handle(.input(.headphones(.plugged, source: .alsaControl)))
        }
    }

    /// Waits (in real time) until the audio thread has written `periods` more periods to `device`.
    static func waitForPeriods(_ periods: Int, on device: PacedOutput?) -> Bool {
        guard let device else { return false }
        let target = device.writes.load(ordering: .relaxed) + periods
        let deadline = Date().addingTimeInterval(5)
        while device.writes.load(ordering: .relaxed) < target {
            guard Date() < deadline else { return false }
            usleep(1000)
        }
        return true
    }

    @Test("a busy PCM keeps the sound where it is and is tried at 250 ms, 500 ms, 1 s, 2 s, 2 s until it opens")
    func retriedWithBackoff() throws {
        let rig = try Rig(busy: Int.max)
        let (daemon, devices, clock, log) = (rig.daemon, rig.devices, rig.clock, rig.log)
        defer { daemon.shutDown() }

        #expect(daemon.audio.policy.route == .headphones, "the policy's route is the headphones (R4)")
        #expect(daemon.currentPCM == Self.speaker, "the sound stays on the speaker's PCM")
        let pending = try #require(daemon.pendingRoute)
        #expect(pending.pcm == Self.headphones && pending.attempts == 1)
        #expect(MonitorText.statusLine(of: daemon).hasSuffix("out ok, ROUTE PCM WAITING"))
        #expect(
            log.messages(at: .error) == [
                "route headphones: cannot open playback device 'headphones-pcm': the device is busy: another program uses it [errno 16]; sound stays on speaker-pcm and hushd tries headphones-pcm again in 250 ms, then at most every 2 s"
            ]
        )
        #expect(Self.waitForPeriods(3, on: devices.device(Self.speaker)), "the speaker still gets every period")

        // The first attempt waited while the PCM was busy (hushd's own old handle would have gone by then);
        // from here on, one attempt each time one is due, none between.
        let first = devices.attempts.count
        var times: [Int64] = []
        for _ in 0..<80 {
            clock.advance(by: .milliseconds(50))
            let before = devices.attempts.count
            daemon.service()
            if devices.attempts.count > before { times.append(clock.now().nanoseconds / 1_000_000) }
        }
        #expect(devices.attempts.count - first == times.count)
        #expect(times == [250, 750, 1750, 3750], "retries after 250 ms, 500 ms, 1 s, 2 s")
        #expect(daemon.pendingRoute?.attempts == 5)
        #expect(log.messages(at: .error).count == 1, "a failure that does not change is logged once")

        devices.set { $0.busy[Self.headphones] = nil }
        clock.advance(by: .seconds(2))
        daemon.service()
        #expect(daemon.pendingRoute == nil)
        #expect(daemon.currentPCM == Self.headphones)
        #expect(daemon.outputDescription == Self.headphones)
        #expect(
            log.messages(at: .notice).contains(
                "route headphones: headphones-pcm opened at attempt 6, 6.0 s after the route changed"
            )
        )
        #expect(Self.waitForPeriods(3, on: devices.device(Self.headphones)), "the sound moved to the headphones")
        daemon.service()  // closes what the audio thread let go of
        #expect(devices.device(Self.speaker)?.closed.load(ordering: .relaxed) == true, "the speaker's PCM is closed")
        #expect(MonitorText.statusLine(of: daemon).hasSuffix("out ok"))
    }

    @Test("a route changed back to the PCM that plays ends the waiting: no more attempts, and the log says so")
    func changedBack() throws {
        let rig = try Rig(busy: Int.max)
        let (daemon, devices, clock, log) = (rig.daemon, rig.devices, rig.clock, rig.log)
        defer { daemon.shutDown() }
        #expect(daemon.pendingRoute != nil)
        daemon.handle(.input(.headphones(.unplugged, source: .alsaControl)))
        #expect(daemon.pendingRoute == nil)
        #expect(daemon.currentPCM == Self.speaker)
        #expect(
            log.messages(at: .notice).contains(
                "route speaker: hushd stops trying headphones-pcm (1 attempt for headphones)"
            )
        )
        let attempts = devices.attempts.count
        for _ in 0..<20 {
            clock.advance(by: .milliseconds(250))
            daemon.service()
        }
        #expect(devices.attempts.count == attempts, "nothing is tried once the route no longer wants it")
    }

    @Test("a PCM busy only for a moment, as with hushd's own handle after a quick switch back, opens at once")
    func busyForAMoment() throws {
        let rig = try Rig(busy: 3)
        let (daemon, devices) = (rig.daemon, rig.devices)
        defer { daemon.shutDown() }
        #expect(daemon.pendingRoute == nil)
        #expect(daemon.currentPCM == Self.headphones)
        #expect(devices.attempts.filter { $0 == Self.headphones }.count == 4, "three busy answers, then open")
    }

    @Test("status carries the waiting PCM and why; hushctl and the console show it in their 24 lines")
    func statusShowsIt() throws {
        let rig = try Rig(busy: Int.max)
        let (daemon, clock) = (rig.daemon, rig.clock)
        defer { daemon.shutDown() }
        clock.advance(by: .milliseconds(300))
        daemon.service()
        let console = MonitorText.status(of: daemon, version: "test")
        #expect(console.contains("output          speaker-pcm: open"))
        #expect(console.contains("                0 underruns, latency 10 ms"))
        #expect(console.contains("waiting for     headphones-pcm (headphones): 2 tries in 0.3 s"))
        #expect(console.contains("                the device is busy: another program uses it"))
        for count in [0, 15, 16, 40] {
            for _ in 0..<count {
                let id = daemon.newSessionID()
                daemon.handle(.activate(id, client: ClientID(9), .init(bus: .effect, category: .ambient)))
            }
            let lines = MonitorText.status(of: daemon, version: "test")
            #expect(lines.count <= 24, "\(lines.count) lines with \(daemon.audio.policy.sessions.count) sessions")
            #expect(lines.allSatisfy { $0.count <= 80 })
        }
    }
}
