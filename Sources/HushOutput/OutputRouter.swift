import HushALSA
import HushCore
import HushMixer
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// Where hushd's sound goes: the output device at start (or the WAV fallback, or none yet), the audio thread that
/// writes to it, each route's own PCM opened on the control side and handed over, a route whose PCM will not open
/// retried with backoff, and what the audio thread counted, logged.
///
/// Control side only: every method runs on hushd's loop; the audio thread is ``output``.
package final class OutputRouter {
    /// What the router is built from (hushd's `[output]`, `[routes]` and the fallback).
    package struct Configuration {
        /// The output device asked for; routes may name other PCMs.
        package var output: PlaybackConfiguration
        /// The device of each route that has its own; routes without one use `output`. Rate, channels and period
        /// must match `output`'s.
        package var routeOutputs: [Route: PlaybackConfiguration]
        /// Where sound goes when the output device does not open at start (nil: hushd waits for the device).
        package var fallbackWAV: String?
        package var realtimePriority: Int32
        /// How long nothing must be heard before the output stops and the audio thread sleeps; nil keeps it warm.
        package var idleAfter: Duration?
        /// Opens a playback device (ALSA in hushd; tests give devices of their own).
        package var openPlayback: @Sendable (PlaybackConfiguration) throws(HardwareError) -> any PCMOutput

        package init(
            output: PlaybackConfiguration,
            routeOutputs: [Route: PlaybackConfiguration],
            fallbackWAV: String?,
            realtimePriority: Int32,
            idleAfter: Duration?,
            openPlayback: @escaping @Sendable (PlaybackConfiguration) throws(HardwareError) -> any PCMOutput
        ) {
            self.output = output
            self.routeOutputs = routeOutputs
            self.fallbackWAV = fallbackWAV
            self.realtimePriority = realtimePriority
            self.idleAfter = idleAfter
            self.openPlayback = openPlayback
        }

        /// The device a route plays on.
        package func device(for route: Route) -> PlaybackConfiguration { routeOutputs[route] ?? output }
    }

    /// A route whose PCM would not open — another program holds it, or its card is missing — so the sound stays
    /// where it was while hushd tries that PCM again: first after ``PendingRoute/firstRetry``, then at doubling
    /// intervals up to every ``PendingRoute/longestRetry``, until it opens or another route is chosen.
    package struct PendingRoute: Sendable {
        package static let firstRetry = Duration.milliseconds(250)
        package static let longestRetry = Duration.seconds(2)
        package var route: Route
        /// The PCM the route wants.
        package var pcm: String
        /// Why the last attempt failed.
        package var error: HardwareError
        /// Attempts so far, the first (at the route change) included.
        package var attempts: Int
        /// When the route changed.
        package var since: Instant
        /// When the PCM is tried next.
        package var nextAttempt: Instant
        var interval: Duration
    }

    package let configuration: Configuration
    private let logger: Logger
    private let clock: any MonotonicClock
    /// The audio thread, once ``start(route:engine:periodHook:)`` made it.
    package private(set) var output: AudioOutputThread?
    /// Where the sound goes now: a PCM name, or "file:PATH" for the WAV fallback.
    package private(set) var description = "none"
    /// The PCM the audio thread writes to (or last wrote to, while it is lost).
    package private(set) var currentPCM: String
    /// The route whose PCM would not open, while it is retried; nil once the sound goes where the route says.
    package private(set) var pendingRoute: PendingRoute?
    /// Whether the output has not opened once since start (the log then says it appeared, not that it is back).
    private var waitingSinceStart = false
    private var reported = (underruns: 0, losses: 0, reopenings: 0, refusals: 0)
    private var refusalLogged = false
    /// Whether the log last said the output is idle.
    private var reportedIdle = false

    package init(configuration: Configuration, clock: any MonotonicClock, logger: Logger) {
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
        currentPCM = configuration.output.pcm
    }

    // MARK: Start and stop

    /// Opens `route`'s device and starts the audio thread rendering `engine`. A PCM that does not open goes to the
    /// WAV fallback if there is one; otherwise hushd starts without sound and ``service()`` opens the PCM when it
    /// appears, as it reopens a lost one (a card whose driver comes up after hushd, a USB DAC plugged in later).
    /// Failing instead would leave the board without its buttons, socket and console, and systemd stops
    /// restarting a unit that fails five times in 10 s.
    /// - Throws: when the fallback file cannot be made or the audio thread cannot start.
    package func start(route: Route, engine: MixerEngine, periodHook: PeriodHook?) throws(HardwareError) {
        let configuration = configuration.device(for: route)
        var device: (any PCMOutput)?
        do {
            let playback = try self.configuration.openPlayback(configuration)
            logger.info("output \(configuration.pcm): \(playback.describeGrant)")
            device = playback
            description = configuration.pcm
        } catch {
            if let fallback = self.configuration.fallbackWAV {
                let file = try WAVFileOutput(path: fallback, configuration: configuration)
                let hint = file.listeningHint.map { ": \($0)" } ?? ""
                logger.warning("\(error.description); sound goes to the WAV file \(fallback) instead\(hint)")
                device = file
                description = "file:" + fallback
            } else {
                logger.error(
                    "output: \(error.description); hushd runs without sound and opens \(configuration.pcm) as soon as it appears (tried every 250 ms). If that card should be here now, check [output] pcm against 'aplay -L'"
                )
                description = configuration.pcm
                waitingSinceStart = true
            }
        }
        currentPCM = configuration.pcm
        let open = self.configuration.openPlayback
        let thread = AudioOutputThread(
            engine: engine,
            output: device,
            requested: configuration,
            priority: self.configuration.realtimePriority,
            logger: logger,
            open: { try? open($0) }
        )
        thread.periodHook = periodHook
        thread.idleAfter = self.configuration.idleAfter
        output = thread
        try thread.start()
    }

    /// Stops the audio thread and closes the device.
    package func stop() {
        output?.stop()
        output = nil
        pendingRoute = nil
    }

    // MARK: Routes

    /// A route with a PCM of its own: open it here (not on the audio thread) and hand it over. A PCM that will
    /// not open leaves the sound where it is and becomes the ``pendingRoute``, tried again from ``service()``.
    package func switchOutput(to route: Route) {
        let configuration = configuration.device(for: route)
        let pcm = configuration.pcm
        guard let output, !description.hasPrefix("file:") else { return }
        if let pending = pendingRoute, pending.pcm != pcm {
            pendingRoute = nil
            logger.notice(
                "route \(route): hushd stops trying \(pending.pcm) (\(pending.attempts) attempt\(pending.attempts == 1 ? "" : "s") for \(pending.route))"
            )
        }
        guard pcm != currentPCM else { return }
        let now = clock.now()
        do {
            // A route switched back within a few periods finds its PCM still held by hushd itself (below).
            let device = try openRouteDevice(configuration, output: output, waitWhileBusy: .milliseconds(100))
            moveOutput(to: device, configuration, route: route, output: output)
        } catch {
            let interval = PendingRoute.firstRetry
            pendingRoute = PendingRoute(
                route: route,
                pcm: pcm,
                error: error,
                attempts: 1,
                since: now,
                nextAttempt: now + interval,
                interval: interval
            )
            logger.error(
                "route \(route): \(error.description); sound stays on \(currentPCM) and hushd tries \(pcm) again in \(interval.milliseconds) ms, then at most every \(PendingRoute.longestRetry.milliseconds / 1000) s"
            )
        }
    }

    /// Lets time pass: the devices the audio thread let go of are closed, a lost one reopened, the pending route's
    /// PCM tried again when due, and what the audio thread counted logged. From the loop, never the audio thread.
    package func service() {
        output?.service()
        retryPendingRoute()
        reportOutput()
    }

    /// When the loop must next call ``service()``: the pending route's next attempt, a lost device's reopening.
    package var nextDeadline: Instant? {
        let reopening = output?.untilNextReopening.map { clock.now() + $0 }
        return [pendingRoute?.nextAttempt, reopening].compactMap { $0 }.min()
    }

    private func retryPendingRoute() {
        guard var pending = pendingRoute, let output else { return }
        let now = clock.now()
        guard now >= pending.nextAttempt else { return }
        let configuration = configuration.device(for: pending.route)
        pending.attempts += 1
        do {
            // One attempt, no waiting: the loop serves clients and buttons between attempts.
            let device = try openRouteDevice(configuration, output: output, waitWhileBusy: .zero)
            pendingRoute = nil
            logger.notice(
                "route \(pending.route): \(pending.pcm) opened at attempt \(pending.attempts), \(Self.seconds(now - pending.since)) after the route changed"
            )
            moveOutput(to: device, configuration, route: pending.route, output: output)
        } catch {
            if error != pending.error {
                logger.error(
                    "route \(pending.route): \(error.description); sound stays on \(currentPCM), hushd keeps trying"
                )
            }
            pending.error = error
            pending.interval = min(pending.interval * 2, PendingRoute.longestRetry)
            pending.nextAttempt = now + pending.interval
            pendingRoute = pending
        }
    }

    private func moveOutput(
        to device: any PCMOutput,
        _ configuration: PlaybackConfiguration,
        route: Route,
        output: AudioOutputThread
    ) {
        if output.handOver(device, requested: configuration) {
            waitingSinceStart = false
            logger.info("route \(route): output moves to \(configuration.pcm)")
            currentPCM = configuration.pcm
            description = configuration.pcm
        } else {
            device.close()
            logger.error(
                "route \(route): \(configuration.pcm) granted \(device.describeGrant), unlike the running output; sound stays on \(currentPCM)"
            )
        }
    }

    /// "1.3 s", for the log and the console.
    package static func seconds(_ duration: Duration) -> String {
        DecimalText.fixed(Double(duration.milliseconds) / 1000, places: 1) + " s"
    }

    /// Opens a route's PCM. A route switched back within a few periods (an override typed and cleared at once)
    /// finds its PCM still held by hushd itself: the audio thread passes the old device back at its next period,
    /// and the control side closes it (`reap`). So that device is closed first, and a busy PCM is tried again
    /// every 5 ms for up to `waitWhileBusy`.
    private func openRouteDevice(
        _ configuration: PlaybackConfiguration,
        output: AudioOutputThread,
        waitWhileBusy: Duration
    ) throws(HardwareError) -> any PCMOutput {
        let deadline = ContinuousClock.now + waitWhileBusy
        while true {
            output.reap()
            do {
                return try self.configuration.openPlayback(configuration)
            } catch {
                guard error.errno == EBUSY, ContinuousClock.now < deadline else { throw error }
                usleep(5000)
            }
        }
    }

    // MARK: What the audio thread counted

    /// Logs what the audio thread counted since the last look (it never logs itself).
    private func reportOutput() {
        guard let counters = output?.counters else { return }
        let underruns = counters.underruns.load(ordering: .relaxed)
        let losses = counters.deviceLosses.load(ordering: .relaxed)
        let reopenings = counters.reopenings.load(ordering: .relaxed)
        // The gap and render figures cover the time since the last look, which is when the underruns happened.
        let gap = Duration.nanoseconds(counters.longestGap.exchange(0, ordering: .relaxed))
        let render = Duration.nanoseconds(counters.longestRender.exchange(0, ordering: .relaxed))
        if underruns != reported.underruns {
            let granted = output?.granted ?? configuration.output
            let frames = max(granted.periodFrames, counters.periodFrames.load(ordering: .relaxed))
            let nanoseconds = 1_000_000_000 / Double(granted.sampleRate)
            let diagnosis = AudioOutputThread.diagnosis(
                gap: gap,
                render: render,
                period: .nanoseconds(Int64(Double(frames) * nanoseconds)),
                queued: .nanoseconds(Int64(Double(granted.queueFrames(forPeriod: frames)) * nanoseconds))
            )
            logger.warning(
                "\(currentPCM): \(underruns - reported.underruns) underrun(s) (\(underruns) in all), recovered with a fade-in; \(diagnosis)"
            )
        }
        if losses != reported.losses {
            logger.error(
                "\(currentPCM): the output device is gone; retrying every 250 ms, sound resumes when it is back"
            )
        }
        if reopenings != reported.reopenings {
            if waitingSinceStart {
                waitingSinceStart = false
                logger.notice("\(currentPCM): the output device is here; sound starts")
            } else {
                logger.notice("\(currentPCM): the output device is back")
            }
        }
        // Once per absence, not every 250 ms: the device keeps being tried, and refused, until it changes.
        let refusals = counters.refusals.load(ordering: .relaxed)
        if losses != reported.losses { refusalLogged = false }
        if refusals != reported.refusals && !refusalLogged {
            refusalLogged = true
            let period = counters.refusedPeriodFrames.load(ordering: .relaxed)
            let granted = output?.granted ?? configuration.output
            logger.error(
                "\(currentPCM) opened but offered \(period)-frame periods (or another rate or channel count) where hush-renders \(granted.periodFrames) frames at \(granted.sampleRate) Hz, \(granted.channels) ch; it stays closed. Set [output] period_frames = \(period), or use a plughw: PCM"
            )
        }
        reported = (underruns, losses, reopenings, refusals)
        reportIdle()
    }

    /// Says when the output goes idle and when it runs again (info: both are ordinary).
    private func reportIdle() {
        guard let output, let idleAfter = output.idleAfter, output.isIdle != reportedIdle else { return }
        reportedIdle.toggle()
        if reportedIdle {
            logger.info(
                "output idle: nothing played for \(Self.seconds(idleAfter)); \(currentPCM) stopped until the next sound"
            )
        } else {
            logger.info("output running: \(currentPCM) started again for a sound")
        }
    }

    // MARK: Status

    /// Counters of the output, for status.
    package var counters: (underruns: Int, losses: Int, open: Bool, periods: Int, idle: Bool) {
        guard let counters = output?.counters else { return (0, 0, false, 0, false) }
        return (
            counters.underruns.load(ordering: .relaxed), counters.deviceLosses.load(ordering: .relaxed),
            counters.deviceOpen.load(ordering: .relaxed) == 1, counters.periods.load(ordering: .relaxed),
            counters.idle.load(ordering: .relaxed) == 1
        )
    }

    /// The output latency in milliseconds: what the device holds at the period in force.
    package var latencyMilliseconds: Double {
        let granted = output?.granted ?? configuration.output
        return Double(output?.queuedFrames ?? granted.queueFrames(forPeriod: granted.periodFrames)) * 1000
            / Double(granted.sampleRate)
    }

    /// The period in force (R24) and the longest the device allows, in frames.
    package var period: (frames: Int, ceiling: Int) {
        let granted = output?.granted ?? configuration.output
        let frames = output?.counters.periodFrames.load(ordering: .relaxed) ?? 0
        return (frames == 0 ? granted.periodFrames : frames, granted.maxPeriodFrames)
    }

    /// Mix periods of `frames` from the next period on (R24's ruling).
    package func setPeriod(_ frames: Int) { output?.setPeriod(frames) }
}
