// swift-tools-version:6.0
// hush — phone-like audio behaviour for headless Linux boards.
//
// Dependencies point downward only:
//   C libraries (CALSA, CGPIOD, CEvdev, CSndfile, CSamplerate)
//     → one adapter each (HushALSA, HushGPIO, HushInput)
//   HushCore (vocabulary, hardware protocols) ← HushPolicy (pure) ← HushDaemon ← hushd
//   HushCore ← HushProtocol (control socket messages) ← HushDaemon, hushctl
//   HushTesting (deterministic fakes) is used by tests only.
import PackageDescription

let package = Package(
    name: "hush",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "hushd", targets: ["hushd"]),
        .executable(name: "hushctl", targets: ["hushctl"]),
        .executable(name: "hush-render", targets: ["hush-render"]),
        .library(name: "HushCore", targets: ["HushCore"]),
        .library(name: "HushPolicy", targets: ["HushPolicy"]),
        .library(name: "HushTesting", targets: ["HushTesting"]),
        .library(name: "HushMixer", targets: ["HushMixer"]),
        .library(name: "HushAudioFile", targets: ["HushAudioFile"]),
        // For the fuzz harnesses and benchmarks (Fuzz/, Benchmarks/: packages of their own).
        .library(name: "HushConfiguration", targets: ["HushConfiguration"]),
        .library(name: "HushRender", targets: ["HushRender"]),
        .library(name: "HushProtocol", targets: ["HushProtocol"]),
        // For the benchmarks' stream figures (hush-mixbench streams, latency).
        .library(name: "HushStreams", targets: ["HushStreams"]),
        // For the benchmarks' voice figures.
        .library(name: "HushVoice", targets: ["HushVoice"]),
        // For the benchmarks' level meter figures.
        .library(name: "HushHearing", targets: ["HushHearing"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
    ],
    targets: [
        // MARK: System libraries (Debian packages named in `providers`; the Makefile installs them).
        .systemLibrary(name: "CALSA", pkgConfig: "alsa", providers: [.apt(["libasound2-dev"])]),
        .systemLibrary(name: "CGPIOD", pkgConfig: "libgpiod", providers: [.apt(["libgpiod-dev"])]),
        .systemLibrary(name: "CEvdev", pkgConfig: "libevdev", providers: [.apt(["libevdev-dev"])]),
        .systemLibrary(name: "CLinux"),
        // The shared-memory stream layout (hush_wire.h), shared with the `hush` ALSA plugin, which is C and built
        // by the Makefile (Sources/hush-alsa-plugin): a SwiftPM library would carry the Swift runtime into mpd.
        .systemLibrary(name: "CHushWire"),
        .systemLibrary(name: "CSamplerate", pkgConfig: "samplerate", providers: [.apt(["libsamplerate0-dev"])]),

        // toml++ (libtomlplusplus-dev, header-only C++) behind a plain C API: hushd's configuration parser. Its
        // .cpp says why its checks throw instead of abort.
        .target(name: "CTOMLShim"),
        // libsndfile (libsndfile1-dev's header; the library and its seven codecs loaded with dlopen the first time a
        // sound file is used, not at hushd's start: CSndfile.h says why).
        .target(name: "CSndfile"),
        // webrtc-audio-processing (libwebrtc-audio-processing-dev: 0.3 on bookworm, 1.x on trixie) behind a plain C
        // API, one branch per generation: the voice processing of `voiceChat` (echo cancellation, noise suppression,
        // high-pass, automatic gain). The library is opened with dlopen when the first processor is made, not linked:
        // only its headers are needed here, under the include directory each generation's .pc names, reached
        // through `system-include` (a link to /usr/include: a header search path must lie inside the target; in the
        // cross build's chroot it is the sysroot's). The one that is missing is an -I clang ignores.
        .target(
            name: "CVoiceProcessing",
            exclude: ["system-include"],
            cxxSettings: [
                .headerSearchPath("system-include/webrtc_audio_processing"),
                .headerSearchPath("system-include/webrtc-audio-processing-1"),
            ]
        ),

        // MARK: Vocabulary and policy.
        .target(name: "HushCore"),
        .target(name: "HushPolicy", dependencies: ["HushCore"]),
        .target(
            name: "HushTesting",
            dependencies: [
                "CLinux", "HushCore", "HushPolicy", "HushSystem", "HushALSA", "HushGPIO", "HushInput", "HushProtocol",
                "HushControlServer", .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The control socket's messages, codec and human-readable text: shared by hushd and hushctl.
        .target(name: "HushProtocol", dependencies: ["HushCore"]),

        // MARK: Adapters: the only targets that import their C library.
        .target(
            name: "HushALSA",
            dependencies: ["CALSA", "HushCore", .product(name: "Logging", package: "swift-log")]
        ),
        .target(
            name: "HushGPIO",
            dependencies: ["CGPIOD", "HushCore", .product(name: "Logging", package: "swift-log")]
        ),
        .target(
            name: "HushInput",
            dependencies: ["CEvdev", "HushCore", .product(name: "Logging", package: "swift-log")]
        ),
        .target(name: "HushAudioFile", dependencies: ["CSndfile", "CSamplerate", "HushCore"]),
        // The microphone's voice processing (`VoiceProcessor`): run by a thread of its own, never the mixer's.
        .target(name: "HushVoice", dependencies: ["CVoiceProcessing", "HushCore"]),
        // Hearing safety: the A-weighted level of what a private route plays, and the week's sound dose. Pure
        // computation, for a thread of its own fed with the mix, never the mixer's.
        .target(name: "HushHearing"),

        // MARK: The real-time mixer: no C library, no allocation or locks on the render path.
        // Built like every other target: no unsafeFlags on a target a product exports (SwiftPM refuses a package
        // whose product carries them as a versioned dependency). It used to be -O even in debug builds; what that
        // was for holds without it: RenderAllocationTests and AudioOutputThreadTests count 0 allocations per period
        // in a debug build, and the @_noAllocation checks run at -Onone. The cost is speed in debug builds only:
        // a 64-frame period of three voices renders in 57 µs instead of 0.3 µs, `hush-render` runs 40× slower
        // (600 s of the soak scenario in 20 s instead of 0.5 s), HushMixerTests take 1.0 s instead of 0.6 s.
        // Release builds (deploy/install.sh, make bench) are unchanged (docs/architecture.md, "Build settings").
        .target(name: "HushMixer", dependencies: ["HushCore"]),

        // MARK: The daemon's concerns, one target each (docs/architecture.md).
        // System calls hushd makes beyond the adapters: threads, clocks, terminals, Unix sockets, signals, systemd.
        .target(
            name: "HushSystem",
            dependencies: ["CLinux", "HushCore", .product(name: "Logging", package: "swift-log")]
        ),
        // hushd.toml and board profiles into checked domain values; the state file.
        .target(
            name: "HushConfiguration",
            dependencies: [
                "CTOMLShim", "HushCore", "HushPolicy", "HushALSA", "HushGPIO", "HushInput", "HushProtocol",
                "HushSystem", "HushHearing",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The console: line editing, the serial line, the one command grammar, the policy console.
        .target(
            name: "HushConsole",
            dependencies: [
                "CLinux", "HushCore", "HushPolicy", "HushSystem", .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Sound out: the real-time audio thread, PCM outputs and the WAV fallback, sounds fed to the mixer.
        // Applications' streams through the `hush` ALSA device: shared memory, the playback voice, capture delivery.
        .target(
            name: "HushStreams",
            dependencies: ["CHushWire", "CLinux", "HushCore", "HushMixer", "HushAudioFile", "HushSystem", "HushVoice"]
        ),
        .target(
            name: "HushOutput",
            dependencies: [
                "HushCore", "HushPolicy", "HushALSA", "HushAudioFile", "HushMixer", "HushSystem", "HushHearing",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The control socket's server: clients, framing, limits, peer credentials.
        .target(
            name: "HushControlServer",
            dependencies: ["HushCore", "HushProtocol", "HushSystem", .product(name: "Logging", package: "swift-log")]
        ),
        // Scenarios: the renderer and live scenario playback (`hushd play`), with what a render records.
        .target(
            name: "HushRender",
            dependencies: [
                "HushCore", "HushPolicy", "HushALSA", "HushAudioFile", "HushMixer", "HushOutput", "HushConsole",
                "HushConfiguration", "HushStreams", "HushSystem", .product(name: "Logging", package: "swift-log"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),

        // MARK: Wiring and executables.
        .target(
            name: "HushDaemon",
            dependencies: [
                "HushCore", "HushPolicy", "HushALSA", "HushGPIO", "HushInput", "HushAudioFile", "HushMixer",
                "HushProtocol", "HushSystem", "HushConfiguration", "HushConsole", "HushOutput", "HushControlServer",
                "HushStreams", "HushVoice", "CHushWire", "HushHearing",
                "HushRender", .product(name: "Logging", package: "swift-log"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // hush-render's command line and the timeline picture (SVG): linked into hush-render only, never into the
        // board's hushd (.ci/check-hushd-links.sh checks the release hushd's symbols).
        .target(
            name: "HushRenderTool",
            dependencies: [
                "HushCore", "HushPolicy", "HushConfiguration", "HushConsole", "HushSystem", "HushRender",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(name: "hushd", dependencies: ["HushDaemon"]),
        // The offline tools (render, the timeline picture, the soak's footprint): not on the board's hushd.
        .executableTarget(name: "hush-render", dependencies: ["HushRenderTool"]),
        // A thin client: the protocol and argument parsing, never the daemon.
        .executableTarget(
            name: "hushctl",
            dependencies: ["HushProtocol", .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),
        // Runs inside the virtual board (board/virtual): the adapters against real kernel drivers.
        .executableTarget(
            name: "hush-vboard-check",
            dependencies: [
                "HushCore", "HushPolicy", "HushGPIO", "HushInput", "HushALSA", "HushTesting",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Runs inside the virtual board too: applications' streams through the `hush` ALSA device (aplay, arecord),
        // heard on the loopback, with hushd's microphone and its light.
        .executableTarget(
            name: "hush-vboard-streams",
            dependencies: ["HushCore", "HushALSA", "HushTesting"]
        ),
        // Runs inside the virtual board too: a call's echo through hushd (the far end through the `hush` device, an
        // echo room on the loopback), cancelled in voiceChat and not in default mode.
        .executableTarget(
            name: "hush-vboard-voice",
            dependencies: ["HushCore", "HushALSA", "HushTesting"]
        ),
        // Runs inside the virtual board too: a figure, not a check: how long a sound takes from aplay's start to the
        // loopback through plain hw:, dmix and hush, and the way in (make latency).
        .executableTarget(
            name: "hush-vboard-latency",
            dependencies: ["HushCore", "HushALSA", "HushTesting"]
        ),

        // MARK: Tests.
        // Replaces the test executable's malloc and friends to count allocations per thread: the tests that hold
        // the real-time path to zero allocations per period. Never a product; nothing else links it.
        .target(name: "CAllocationCounter", path: "Tests/CAllocationCounter"),
        .testTarget(name: "HushCoreTests", dependencies: ["HushCore", "HushTesting"]),
        .testTarget(
            name: "HushGPIOTests",
            dependencies: ["HushGPIO", "HushCore", "HushTesting", .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(
            name: "HushInputTests",
            dependencies: ["HushInput", "HushCore", "HushTesting", .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(
            name: "HushALSATests",
            dependencies: ["HushALSA", "HushCore", "HushTesting", .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(name: "HushAudioFileTests", dependencies: ["HushAudioFile", "HushCore", "HushTesting"]),
        // speexdsp's echo canceller (libspeexdsp-dev) is measured beside webrtc's by VoiceCostTests, never shipped.
        .systemLibrary(
            name: "CSpeexDSP",
            path: "Tests/CSpeexDSP",
            pkgConfig: "speexdsp",
            providers: [.apt(["libspeexdsp-dev"])]
        ),
        .testTarget(name: "HushVoiceTests", dependencies: ["HushVoice", "HushCore", "HushTesting", "CSpeexDSP"]),
        .testTarget(name: "HushHearingTests", dependencies: ["HushHearing"]),
        .testTarget(
            name: "HushMixerTests",
            dependencies: ["HushMixer", "HushCore", "HushTesting", "CAllocationCounter"]
        ),
        .testTarget(name: "HushPolicyTests", dependencies: ["HushPolicy", "HushCore", "HushTesting"]),
        .testTarget(name: "HushProtocolTests", dependencies: ["HushProtocol", "HushCore"]),
        // The daemon's concerns: one test target per source target, each depending on what its files import.
        .testTarget(
            name: "HushConsoleTests",
            dependencies: [
                "HushConsole", "HushCore", "HushPolicy", "HushSystem", "HushTesting",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "HushConfigurationTests",
            dependencies: [
                "HushConfiguration", "HushCore", "HushPolicy", "HushALSA", "HushTesting",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "HushSystemTests",
            dependencies: [
                "HushSystem", "HushTesting", .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "HushOutputTests",
            dependencies: [
                "HushOutput", "HushCore", "HushPolicy", "HushALSA", "HushAudioFile", "HushMixer", "HushTesting",
                "CAllocationCounter", .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "HushStreamsTests",
            dependencies: [
                "HushStreams", "HushCore", "HushMixer", "HushTesting", "HushVoice", "CHushWire", "CAllocationCounter",
            ]
        ),
        .testTarget(
            name: "HushRenderTests",
            dependencies: [
                "HushRender", "HushRenderTool", "HushCore", "HushAudioFile", "HushSystem", "HushTesting",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(
            name: "HushControlServerTests",
            dependencies: [
                "HushControlServer", "HushCore", "HushProtocol", "HushTesting", "CLinux",
            ]
        ),
        .testTarget(
            name: "HushDaemonTests",
            dependencies: [
                "HushDaemon", "HushRender", "HushCore", "HushPolicy", "HushALSA", "HushGPIO", "HushAudioFile",
                "HushOutput",
                "HushConsole", "HushConfiguration", "HushSystem", "HushTesting",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            // Read from the source tree by path (DaemonConsoleTranscriptTests), not as resources.
            exclude: ["Fixtures"]
        ),
        // Tests that start hushd, hushctl, hush-render or an application (aplay, arecord, mpd, GStreamer, espeak-ng,
        // Python): slower, and some need `make alsa-plugin` and `make test-tools`. `make check` skips them, `make test`
        // (`swift test`) runs them (docs/architecture.md, "Tests").
        .testTarget(
            name: "HushIntegrationTests",
            dependencies: [
                "hushd", "hushctl", "hush-render", "HushCore", "HushALSA", "HushGPIO", "HushAudioFile",
                "HushProtocol", "HushConfiguration", "HushConsole", "HushRender", "HushRenderTool", "HushTesting",
                "HushHearing", "CHushWire",
                .product(name: "Logging", package: "swift-log"),
            ],
            resources: [.copy("Fixtures")]
        ),
    ]
)
