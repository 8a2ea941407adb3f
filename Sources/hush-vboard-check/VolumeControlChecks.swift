import HushALSA
import HushCore

#if canImport(Glibc)
import Glibc
import HushTesting
#endif

// hushd's volumes as ALSA user controls (ALSAVolumeControls) on snd-aloop and snd-dummy. ALSAElementClient plays
// the other program (amixer): it has a control handle of its own, so the kernel's locks treat it as amixer.

private let systemVolume = ALSAVolumeControls.systemElement
private let ringerVolume = ALSAVolumeControls.ringerElement
private let silenceSwitch = ALSAVolumeControls.silenceElement

private func values(_ system: Int, _ ringer: Int, silent: Bool) -> HushControlValues {
    HushControlValues(system: VolumeStep(clamping: system), ringer: VolumeStep(clamping: ringer), silent: silent)
}

/// Reads `controls` until nothing has happened for `quiet` (or `until` holds); returns every change.
private func drainChanges(
    _ controls: ALSAVolumeControls,
    quiet: Duration = .milliseconds(80),
    limit: Duration = .seconds(5),
    until: (() -> Bool)? = nil
) -> [VolumeControlChange] {
    var changes: [VolumeControlChange] = []
    let start = monotonicNow()
    var lastActivity = start
    while monotonicNow() - start < limit {
        let now = monotonicNow()
        let waitUntil = min(controls.nextDeadline ?? (lastActivity + quiet), lastActivity + quiet)
        let timeout = max(0, (waitUntil - now).milliseconds + 1)
        if let fd = controls.pollDescriptor {
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            _ = poll(&entry, 1, Int32(timeout))
        } else {
            sleep(.milliseconds(timeout))
        }
        let new = controls.readChanges(now: monotonicNow())
        if !new.isEmpty { lastActivity = monotonicNow() }
        changes += new
        if let until {
            if until() { break }
        } else if monotonicNow() - lastActivity >= quiet {
            break
        }
    }
    return changes
}

private func describe(_ changes: [VolumeControlChange]) -> String {
    changes.isEmpty ? "none" : changes.map { "\($0.kind) \($0.step.rawValue)" }.joined(separator: "; ")
}

/// The three controls' values as another program reads them.
private func read(_ client: ALSAElementClient) throws -> [Int] {
    [try client.read(systemVolume), try client.read(ringerVolume), try client.read(silenceSwitch)]
}

/// Fails unless another program reads `expected` (system, ringer, switch).
private func expectValues(_ client: ALSAElementClient, _ expected: [Int], _ what: String) throws {
    let seen = try read(client)
    try require(seen == expected, "\(what): read \(seen), expected \(expected)")
}

/// Runs the guest's `amixer` with `arguments` (shell words), returning its exit status and output; nil when the
/// scenario did not bring amixer into the guest (`# vboard-tools: amixer`).
private func amixer(_ arguments: String) -> (status: Int32, output: String)? {
    let candidates: [String] = ["/usr/bin/amixer", "/payload/amixer"]
    guard let path = candidates.first(where: { access($0, X_OK) == 0 }) else { return nil }
    let (output, status) = shell("\(path) \(arguments)")
    return (status, output)
}

let volumeControlChecks: [Check] = [
    Check(name: "volume-controls-created") {
        let controls = try ALSAVolumeControls(card: "Loopback", values: values(7, 11, silent: true), logger: logger)
        defer { controls.remove() }
        let client = try ALSAElementClient(card: "Loopback")
        for element in [systemVolume, ringerVolume] {
            let info = try client.info(element).orFail("\(element) is not on the card")
            try require(
                info.isInteger && info.minimum == 0 && info.maximum == VolumeStep.count,
                "\(element) should be an integer 0…\(VolumeStep.count): \(info)"
            )
            try require(
                info.isWritable && info.lockedBy == nil && info.isUser,
                "\(element) should be writable: \(info)"
            )
        }
        let switchInfo = try client.info(silenceSwitch).orFail("\(silenceSwitch) is not on the card")
        try require(
            switchInfo.isBoolean && switchInfo.isUser,
            "the silenceSwitch switch should be boolean: \(switchInfo)"
        )
        try require(
            switchInfo.lockedBy == getpid(),
            "the switch should be locked by hush (pid \(getpid())): \(switchInfo)"
        )
        try expectValues(client, [7, 11, 1], "the initial values")
        // The controls carry hush's volume curve as their dB scale (default curve: step 9 is -20.75 dB).
        for (step, level) in [(0, nil), (1, -50), (9, -20.75), (16, 0)] as [(Int, Float?)] {
            let read = try client.decibels(systemVolume, at: step)
            try require(
                read == level,
                "step \(step) reads as \(read.map { "\($0) dB" } ?? "mute"), not \(level.map { "\($0) dB" } ?? "mute")"
            )
        }

        try controls.set(.system, VolumeStep(clamping: 9))
        try controls.set(.ringer, .maximum)
        try controls.setSilence(false)
        try expectValues(client, [9, 16, 0], "after hush set them")
        let echoes = drainChanges(controls)
        try require(echoes.isEmpty, "hush's own writes came back as changes: \(describe(echoes))")
    },
    Check(name: "volume-controls-external-change") {
        let controls = try ALSAVolumeControls(card: "Loopback", values: values(8, 8, silent: false), logger: logger)
        defer { controls.remove() }
        let client = try ALSAElementClient(card: "Loopback")
        try client.write(systemVolume, 3)
        let first = drainChanges(controls)
        try require(
            first.map { [$0.kind == .system ? 0 : 1, $0.step.rawValue] } == [[0, 3]],
            "amixer cset systemVolume 3 gave \(describe(first))"
        )
        try client.write(ringerVolume, 16)
        try client.write(systemVolume, 5)
        let second = drainChanges(controls)
        try require(
            second.map { [$0.kind == .system ? 0 : 1, $0.step.rawValue] } == [[1, 16], [0, 5]],
            "ringerVolume 16 then systemVolume 5 gave \(describe(second))"
        )
        try require(controls.values == values(5, 16, silent: false), "hush's view: \(controls.values)")
        // The policy caps the ringer: hush writes its answer back, and that is not another change.
        try controls.set(.ringer, VolumeStep(clamping: 12))
        try require(try client.read(ringerVolume) == 12, "the policy's answer was not shown")
        let after = drainChanges(controls)
        try require(after.isEmpty, "hush's write-back came back as \(describe(after))")
    },
    Check(name: "volume-controls-switch-read-only") {
        let controls = try ALSAVolumeControls(card: "Loopback", values: values(8, 8, silent: false), logger: logger)
        defer { controls.remove() }
        let client = try ALSAElementClient(card: "Loopback")
        do {
            try client.write(silenceSwitch, 1)
            throw CheckFailure("another program could write the silenceSwitch switch")
        } catch let error as HardwareError {
            try require(error.errno == EPERM, "the refusal should be EPERM: \(error)")
            try require(
                error.description.contains("read-only to others: process \(getpid()) holds its lock"),
                "\(error)"
            )
            print("  \(error)")
        }
        try require(try client.read(silenceSwitch) == 0, "the refused write changed the switch")
        try controls.setSilence(true)
        try require(try client.read(silenceSwitch) == 1, "hush could not set its own switch")
        let changes = drainChanges(controls)
        try require(changes.isEmpty, "the switch produced changes: \(describe(changes))")
    },
    Check(name: "volume-controls-take-over") {
        // A hushd that died leaves its controls, unlocked (the kernel drops a lock with its handle).
        var first: ALSAVolumeControls? = try ALSAVolumeControls(
            card: "Loopback",
            values: values(4, 5, silent: true),
            logger: logger
        )
        let client = try ALSAElementClient(card: "Loopback")
        let numids = [systemVolume, ringerVolume, silenceSwitch].map { client.info($0)?.numid }
        first = nil
        try require(client.info(silenceSwitch)?.lockedBy == nil, "the switch is still locked after its handle closed")
        try expectValues(client, [4, 5, 1], "the dead hushd's controls")

        let next = try ALSAVolumeControls(card: "Loopback", values: values(10, 6, silent: false), logger: logger)
        try require(
            [systemVolume, ringerVolume, silenceSwitch].map { client.info($0)?.numid } == numids,
            "the controls were re-created"
        )
        try expectValues(client, [10, 6, 0], "the new hushd's values")
        try require(client.info(silenceSwitch)?.lockedBy == getpid(), "the new hushd does not hold the switch's lock")

        // A second hushd on the same card while the first runs is refused, saying why.
        do {
            _ = try ALSAVolumeControls(card: "Loopback", values: values(1, 1, silent: false), logger: logger)
            throw CheckFailure("a second owner took the controls")
        } catch let error as HardwareError {
            try require(error.description.contains("is another hushd running on this card?"), "\(error)")
            print("  \(error)")
        }
        try expectValues(client, [10, 6, 0], "the refused hushd changed the running one's values")
        next.remove()
        try require(
            [systemVolume, ringerVolume, silenceSwitch].allSatisfy { client.info($0) == nil },
            "remove() left controls"
        )
    },
    Check(name: "volume-controls-removed-by-other") {
        let controls = try ALSAVolumeControls(card: "Loopback", values: values(9, 4, silent: true), logger: logger)
        defer { controls.remove() }
        let client = try ALSAElementClient(card: "Loopback")
        do {
            try client.remove(silenceSwitch)
            throw CheckFailure("another program removed the locked silence switch")
        } catch let error as HardwareError {
            try require(error.errno == EBUSY, "removing the locked switch: \(error)")
        }
        try client.remove(systemVolume)
        let changes = drainChanges(controls)
        try require(changes.isEmpty, "the removal reported \(describe(changes))")
        try expectValues(client, [9, 4, 1], "after hush put the removed control back")
        try client.write(systemVolume, 14)
        let change = drainChanges(controls)
        try require(
            change.map { [$0.kind == .system ? 0 : 1, $0.step.rawValue] } == [[0, 14]],
            "a change to the re-added control gave \(describe(change))"
        )
    },
    Check(name: "volume-controls-replace-other-shape") {
        // Something else made a boolean with the ringer's name (an older hush, a script): hush replaces it.
        _ = try ALSAUserControl(card: "Loopback", element: ringerVolume, initial: true)
        let client = try ALSAElementClient(card: "Loopback")
        try require(client.info(ringerVolume)?.isBoolean == true, "the boolean stand-in is not there")
        let controls = try ALSAVolumeControls(card: "Loopback", values: values(2, 13, silent: false), logger: logger)
        defer { controls.remove() }
        let info = try client.info(ringerVolume).orFail("the ringerVolume control is gone")
        try require(info.isInteger && info.maximum == VolumeStep.count, "not replaced: \(info)")
        let shown = try client.read(ringerVolume)
        try require(shown == 13, "the replaced control shows \(shown)")
    },
    Check(name: "volume-controls-amixer") {
        // Stock amixer, when the scenario copies it into the guest: what a person at the board would type.
        guard amixer("--version") != nil else {
            print("  skipped: no amixer in the guest (a scenario line '# vboard-tools: amixer' brings it)")
            return
        }
        let controls = try ALSAVolumeControls(card: "Loopback", values: values(9, 4, silent: true), logger: logger)
        defer { controls.remove() }
        let list = try amixer("-c Loopback scontrols").orFail("amixer did not run")
        print(list.output.split(separator: "\n").map { "  " + $0 }.joined(separator: "\n"))
        try require(
            list.output.contains("'Hush System',0") && list.output.contains("'Hush Ringer',0")
                && list.output.contains("'Hush Silence',0"),
            "amixer scontrols does not list hush's controls"
        )
        let cget = try amixer("-c Loopback cget name='Hush System Playback Volume'").orFail("amixer did not run")
        print(cget.output.split(separator: "\n").map { "  " + $0 }.joined(separator: "\n"))
        try require(
            cget.status == 0 && cget.output.contains("type=INTEGER")
                && cget.output.contains("min=0,max=\(VolumeStep.count)") && cget.output.contains(": values=9"),
            "amixer cget: \(cget.output)"
        )
        let volume = try amixer("-c Loopback sget 'Hush System'").orFail("amixer did not run")
        print(volume.output.split(separator: "\n").map { "  " + $0 }.joined(separator: "\n"))
        try require(
            volume.status == 0 && volume.output.contains("Playback 9 [56%] [-20.75dB]"),
            "sget 'Hush System': \(volume.output)"
        )
        let switchInfo = try amixer("-c Loopback cget name='Hush Silence Switch'").orFail("amixer did not run")
        print(switchInfo.output.split(separator: "\n").map { "  " + $0 }.joined(separator: "\n"))
        let sget = try amixer("-c Loopback sget 'Hush Silence'").orFail("amixer did not run")
        print(sget.output.split(separator: "\n").map { "  " + $0 }.joined(separator: "\n"))
        try require(sget.status == 0 && sget.output.contains("[on]"), "amixer sget 'Hush Silence': \(sget.output)")

        let cset = try amixer("-c Loopback cset name='Hush Ringer Playback Volume' 12").orFail("amixer did not run")
        try require(cset.status == 0, "amixer cset of the ringer volume failed: \(cset.output)")
        let changes = drainChanges(controls)
        try require(
            changes.map { [$0.kind == .system ? 0 : 1, $0.step.rawValue] } == [[1, 12]],
            "amixer cset ringer 12 gave \(describe(changes))"
        )
        let sset = try amixer("-c Loopback sset 'Hush System' 50%").orFail("amixer did not run")
        try require(sset.status == 0, "amixer sset 'Hush System' 50% failed: \(sset.output)")
        let fromPercent = drainChanges(controls)
        try require(
            fromPercent.map { [$0.kind == .system ? 0 : 1, $0.step.rawValue] } == [[0, 8]],
            "amixer sset 'Hush System' 50% gave \(describe(fromPercent))"
        )
        let refused = try amixer("-c Loopback cset name='Hush Silence Switch' off").orFail("amixer did not run")
        print(
            "  amixer cset name='Hush Silence Switch' off → exit \(refused.status): "
                + refused.output.split(separator: "\n").joined(separator: " / ")
        )
        try require(
            refused.status != 0 && refused.output.contains("Operation not permitted"),
            "amixer could write the silence switch: \(refused.output)"
        )
        try require(try ALSAElementClient(card: "Loopback").read(silenceSwitch) == 1, "the switch moved")
    },
    Check(name: "volume-controls-card-gone-and-back") {
        // As in alsa-card-gone-and-back: the unbind waits for every handle on the card, so it runs in the
        // background while hush notices and lets go.
        let driver = "/sys/bus/platform/drivers/snd_dummy"
        let controls = try ALSAVolumeControls(
            card: "Dummy",
            values: values(6, 7, silent: true),
            retryInterval: .milliseconds(100),
            logger: logger
        )
        defer { controls.remove() }
        try require(system("echo snd_dummy.0 > \(driver)/unbind &") == 0, "could not start the unbind")
        let gone = drainChanges(controls, until: { !controls.isPresent })
        try require(gone.isEmpty, "the card going reported \(describe(gone))")
        try require(!controls.isPresent, "hush did not notice the card going")
        try require(controls.nextDeadline != nil, "hush is not retrying")
        var waited = 0
        while readFile("/proc/asound/cards")?.contains("Dummy") == true && waited < 50 {
            sleep(.milliseconds(100))
            waited += 1
        }
        try require(readFile("/proc/asound/cards")?.contains("Dummy") != true, "the Dummy card is still there")
        // Volumes change while the card is away; the controls come back with the new values.
        try controls.set(.system, VolumeStep(clamping: 12))
        try controls.setSilence(false)
        _ = drainChanges(controls, quiet: .milliseconds(300))
        try require(!controls.isPresent, "controls present without a card")
        try writeFile("\(driver)/bind", "snd_dummy.0")
        let back = drainChanges(controls, until: { controls.isPresent })
        try require(controls.isPresent, "the controls did not come back with the card")
        try require(back.isEmpty, "the card's return reported \(describe(back))")
        let client = try ALSAElementClient(card: "Dummy")
        try expectValues(client, [12, 7, 0], "after the card returned")
        try require(client.info(silenceSwitch)?.lockedBy == getpid(), "the switch is not locked again")
        try client.write(ringerVolume, 2)
        let change = drainChanges(controls)
        try require(
            change.map { [$0.kind == .system ? 0 : 1, $0.step.rawValue] } == [[1, 2]],
            "a change after the return gave \(describe(change))"
        )
    },
]

extension Optional {
    fileprivate func orFail(_ message: @autoclosure () -> String) throws -> Wrapped {
        guard let self else { throw CheckFailure(message()) }
        return self
    }
}
