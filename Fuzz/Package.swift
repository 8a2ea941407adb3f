// swift-tools-version: 6.1
// hush's fuzz harnesses (make fuzz, make fuzz-quick): a package of their own, built with libFuzzer and
// AddressSanitizer (swift build --sanitize fuzzer --sanitize address), so the main build never carries them.
// Fuzz/run.sh builds and runs them; Fuzz/README.md says how.
import PackageDescription

// The hush package is the parent directory; SwiftPM names a path dependency after its directory.
let hush = String(Context.packageDirectory.split(separator: "/").dropLast().last ?? "hush")

// One executable per parser of outside input. Each exports LLVMFuzzerTestOneInput; libFuzzer supplies main.
let harnesses: [(name: String, products: [String])] = [
    ("fuzz-control", ["HushProtocol"]),
    ("fuzz-scenario", ["HushRender"]),
    ("fuzz-config", ["HushConfiguration"]),
    ("fuzz-state", ["HushConfiguration", "HushCore"]),
    ("fuzz-soundfile", ["HushAudioFile", "HushCore"]),
]

let package = Package(
    name: "hush-fuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(path: "..")],
    targets: [.target(name: "FuzzSupport")]
        + harnesses.map { harness in
            .executableTarget(
                name: harness.name,
                dependencies: ["FuzzSupport"] + harness.products.map { .product(name: $0, package: hush) }
            )
        }
)
