import HushALSA
import HushCore
import HushPolicy
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// The state file in hushd's loop: the policy's `persist` decisions are saved (at most once a second, by the
/// store), pending writes flushed when due and at shutdown.
final class StateParticipant: LoopParticipant {
    let store: StateStore
    unowned let daemon: Daemon

    init(store: StateStore, daemon: Daemon) {
        self.store = store
        self.daemon = daemon
        daemon.decisionSinks.append { [unowned self] batch in
            for decision in batch.decisions {
                if case .persist(let volumes) = decision.command { store.save(volumes, now: daemon.clock.now()) }
            }
        }
    }

    var pollRequests: [pollfd] { [] }
    var nextDeadline: Instant? { store.nextDeadline }
    func service(_ ready: [pollfd], now: Instant) { store.flush(now: now) }
}

/// hushd's volumes and silence switch as ALSA user controls on the output card: set when the policy changes them;
/// a change someone makes with amixer or alsamixer goes through the policy like a button press.
final class VolumeControlsParticipant: LoopParticipant {
    let controls: ALSAVolumeControls
    unowned let daemon: Daemon
    private var failing = false

    init(controls: ALSAVolumeControls, daemon: Daemon) {
        self.controls = controls
        self.daemon = daemon
        daemon.decisionSinks.append { [unowned self] _ in show() }
        show()
    }

    var pollRequests: [pollfd] {
        controls.pollDescriptor.map { [pollfd(fd: $0, events: Int16(POLLIN), revents: 0)] } ?? []
    }

    var nextDeadline: Instant? { controls.nextDeadline }

    func service(_ ready: [pollfd], now: Instant) {
        for change in controls.readChanges(now: now) {
            daemon.handle(
                .setVolume(change.kind, change.step),
                cause: "\(change.kind) volume set to \(change.step) on the mixer control"
            )
        }
        show()
    }

    /// Shows the policy's volumes on the controls (the store skips unchanged values).
    private func show() {
        let policy = daemon.audio.policy
        do {
            try controls.set(.system, policy.systemVolume)
            try controls.set(.ringer, policy.ringerVolume)
            try controls.setSilence(policy.silenceSwitch == .silent)
            failing = false
        } catch {
            if !failing { daemon.logger.error("\(controls.name): \(error.description)") }
            failing = true
        }
    }
}

/// systemd's watchdog: pinged from the loop, so a hung loop is restarted by systemd.
final class WatchdogParticipant: LoopParticipant {
    let notifier: SystemdNotifier
    let interval: Duration
    private var next: Instant

    init(notifier: SystemdNotifier, interval: Duration, now: Instant) {
        self.notifier = notifier
        self.interval = interval
        next = now
    }

    var pollRequests: [pollfd] { [] }
    var nextDeadline: Instant? { next }

    func service(_ ready: [pollfd], now: Instant) {
        guard now >= next else { return }
        notifier.watchdog()
        next = now + interval
    }
}
