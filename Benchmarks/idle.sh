#!/usr/bin/env bash
# Idle cost of hushd (issue 20, "Idle"): runs HUSHD with nothing playing, once kept warm (the audio thread
# renders and writes silence, as before idle existed) and once with the default idle state, and prints for each
# the CPU time (utime + stime of /proc/PID/stat) and the context switches of all its threads (voluntary and not,
# /proc/PID/task/*/status) over SECONDS, after WARMUP seconds (more than idle_seconds).
# The output is the WAV fallback to /dev/null, paced like a card, so it runs on a machine without sound.
# Usage: Benchmarks/idle.sh [HUSHD] [SECONDS] [WARMUP]
set -euo pipefail
hushd=${1:-.build/release/hushd}
seconds=${2:-30}
warmup=${3:-7}
tick=$(getconf CLK_TCK)
work=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
pid=0

switches() { # all threads of $1: voluntary + involuntary; the hush-audio thread's alone
    local all=0 audio=0 task n
    for task in /proc/"$1"/task/*; do
        n=$(awk '/ctxt_switches/ { s += $2 } END { print s }' "$task/status")
        all=$((all + n))
        [ "$(cat "$task/comm")" = hush-audio ] && audio=$n
    done
    echo "$all $audio"
}
cpu() { awk '{ print $14 + $15 }' /proc/"$1"/stat; } # clock ticks

for mode in warm idle; do
    warm=$([ "$mode" = warm ] && echo true || echo false)
    cat >"$work/hushd.toml" <<TOML
[output]
pcm = "hush-no-such-pcm"
fallback_wav = "/dev/null"
realtime_priority = 0
keep_warm = $warm
[control]
socket = "$work/control.sock"
[state]
file = "$work/state"
TOML
    "$hushd" --config "$work/hushd.toml" >"$work/log" 2>&1 &
    pid=$!
    sleep "$warmup"
    read -r s0 a0 < <(switches "$pid")
    c0=$(cpu "$pid")
    sleep "$seconds"
    read -r s1 a1 < <(switches "$pid")
    c1=$(cpu "$pid")
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    printf '%-5s %3d s: CPU %s s, %d context switches (all threads; %.1f/s), hush-audio %d (%.1f/s)\n' \
        "$mode" "$seconds" "$(echo "scale=2; ($c1 - $c0) / $tick" | bc)" $((s1 - s0)) \
        "$(echo "scale=1; ($s1 - $s0) / $seconds" | bc)" $((a1 - a0)) "$(echo "scale=1; ($a1 - $a0) / $seconds" | bc)"
    grep -E "output idle|output running" "$work/log" | head -3 || true
done
