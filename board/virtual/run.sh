#!/usr/bin/env bash
# Boots the virtual board (qemu, Debian's 6.1 kernel, simulated hardware) and runs one scenario in it.
#
#   board/virtual/run.sh --scenario NAME [--payload DIR|FILE]... [--timeout SECONDS] [--serial2 FILE]
#                        [--memory MB] [--cpus N] [--keep]
#
#   --scenario NAME   run board/virtual/scenarios/NAME.sh in the guest (required); a NAME with a slash is the
#                     path of a scenario file kept elsewhere (e.g. one a test writes to a temporary directory)
#   --payload PATH    copy a directory's contents (or one file) to /payload in the guest, which is first on PATH;
#                     the shared libraries and dynamic loader of every ELF program in it come along at their
#                     host paths. May be given more than once.
#   --timeout SEC     give up after SEC seconds of wall time (default 180); the guest's own watchdog reports a
#                     hanging scenario, with its process list, 15 s before that
#   --serial2 FILE    where the guest's second serial port /dev/ttyS1 goes (default
#                     .build/virtual-board/logs/NAME.ttyS1.log), e.g. for a daemon's console
#   --memory MB       guest memory (default 1024; the initramfs with its payload lives in it)
#   --cpus N          guest CPUs (default 2)
#   --keep            keep the initramfs tree and archive (.build/virtual-board/work/NAME.*; removed by a later
#                     run after two hours)
#
# The guest's console (ttyS0) is logged to .build/virtual-board/logs/NAME.log.
# A scenario NAME with an executable scenarios/NAME.operator gets its ttyS1 on a Unix socket instead of a file:
# the operator runs on the host as `NAME.operator SOCKET LOGFILE`, keeps the port's output in LOGFILE (the
# --serial2 file) and may type at it, as a person at a serial terminal would.
# Exit status: 0 only when the guest's /init printed "HUSH-VBOARD-RESULT: PASS" with this run's nonce;
# 1 when the scenario failed; 2 when there was no result (the VM did not boot, crashed or timed out) or the
# board could not be prepared; 64 for a usage error. On anything but 0 the guest log is printed.
#
# A scenario may declare, in comment lines of its own:
#   # vboard-tools: gpiomon gpioget         host programs to copy into the guest's /usr/bin (with their libraries)
#   # vboard-payload: FILE  how to get it   files that must be in the payload, checked before booting
#   # vboard-timeout: SECONDS               its default --timeout, for scenarios longer than 180 s
#
# Environment: VBOARD_ACCEL=kvm to use KVM where it works (default tcg); VBOARD_KERNEL=ABI (see setup.sh);
# VBOARD_KERNEL_ARGS: more kernel command-line arguments, such as preempt=full (the soak's);
# VBOARD_MONITOR=PATH: qemu's monitor on a Unix socket at PATH, to ask it `info jit` (how much code its TCG
# translated and how often it flushed its translation cache). The command stops the guest while it counts, for
# about as long as a flush: ask it seldom during a timing test.
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
here="$root/board/virtual"
cache="$root/.build/virtual-board"

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 64; }
die() { echo "run.sh: $*" >&2; exit 2; }
# shellcheck source-path=SCRIPTDIR source=initramfs.sh
. "$here/initramfs.sh"

scenario=""
payloads=()
timeout=180
timeout_given=0
serial2=""
memory=1024
cpus=2
keep=0
while [ $# -gt 0 ]; do
    case "$1" in
        --scenario | --payload | --timeout | --serial2 | --memory | --cpus)
            [ $# -ge 2 ] || { echo "run.sh: $1 needs a value" >&2; usage; }
            case "$1" in
                --scenario) scenario="$2" ;;
                --payload) payloads+=("$2") ;;
                --timeout) timeout="$2"; timeout_given=1 ;;
                --serial2) serial2="$2" ;;
                --memory) memory="$2" ;;
                --cpus) cpus="$2" ;;
            esac
            shift 2
            ;;
        --keep) keep=1; shift ;;
        -h | --help) usage ;;
        *) echo "run.sh: unknown argument '$1'" >&2; usage ;;
    esac
done
available=$(cd "$here/scenarios" && ls -- *.sh | sed 's/\.sh$//' | tr '\n' ' ')
[ -n "$scenario" ] || { echo "run.sh: --scenario NAME is required; scenarios: $available" >&2; exit 64; }
scenario_file="$here/scenarios/$scenario.sh"
if [[ "$scenario" == */* ]]; then # a path: a scenario kept outside the repository (a test's own, a throwaway)
    scenario_file="$scenario"
    scenario=$(basename "$scenario" .sh)
fi
[ -f "$scenario_file" ] || { echo "run.sh: no scenario '$scenario' (no $scenario_file); scenarios: $available" >&2; exit 64; }
declared_timeout=$(sed -n 's/^# vboard-timeout: *\([0-9]*\).*/\1/p' "$scenario_file" | head -1)
[ "$timeout_given" = 1 ] || [ -z "$declared_timeout" ] || timeout="$declared_timeout"
for number in "$timeout" "$memory" "$cpus"; do
    [[ "$number" =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: '$number' is not a positive whole number" >&2; exit 64; }
done
for payload in ${payloads[@]+"${payloads[@]}"}; do
    [ -e "$payload" ] || { echo "run.sh: payload '$payload' does not exist" >&2; exit 64; }
done

t0=$(date +%s%N)
abi=$("$here/setup.sh") || die "board/virtual/setup.sh failed (its message is above); fix that and run again"
abi=$(echo "$abi" | tail -1)
kernel="/boot/vmlinuz-$abi"
[ ! -s "$cache/vmlinux-$abi" ] || kernel="$cache/vmlinux-$abi" # unpacked by setup.sh: boots ~3 s faster
gpio_sim_module="$cache/hush-gpio-sim.ko"
[ -f "$kernel" ] && [ -f "$gpio_sim_module" ] || die "setup.sh did not leave $kernel and $gpio_sim_module"

mkdir -p "$cache/work" "$cache/logs"
# Work directories of runs that were killed, or kept with --keep, go after two hours.
find "$cache/work" -mindepth 1 -maxdepth 1 -mmin +120 -exec rm -rf {} + 2>/dev/null || true
work=$(mktemp -d "$cache/work/$scenario.XXXXXX")
if [ $keep -eq 0 ]; then trap 'rm -rf "$work"' EXIT; else echo "virtual board: keeping the initramfs tree and archive in $work"; fi
rootfs="$work/root"
mkdir -p "$rootfs"/{bin,sbin,usr/bin,proc,sys,dev,tmp,run,root,etc,modules,payload,vboard}

is_elf() { [ "$(head -c 4 "$1" 2>/dev/null | od -An -c | tr -d ' ')" = '177ELF' ]; }

# copy_libraries FILE: puts the shared libraries and dynamic loader FILE needs into the rootfs at their host
# paths (ldd lists them transitively). Statically linked programs need nothing.
copy_libraries() {
    local file="$1" listing library
    is_elf "$file" || return 0
    listing=$(ldd "$file" 2>&1) || return 0 # "not a dynamic executable"
    if grep -q "not found" <<<"$listing"; then
        die "$file needs libraries this machine does not have:
$(grep "not found" <<<"$listing")
install them on the host (the guest gets its libraries from the host)"
    fi
    for library in $(grep -o '/[^ ]*' <<<"$listing"); do
        # A library inside the rootfs already (a payload's own, found through its RUNPATH $ORIGIN) stays there.
        [[ "$library" == "$rootfs"/* ]] && continue
        [ -e "$rootfs$library" ] && continue
        mkdir -p "$rootfs$(dirname "$library")"
        cp -L "$library" "$rootfs$library"
    done
}

# --- userland: busybox (static) and the guest's scripts.
cp /bin/busybox "$rootfs/bin/busybox"
copy_libraries "$rootfs/bin/busybox"
add_guest_files "$rootfs" "$scenario_file"
# alsa-lib reads its configuration at run time.
if [ -d /usr/share/alsa ]; then
    mkdir -p "$rootfs/usr/share"
    cp -a /usr/share/alsa "$rootfs/usr/share/alsa"
fi

# --- kernel modules, with their dependencies in load order (initramfs.sh).
modules_dest="$rootfs/modules" modules_base="" modules_hint="is linux-image-$abi installed completely?"
for module in configfs snd-aloop snd-dummy uinput evdev; do add_module "$module"; done
for dependency in $(modinfo -F depends "$gpio_sim_module" | tr ',' ' '); do add_module "$dependency"; done
add_module_file "$gpio_sim_module"
printf '%s\n' "${order[@]}" >"$rootfs/modules/order"

# --- host tools the scenario asks for.
for tool in $(sed -n 's/^# vboard-tools://p' "$scenario_file"); do
    path=$(command -v "$tool") ||
        die "scenario '$scenario' needs the host program '$tool' ('# vboard-tools:' line), which is not installed; for the gpio* tools: apt-get install gpiod (board/virtual/setup.sh does)"
    cp -L "$path" "$rootfs/usr/bin/$tool"
    copy_libraries "$rootfs/usr/bin/$tool"
done

# --- payload: files under /payload, and the shared libraries of every ELF among them.
for payload in ${payloads[@]+"${payloads[@]}"}; do
    if [ -d "$payload" ]; then cp -a "$payload"/. "$rootfs/payload/"; else cp -a "$payload" "$rootfs/payload/"; fi
done
# hushd opens libsndfile and webrtc-audio-processing with dlopen when it first needs them, which ldd does not list
# (deploy/dlopened-libraries.sh): they and what they need go in beside it.
copy_dlopened() {
    local file="$1" soname path
    is_elf "$file" || return 0
    for soname in $("$root/deploy/dlopened-libraries.sh" "$file" 2>/dev/null); do
        # awk reads to the end: leaving early would end ldconfig with SIGPIPE, which pipefail makes fatal.
        path=$(ldconfig -p | awk -v s="$soname" '$1 == s && /x86-64/ && !found { print $NF; found = 1 }')
        [ -n "$path" ] || die "$(basename "$file") opens $soname, which this machine does not have"
        mkdir -p "$rootfs$(dirname "$path")"
        [ -e "$rootfs$path" ] || cp -L "$path" "$rootfs$path"
        copy_libraries "$path"
    done
}
while IFS= read -r -d '' file; do
    copy_libraries "$file"
    copy_dlopened "$file"
done < <(find "$rootfs/payload" -type f -print0)
while read -r needed hint; do
    [ -n "$needed" ] || continue
    [ -e "$rootfs/payload/$needed" ] ||
        die "scenario '$scenario' needs '$needed' in its payload ('# vboard-payload:' line) and no --payload has it${hint:+; $hint}"
done < <(sed -n 's/^# vboard-payload://p' "$scenario_file")

# --- this run's settings for /init. The nonce makes a result line from any other source worthless.
nonce=$(od -An -tx1 -N8 /dev/urandom | tr -d ' \n')
guest_timeout=$((timeout > 30 ? timeout - 15 : timeout * 2 / 3))
printf 'scenario=%s\ntimeout=%s\nnonce=%s\n' "$scenario" "$guest_timeout" "$nonce" >"$rootfs/vboard/config"

# An uncompressed archive: compressing costs more on the host than it saves, and the guest would have to
# decompress it with an emulated CPU.
initrd="$work/initramfs.cpio"
(cd "$rootfs" && find . -print0 | LC_ALL=C sort -z | cpio -o -0 -H newc --quiet -R 0:0 >"$initrd") ||
    die "could not pack the initramfs in $work"
t1=$(date +%s%N)

log="$cache/logs/$scenario.log"
[ -n "$serial2" ] || serial2="$cache/logs/$scenario.ttyS1.log"
mkdir -p "$(dirname "$serial2")"
: >"$serial2"
serial2_option=("-serial" "file:$serial2")
operator_pid=""
operator="${scenario_file%.sh}.operator"
if [ -x "$operator" ]; then
    serial2_socket="$work/ttyS1.sock"
    serial2_option=("-chardev" "socket,id=ttyS1,path=$serial2_socket,server=on,wait=off" "-serial" "chardev:ttyS1")
    "$operator" "$serial2_socket" "$serial2" >"$cache/logs/$scenario.operator.log" 2>&1 &
    operator_pid=$!
fi
accel="${VBOARD_ACCEL:-tcg}"
# Under TCG the guest places every process at fixed addresses (norandmaps). With address-space randomisation,
# qemu 7.2 translated about 10 MB of host code a second during the soak, whose clients (every hushctl a scenario
# starts) are new processes at new addresses; that filled TCG's 1 GiB cache every 80-100 s, qemu empties a full
# cache with every vCPU stopped, and the soak's underruns (hushd's thread held off 90-110 ms) came with those
# stops and went with them. With norandmaps the cache grew 0.25 MB in two minutes of the same soak, and 30 minutes
# had no underrun (measured with VBOARD_MONITOR and `info jit`, docs/reliability.md#soak). Real hardware has no
# such cache, and nothing in hush relies on the layout.
emulation_args=""
[ "$accel" = tcg ] && emulation_args=" norandmaps"
monitor_option=(-monitor none)
[ -n "${VBOARD_MONITOR:-}" ] && monitor_option=(-monitor "unix:$VBOARD_MONITOR,server=on,wait=off")
echo "virtual board: scenario '$scenario' on $abi ($accel, $cpus CPUs, $memory MB, initramfs $(du -h "$initrd" | cut -f1)); log $log"
set +e
# The emulated CPUs are threads of qemu on a host that may be busy with other work (a CI machine's other jobs,
# stress-ng beside make test): at equal priority they are starved in bursts of 30-50 ms, the guest's audio threads
# with them, and every take of a timing check is disturbed and taken again until none is left. Run as root, qemu gets
# nice -5 (about three times a nice-0 process's share of a busy CPU; VBOARD_NICE=N sets another, 0 none): what is
# measured is then hush on a machine that is slow, not one that stops. Takes disturbed anyway are still taken again.
vboard_nice="${VBOARD_NICE:--5}"
[ "$(id -u)" = 0 ] || [ "$vboard_nice" -ge 0 ] || vboard_nice=0
timeout -k 5 "$timeout" nice -n "$vboard_nice" qemu-system-x86_64 \
    -accel "$accel" -cpu max -smp "$cpus" -m "$memory" \
    -nodefaults -nographic -no-reboot \
    -kernel "$kernel" -initrd "$initrd" \
    -append "console=ttyS0 panic=-1 loglevel=4 edd=off mitigations=off rdinit=/init$emulation_args${VBOARD_KERNEL_ARGS:+ $VBOARD_KERNEL_ARGS}" \
    -serial stdio "${serial2_option[@]}" "${monitor_option[@]}" \
    </dev/null >"$log" 2>&1
status=$?
if [ -n "$operator_pid" ]; then
    # The port closed with qemu: the operator ends by itself; what it did is in its log.
    timeout 10 tail --pid="$operator_pid" -f /dev/null || kill "$operator_pid" 2>/dev/null
    sed 's/^/  operator: /' "$cache/logs/$scenario.operator.log"
fi
set -e
t2=$(date +%s%N)
elapsed() { local ns=$(($2 - $1)); printf '%d.%d' $((ns / 1000000000)) $((ns % 1000000000 / 100000000)); }
timing="setup and packing $(elapsed "$t0" "$t1") s, boot to result $(elapsed "$t1" "$t2") s"

# Only a result line with this run's nonce counts; the last one wins.
result=$(tr -d '\r' <"$log" | grep -a -E "^HUSH-VBOARD-RESULT: .* \[run $nonce\]$" | tail -1 || true)
result="${result#HUSH-VBOARD-RESULT: }"
result="${result% \[run $nonce\]}"

if [ "$result" = "PASS" ]; then
    # The scenario's own output, without kernel messages.
    tr -d '\r' <"$log" | sed -n "/^virtual board: running scenario/,/^HUSH-VBOARD-RESULT/p" |
        grep -a -v -E '^(\[ *[0-9]+\.[0-9]+\]|HUSH-VBOARD-RESULT)' | sed 's/^/  /' || true
    [ ! -s "$serial2" ] || echo "  (ttyS1 output: $serial2)"
    echo "virtual board: scenario '$scenario' PASSED ($timing)"
    exit 0
fi

echo "---- guest log (last 200 lines of $log) ----"
tr -d '\r' <"$log" | tail -200
echo "---- end of guest log ----"
[ ! -s "$serial2" ] || echo "(the guest's ttyS1 output is in $serial2)"
if [ -n "$result" ]; then
    echo "virtual board: scenario '$scenario' FAILED: ${result#FAIL } ($timing)"
    exit 1
elif [ $status -eq 124 ] || [ $status -eq 137 ]; then
    echo "virtual board: scenario '$scenario' FAILED: no result within $timeout s: the VM hung or booted too slowly (try --timeout, and look at the log for where it stopped)"
elif grep -qa "Kernel panic" "$log"; then
    echo "virtual board: scenario '$scenario' FAILED: the guest kernel panicked (see the log above)"
elif ! grep -qa "virtual board: kernel" "$log"; then
    echo "virtual board: scenario '$scenario' FAILED: the VM did not boot to /init (qemu exit status $status; qemu's or the kernel's message is in the log above)"
else
    echo "virtual board: scenario '$scenario' FAILED: the VM ended without a result line (qemu exit status $status)"
fi
if tr -d '\r' <"$log" | grep -a "HUSH-VBOARD-RESULT:" | grep -a -v -q "\[run $nonce\]"; then
    echo "virtual board: (a HUSH-VBOARD-RESULT line without this run's nonce $nonce was printed by the scenario or its payload, not by /init, and was ignored)"
fi
exit 2
