import HushALSA
import HushCore
import HushTesting

#if canImport(Glibc)
import Glibc
#endif

func jackSource(card: String, retry: Duration = .seconds(1)) throws -> ALSAControlSource {
    try ALSAControlSource(ALSAControlConfiguration(card: card, element: jack, retryInterval: retry), logger: logger)
}

let alsaChecks: [Check] = [
    Check(name: "alsa-jack-initial-and-toggle") {
        let control = try ALSAUserControl(card: "Loopback", element: jack, initial: true)
        defer { try? control.remove() }
        let source = try jackSource(card: "Loopback")
        let start = try source.currentState(now: monotonicNow()).map(\.event)
        try require(start == [.headphones(.plugged, source: .alsaControl)], "initial value true read as \(start)")
        try control.set(false)
        let unplug = try drain(source).map(\.event)
        try require(unplug == [.headphones(.unplugged, source: .alsaControl)], "toggle off gave \(unplug)")
        try control.set(true)
        let plug = try drain(source).map(\.event)
        try require(plug == [.headphones(.plugged, source: .alsaControl)], "toggle on gave \(plug)")
    },
    Check(name: "alsa-jack-removed-and-back") {
        var control = try ALSAUserControl(card: "Loopback", element: jack, initial: true)
        let source = try jackSource(card: "Loopback")
        try control.remove()
        let removed = try drain(source)
        try require(removed.isEmpty, "removal reported \(describe(removed))")
        control = try ALSAUserControl(card: "Loopback", element: jack, initial: false)
        defer { try? control.remove() }
        let back = try drain(source).map(\.event)
        try require(back == [.headphones(.unplugged, source: .alsaControl)], "re-added control gave \(back)")
    },
    Check(name: "alsa-missing-element") {
        do {
            _ = try ALSAControlSource(
                ALSAControlConfiguration(card: "Loopback", element: ALSAElementName("No Such Jack")),
                logger: logger
            )
            throw CheckFailure("a missing element was found")
        } catch let error as HardwareError {
            try require(
                error.description.contains("no such control; controls present: 'PCM Rate Shift 100000'"),
                "message was: \(error)"
            )
            print("  \(error.description.prefix(160))…")
        }
    },
    Check(name: "alsa-card-not-there-at-start") {
        // A card whose driver comes after hushd: the source is made while snd-dummy is unbound, says once which
        // cards there are, and reads the jack once the card and its control appear.
        let driver = "/sys/bus/platform/drivers/snd_dummy"
        try require(system("echo snd_dummy.0 > \(driver)/unbind") == 0, "could not unbind snd_dummy")
        var bound = false
        defer { if !bound { try? writeFile("\(driver)/bind", "snd_dummy.0") } }
        try require(readFile("/proc/asound/cards")?.contains("Dummy") != true, "the Dummy card is still there")
        let (recorder, log) = RecordingLogHandler.logger(label: "hush.vboard")
        let source = try ALSAControlSource(
            ALSAControlConfiguration(card: "Dummy", element: jack, retryInterval: .milliseconds(100)),
            logger: recorder
        )
        let before = try drain(source, quiet: .milliseconds(350), waitForDeadlines: false)
        try require(before.isEmpty, "events while the card is missing: \(describe(before))")
        let errors = log.messages(at: .error)
        print("  \(errors.first ?? "no error logged")")
        try require(errors.count == 1, "the missing card is logged once, not at every try: \(errors)")
        try require(errors[0].contains("no such card; cards present: "), "message was: \(errors[0])")
        try require(errors[0].contains("'Loopback'"), "the message should list the cards: \(errors[0])")
        try writeFile("\(driver)/bind", "snd_dummy.0")
        bound = true
        let control = try ALSAUserControl(card: "Dummy", element: jack, initial: true)
        defer { try? control.remove() }
        let events = try drain(source, quiet: .milliseconds(300)).map(\.event)
        try require(events == [.headphones(.plugged, source: .alsaControl)], "once the card appeared: \(events)")
    },
    Check(name: "alsa-card-gone-and-back") {
        // snd-dummy's removal waits until every handle on the card is closed, as a driver unbind does: so the
        // unbind runs in the background while hush's source notices the card going and lets go of it.
        let driver = "/sys/bus/platform/drivers/snd_dummy"
        var control: ALSAUserControl? = try ALSAUserControl(card: "Dummy", element: jack, initial: true)
        let source = try jackSource(card: "Dummy", retry: .milliseconds(100))
        control = nil
        try require(system("echo snd_dummy.0 > \(driver)/unbind &") == 0, "could not start the unbind")
        let gone = try drain(source, quiet: .milliseconds(500), waitForDeadlines: false)
        try require(gone.isEmpty, "card removal reported \(describe(gone))")
        try require(readFile("/proc/asound/cards")?.contains("Dummy") != true, "the Dummy card is still there")
        try require(source.nextDeadline != nil, "after the card went away the source should be retrying")
        try writeFile("\(driver)/bind", "snd_dummy.0")
        _ = try drain(source, quiet: .milliseconds(400), waitForDeadlines: false)
        // The card came back without hush's user control (controls die with the card); add it again.
        control = try ALSAUserControl(card: "Dummy", element: jack, initial: true)
        defer { try? control?.remove() }
        let back = try drain(source, quiet: .milliseconds(300)).map(\.event)
        try require(back == [.headphones(.plugged, source: .alsaControl)], "after the card returned: \(back)")
    },
]
