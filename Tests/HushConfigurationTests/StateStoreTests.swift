import Foundation
import HushCore
import HushTesting
import Logging
import Synchronization
import Testing

@testable import HushConfiguration

#if canImport(Glibc)
import Glibc
#endif

/// The state file on a real file system, in a temporary directory per test.
@Suite("state file")
struct StateStoreTests {
    static let sample = PersistedVolumes(
        system: [.speaker: VolumeStep(clamping: 8), .headphones: VolumeStep(clamping: 5)],
        ringer: VolumeStep(clamping: 11),
        routeOverride: .headphones
    )

    @Test("what is saved is what the next start loads; the text is the documented TOML")
    func roundTrip() throws {
        let directory = try ScratchDirectory(prefix: "hush-state")
        let path = directory.path + "/state"
        let (logger, log) = RecordingLogHandler.logger(label: "hush.state.test", level: .debug)
        let store = StateStore(path: path, logger: logger)
        store.save(Self.sample, now: .zero)
        #expect(!store.hasPendingWrite)
        #expect(StateStore(path: path, logger: logger).load() == Self.sample)
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text.contains("schema = 1\nringer = 11\nroute_override = \"headphones\"\n\n[system]\n"))
        #expect(text.hasSuffix("[system]\nheadphones = 5\nspeaker = 8\n"))
        #expect(log.messages(at: .error).isEmpty)
        #expect(
            log.messages(at: .info).last
                == "volumes restored from \(path): system headphones 5, speaker 8; ringer 11; route override headphones"
        )

        let plain = PersistedVolumes(system: [Route("line out"): .maximum], ringer: .minimum)
        store.flushNow()
        store.save(plain, now: .milliseconds(5000))
        #expect(StateStore(path: path, logger: logger).load() == plain)
    }

    @Test("the week's sound dose (R29): written with the volumes at most once a minute, at a clean stop, read back")
    func soundDose() throws {
        let directory = try ScratchDirectory(prefix: "hush-state")
        let path = directory.path + "/state"
        let (logger, _) = RecordingLogHandler.logger(label: "hush.state.test", level: .debug)
        let store = StateStore(path: path, logger: logger)
        func onDisk() -> String? {
            (try? String(contentsOfFile: path, encoding: .utf8)).flatMap {
                try? StateStore.decodeState($0, path: path).soundDose
            }
        }
        store.saveSoundDose("492107:0.01", volumes: Self.sample, now: .milliseconds(100000))
        #expect(onDisk() == "492107:0.01", "the first is written at once")
        store.saveSoundDose("492107:0.02", volumes: Self.sample, now: .milliseconds(101000))
        store.saveSoundDose("492107:0.03", volumes: Self.sample, now: .milliseconds(159000))
        #expect(onDisk() == "492107:0.01", "then at most once a minute")
        store.saveSoundDose("492107:0.04", volumes: Self.sample, now: .milliseconds(160000))
        #expect(onDisk() == "492107:0.04")
        store.saveSoundDose("492107:0.05,492108:0.001", volumes: Self.sample, now: .milliseconds(170000))
        store.flushNow()
        #expect(onDisk() == "492107:0.05,492108:0.001", "a clean stop writes what waits")
        // A volume change writes the dose known so far beside it.
        store.saveSoundDose("492107:0.05,492108:0.002", volumes: Self.sample, now: .milliseconds(175000))
        store.save(PersistedVolumes(system: [:], ringer: .minimum), now: .milliseconds(200000))
        #expect(onDisk() == "492107:0.05,492108:0.002")
        let again = StateStore(path: path, logger: logger)
        #expect(again.load() == PersistedVolumes(system: [:], ringer: .minimum))
        #expect(again.soundDose == "492107:0.05,492108:0.002")
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text.contains("sound_dose = \"492107:0.05,492108:0.002\"\n"))
        // A file without one (every file before R29) reads as no dose.
        #expect(try StateStore.decodeState("schema = 1\nringer = 4\n", path: path).soundDose == "")
    }

    @Test("no file: the defaults, said as info, and nothing set aside")
    func missingFile() throws {
        let directory = try ScratchDirectory(prefix: "hush-state")
        let (logger, log) = RecordingLogHandler.logger(label: "hush.state.test", level: .debug)
        #expect(StateStore(path: directory.path + "/state", logger: logger).load() == nil)
        #expect(
            log.messages(at: .info) == [
                "no state file at \(directory.path)/state yet; starting from the default volumes"
            ]
        )
        #expect(log.messages(at: .error).isEmpty)
        #expect(try directory.entries().isEmpty)
    }

    @Test("the directory is created when missing, with mode 0755")
    func createsDirectory() throws {
        let directory = try ScratchDirectory(prefix: "hush-state")
        let path = directory.path + "/var/lib/hush/state"
        let store = StateStore(
            path: path,
            logger: RecordingLogHandler.logger(label: "hush.state.test", level: .debug).0
        )
        store.save(Self.sample, now: .zero)
        var status = stat()
        #expect(stat(directory.path + "/var/lib/hush", &status) == 0)
        #expect(status.st_mode & 0o7777 == 0o755)
        #expect(
            StateStore(path: path, logger: RecordingLogHandler.logger(label: "hush.state.test", level: .debug).0).load()
                == Self.sample
        )
    }

    @Test("a temporary file left by a crash before the rename is ignored, and the next write replaces it")
    func strayTemporaryFile() throws {
        let directory = try ScratchDirectory(prefix: "hush-state")
        let path = directory.path + "/state"
        StateStore(path: path, logger: RecordingLogHandler.logger(label: "hush.state.test", level: .debug).0).save(
            Self.sample,
            now: .zero
        )
        // What a crash between write and rename leaves: a half-written temporary file beside the old state.
        try "schema = 1\nringer = 3\n[sys".write(toFile: path + ".tmp", atomically: false, encoding: .utf8)
        let (logger, log) = RecordingLogHandler.logger(label: "hush.state.test", level: .debug)
        let store = StateStore(path: path, logger: logger)
        #expect(store.load() == Self.sample)
        #expect(log.messages(at: .error).isEmpty)
        var changed = Self.sample
        changed.ringer = .maximum
        store.save(changed, now: .zero)
        #expect(try directory.entries() == ["state"])
        #expect(StateStore(path: path, logger: logger).load() == changed)
    }

    @Test("at most one write per interval; the last wish wins; flush writes at the deadline")
    func rateLimit() throws {
        let directory = try ScratchDirectory(prefix: "hush-state")
        let path = directory.path + "/state"
        let store = StateStore(
            path: path,
            interval: .seconds(1),
            logger: RecordingLogHandler.logger(label: "hush.state.test", level: .debug).0
        )
        func onDisk() -> VolumeStep? {
            (try? String(contentsOfFile: path, encoding: .utf8)).flatMap {
                try? StateStore.decode($0, path: path).ringer
            }
        }
        func volumes(ringer: Int) -> PersistedVolumes {
            PersistedVolumes(system: [.speaker: VolumeStep(clamping: 4)], ringer: VolumeStep(clamping: ringer))
        }
        #expect(store.nextDeadline == nil)
        store.save(volumes(ringer: 1), now: .milliseconds(10_000))
        #expect(onDisk()?.rawValue == 1)
        #expect(store.nextDeadline == nil)

        store.save(volumes(ringer: 2), now: .milliseconds(10_200))
        store.save(volumes(ringer: 3), now: .milliseconds(10_400))
        #expect(onDisk()?.rawValue == 1)
        #expect(store.nextDeadline == .milliseconds(11_000))
        store.flush(now: .milliseconds(10_999))
        #expect(onDisk()?.rawValue == 1)
        store.flush(now: .milliseconds(11_000))
        #expect(onDisk()?.rawValue == 3)
        #expect(store.nextDeadline == nil)

        // A save a full interval after the last write goes out at once.
        store.save(volumes(ringer: 4), now: .milliseconds(12_000))
        #expect(onDisk()?.rawValue == 4)
        // Shutdown writes what waits, whatever the interval.
        store.save(volumes(ringer: 5), now: .milliseconds(12_001))
        #expect(onDisk()?.rawValue == 4)
        store.flushNow()
        #expect(onDisk()?.rawValue == 5)
        #expect(store.nextDeadline == nil)
        store.flushNow()
        #expect(onDisk()?.rawValue == 5)
    }

    /// One way a state file can be wrong, and the words the log line must contain.
    struct Corruption: Sendable, CustomStringConvertible {
        let description: String
        let text: String
        let expected: String
    }

    static let corruptions = [
        Corruption(description: "empty", text: "", expected: "is corrupt: the file is empty"),
        Corruption(
            description: "bad syntax",
            text: "schema = 1\nringer = 4\n[system\nspeaker = 3\n",
            expected: "line 3 is corrupt: bad syntax: "
        ),
        Corruption(
            description: "no schema",
            text: "ringer = 4\n",
            expected: "is corrupt: it has no 'schema' version (this hushd writes schema = 1)"
        ),
        Corruption(
            description: "another schema",
            text: "# written by a later hush\nschema = 2\nringer = 4\n",
            expected: "line 2 is corrupt: schema version 2 is not 1, the one this hushd reads"
        ),
        Corruption(
            description: "ringer out of range",
            text: "schema = 1\nringer = 40\n",
            expected: "line 2 is corrupt: ringer = 40 is not a volume step (a whole number from 0 to 16)"
        ),
        Corruption(
            description: "system volume out of range",
            text: "schema = 1\nringer = 4\n\n[system]\nspeaker = 3\nheadphones = -1\n",
            expected: "line 6 is corrupt: [system] headphones = -1 is not a volume step"
        ),
        Corruption(
            description: "volume not a number",
            text: "schema = 1\nringer = \"loud\"\n",
            expected: "line 2 is corrupt: ringer = \"loud\" is not a volume step"
        ),
        Corruption(
            description: "unknown route",
            text: "schema = 1\nringer = 4\n\n[system]\nspeaker = 3\nhdmi = 7\n",
            expected: "line 6 is corrupt: [system] hdmi names route 'hdmi', which this board does not have "
                + "(routes: headphones, speaker)"
        ),
        Corruption(
            description: "unknown route override",
            text: "schema = 1\nringer = 4\nroute_override = \"hdmi\"\n",
            expected: "line 3 is corrupt: route_override names route 'hdmi', which this board does not have"
        ),
        Corruption(
            description: "unknown key",
            text: "schema = 1\nringer = 4\nringtone = \"bell.wav\"\n",
            expected: "line 3 is corrupt: unknown key 'ringtone' (schema 1 has ringer, route_override, schema, "
                + "sound_dose, system)"
        ),
        Corruption(
            description: "a sound dose that is not HOUR:DOSE",
            text: "schema = 1\nringer = 4\nsound_dose = \"492107:-0.5\"\n",
            expected: "line 3 is corrupt: sound_dose = \"492107:-0.5\" is not the week's dose"
        ),
        Corruption(
            description: "a sound dose that is a number",
            text: "schema = 1\nringer = 4\nsound_dose = 3\n",
            expected: "line 3 is corrupt: sound_dose = 3 is not the week's dose"
        ),
        Corruption(description: "missing ringer", text: "schema = 1\n", expected: "it has no 'ringer' volume"),
    ]

    @Test(
        "a corrupt file is set aside, kept, and named in one error line; the defaults are used",
        arguments: corruptions
    )
    func corruptFileIsSetAside(_ corruption: Corruption) throws {
        let directory = try ScratchDirectory(prefix: "hush-state")
        let path = directory.path + "/state"
        try corruption.text.write(toFile: path, atomically: false, encoding: .utf8)
        let (logger, log) = RecordingLogHandler.logger(label: "hush.state.test", level: .debug)
        let store = StateStore(path: path, knownRoutes: [.speaker, .headphones], logger: logger)
        #expect(store.load() == nil)

        let entries = try directory.entries()
        #expect(entries.count == 1)
        let copy = try #require(entries.first)
        #expect(copy.hasPrefix("state.corrupt-") && copy.hasSuffix("Z"), "set aside as \(copy)")
        #expect(try String(contentsOfFile: directory.path + "/" + copy, encoding: .utf8) == corruption.text)

        let errors = log.messages(at: .error)
        #expect(errors.count == 1)
        let line = try #require(errors.first)
        #expect(line.hasPrefix("state file \(path) "), "\(line)")
        #expect(line.contains(corruption.expected), "\(line)")
        #expect(
            line.hasSuffix("; set aside as \(directory.path)/\(copy); starting from the default volumes"),
            "\(line)"
        )

        // The next save writes a good file; the copy stays.
        store.save(Self.sample, now: .zero)
        // Seen once in a full parallel run on a loaded machine (not alone): say what was there and what was logged.
        let after = try directory.entries()
        #expect(
            after == [copy, "state"].sorted(),
            "entries \(after); log \(log.messages(at: .error) + log.messages(at: .warning))"
        )
    }

    @Test("bytes that are not UTF-8 are corrupt too")
    func notUTF8() throws {
        let directory = try ScratchDirectory(prefix: "hush-state")
        let path = directory.path + "/state"
        try Data([0x73, 0x63, 0xFF, 0xFE, 0x0A]).write(to: URL(fileURLWithPath: path))
        let (logger, log) = RecordingLogHandler.logger(label: "hush.state.test", level: .debug)
        #expect(StateStore(path: path, logger: logger).load() == nil)
        #expect(log.messages(at: .error).first?.contains("is corrupt: it is not UTF-8 text; set aside as ") == true)
    }

    @Test("two corrupt files in the same second keep both copies")
    func corruptCopiesDoNotCollide() throws {
        let directory = try ScratchDirectory(prefix: "hush-state")
        let path = directory.path + "/state"
        for _ in 0..<2 {
            try "garbage".write(toFile: path, atomically: false, encoding: .utf8)
            #expect(
                StateStore(path: path, logger: RecordingLogHandler.logger(label: "hush.state.test", level: .debug).0)
                    .load() == nil
            )
        }
        let copies = try directory.entries()
        #expect(copies.count == 2)
        #expect(copies.allSatisfy { $0.hasPrefix("state.corrupt-") })
    }

    @Test("a directory that cannot be created: logged once, retried, written once it can be")
    func unwritableDirectory() throws {
        let directory = try ScratchDirectory(prefix: "hush-state")
        // A regular file where the state directory should be: mkdir fails with ENOTDIR for root and others alike.
        let blocker = directory.path + "/lib"
        try "not a directory".write(toFile: blocker, atomically: false, encoding: .utf8)
        let path = blocker + "/hush/state"
        let (logger, log) = RecordingLogHandler.logger(label: "hush.state.test", level: .debug)
        let store = StateStore(path: path, retryInterval: .seconds(5), logger: logger)

        store.save(Self.sample, now: .zero)
        #expect(store.hasPendingWrite)
        #expect(store.nextDeadline == .milliseconds(5000))
        store.flush(now: .milliseconds(5000))
        store.save(Self.sample, now: .milliseconds(12_000))
        #expect(store.hasPendingWrite)
        #expect(
            log.messages(at: .error) == [
                "cannot look at directory \(blocker)/hush: Not a directory [errno 20]; the volumes are kept in "
                    + "memory and written when this is fixed (retrying every 5000 ms; this kind of failure is not "
                    + "logged again)"
            ]
        )

        unlink(blocker)
        store.flush(now: .milliseconds(17_000))
        #expect(!store.hasPendingWrite)
        #expect(log.messages(at: .notice) == ["state file \(path) written again"])
        #expect(StateStore(path: path, logger: logger).load() == Self.sample)
    }

    @Test("a directory hush may not write to: permission denied, logged once, never a crash")
    func permissionDenied() throws {
        let directory = try ScratchDirectory(prefix: "hush-state")
        // Root writes through any mode bits, but not into sysfs.
        let parent = geteuid() == 0 ? "/sys/kernel" : directory.path + "/locked"
        if geteuid() != 0 {
            #expect(mkdir(parent, 0o555) == 0)
        }
        let path = parent + "/hush-state-test"
        let (logger, log) = RecordingLogHandler.logger(label: "hush.state.test", level: .debug)
        let store = StateStore(path: path, logger: logger)
        store.save(Self.sample, now: .zero)
        store.flush(now: .milliseconds(10_000))
        store.flushNow()
        #expect(store.hasPendingWrite)
        let errors = log.messages(at: .error)
        #expect(errors.count == 1)
        #expect(
            errors.first?.hasPrefix(
                "cannot create \(path).tmp: permission denied; the hush user must own the state directory [errno 13]"
            ) == true,
            "\(errors)"
        )
    }

    @Test("a corrupt file that cannot be set aside is still not used, and the log says why")
    func corruptFileInReadOnlyPlace() throws {
        // /proc/version is text that is not a state file, in a directory where nothing can be renamed.
        let (logger, log) = RecordingLogHandler.logger(label: "hush.state.test", level: .debug)
        #expect(StateStore(path: "/proc/version", logger: logger).load() == nil)
        let line = try #require(log.messages(at: .error).first)
        #expect(line.hasPrefix("state file /proc/version line 1 is corrupt: bad syntax: "), "\(line)")
        #expect(line.contains("; could not set it aside ("), "\(line)")
    }
}

// MARK: Killing a writer at random moments

/// The environment variable that turns this test binary into a state writer (see ``writerProcess()``).
private let writerVariable = "HUSH_STATE_WRITER"

/// Volumes that encode a counter: a torn or mixed file cannot decode to a consistent one.
private func volumes(encoding counter: Int) -> PersistedVolumes {
    let digits = (0..<4).map { VolumeStep(clamping: counter / Int(pow(17, Double($0))) % 17) }
    return PersistedVolumes(
        system: [.speaker: digits[1], .headphones: digits[2], Route("lineout"): digits[3]],
        ringer: digits[0],
        routeOverride: counter % 2 == 1 ? Route("lineout") : nil
    )
}

/// The counter `volumes` encode, or nil when they are not an encoding of one.
private func counter(of volumes: PersistedVolumes) -> Int? {
    guard volumes.system.count == 3, let speaker = volumes.system[.speaker],
        let headphones = volumes.system[.headphones], let lineout = volumes.system[Route("lineout")]
    else { return nil }
    let value =
        volumes.ringer.rawValue + 17 * speaker.rawValue + 289 * headphones.rawValue + 4913 * lineout.rawValue
    return (value % 2 == 1) == (volumes.routeOverride == Route("lineout")) ? value : nil
}

@Suite("state file under SIGKILL")
struct StateStoreKillTests {
    /// Not a test of its own: the body of the writer process that ``killedWriter()`` starts (this test binary again,
    /// through /proc/self/exe, with `HUSH_STATE_WRITER` set). It saves ever higher counters as fast as it can until
    /// it is killed, or gives up after 20 s or when its parent is gone, so it can never outlive the test run.
    @Test(.enabled(if: ProcessInfo.processInfo.environment[writerVariable] != nil))
    func writerProcess() {
        let environment = ProcessInfo.processInfo.environment
        guard let path = environment[writerVariable],
            let start = environment["HUSH_STATE_WRITER_START"].flatMap(Int.init)
        else { return }
        let parent = getppid()
        let store = StateStore(
            path: path,
            interval: .zero,
            logger: Logger(label: "writer") { _ in SwiftLogNoOpLogHandler() }
        )
        var value = start
        let deadline = time(nil) + 20
        while getppid() == parent && time(nil) < deadline {
            store.save(volumes(encoding: value), now: .zero)
            store.flushNow()
            value += 1
        }
    }

    /// Why a child process and not fork(): the test runner is multithreaded, and after fork() the child may only
    /// call async-signal-safe functions until it execs — Swift's runtime and malloc are not. So the writer is a
    /// fresh process of this same binary, started with posix_spawn, that runs only ``writerProcess()``.
    ///
    /// A SIGKILL is a process crash, not a power cut: the page cache survives it, so this shows that no moment of
    /// the write sequence leaves a torn or missing file behind; the fsyncs' part against a power cut is argued in
    /// docs/state-and-controls.md.
    @Test("a writer killed at random moments always leaves the old state or the new, never a broken file")
    func killedWriter() throws {
        let directory = try ScratchDirectory(prefix: "hush-state")
        let path = directory.path + "/state"
        let (logger, log) = RecordingLogHandler.logger(label: "hush.state.test", level: .debug)
        StateStore(path: path, logger: logger).save(volumes(encoding: 0), now: .zero)
        var generator = SystemRandomNumberGenerator()
        var last = 0
        var strayTemporaryFiles = 0
        let rounds = 32
        for round in 0..<rounds {
            let child = try spawnWriter(path: path, start: last + 1)
            // Wait until the writer is writing, then kill it at a random moment of its loop.
            let started = Date()
            while currentCounter(path) == last && Date().timeIntervalSince(started) < 10 { usleep(200) }
            usleep(UInt32.random(in: 0..<3000, using: &generator))
            kill(child, SIGKILL)
            var status: Int32 = 0
            while waitpid(child, &status, 0) == -1 && errno == EINTR {}

            if access(path + ".tmp", F_OK) == 0 { strayTemporaryFiles += 1 }
            let loaded = try #require(
                StateStore(path: path, logger: logger).load(),
                "round \(round): the state file did not load"
            )
            let value = try #require(counter(of: loaded), "round \(round): a mixed state \(loaded)")
            #expect(value > last, "round \(round): the writer made no progress (counter \(value), before \(last))")
            last = value
        }
        #expect(log.messages(at: .error).isEmpty)
        #expect(try directory.entries().allSatisfy { $0 == "state" || $0 == "state.tmp" })
        print(
            "killed writer: \(rounds) rounds, \(last) states written, \(strayTemporaryFiles) kills left a temporary file"
        )
    }

    private func currentCounter(_ path: String) -> Int? {
        (try? String(contentsOfFile: path, encoding: .utf8))
            .flatMap { try? StateStore.decode($0, path: path) }
            .flatMap(counter(of:))
    }

    /// This test binary again, running only the writer, with its output discarded.
    private func spawnWriter(path: String, start: Int) throws -> pid_t {
        let executable = "/proc/self/exe"
        let arguments = [
            executable, "--testing-library", "swift-testing", "--filter", "StateStoreKillTests/writerProcess",
        ]
        var environment = ProcessInfo.processInfo.environment
        environment[writerVariable] = path
        environment["HUSH_STATE_WRITER_START"] = String(start)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        guard result == 0 else {
            throw StateTestFailure(
                "cannot start the writer process \(executable): \(String(cString: strerror(result)))"
            )
        }
        return pid
    }
}

// MARK: Helpers

private struct StateTestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Records what the store logs, by level.

/// The state file is hushd's own: a line in any other shape is damage, refused by its own reader with the line's
/// number (no TOML parser reads it; toml++ once aborted hushd on four bytes of it: Fuzz/Regressions/fuzz-state).
@Suite("State file shape")
struct StateFileShapeTests {
    @Test(
        "damage is refused with its line; what hushd writes, and hand edits in the same shape, pass",
        arguments: [
            ("schema = [[[}[[[[\nr= 10\n[sy(tem]\n", 1),
            ("schema = 1\nringer = 10\n[system]\nspeaker = 8 8\n", 4),
            ("schema = 1\n[sys\n", 2),
            ("schema = 1\nringer =\n", 2),
            ("schema = 1\n\"spe\\qaker\" = 3\n", 2),
            ("schema = 1\nringer = 1\nringer = 2\n", 3),
            ("schema = 1\n[system]\nspeaker = 1\n[system]\n", 4),
            ("schema = 1\n'speaker' = 1\n", 2),
            ("schema = 1\nringer = 0x10\n", 2),
            ("schema = 1\nroute_override = \"speaker\n", 2),
            ("schema = 1\nringer = 99999999999999999999999\n", 2),
        ]
    )
    func damage(text: String, line: Int) throws {
        #expect {
            _ = try StateStore.decode(text, path: "/var/lib/hush/state")
        } throws: { error in
            guard let error = error as? StateFileCorruption else { return false }
            return error.line == line && error.problem.hasPrefix("bad syntax: ")
        }
    }

    @Test("what hushd writes has the shape, comments and spaces included")
    func written() throws {
        let volumes = PersistedVolumes(
            system: [.speaker: VolumeStep(clamping: 9), Route("line-out"): VolumeStep(clamping: 3)],
            ringer: VolumeStep(clamping: 5),
            routeOverride: .headphones
        )
        let text = StateStore.encode(volumes)
        #expect(try StateStore.decode(text, path: "state") == volumes)
        let edited = "  schema = 1   # by hand\r\nringer=7\n\n[system]  # routes\n\"speaker\" = 4\n"
        let entries = try StateStore.entries(in: edited, path: "state")
        #expect(entries.top.map(\.line) == [1, 2] && entries.system?.map(\.key) == ["speaker"])
        #expect(entries.system?.first?.line == 5)
        #expect(try StateStore.decode(edited, path: "state").ringer == VolumeStep(clamping: 7))
        // A route name with every character quoted() escapes comes back as it went out.
        let odd = Route("a \"b\" \\ c\td\u{1}")
        let strange = PersistedVolumes(
            system: [odd: VolumeStep(clamping: 2)],
            ringer: VolumeStep(clamping: 1),
            routeOverride: odd
        )
        #expect(try StateStore.decode(StateStore.encode(strange), path: "state") == strange)
    }
}
