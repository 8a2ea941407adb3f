#!/usr/bin/env bash
# Boots the virtual board and runs one scenario in it.
#
#   board/virtual/run.sh --scenario NAME [--payload DIR]... [--timeout SECONDS] [--serial2 FILE] [--keep]
#
# The VM is qemu (TCG) with Debian's 6.1 kernel and a busybox initramfs holding: the kernel modules for
# snd-aloop, snd-dummy, uinput, evdev and gpio-sim (built by setup.sh); board/virtual/guest-lib.sh; the scenario
# board/virtual/scenarios/NAME.sh; and every file of each --payload directory under /payload, with the shared
# libraries its programs need. The guest's console (ttyS0) is logged to .build/virtual-board/logs/NAME.log; a
# second serial port (ttyS1) goes to --serial2 FILE when given. Exit status 0 only when the guest printed
# "HUSH-VBOARD-RESULT: PASS"; a VM that does not boot, hangs or fails prints its log and exits non-zero.
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
here="$root/board/virtual"
cache="$root/.build/virtual-board"
scenario=""
payloads=()
timeout=180
serial2=""
keep=0
while [ $# -gt 0 ]; do
    case "$1" in
        --scenario) scenario="$2"; shift 2 ;;
        --payload) payloads+=("$2"); shift 2 ;;
        --timeout) timeout="$2"; shift 2 ;;
        --serial2) serial2="$2"; shift 2 ;;
        --keep) keep=1; shift ;;
        *) echo "run.sh: unknown argument '$1'" >&2; exit 64 ;;
    esac
done
[ -n "$scenario" ] || { echo "run.sh: --scenario NAME is required (scenarios: $(cd "$here/scenarios" && ls *.sh | sed 's/\.sh$//' | tr '\n' ' '))" >&2; exit 64; }
[ -f "$here/scenarios/$scenario.sh" ] || { echo "run.sh: no scenario board/virtual/scenarios/$scenario.sh" >&2; exit 64; }

abi=$("$here/setup.sh" | tail -1)
modules="/lib/modules/$abi"
work=$(mktemp -d "${TMPDIR:-/tmp}/hush-vboard.XXXXXX")
[ $keep -eq 1 ] || trap 'rm -rf "$work"' EXIT
rootfs="$work/root"
mkdir -p "$rootfs"/{bin,sbin,proc,sys,dev,tmp,run,modules,payload,etc}

# busybox provides the shell and tools; /init installs its applets.
cp /bin/busybox "$rootfs/bin/busybox"
cp "$here/guest-init.sh" "$rootfs/init"
cp "$here/guest-lib.sh" "$rootfs/guest-lib.sh"
cp "$here/scenarios/$scenario.sh" "$rootfs/scenario.sh"
echo "$scenario" >"$rootfs/scenario-name"
chmod +x "$rootfs/init"

# Kernel modules with their dependencies, in load order.
order=()
add_module() {
    local relative="$1" dep
    for dep in $(grep "^$relative:" "$modules/modules.dep" | cut -d: -f2); do add_module "$dep"; done
    local name
    name=$(basename "$relative")
    [[ " ${order[*]-} " == *" $name "* ]] && return
    cp "$modules/$relative" "$rootfs/modules/$name"
    order+=("$name")
}
for wanted in snd-aloop snd-dummy uinput evdev configfs; do
    relative=$(grep -o "^[^:]*/$wanted\.ko[^:]*" "$modules/modules.dep" | head -1)
    [ -n "$relative" ] || { echo "run.sh: kernel $abi has no module $wanted" >&2; exit 1; }
    add_module "$relative"
done
cp "$cache/hush-gpio-sim.ko" "$rootfs/modules/"
order+=("hush-gpio-sim.ko")
printf '%s\n' "${order[@]}" >"$rootfs/modules/order"

# Payload: files under /payload, and the shared libraries of every ELF among them at their host paths.
for payload in ${payloads[@]+"${payloads[@]}"}; do
    cp -a "$payload"/. "$rootfs/payload/"
done
find "$rootfs/payload" -type f | while read -r file; do
    head -c 4 "$file" | grep -q ELF || continue
    ldd "$file" 2>/dev/null | grep -o '/[^ ]*' | while read -r library; do
        [ -e "$rootfs$library" ] && continue
        mkdir -p "$rootfs$(dirname "$library")"
        cp -L "$library" "$rootfs$library"
    done
done

# alsa-lib reads its configuration at run time.
if [ -d /usr/share/alsa ]; then
    mkdir -p "$rootfs/usr/share"
    cp -a /usr/share/alsa "$rootfs/usr/share/alsa"
fi

initrd="$work/initramfs.cpio.gz"
(cd "$rootfs" && find . | cpio -o -H newc --quiet | gzip -1 >"$initrd")

mkdir -p "$cache/logs"
log="$cache/logs/$scenario.log"
serial2_args=(-serial null)
[ -z "$serial2" ] || serial2_args=(-serial "file:$serial2")
echo "virtual board: booting $abi for scenario '$scenario' (initramfs $(du -h "$initrd" | cut -f1), log $log)"
start=$(date +%s.%N)
set +e
timeout --foreground "$timeout" qemu-system-x86_64 \
    -accel tcg -cpu max -smp 2 -m 1024 -nographic -no-reboot \
    -kernel "/boot/vmlinuz-$abi" -initrd "$initrd" \
    -append "console=ttyS0 panic=-1 loglevel=4 rdinit=/init" \
    -serial stdio "${serial2_args[@]}" -monitor none </dev/null >"$log" 2>&1
status=$?
set -e
elapsed=$(echo "$(date +%s.%N) - $start" | bc)
printf 'virtual board: %s finished in %.1f s\n' "$scenario" "$elapsed"

result=$(grep -a "HUSH-VBOARD-RESULT:" "$log" | tail -1 | tr -d '\r' || true)
if [ "$result" = "HUSH-VBOARD-RESULT: PASS" ]; then
    grep -a -E "^(PASS|FAIL|ok:|not ok:|  )|passed, .* failed" "$log" | tr -d '\r' || true
    echo "virtual board: scenario '$scenario' PASSED"
    exit 0
fi
echo "---- guest log ($log) ----"
tr -d '\r' <"$log" | tail -200
echo "---- end of guest log ----"
if [ $status -eq 124 ]; then
    echo "virtual board: scenario '$scenario' FAILED: no result within $timeout s (the VM hung or booted too slowly)"
elif [ -z "$result" ]; then
    echo "virtual board: scenario '$scenario' FAILED: the VM ended (qemu status $status) without a result line — it did not boot or the init crashed"
else
    echo "virtual board: scenario '$scenario' FAILED: ${result#HUSH-VBOARD-RESULT: }"
fi
exit 1
