import HushALSA
import HushCore

#if canImport(Glibc)
import Glibc
#endif

let jack = ALSAElementName("Headphone Jack", interface: .card)

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
    Check(name: "alsa-missing-card") {
        do {
            _ = try jackSource(card: "NoSuchCard")
            throw CheckFailure("a missing card was found")
        } catch let error as HardwareError {
            try require(error.description.contains("no such card; cards present: "), "message was: \(error)")
            try require(error.description.contains("'Loopback'"), "the message should list the cards: \(error)")
            print("  \(error)")
        }
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
