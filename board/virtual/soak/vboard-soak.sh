#!/usr/bin/env bash
# The real-time soak (issue 6, docs/reliability.md#soak): hushd in the virtual board for SECONDS of wall time under
# random switch, button, jack and media-key events and hushctl sessions (board/virtual/soak/soak.sh). Passes when
# hushd's RSS grows at most 64 KiB after the warm-up, its descriptors with no client stay the same, and no underrun
# happens (none is provoked).
#
#   board/virtual/soak/vboard-soak.sh SECONDS [SEED]      (SEED default 1; at least 40 s)
#
# Uses hushd, hushctl and hush-vboard-check from beside HUSH_VBOARD_CHECK (default .build/debug; make soak gives the
# release build) and a payload of its own,
# .build/virtual-board/payload-soak-SECONDS/, so that it never disturbs run-all.sh's, nor a soak of another length
# running at the same time. The guest's log is .build/virtual-board/logs/soak-SECONDSs.log.
set -euo pipefail

root="$(cd "$(dirname "$0")/../../.." && pwd)"
seconds="${1:?usage: board/virtual/soak/vboard-soak.sh SECONDS [SEED]}"
seed="${2:-1}"
[[ "$seconds" =~ ^[0-9]+$ ]] && [ "$seconds" -ge 40 ] || { echo "vboard-soak.sh: SECONDS must be 40 or more" >&2; exit 64; }
payload="$root/.build/virtual-board/payload-soak-$seconds"
rm -rf "$payload"
mkdir -p "$payload"
# run.sh names the logs after the scenario file: a copy named after the length keeps runs apart.
scenario="$root/.build/virtual-board/soak-scenarios/soak-${seconds}s.sh"
mkdir -p "$(dirname "$scenario")"
cp "$root/board/virtual/soak/soak.sh" "$scenario"
bin="$(dirname "${HUSH_VBOARD_CHECK:-$root/.build/debug/hush-vboard-check}")"
for program in hush-vboard-check hushd hushctl; do
    [ -x "$bin/$program" ] ||
        { echo "vboard-soak.sh: $bin/$program is not built (swift build --product $program)" >&2; exit 2; }
    cp "$bin/$program" "$payload/"
done
# The period: the virtual profile's own (512 x 3, 32 ms; SOAK_PERIOD=profile, the default), or
# SOAK_PERIOD=FRAMESxCOUNT, as 1024x4 (85 ms) on a busy host: under TCG a vCPU starved by the host's other work
# for longer than the queue lasts underruns, and that underrun is the host's, not hushd's (docs/reliability.md#soak).
period="${SOAK_PERIOD:-profile}"
if [ "$period" = profile ]; then
    cp "$root/board/profiles/virtual.toml" "$payload/virtual.toml"
else
    [[ "$period" =~ ^([0-9]+)x([0-9]+)$ ]] ||
        { echo "vboard-soak.sh: SOAK_PERIOD must be FRAMESxCOUNT (as 1024x4) or profile, not '$period'" >&2; exit 64; }
    frames="${BASH_REMATCH[1]}" count="${BASH_REMATCH[2]}"
    sed -e "s/^period_frames = .*/period_frames = $frames  # the soak: see soak\/vboard-soak.sh/" \
        -e "s/^periods = .*/periods = $count/" "$root/board/profiles/virtual.toml" >"$payload/virtual.toml"
    grep -q "^period_frames = $frames " "$payload/virtual.toml" &&
        grep -q "^periods = $count\$" "$payload/virtual.toml" ||
        { echo "vboard-soak.sh: could not set the period in board/profiles/virtual.toml's copy" >&2; exit 2; }
fi
echo "vboard-soak.sh: periods $(sed -n 's/^period_frames = \([0-9]*\).*/\1/p' "$payload/virtual.toml") x" \
    "$(sed -n 's/^periods = \([0-9]*\).*/\1/p' "$payload/virtual.toml")"
printf 'HUSH_SOAK_SECONDS=%s\nHUSH_SOAK_SEED=%s\n' "$seconds" "$seed" >"$payload/soak.env"
# Booting, the warm-up's quiet period and the last samples take about two minutes under TCG on top of SECONDS.
# bash reads a script as it runs it: an edit to board/virtual/run.sh during a half-hour soak would have it run
# whatever lies at its old offset once qemu ends (it did, and overwrote the guest's log). A copy of
# board/virtual, with .build linked back so that caches and logs land where they always do, is immune.
snapshot="$root/.build/virtual-board/soak-snapshot-$seconds"
rm -rf "$snapshot"
mkdir -p "$snapshot/board"
cp -a "$root/board/virtual" "$snapshot/board/"
ln -s "$root/.build" "$snapshot/.build"
# The guest kernel preempts fully and runs interrupt handlers in threads (Debian's kernel is built with
# PREEMPT_DYNAMIC and boots with voluntary preemption and hard-IRQ handlers), as an audio device should
# (docs/deploy.md): hushd's console on the emulated 16550 UART (ttyS1) sends a burst of lines at every event byte
# by byte from the UART's interrupt handler; with `threadirqs` that is a SCHED_FIFO 50 thread, below the audio
# thread's 70. SOAK_KERNEL_ARGS= (empty) boots with the kernel's defaults.
# On a quiet host the 30-minute soak counted 10 underruns with the defaults, 7 with preempt=full and 3 with both.
# hushd reported each of those 3 as its thread held off about 90 ms, as long as qemu stops every vCPU to flush its
# translation cache, which filled every 80-100 s (measured afterwards). run.sh now boots the guest with norandmaps
# under TCG, which keeps the cache from filling, and the next 30-minute run counted 0 (docs/reliability.md#soak).
export VBOARD_KERNEL_ARGS="${SOAK_KERNEL_ARGS-preempt=full threadirqs}"
exec "$snapshot/board/virtual/run.sh" --scenario "$scenario" --payload "$payload" \
    --timeout $((seconds + 240))
