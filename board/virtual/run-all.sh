#!/usr/bin/env bash
# Runs every virtual-board scenario (board/virtual/scenarios/*.sh), or the ones named, one VM each, every one of
# them whatever the others did, and ends with each failed scenario's failures (its FAIL lines) and the line
# "N passed, N failed". Exit status 0 only when every scenario passed.
#
#   board/virtual/run-all.sh [SCENARIO ...]
#
# Every scenario gets the same payload, .build/virtual-board/payload/, made here: hush's check programs
# hush-vboard-check (from .build/debug, or HUSH_VBOARD_CHECK=PATH) and hush-vboard-streams, hush-vboard-voice, hushd
# and hushctl from beside it, when built; board/profiles/virtual.toml; the hush ALSA plugin (make alsa-plugin) and
# deploy/alsa/50-hush.conf; the apps scenario also gets .build/virtual-board/payload-apps/ (board/virtual/apps-payload.sh).
# A scenario NAME with an executable scenarios/NAME.after (no .sh: not a scenario itself) passes only
# when that script, run on the host with the guest's second serial port log, passes too. A scenario that needs a payload file that is missing fails before booting and
# says how to build it (see run.sh, '# vboard-payload:'). A scenario whose file has a '# vboard-on-demand: WHY' line
# runs only when named (make vboard-voice names the voice scenario), never in the default list.
set -uo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
here="$root/board/virtual"
payload="$root/.build/virtual-board/payload"
check="${HUSH_VBOARD_CHECK:-$root/.build/debug/hush-vboard-check}"

scenarios=("$@")
if [ ${#scenarios[@]} -eq 0 ]; then
    for file in "$here"/scenarios/*.sh; do
        grep -q '^# vboard-on-demand:' "$file" || scenarios+=("$(basename "$file" .sh)")
    done
fi

# Prepare the machine once, so that a broken setup is reported once and not per scenario.
if ! "$here/setup.sh" >/dev/null; then
    echo "run-all.sh: board/virtual/setup.sh failed (its message is above); no scenario ran"
    echo "0 passed, ${#scenarios[@]} failed"
    exit 1
fi

# The payload: the check programs, hushd and hushctl beside it (the output checks run 'hushd play', the e2e
# scenario the daemon and its clients), the board profile, and the hush ALSA device (make alsa-plugin) with its
# configuration for the streams scenario.
rm -rf "$payload"
mkdir -p "$payload"
hushd="$(dirname "$check")/hushd"
hushctl="$(dirname "$check")/hushctl"
streams="$(dirname "$check")/hush-vboard-streams"
voice="$(dirname "$check")/hush-vboard-voice"
plugin="$root/.build/alsa-plugin/libasound_module_pcm_hush.so"
for program in "$check" "$hushd" "$hushctl" "$streams" "$voice" "$plugin"; do
    if [ -x "$program" ]; then
        cp "$program" "$payload/"
    else
        echo "run-all.sh: note: $program is not built (swift build; make alsa-plugin); scenarios that need it will fail"
    fi
done
cp "$root/board/profiles/virtual.toml" "$root/deploy/alsa/50-hush.conf" "$root/board/sounds/hearing-warning.wav" "$payload/"
# VBOARD_EXTRA_PAYLOAD=FILE adds a file (make faults: faults.conf with the long run's lengths); VBOARD_TIMEOUT=SEC
# overrides each scenario's timeout.
[ -z "${VBOARD_EXTRA_PAYLOAD:-}" ] || cp "$VBOARD_EXTRA_PAYLOAD" "$payload/"
# The apps scenario's programs (espeak-ng, GStreamer, Python with sounddevice: about 110 MB with their libraries,
# 16 s of packing) go in a payload of their own, made when a scenario that declares '# vboard-payload: apps/...'
# runs and given to those scenarios only.
apps_payload="$root/.build/virtual-board/payload-apps"
rm -rf "$apps_payload"
for scenario in "${scenarios[@]}"; do
    if grep -q '^# vboard-payload: apps/' "$here/scenarios/$scenario.sh" 2>/dev/null; then
        mkdir -p "$apps_payload"
        "$here/apps-payload.sh" "$apps_payload" ||
            echo "run-all.sh: note: board/virtual/apps-payload.sh failed; scenarios that need it will fail"
        break
    fi
done

# The voice scenario's two C programs (board/virtual/voice/build.sh, about a second) go in the common payload when a
# scenario that declares '# vboard-payload: voice/...' runs.
for scenario in "${scenarios[@]}"; do
    if grep -q '^# vboard-payload: voice/' "$here/scenarios/$scenario.sh" 2>/dev/null; then
        "$here/voice/build.sh" "$payload" >/dev/null ||
            echo "run-all.sh: note: board/virtual/voice/build.sh failed; scenarios that need it will fail"
        break
    fi
done

passed=0
failed=0
failures=()
start=$(date +%s)
for scenario in "${scenarios[@]}"; do
    after="$here/scenarios/$scenario.after"
    extra=()
    if [ -d "$apps_payload" ] && grep -q '^# vboard-payload: apps/' "$here/scenarios/$scenario.sh" 2>/dev/null; then
        extra=(--payload "$apps_payload")
    fi
    # What run.sh and the .after script print, kept for the summary's failures.
    out="$root/.build/virtual-board/logs/$scenario.run-all.log"
    mkdir -p "$(dirname "$out")"
    if "$here/run.sh" --scenario "$scenario" --payload "$payload" ${extra[@]+"${extra[@]}"} \
        ${VBOARD_TIMEOUT:+--timeout "$VBOARD_TIMEOUT"} 2>&1 | tee "$out" &&
        { [ ! -x "$after" ] || "$after" "$root/.build/virtual-board/logs/$scenario.ttyS1.log" 2>&1 | tee -a "$out"; }; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        failures+=("$scenario")
    fi
done
for scenario in ${failures[@]+"${failures[@]}"}; do
    echo "--- $scenario failed (all of it: .build/virtual-board/logs/$scenario.run-all.log and $scenario.log):"
    out="$root/.build/virtual-board/logs/$scenario.run-all.log"
    # Its FAIL lines, or when it printed none (it never ran: run.sh refused it), its last lines.
    grep -a -E '^(FAIL |not ok|virtual board: scenario .* FAILED)' "$out" | head -30 | sed 's/^/  /' ||
        tail -n 3 "$out" | sed 's/^/  /'
done
summary="virtual board: ${#scenarios[@]} scenario(s) in $(($(date +%s) - start)) s"
[ "$failed" -eq 0 ] || summary="$summary; failed: ${failures[*]}"
echo "$summary; logs in .build/virtual-board/logs/"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
