#!/usr/bin/env bash
# make bench: every figure docs/performance.md records, measured in one run on this machine.
set -euo pipefail
cd "$(dirname "$0")"
missing=""
for p in sox valgrind; do command -v "$p" >/dev/null || missing="$missing $p"; done
if [ -n "$missing" ]; then
    DEBIAN_FRONTEND=noninteractive $([ "$(id -u)" -eq 0 ] || echo sudo) apt-get install -y -qq \
        -o DPkg::Lock::Timeout=600 $missing >&2
fi

echo "== package-benchmark: the render path (mallocs, wall clock) =="
swift package --allow-writing-to-package-directory benchmark --no-progress 2>&1 |
    grep -vE "^\[[0-9]+/[0-9]+\]|^Building|^Build |Compiling|Linking|Write |Wrapping|^$"

swift build -c release --product hush-mixbench >/dev/null
bench=.build/release/hush-mixbench
# valgrind 3.19 cannot read the toolchain's DWARF 5: count instructions on a copy without debug sections.
stripped=$(mktemp)
trap 'rm -f "$stripped"' EXIT
strip --strip-debug -o "$stripped" "$bench"

echo
echo "== callgrind: instructions per output frame (3 stereo voices, every gain ramping) =="
count() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$stripped" periods "$1" 2>&1 | sed -n 's/.*Collected : //p'; }
small=$(count 2000)
large=$(count 4000)
echo "2000 periods: $small instructions; 4000 periods: $large instructions"
echo "per output frame: $(( (large - small) / (2000 * 64) )) instructions ($(( (large - small) / (2000 * 64 * 6) )) per voice-sample)"

echo
echo "== callgrind: applications' streams (S16 stereo, ring kept full), instructions per 64-frame period =="
streams() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$stripped" streams "$1" "$2" "$3" 2>&1 | sed -n 's/.*Collected : //p'; }
for rate in 48000 44100 16000; do
    base_small=$(streams 1000 0 "$rate"); base_large=$(streams 2000 0 "$rate")
    eight_small=$(streams 1000 8 "$rate"); eight_large=$(streams 2000 8 "$rate")
    own=$(( (base_large - base_small) / 1000 ))
    eight=$(( (eight_large - eight_small) / 1000 ))
    echo "$rate Hz: hushd's own voice alone $own per period; with 8 streams $eight; per stream $(( (eight - own) / 8 ))" \
        "($(( (eight - own) / 8 * 100 / own ))% of the own voice's period)"
done
"$stripped" latency

echo
echo "== callgrind: the hearing-safety level meter, instructions per second of 48 kHz stereo =="
hearing() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$stripped" hearing "$1" 2>&1 | sed -n 's/.*Collected : //p'; }
h_small=$(hearing 5); h_large=$(hearing 10)
meter=$(( (h_large - h_small) / 5 ))
echo "level meter: $meter instructions per second of audio;" \
    "the mixer's 750 periods of 64 frames (one second, 3 voices) take $(( (large - small) * 750 / 2000 ))," \
    "so the meter costs $(( meter * 100 / ((large - small) * 750 / 2000) ))% of the mix's own instructions"

echo
echo "== memcheck: allocations per render period after warm-up =="
allocs() { valgrind "$stripped" periods "$1" 2>&1 | sed -n 's/.*total heap usage: \([0-9,]*\) allocs.*/\1/p' | tr -d ,; }
a=$(allocs 2000)
b=$(allocs 4000)
echo "2000 periods: $a allocations; 4000 periods: $b allocations; per period: $(( (b - a) / 2000 ))"

echo
echo "== offline mix against sox, and hush-render throughput =="
"$bench" compare "$(mktemp -d)"
"$bench" render 60

echo
echo "== control request lines: hushd's JSON reader against Foundation's JSONDecoder =="
"$bench" requests 20000

echo
echo "== lines from hushd: written with JSONEncoder, read by hushctl (JSONReader's check, then JSONDecoder) =="
"$bench" messages 5000

echo
echo "== hushd with nothing to play: CPU and context switches over 30 s, kept warm and idle (Benchmarks/idle.sh) =="
(cd .. && swift build -c release --product hushd >/dev/null && Benchmarks/idle.sh .build/release/hushd 30)

echo
echo "== voice processing: webrtc-audio-processing beside speexdsp, CPU per second of voice (HushVoiceTests) =="
(cd .. && swift test --filter HushVoiceTests.VoiceCostTests 2>&1 | sed -n '/^voice cost/,+2p')
