// hush-vboard-latency: a figure, not a check, on the virtual board (board/virtual/bench/latency.sh,
// docs/performance.md): how long an impulse takes from aplay's start to the loopback's capture side through plain
// hw:, dmix and hush, and the way in through plain hw:, dsnoop and hushd's microphone (Latency.swift). It prints the
// takes and their medians and fails only when it could not measure.
//
// usage: hush-vboard-latency [TAKES]   (TAKES takes of each path, interleaved; 5 without it)

import HushTesting

#if canImport(Glibc)
import Glibc
#endif

exit(measureLatency(takes: CommandLine.arguments.dropFirst().first.flatMap { Int($0) } ?? 5) ? 0 : 1)
