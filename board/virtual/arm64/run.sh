#!/usr/bin/env bash
# The arm64 virtual board: Debian's arm64 6.1 kernel under qemu-system-aarch64 (virt, cortex-a72, TCG) with the
# virtual board's simulated hardware, an arm64 userland (busybox-static:arm64 and trixie's arm64 libraries), hush
# installed from its arm64 package by dpkg, and one scenario of board/virtual/scenarios run in it by the arm64 check
# programs (hush-vboard-check, hush-vboard-streams, hush-vboard-voice, hush-vboard-latency).
#
#   board/virtual/arm64/run.sh [--scenario NAME] [--deb FILE] [--programs DIR] [--timeout SEC] [--memory MB]
#                              [--cpus N] [--keep]
#
#   --scenario NAME   board/virtual/scenarios/NAME.sh (default e2e), with its NAME.operator and NAME.after; or a
#                     path to a script elsewhere (board/virtual/bench/memory.sh)
#   --deb FILE        the arm64 package (default .build/deb/hush_VERSION_arm64.deb, make deb-arm64)
#   --programs DIR    where the arm64 check programs (hush-vboard-check, ...) are (default
#                     .build/virtual-board-arm64, where deploy/cross/trixie.sh vboard-check-arm64 puts them)
#   --timeout SEC     wall time (default: the scenario's vboard-timeout line times 2, else 360)
#   --memory MB, --cpus N, --keep   as board/virtual/run.sh (defaults 1024, 2)
#
# make vboard-arm64 builds the package and the check programs, then runs this. What it takes from where:
#   kernel      linux-image-ABI-arm64 of the same Debian version as the amd64 board's kernel (board/virtual/setup.sh
#               picks it), fetched with apt-get download from bookworm and bookworm-security and unpacked with dpkg -x
#               under .build/virtual-board-arm64 (nothing is installed on this machine)
#   modules     configfs, snd-aloop, uinput, evdev and their dependencies from that package; gpio-sim and snd-dummy
#               (not in Debian's arm64 configuration) cross-built by board/virtual/arm64/build-modules.sh
#   userland    busybox-static:arm64; the shared libraries of every arm64 ELF file, resolved from their DT_NEEDED
#               entries in the trixie chroot's arm64 multiarch (deploy/cross/trixie.sh toolchain); its /usr/share/alsa;
#               a scenario's "# vboard-tools:" (amixer, aplay, arecord, the gpio* tools, stress-ng) from trixie's
#               arm64 packages, fetched by deploy/deb/fetch-debs.sh into .build/virtual-board-arm64/tools
#   hush        dpkg --root=ROOTFS --force-depends --force-script-chrootless -i the .deb: the guest's /usr/bin/hushd
#               and hushctl are the package's files; /payload/hushd, hushctl and virtual.toml, where the check
#               programs look, are symbolic links to the package's files
#   serial      the console on the PL011 (ttyAMA0, logged to .build/virtual-board-arm64/logs/NAME.log); two PCI
#               16550 ports are ttyS0 (discarded) and ttyS1 (hushd's console, to NAME.operator when there is one,
#               else to logs/NAME.ttyS1.log)
# Exit status as board/virtual/run.sh's: 0 only on PASS with this run's nonce (and NAME.after passing), 1 failed,
# 2 no result or the board could not be prepared, 64 usage.
set -euo pipefail

root="$(cd "$(dirname "$0")/../../.." && pwd)"
here="$root/board/virtual"
cache="$root/.build/virtual-board-arm64"
chroot_root="$root/.build/trixie/root"

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 64; }
die() { echo "arm64 board: $*" >&2; exit 2; }
# shellcheck source-path=SCRIPTDIR/.. source=initramfs.sh
. "$here/initramfs.sh"
say() { echo "arm64 board: $*"; }
now() { date +%s%N; }
seconds() { local ns=$(($2 - $1)); printf '%d.%d' $((ns / 1000000000)) $((ns % 1000000000 / 100000000)); }

scenario=e2e deb="" programs="$cache" timeout="" memory=1024 cpus=2 keep=0
while [ $# -gt 0 ]; do
    case "$1" in
        --scenario | --deb | --programs | --timeout | --memory | --cpus)
            [ $# -ge 2 ] || { echo "arm64 board: $1 needs a value" >&2; usage; }
            case "$1" in
                --scenario) scenario="$2" ;; --deb) deb="$2" ;; --programs) programs="$2" ;;
                --timeout) timeout="$2" ;; --memory) memory="$2" ;; --cpus) cpus="$2" ;;
            esac
            shift 2 ;;
        --keep) keep=1; shift ;;
        -h | --help) usage ;;
        *) echo "arm64 board: unknown argument '$1'" >&2; usage ;;
    esac
done
scenario_file="$here/scenarios/$scenario.sh"
if [[ "$scenario" == */* ]]; then # a path: a figure's script outside scenarios/ (board/virtual/bench)
    scenario_file="$scenario"
    scenario=$(basename "$scenario" .sh)
fi
[ -f "$scenario_file" ] || { echo "arm64 board: no scenario $scenario_file" >&2; exit 64; }
if [ -z "$timeout" ]; then
    timeout=$(sed -n 's/^# vboard-timeout: *\([0-9]*\).*/\1/p' "$scenario_file" | head -1)
    timeout=$((${timeout:-180} * 2)) # an emulated arm64 CPU is slower than an emulated x86-64 one
fi
if [ -z "$deb" ]; then
    deb=$(find "$root/.build/deb" -maxdepth 1 -name 'hush_*_arm64.deb' 2>/dev/null | sort -V | tail -1 || true)
fi
[ -f "$deb" ] || die "no arm64 package (make deb-arm64 builds .build/deb/hush_VERSION_arm64.deb; --deb FILE)"
[ -d "$chroot_root/usr/lib/aarch64-linux-gnu" ] || die "no trixie chroot with arm64 libraries (make toolchain-trixie)"

t0=$(now)
# --- the machine: the amd64 board's setup (linux-source-6.1, linux-kbuild-6.1, headers-common of the kernel's
# version), qemu-system-arm and the cross compiler.
amd64_abi=$("$here/setup.sh" | tail -1) || die "board/virtual/setup.sh failed"
abi="${amd64_abi%-amd64}-arm64"
version=$(dpkg-query -W -f='${Version}' linux-source-6.1)
for tool in qemu-system-aarch64:qemu-system-arm aarch64-linux-gnu-gcc-12:gcc-aarch64-linux-gnu; do
    command -v "${tool%%:*}" >/dev/null && continue
    say "installing ${tool#*:}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=600 \
        "${tool#*:}" >&2 || die "could not install ${tool#*:}"
done

# --- the arm64 kernel, its headers and busybox, fetched once into $cache/debs and unpacked into $cache/root.
unpacked="$cache/root"
stamp="$abi $version"
if [ "$(cat "$cache/debs.stamp" 2>/dev/null)" != "$stamp" ]; then
    say "fetching linux-image-$abi, linux-headers-$abi ($version) and busybox-static for arm64"
    keyring=/usr/share/keyrings/debian-archive-keyring.gpg
    mkdir -p "$cache/apt/lists/partial" "$cache/apt/cache/archives/partial" "$cache/apt/preferences.d"
    printf 'deb [arch=arm64 signed-by=%s] http://deb.debian.org/debian bookworm main\n' "$keyring" >"$cache/apt/sources.list"
    printf 'deb [arch=arm64 signed-by=%s] http://deb.debian.org/debian-security bookworm-security main\n' "$keyring" \
        >>"$cache/apt/sources.list"
    apt=(-o "Dir::Etc::sourcelist=$cache/apt/sources.list" -o Dir::Etc::sourceparts=/dev/null
        -o "Dir::State::Lists=$cache/apt/lists" -o "Dir::Cache=$cache/apt/cache" -o Dir::State::status=/dev/null
        -o "Dir::Etc::preferencesparts=$cache/apt/preferences.d" -o APT::Architecture=arm64
        -o APT::Architectures=arm64 -o APT::Sandbox::User=root -qq)
    apt-get "${apt[@]}" update || die "apt-get update for bookworm/arm64 failed"
    rm -rf "$cache/debs" "$unpacked" && mkdir -p "$cache/debs"
    (cd "$cache/debs" && apt-get "${apt[@]}" download "linux-image-$abi=$version" "linux-headers-$abi=$version" \
        busybox-static) || die "could not download the arm64 kernel $abi at $version (the amd64 board's version)"
    for package in "$cache"/debs/*.deb; do dpkg -x "$package" "$unpacked"; done
    # The headers' scripts are the machine's linux-kbuild-6.1 (x86-64 programs, which a cross build wants).
    mkdir -p "$unpacked/usr/lib"
    ln -sfn /usr/lib/linux-kbuild-6.1 "$unpacked/usr/lib/linux-kbuild-6.1"
    depmod -b "$unpacked" "$abi" || die "depmod for the unpacked arm64 kernel failed"
    rm -f "$cache/modules.stamp"
    echo "$stamp" >"$cache/debs.stamp"
fi
modules_stamp="$stamp $(sha256sum "$here/arm64/build-modules.sh" | cut -c1-16)"
if [ "$(cat "$cache/modules.stamp" 2>/dev/null)" != "$modules_stamp" ]; then
    say "building gpio-sim and snd-dummy for $abi, once"
    "$here/arm64/build-modules.sh" "$abi" "$unpacked/usr/src/linux-headers-$abi" "$cache" >&2 ||
        die "the arm64 modules did not build"
    echo "$modules_stamp" >"$cache/modules.stamp"
fi

# --- the guest's root.
mkdir -p "$cache/work" "$cache/logs"
find "$cache/work" -mindepth 1 -maxdepth 1 -mmin +120 -exec rm -rf {} + 2>/dev/null || true
work=$(mktemp -d "$cache/work/$scenario.XXXXXX")
if [ $keep -eq 0 ]; then trap 'rm -rf "$work"' EXIT; else say "keeping the initramfs tree and archive in $work"; fi
rootfs="$work/root"
mkdir -p "$rootfs"/{bin,sbin,usr/bin,usr/lib/aarch64-linux-gnu,usr/share,proc,sys,dev,tmp,run,root,etc,modules,payload,vboard}
ln -s usr/lib "$rootfs/lib" # trixie's merged /usr: the dynamic loader is /lib/ld-linux-aarch64.so.1
cp "$unpacked/bin/busybox" "$rootfs/bin/busybox"
add_guest_files "$rootfs" "$scenario_file"
cp -a "$chroot_root/usr/share/alsa" "$rootfs/usr/share/alsa"

# hush, from its package, by dpkg (as deploy/deb/test-deb.sh installs into a scratch root).
mkdir -p "$rootfs/var/lib/dpkg/info" "$rootfs/var/lib/dpkg/updates" "$rootfs/boot/firmware/overlays"
touch "$rootfs/var/lib/dpkg/status"
dpkg --root="$rootfs" --force-script-chrootless --force-depends --force-architecture --log=/dev/null \
    -i "$deb" >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log" >&2; die "dpkg -i $deb into the guest's root failed"; }
dpkg --root="$rootfs" -s hush 2>/dev/null | grep -qx 'Status: install ok installed' ||
    die "dpkg does not say hush is installed in the guest's root"
# /payload as board/virtual/run-all.sh fills it, from the package: links to its hushd, hushctl, virtual.toml and
# hearing warning sound;
# copies of its ALSA plugin and 50-hush.conf (the streams scenario copies those two to where the package put them
# already); the check programs a scenario names in its "# vboard-payload:" lines, from --programs.
for file in /usr/bin/hushd /usr/bin/hushctl /usr/share/hush/boards/virtual.toml /usr/share/hush/sounds/hearing-warning.wav; do
    [ -e "$rootfs$file" ] || die "the package put no $file"
    ln -s "$file" "$rootfs/payload/$(basename "$file")"
done
for file in /usr/lib/aarch64-linux-gnu/alsa-lib/libasound_module_pcm_hush.so /usr/share/alsa/alsa.conf.d/50-hush.conf; do
    [ -e "$rootfs$file" ] || die "the package put no $file"
    cp "$rootfs$file" "$rootfs/payload/"
done
for program in hush-vboard-check hush-vboard-streams hush-vboard-voice hush-vboard-latency; do
    grep -q "^# vboard-payload: $program " "$scenario_file" || continue
    [ -f "$programs/$program" ] || die "no arm64 $program in $programs (deploy/cross/trixie.sh vboard-check-arm64 builds it)"
    cp "$programs/$program" "$rootfs/payload/$program"
done

# The scenario's "# vboard-tools:" programs, for arm64: from trixie's arm64 packages, fetched and unpacked (not
# installed) into $cache/tools by deploy/deb/fetch-debs.sh. Only the tools of this map are known here.
tool_package() {
    case "$1" in
        amixer | aplay | arecord) echo alsa-utils ;;
        gpiodetect | gpioinfo | gpioget | gpioset | gpiomon) echo gpiod ;;
        stress-ng) echo stress-ng ;;
        *) return 1 ;;
    esac
}
# shellcheck disable=SC2013 # the tools are words on one line
for tool in $(sed -n 's/^# vboard-tools://p' "$scenario_file"); do
    package=$(tool_package "$tool") || die "scenario '$scenario' needs '$tool', which the arm64 board cannot fetch yet (tool_package in $0)"
    "$root/deploy/deb/fetch-debs.sh" trixie arm64 "$cache/tools" "$package" >&2 || die "could not fetch $package for arm64"
    [ -x "$cache/tools/root/usr/bin/$tool" ] || die "trixie's $package for arm64 has no /usr/bin/$tool"
    cp "$cache/tools/root/usr/bin/$tool" "$rootfs/usr/bin/$tool"
done

# Shared libraries: every DT_NEEDED of every arm64 ELF file in the root, and what hushd opens with dlopen when it
# first needs it (libsndfile, webrtc-audio-processing: deploy/dlopened-libraries.sh), found in the chroot's arm64
# multiarch directories, until nothing new is needed.
is_elf() { [ "$(head -c 4 "$1" 2>/dev/null | od -An -c | tr -d ' ')" = '177ELF' ]; }
libdir="$rootfs/usr/lib/aarch64-linux-gnu"
pending=()
while IFS= read -r -d '' file; do is_elf "$file" && pending+=("$file"); done < <(find "$rootfs" -type f -print0)
while [ ${#pending[@]} -gt 0 ]; do
    file="${pending[0]}"
    pending=("${pending[@]:1}")
    for library in $(readelf -d "$file" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'
        "$root/deploy/dlopened-libraries.sh" "$file" 2>/dev/null); do
        [ -e "$libdir/$library" ] && continue
        found=""
        for dir in "$chroot_root/usr/lib/aarch64-linux-gnu" "$chroot_root/lib/aarch64-linux-gnu" \
            "$cache/tools/root/usr/lib/aarch64-linux-gnu"; do
            [ -e "$dir/$library" ] && { found="$dir/$library"; break; }
        done
        [ -n "$found" ] || die "$(basename "$file") needs $library, which the trixie chroot has not for arm64"
        cp -L "$found" "$libdir/$library"
        pending+=("$libdir/$library")
    done
done
# The programs' interpreter, /lib/ld-linux-aarch64.so.1, is a link into the multiarch directory, as on trixie.
interpreter=$(readelf -l "$rootfs/usr/bin/hushd" | sed -n 's/.*program interpreter: \(.*\)\]/\1/p')
[ -e "$libdir/$(basename "$interpreter")" ] || die "no $(basename "$interpreter") among the copied libraries"
ln -s "aarch64-linux-gnu/$(basename "$interpreter")" "$rootfs/usr/lib/$(basename "$interpreter")"
# dlopen()ed, so not in any DT_NEEDED: alsa-lib's own modules are not needed (the board uses hw: devices only).

# Kernel modules in load order (../initramfs.sh; modprobe reads the unpacked kernel's modules.dep).
modules_dest="$rootfs/modules" modules_base="$unpacked" modules_hint="the arm64 kernel package lacks it"
for module in configfs snd-aloop uinput evdev; do add_module "$module"; done
for built in snd-dummy hush-gpio-sim; do
    for dependency in $(modinfo -F depends "$cache/$built.ko" | tr ',' ' '); do add_module "$dependency"; done
    add_module_file "$cache/$built.ko"
done
printf '%s\n' "${order[@]}" >"$rootfs/modules/order"

nonce=$(od -An -tx1 -N8 /dev/urandom | tr -d ' \n')
printf 'scenario=%s\ntimeout=%s\nnonce=%s\n' "$scenario" "$((timeout - 15))" "$nonce" >"$rootfs/vboard/config"
initrd="$work/initramfs.cpio"
(cd "$rootfs" && find . -print0 | LC_ALL=C sort -z | cpio -o -0 -H newc --quiet -R 0:0 >"$initrd") ||
    die "could not pack the initramfs"
t1=$(now)

# --- boot.
log="$cache/logs/$scenario.log"
serial2="$cache/logs/$scenario.ttyS1.log"
: >"$serial2"
serial2_option=(-chardev "file,id=ttyS1,path=$serial2")
operator_pid=""
operator="${scenario_file%.sh}.operator"
if [ -x "$operator" ]; then
    serial2_option=(-chardev "socket,id=ttyS1,path=$work/ttyS1.sock,server=on,wait=off")
    "$operator" "$work/ttyS1.sock" "$serial2" >"$cache/logs/$scenario.operator.log" 2>&1 &
    operator_pid=$!
fi
kernel="$unpacked/boot/vmlinuz-$abi"
say "scenario '$scenario' on $abi (qemu-system-aarch64 virt cortex-a72, TCG, $cpus CPUs, $memory MB, initramfs" \
    "$(du -h "$initrd" | cut -f1)); log $log"
set +e
# The emulated CPUs are threads of qemu on a host that may be busy with other work (a CI machine's other jobs,
# stress-ng beside make test): at equal priority they are starved in bursts of 30-50 ms, the guest's audio threads
# with them, and every take of a timing check is disturbed and taken again until none is left. Run as root, qemu gets
# nice -5 (about three times a nice-0 process's share of a busy CPU; VBOARD_NICE=N sets another, 0 none): what is
# measured is then hush on a machine that is slow, not one that stops. Takes disturbed anyway are still taken again.
vboard_nice="${VBOARD_NICE:--5}"
[ "$(id -u)" = 0 ] || [ "$vboard_nice" -ge 0 ] || vboard_nice=0
timeout -k 5 "$timeout" nice -n "$vboard_nice" qemu-system-aarch64 \
    -M virt -cpu cortex-a72 -accel tcg -smp "$cpus" -m "$memory" \
    -nodefaults -nographic -no-reboot \
    -kernel "$kernel" -initrd "$initrd" \
    -append "console=ttyAMA0 panic=-1 loglevel=4 rdinit=/init norandmaps${VBOARD_KERNEL_ARGS:+ $VBOARD_KERNEL_ARGS}" \
    -serial stdio \
    -chardev null,id=ttyS0 -device pci-serial,chardev=ttyS0 \
    "${serial2_option[@]}" -device pci-serial,chardev=ttyS1 \
    -device virtio-rng-pci \
    -monitor none </dev/null >"$log" 2>&1
status=$?
if [ -n "$operator_pid" ]; then
    timeout 10 tail --pid="$operator_pid" -f /dev/null || kill "$operator_pid" 2>/dev/null
    sed 's/^/  operator: /' "$cache/logs/$scenario.operator.log"
fi
set -e
t2=$(now)
timing="setup and packing $(seconds "$t0" "$t1") s, boot to result $(seconds "$t1" "$t2") s"

result=$(tr -d '\r' <"$log" | grep -a -E "^HUSH-VBOARD-RESULT: .* \[run $nonce\]$" | tail -1 || true)
result="${result#HUSH-VBOARD-RESULT: }"
result="${result% \[run "$nonce"\]}"
if [ "$result" = PASS ]; then
    tr -d '\r' <"$log" | sed -n "/^virtual board: kernel/,/^HUSH-VBOARD-RESULT/p" |
        grep -a -v -E '^(\[ *[0-9]+\.[0-9]+\]|HUSH-VBOARD-RESULT)' | sed 's/^/  /' || true
    after="$here/scenarios/$scenario.after"
    if [ -x "$after" ] && ! "$after" "$serial2"; then
        say "scenario '$scenario' FAILED: $scenario.after found the console log $serial2 wanting ($timing)"
        exit 1
    fi
    say "scenario '$scenario' PASSED ($timing)"
    exit 0
fi
echo "---- guest log (last 200 lines of $log) ----"
tr -d '\r' <"$log" | tail -200
echo "---- end of guest log ----"
if [ -n "$result" ]; then
    say "scenario '$scenario' FAILED: ${result#FAIL } ($timing)"
    exit 1
fi
say "scenario '$scenario' FAILED: no result (qemu exit status $status; $timing)"
exit 2
