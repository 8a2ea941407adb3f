#!/usr/bin/env bash
# Runs every virtual-board scenario with hush's check program as payload; the last line is the summary.
#
#   board/virtual/run-all.sh [SCENARIO ...]
set -uo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
here="$root/board/virtual"
payload="$root/.build/virtual-board/payload"
check="${HUSH_VBOARD_CHECK:-$root/.build/debug/hush-vboard-check}"
[ -x "$check" ] || { echo "run-all.sh: $check is missing: run 'swift build --product hush-vboard-check' first" >&2; exit 1; }
if ! command -v gpiomon >/dev/null; then
    DEBIAN_FRONTEND=noninteractive $([ "$(id -u)" -eq 0 ] || echo sudo) apt-get install -y -qq \
        -o DPkg::Lock::Timeout=600 gpiod >&2 || true
fi
rm -rf "$payload"
mkdir -p "$payload"
cp "$check" "$payload/"
for tool in gpiomon gpioget gpioinfo; do
    command -v "$tool" >/dev/null && cp "$(command -v "$tool")" "$payload/"
done

scenarios=("$@")
if [ ${#scenarios[@]} -eq 0 ]; then
    for file in "$here"/scenarios/*.sh; do scenarios+=("$(basename "$file" .sh)"); done
fi
passed=0
failed=0
start=$(date +%s)
for scenario in "${scenarios[@]}"; do
    if "$here/run.sh" --scenario "$scenario" --payload "$payload"; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
    fi
done
echo "virtual board: ${#scenarios[@]} scenarios in $(($(date +%s) - start)) s"
echo "virtual board: $passed passed, $failed failed"
[ $failed -eq 0 ]
