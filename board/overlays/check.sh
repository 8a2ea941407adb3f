#!/usr/bin/env bash
# Compiles every device-tree overlay in board/overlays with dtc and checks that each carries the input codes its
# comments promise. A broken overlay fails `make test`. Prints one line per overlay and "N passed, N failed".
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
if ! command -v dtc >/dev/null || ! command -v fdtdump >/dev/null; then
    echo "overlays: installing device-tree-compiler" >&2
    DEBIAN_FRONTEND=noninteractive $([ "$(id -u)" -eq 0 ] || echo sudo) apt-get install -y -qq \
        -o DPkg::Lock::Timeout=600 device-tree-compiler >&2 || { echo "overlays: cannot install dtc" >&2; exit 1; }
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# The linux,code values (decimal) each overlay must contain.
declare -A codes=(
    [hush-buttons]="115 114"
    [hush-silence-switch]="14"
    [hush-headphone-sense]="2"
    [hush-all]="14 115 114 2"
    [hush-all-pi5]="14 115 114 2"
)

passed=0
failed=0
for source in "$here"/*.dts; do
    name=$(basename "$source" .dts)
    if ! dtc -@ -q -I dts -O dtb -o "$out/$name.dtbo" "$source" 2>"$out/$name.err"; then
        echo "FAIL $name: dtc could not compile it:"
        sed 's/^/    /' "$out/$name.err"
        failed=$((failed + 1))
        continue
    fi
    # fdtdump prints linux,code = <0x00000073>; collect them as decimal numbers.
    found=$(fdtdump "$out/$name.dtbo" 2>/dev/null | grep -o 'linux,code = <0x[0-9a-f]*>' | grep -o '0x[0-9a-f]*' |
        while read -r hex; do echo $((hex)); done | tr '\n' ' ')
    missing=""
    for code in ${codes[$name]:-}; do
        [[ " $found " == *" $code "* ]] || missing="$missing $code"
    done
    if [ -z "${codes[$name]+x}" ]; then
        echo "FAIL $name: check.sh does not know which codes it should carry (add it to the table)"
        failed=$((failed + 1))
    elif [ -n "$missing" ]; then
        echo "FAIL $name: compiled, but linux,code$missing missing (found: $found)"
        failed=$((failed + 1))
    else
        echo "PASS $name ($(stat -c %s "$out/$name.dtbo") bytes, codes $found)"
        passed=$((passed + 1))
    fi
done
echo "overlays: $passed passed, $failed failed"
[ $failed -eq 0 ]
