#!/usr/bin/env bash
# Makes this machine able to run the virtual board, and prints the kernel ABI it prepared (e.g. 6.1.0-56-amd64)
# as the only line on standard output (everything else goes to standard error):
#
#   board/virtual/setup.sh
#
# 1. Installs the Debian packages that are missing: qemu-system-x86, busybox-static, cpio, xz-utils, kmod, make,
#    gpiod (libgpiod's tools, used by the smoke scenario), alsa-utils (amixer, for the adapters scenario),
#    stress-ng (CPU load for the faults scenario), and a
#    Debian 6.1 kernel: linux-image-amd64, the kernel image it points to, linux-headers for exactly that image and linux-source-6.1 of the same version.
#    The kernel is only booted inside qemu; the host's own kernel is not touched and no reboot is needed.
# 2. Unpacks the kernel image once (qemu boots the uncompressed vmlinux faster) into .build/virtual-board/.
# 3. Builds the gpio-sim module (build-gpio-sim.sh) once for that kernel and caches it in .build/virtual-board/;
#    it is rebuilt only when the kernel, its Debian version or build-gpio-sim.sh change.
#
# When everything is there already it only asks dpkg, which takes well under a second.
# VBOARD_KERNEL=ABI picks another installed kernel than the one linux-image-amd64 points to.
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
here="$root/board/virtual"
cache="$root/.build/virtual-board"
mkdir -p "$cache"
# One setup at a time (parallel runs would otherwise build the module into the same directory together).
exec 9>"$cache/setup.lock"
flock 9

say() { echo "virtual board setup: $*" >&2; }
fail() { say "ERROR: $*"; exit 1; }

sudo_cmd=""
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || fail "not root and no sudo: run board/virtual/setup.sh as root once"
    sudo_cmd="sudo"
fi

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
version_of() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || true; }

apt_updated=0
apt_update() {
    say "apt-get update"
    $sudo_cmd apt-get update -qq -o DPkg::Lock::Timeout=600 >&2 || fail "apt-get update failed (is the Debian mirror reachable?)"
    apt_updated=1
}
# apt_install PACKAGE[=VERSION]...: installs quietly; on failure refreshes the package lists once and retries.
apt_install() {
    say "installing $*"
    local _
    for _ in 1 2; do
        if DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends \
            -o DPkg::Lock::Timeout=600 "$@" >&2; then
            return 0
        fi
        [ $apt_updated -eq 0 ] || return 1
        apt_update
    done
    return 1
}

# 1a. Tools.
missing=()
for package in qemu-system-x86 busybox-static cpio xz-utils kmod make gpiod alsa-utils stress-ng linux-image-amd64; do
    installed "$package" || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
    apt_install "${missing[@]}" || fail "could not install ${missing[*]} (see apt's message above)"
fi

# 1b. The kernel: the image linux-image-amd64 depends on (or VBOARD_KERNEL), and headers and source of the
# same Debian version, so that the module we build matches the kernel we boot.
pick_kernel() {
    if [ -n "${VBOARD_KERNEL:-}" ]; then
        abi="$VBOARD_KERNEL"
    else
        local image
        image=$(dpkg-query -W -f='${Depends}' linux-image-amd64 | grep -o 'linux-image-[0-9][^ ,]*-amd64' | head -1)
        [ -n "$image" ] || fail "cannot tell which kernel linux-image-amd64 depends on ($(dpkg-query -W -f='${Depends}' linux-image-amd64))"
        abi="${image#linux-image-}"
    fi
    image_package="linux-image-$abi"
    installed "$image_package" || apt_install "$image_package" || fail "could not install $image_package"
    version=$(version_of "$image_package")
}
pick_kernel

# headers and source at exactly $version; if the archive no longer has that version (Debian keeps only the
# newest), move image, headers and source together to the newest one.
need=()
[ "$(version_of "linux-headers-$abi")" = "$version" ] || need+=("linux-headers-$abi=$version")
[ "$(version_of linux-source-6.1)" = "$version" ] || need+=("linux-source-6.1=$version")
if [ ${#need[@]} -gt 0 ] && ! apt_install "${need[@]}"; then
    [ -z "${VBOARD_KERNEL:-}" ] || fail "could not install ${need[*]} for VBOARD_KERNEL=$VBOARD_KERNEL"
    say "the archive has no headers/source for kernel $abi ($version); moving to the archive's newest 6.1 kernel"
    apt_install linux-image-amd64 linux-headers-amd64 linux-source-6.1 ||
        fail "could not install linux-image-amd64 linux-headers-amd64 linux-source-6.1"
    pick_kernel
    need=()
    [ "$(version_of "linux-headers-$abi")" = "$version" ] || need+=("linux-headers-$abi=$version")
    [ "$(version_of linux-source-6.1)" = "$version" ] || need+=("linux-source-6.1=$version")
    [ ${#need[@]} -eq 0 ] || apt_install "${need[@]}" ||
        fail "kernel image $abi is at $version but headers/source of that version cannot be installed: ${need[*]}"
fi

[ -f "/boot/vmlinuz-$abi" ] || fail "/boot/vmlinuz-$abi is missing although $image_package is installed: apt-get install --reinstall $image_package"
[ -f "/lib/modules/$abi/modules.dep" ] || fail "/lib/modules/$abi/modules.dep is missing: run 'depmod $abi'"

# 2. An uncompressed copy of the kernel, which qemu boots through its PVH entry point: this skips the
# decompression of the bzImage by the emulated CPU, about 3 s of every boot under TCG. run.sh falls back to
# /boot/vmlinuz-ABI when there is none.
vmlinux="$cache/vmlinux-$abi"
if [ ! -s "$vmlinux" ] || [ "/boot/vmlinuz-$abi" -nt "$vmlinux" ]; then
    rm -f "$vmlinux"
    if grep -q '^CONFIG_PVH=y' "/boot/config-$abi" 2>/dev/null; then
        # The bzImage carries the kernel as an xz stream (CONFIG_KERNEL_XZ on Debian): find it and unpack it.
        offset=$(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "/boot/vmlinuz-$abi" | head -1 | cut -d: -f1 || true)
        if [ -n "$offset" ] &&
            xz -dc --single-stream < <(tail -c +$((offset + 1)) "/boot/vmlinuz-$abi") >"$vmlinux.tmp" 2>/dev/null &&
            [ "$(head -c 4 "$vmlinux.tmp" | od -An -c | tr -d ' ')" = '177ELF' ]; then
            mv "$vmlinux.tmp" "$vmlinux"
        else
            rm -f "$vmlinux.tmp"
            say "note: could not unpack /boot/vmlinuz-$abi; booting the compressed image (about 3 s slower)"
        fi
    fi
fi

# 3. The gpio-sim module, cached per kernel ABI + Debian version + build script.
stamp="abi=$abi version=$version script=$(sha256sum "$here/build-gpio-sim.sh" | cut -c1-16)"
if [ ! -f "$cache/hush-gpio-sim.ko" ] || [ "$(cat "$cache/hush-gpio-sim.stamp" 2>/dev/null)" != "$stamp" ]; then
    say "building the gpio-sim module for $abi ($version), once; about 15 s"
    rm -f "$cache/hush-gpio-sim.stamp"
    "$here/build-gpio-sim.sh" "$abi" "$cache" >&2
    echo "$stamp" >"$cache/hush-gpio-sim.stamp"
fi
echo "$abi"
