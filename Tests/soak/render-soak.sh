#!/usr/bin/env bash
# The simulated-clock soak (issue 6, docs/reliability.md#soak): a random scenario of SECONDS of scenario time
# through the real policy and mixer (`hush-render --soak`), with the renderer's resident memory, malloc heap and open
# descriptors sampled as it runs. Passes when, after the warm-up (the first tenth), resident memory grows at most
# 64 KiB, the heap at most 64 KiB, and the descriptors never change.
#
#   Tests/soak/render-soak.sh SECONDS [SEED]      (SEED default 1; HUSH_RENDER=PATH, default .build/debug/hush-render)
#
# Prints every sample, then one line of figures and PASS or FAIL; exit status 0 only on PASS.
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
seconds="${1:?usage: Tests/soak/render-soak.sh SECONDS [SEED]}"
seed="${2:-1}"
render="${HUSH_RENDER:-$root/.build/debug/hush-render}"
limit_kib=64
[ -x "$render" ] || { echo "render-soak.sh: $render is not built (swift build --product hush-render)" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/hush-render-soak.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$root/Tests/soak/generate-scenario.py" "$seed" "$seconds" >"$work/soak.txt"
counts=$(tail -1 "$work/soak.txt" | sed 's/^# //')
# About a hundred samples, whatever the length.
interval=$(awk -v s="$seconds" 'BEGIN { i = s / 100; if (i < 1) i = 1; print i }')
start=$(date +%s.%N)
"$render" --scenario "$work/soak.txt" --soak "$interval" 2>"$work/samples" >"$work/summary" || {
    cat "$work/samples" "$work/summary"
    echo "render soak: FAIL: hush-render --soak failed"
    exit 1
}
elapsed=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
cat "$work/samples"
cat "$work/summary"

# Lines: soak: t=600.000 s sessions=7 rss=26536 KiB heap=3263952 B fds=5
awk -v warm="$(awk -v s="$seconds" 'BEGIN { print s / 10 }')" -v limit="$limit_kib" \
    -v what="render soak: $seconds s simulated (seed $seed, $counts) in $elapsed s" '
    /^soak: / {
        for (i = 2; i <= NF; i++) { split($i, kv, "="); value[kv[1]] = kv[2] }
        t = value["t"] + 0; rss = value["rss"] + 0; heap = value["heap"] + 0; fds = value["fds"] + 0
        if (rss < 0 || fds < 0) { bad = 1 }
        if (n == 0) { fds_min = fds; fds_max = fds }
        if (fds < fds_min) fds_min = fds
        if (fds > fds_max) fds_max = fds
        if (t >= warm && !warmed) { warmed = 1; rss_warm = rss; heap_warm = heap; rss_max = rss; heap_max = heap }
        if (warmed) { if (rss > rss_max) rss_max = rss; if (heap > heap_max) heap_max = heap }
        rss_end = rss; heap_end = heap; n++
    }
    END {
        if (!warmed || bad) { print what ": FAIL: no usable samples after the warm-up"; exit 1 }
        rss_growth = rss_max - rss_warm
        heap_growth = (heap_max - heap_warm) / 1024
        printf "%s: %d samples; RSS %d KiB after warm-up (%.0f s), %d KiB at the end, growth %d KiB (limit %d); heap %.1f KiB after warm-up, %.1f KiB at the end, growth %.1f KiB (limit %d); fds %d-%d\n", \
            what, n, rss_warm, warm, rss_end, rss_growth, limit, heap_warm / 1024, heap_end / 1024, heap_growth, limit, fds_min, fds_max
        fail = ""
        if (rss_growth > limit) fail = fail " RSS grew " rss_growth " KiB;"
        if (heap_growth > limit) fail = fail " the heap grew " heap_growth " KiB;"
        if (fds_min != fds_max) fail = fail " descriptors went from " fds_min " to " fds_max ";"
        if (fail != "") { print "render soak: FAIL:" fail; exit 1 }
        print "render soak: PASS"
    }' "$work/samples"
