// swift-tools-version: 6.1
// hush's benchmarks (make bench): a package of their own, so `make test` never builds package-benchmark.
import PackageDescription

// The hush package is the parent directory; SwiftPM names a path dependency after its directory.
let hush = String(Context.packageDirectory.split(separator: "/").dropLast().last ?? "hush")

let package = Package(
    name: "hush-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark.git", from: "1.38.0", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "MixerBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "HushCore", package: hush),
                .product(name: "HushMixer", package: hush),
            ],
            path: "Benchmarks/MixerBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // Figures package-benchmark does not give: hush against sox, render throughput, and a render loop for
        // valgrind to count instructions and allocations in.
        .executableTarget(
            name: "hush-mixbench",
            dependencies: [
                .product(name: "HushCore", package: hush),
                .product(name: "HushMixer", package: hush),
                .product(name: "HushAudioFile", package: hush),
                .product(name: "HushRender", package: hush),
                .product(name: "HushProtocol", package: hush),
                .product(name: "HushStreams", package: hush),
                .product(name: "HushHearing", package: hush),
            ]
        ),
    ]
)
