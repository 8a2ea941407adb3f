#!/usr/bin/env bash
# The booted board: a real Debian userland with systemd as PID 1 and udev, on a disk, in qemu with the virtual
# board's kernel and drivers; hush installed from its .deb with apt as a maker would, then checked on the running
# system across several boots (docs/virtual-board.md, "The booted board"; docs/deploy.md for the figures).
#
#   board/booted/run.sh --deb FILE [--suite SUITE] [--keep] [--only PHASE...]
#
#   --deb FILE    the hush package to install (make deb's, for this machine's release and architecture)
#   --suite NAME  the Debian release the board runs (default: this machine's, which the package was built for)
#   --keep        keep the disk image and the results pulled out of it (.build/booted-board/work/RUN)
#   --only PHASE  boot only these phases, in this order (default: all of them; see below), for debugging
#
# The userland is debootstrapped once (minbase with systemd, udev, dbus, kmod, alsa-utils, procps, evemu-tools) into
# .build/booted-board/SUITE-ARCH/root and kept; the package's dependencies are downloaded once into its apt cache.
# Each run copies it into a fresh ext4 disk image (mke2fs -d, no loop mount) with:
#   - the virtual board's kernel modules (the host's Debian 6.1 kernel, and gpio-sim built for it: setup.sh);
#   - a local apt repository /srv/hush-repo with the package and everything it depends on, and no other source:
#     the guest has no network;
#   - the test's units and scripts under /usr/local/lib/hush-booted (board/booted/guest): the simulated hardware
#     (what a device tree and its drivers give a real board) and the checks of each phase.
# qemu boots the disk through a small initramfs (busybox loads virtio and ext4, then switch_root to systemd).
# Every phase is a boot of the same disk; the kernel command line names the phase and this run's nonce, and the
# checks' unit writes its lines to the second serial port (a file on the host):
#   install   apt installs hush from the local repository; the maker's configuration goes in; poweroff
#   boot      hushd started by systemd with nobody logged in; the journal, the sandbox, users and groups,
#             devices, clients of two users, kill -9, a volume changed before poweroff   (1024 MB: fault-around on)
#   reboot    the volume is still there; fault-around off; systemctl stop saves; apt remove and purge   (2048 MB)
# Exit status: 0 when every phase printed "HUSH-BOOTED-RESULT: PASS [run NONCE]"; 1 when one failed; 2 when a
# boot gave no result (did not boot, hung) or the board could not be prepared; 64 for a usage error.
#
# Environment: BOOTED_MIRROR (default: the Debian mirror this machine's apt uses); VBOARD_ACCEL as run.sh.
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
here="$root/board/booted"
cache="$root/.build/booted-board"

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 64; }
die() { echo "booted board: $*" >&2; exit 2; }
say() { echo "booted board: $*"; }

# shellcheck disable=SC1091
suite="$(. /etc/os-release && echo "${VERSION_CODENAME:-}")"
deb=""
keep=0
phases=()
while [ $# -gt 0 ]; do
    case "$1" in
        --deb) [ $# -ge 2 ] || usage; deb="$2"; shift 2 ;;
        --suite) [ $# -ge 2 ] || usage; suite="$2"; shift 2 ;;
        --keep) keep=1; shift ;;
        --only) [ $# -ge 2 ] || usage; phases+=("$2"); shift 2 ;;
        -h | --help) usage ;;
        *) echo "booted board: unknown argument '$1'" >&2; usage ;;
    esac
done
[ -n "$deb" ] || { echo "booted board: --deb FILE is required (make deb builds it)" >&2; exit 64; }
[ -f "$deb" ] || { echo "booted board: no package '$deb' (make deb builds it)" >&2; exit 64; }
deb="$(cd "$(dirname "$deb")" && pwd)/$(basename "$deb")"
[ ${#phases[@]} -gt 0 ] || phases=(install boot reboot)
for phase in "${phases[@]}"; do
    [ -f "$here/guest/phase-$phase.sh" ] || { echo "booted board: no phase '$phase'" >&2; exit 64; }
done
[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot, and files owned by other users in the image)"
arch="$(dpkg --print-architecture)"
[ "$(dpkg-deb -f "$deb" Architecture)" = "$arch" ] ||
    die "$deb is for $(dpkg-deb -f "$deb" Architecture); this board runs $arch"

# need COMMAND PACKAGE: the host programs this script uses.
need() {
    command -v "$1" >/dev/null && return 0
    echo "booted board: installing $2 (for $1)" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 "$2" >&2 ||
        { apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >&2; } ||
        die "could not install $2"
}
need debootstrap debootstrap
need mke2fs e2fsprogs
need dpkg-scanpackages dpkg-dev
need cpio cpio

t0=$(date +%s%N)
abi=$("$root/board/virtual/setup.sh" | tail -1) || die "board/virtual/setup.sh failed (its message is above)"
kernel="/boot/vmlinuz-$abi"
[ ! -s "$root/.build/virtual-board/vmlinux-$abi" ] || kernel="$root/.build/virtual-board/vmlinux-$abi"
gpio_sim_module="$root/.build/virtual-board/hush-gpio-sim.ko"

# --- the userland, made once. Changing the recipe makes it again.
packages="systemd,systemd-sysv,udev,dbus,kmod,alsa-utils,procps,util-linux,evemu-tools"
recipe="booted 1 | $suite $arch | $packages"
base="$cache/$suite-$arch"
tree="$base/root"
mkdir -p "$cache"
exec 9>"$cache/lock"
flock 9
if [ "$(cat "$base/made" 2>/dev/null)" != "$recipe" ]; then
    mirror="${BOOTED_MIRROR:-$(apt-get indextargets --format '$(REPO_URI)' 'Component: main' 2>/dev/null | head -1)}"
    mirror="${mirror:-http://deb.debian.org/debian/}"
    rm -rf "$base"
    mkdir -p "$base"
    say "debootstrap $suite ($arch, minbase with systemd) from $mirror into $tree (once; about 3 minutes)"
    debootstrap --variant=minbase --arch="$arch" --include="$packages" \
        --keyring=/usr/share/keyrings/debian-archive-keyring.gpg "$suite" "$tree" "$mirror" \
        >"$base/debootstrap.log" 2>&1 ||
        { tail -20 "$base/debootstrap.log" >&2; die "debootstrap failed (all of it: $base/debootstrap.log)"; }
    chroot "$tree" apt-get update -qq >"$base/apt.log" 2>&1 ||
        { cat "$base/apt.log" >&2; die "apt-get update in $tree failed"; }
    echo "$recipe" >"$base/made"
fi

# --- the package's dependencies, into the userland's apt cache (downloaded once; later runs find them there).
cp "$deb" "$tree/tmp/hush.deb"
if ! chroot "$tree" apt-get install -y -qq --download-only --no-install-recommends /tmp/hush.deb \
    >"$base/download.log" 2>&1; then
    chroot "$tree" apt-get update -qq >>"$base/download.log" 2>&1 || true
    chroot "$tree" apt-get install -y -qq --download-only --no-install-recommends /tmp/hush.deb \
        >>"$base/download.log" 2>&1 ||
        { cat "$base/download.log" >&2; die "apt could not fetch what $(basename "$deb") depends on"; }
fi
rm -f "$tree/tmp/hush.deb"

# --- this run's disk: a copy of the userland and the test's files.
mkdir -p "$cache/work" "$cache/logs"
find "$cache/work" -mindepth 1 -maxdepth 1 -mmin +120 -exec rm -rf {} + 2>/dev/null || true
work=$(mktemp -d "$cache/work/run.XXXXXX")
if [ $keep -eq 0 ]; then trap 'rm -rf "$work"' EXIT; else say "keeping the disk and the results in $work"; fi
image_tree="$work/tree"
cp -a "$tree" "$image_tree"
repo="$image_tree/srv/hush-repo"
mkdir -p "$repo"
find "$image_tree/var/cache/apt/archives" -maxdepth 1 -name '*.deb' -exec mv {} "$repo/" \;
cp "$deb" "$repo/"
(cd "$repo" && dpkg-scanpackages --multiversion . /dev/null 2>/dev/null >Packages) || die "dpkg-scanpackages failed in $repo"
rm -rf "$image_tree"/var/lib/apt/lists/*
rm -f "$image_tree"/etc/apt/sources.list.d/*
echo "deb [trusted=yes] file:/srv/hush-repo ./" >"$image_tree/etc/apt/sources.list"

# The kernel's modules the board uses, with the virtual board's gpio-sim, indexed by depmod for udev and modprobe.
modules="$image_tree/lib/modules/$abi"
mkdir -p "$modules"
for part in sound fs/ext4 fs/jbd2 fs/mbcache.ko fs/configfs fs/fat fs/nls lib crypto arch \
    drivers/block/virtio_blk.ko drivers/virtio drivers/char/hw_random drivers/input drivers/gpio \
    drivers/char/virtio_console.ko drivers/hid drivers/usb/common drivers/usb/core; do
    for found in /lib/modules/"$abi"/kernel/$part*; do
        [ -e "$found" ] || continue
        mkdir -p "$modules/$(dirname "${found#/lib/modules/"$abi"/}")"
        cp -a "$found" "$modules/$(dirname "${found#/lib/modules/"$abi"/}")/"
    done
done
cp /lib/modules/"$abi"/modules.builtin* /lib/modules/"$abi"/modules.order "$modules/" 2>/dev/null || true
mkdir -p "$modules/extra"
cp "$gpio_sim_module" "$modules/extra/"
depmod -b "$image_tree" "$abi" || die "depmod failed for the image's modules"

# The machine: its name, its one disk, the groups of the people of the checks, and the test's own files.
echo hushboard >"$image_tree/etc/hostname"
printf '127.0.0.1 localhost\n127.0.1.1 hushboard\n' >"$image_tree/etc/hosts"
echo "/dev/vda / ext4 rw,noatime 0 0" >"$image_tree/etc/fstab"
# A machine id of its own, so that the first boot is not systemd's "first boot" (presets, firstboot questions).
systemd-machine-id-setup --root="$image_tree" >/dev/null 2>&1 || chroot "$image_tree" systemd-machine-id-setup >/dev/null
mkdir -p "$image_tree/var/log/journal" # journald keeps the journal across boots
# The board's sound cards and input, loaded at boot as a maker loads a DAC's driver: the virtual profile's names
# ("Loopback", "Dummy") come from these options.
printf 'snd-aloop\nsnd-dummy\nuinput\nevdev\n' >"$image_tree/etc/modules-load.d/hush-board.conf"
printf 'options snd-aloop index=0 id=Loopback pcm_substreams=2\noptions snd-dummy index=1 id=Dummy hrtimer=1\n' \
    >"$image_tree/etc/modprobe.d/hush-board.conf"
chroot "$image_tree" useradd --create-home --shell /bin/bash alice
chroot "$image_tree" useradd --create-home --shell /bin/bash bob
install -d "$image_tree/usr/local/lib/hush-booted"
cp "$here"/guest/*.sh "$here"/guest/*.evemu "$image_tree/usr/local/lib/hush-booted/"
cp "$root/board/virtual/guest-lib.sh" "$image_tree/usr/local/lib/hush-booted/"
chmod 755 "$image_tree"/usr/local/lib/hush-booted/*.sh
cc -O2 -Wall -o "$image_tree/usr/local/lib/hush-booted/first-sound" "$here/first-sound.c" -lasound ||
    die "could not build board/booted/first-sound.c (libasound2-dev: make deps installs it)"
cp "$here"/guest/*.service "$image_tree/etc/systemd/system/"
for unit in "$here"/guest/*.service; do
    chroot "$image_tree" systemctl enable "$(basename "$unit")" >/dev/null 2>&1 ||
        die "could not enable $(basename "$unit") in the image"
done

size_mb=$(( $(du -sm "$image_tree" | cut -f1) + 768 ))
disk="$work/disk.img"
mke2fs -q -t ext4 -L hushroot -d "$image_tree" "$disk" "${size_mb}M" || die "mke2fs -d could not make the disk"
rm -rf "$image_tree"

# --- the initramfs: busybox, virtio and ext4, then systemd on the disk.
initramfs_tree="$work/initramfs"
mkdir -p "$initramfs_tree"/{bin,modules,proc,sys,dev,newroot}
cp /bin/busybox "$initramfs_tree/bin/busybox"
# shellcheck source-path=SCRIPTDIR source=../virtual/initramfs.sh
. "$root/board/virtual/initramfs.sh"
modules_dest="$initramfs_tree/modules" modules_base="" modules_hint="is linux-image-$abi installed completely?"
for module in virtio_pci virtio_blk ext4 crc32c_generic; do add_module "$module"; done
printf '%s\n' "${order[@]}" >"$initramfs_tree/modules/order"
cp "$here/initramfs-init.sh" "$initramfs_tree/init"
chmod 755 "$initramfs_tree/init"
initrd="$work/initramfs.cpio"
(cd "$initramfs_tree" && find . -print0 | LC_ALL=C sort -z | cpio -o -0 -H newc --quiet -R 0:0 >"$initrd")
t1=$(date +%s%N)
elapsed() { local ns=$(($2 - $1)); printf '%d.%d' $((ns / 1000000000)) $((ns % 1000000000 / 100000000)); }
say "disk $(du -h --apparent-size "$disk" | cut -f1) ($suite, $arch, kernel $abi) made in $(elapsed "$t0" "$t1") s"

# --- the boots.
memory_of() {
    case "$1" in
        reboot) echo 2048 ;;
        *) echo 1024 ;;
    esac
}
failed=0
for phase in "${phases[@]}"; do
    nonce=$(od -An -tx1 -N8 /dev/urandom | tr -d ' \n')
    log="$cache/logs/$phase.log"
    results="$cache/logs/$phase.results.log"
    : >"$results"
    memory=$(memory_of "$phase")
    say "boot '$phase' ($memory MB); console $log, checks $results"
    b0=$(date +%s%N)
    set +e
    timeout -k 5 600 nice -n "${VBOARD_NICE:--5}" qemu-system-x86_64 \
        -accel "${VBOARD_ACCEL:-tcg}" -cpu max -smp 2 -m "$memory" \
        -nodefaults -nographic -no-reboot -nic none \
        -kernel "$kernel" -initrd "$initrd" \
        -drive "file=$disk,format=raw,if=virtio" \
        -append "console=ttyS0 panic=-1 loglevel=4 edd=off mitigations=off norandmaps hush.booted=$phase hush.nonce=$nonce" \
        -serial stdio -serial "file:$results" -monitor none \
        </dev/null >"$log" 2>&1
    status=$?
    set -e
    b1=$(date +%s%N)
    tr -d '\r' <"$results" | grep -a -v -E '^HUSH-BOOTED-RESULT' | sed 's/^/  /' || true
    result=$(tr -d '\r' <"$results" | grep -a -E "^HUSH-BOOTED-RESULT: .* \[run $nonce\]$" | tail -1 || true)
    result="${result#HUSH-BOOTED-RESULT: }"
    result="${result% \[run $nonce\]}"
    if [ "$result" = PASS ]; then
        say "boot '$phase' PASSED ($(elapsed "$b0" "$b1") s from qemu's start to power-off)"
        continue
    fi
    echo "---- console of boot '$phase' (last 150 lines of $log) ----"
    tr -d '\r' <"$log" | tail -150
    echo "---- end ----"
    if [ -n "$result" ]; then
        say "boot '$phase' FAILED: ${result#FAIL }"
        failed=1
    else
        say "boot '$phase' gave no result (qemu exit status $status$([ $status -eq 124 ] && echo ': timed out after 600 s'))"
        exit 2
    fi
    break
done
[ $failed -eq 0 ] || exit 1
say "PASSED: ${phases[*]}"
