import HushConfiguration
import HushCore
import HushVoice

extension HushdConfiguration {
    /// The daemon's parts from this configuration; `persisted` comes from the state file.
    package func daemonSetup(persisted: PersistedVolumes? = nil) -> Daemon.Setup {
        var setup = Daemon.Setup()
        setup.policy = policy
        setup.persisted = persisted
        setup.output = output.playback
        setup.fallbackWAV = output.fallbackWAV
        setup.realtimePriority = output.realtimePriority
        setup.idleAfter = output.idleAfter
        setup.routeOutputs = routeOutputs
        setup.soundDirectories = sounds.directories
        setup.maxSessionsPerClient = control.maxSessionsPerClient
        setup.capturePCM = capture?.pcm
        setup.capturePeriods = capture?.periods
        setup.matchMicrophoneClock =
            capture?.matchesClock(outputs: [output.pcm] + routes.values.map(\.pcm).sorted()) ?? false
        setup.voice.automaticGain = voice.automaticGain
        setup.voice.noiseSuppression = voice.noiseSuppression
        return setup
    }
}
