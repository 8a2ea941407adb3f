#!/usr/bin/env bash
# Makes this machine able to run the virtual board: installs what is missing (qemu, a Debian 6.1 kernel with its
# headers and source, busybox) and builds the gpio-sim module once for that kernel.
# Prints the kernel ABI it prepared (e.g. 6.1.0-56-amd64) on the last line.
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
cache="$root/.build/virtual-board"
sudo_cmd=""
[ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

apt_install() {
    echo "virtual board: installing $*" >&2
    if [ ! -f "$cache/.apt-updated" ]; then
        $sudo_cmd apt-get update -qq >&2
        mkdir -p "$cache" && touch "$cache/.apt-updated"
    fi
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq -o DPkg::Lock::Timeout=600 "$@" >&2
}

missing=()
for package in qemu-system-x86 busybox-static cpio kmod linux-image-amd64; do
    installed "$package" || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] || apt_install "${missing[@]}"

# The kernel the linux-image-amd64 metapackage brought in, and exactly matching headers and source.
image=$(dpkg-query -W -f='${Depends}' linux-image-amd64 | grep -o 'linux-image-[0-9][^ ,]*-amd64' | head -1)
abi="${image#linux-image-}"
version=$(dpkg-query -W -f='${Version}' "$image" 2>/dev/null || true)
[ -n "$version" ] || { apt_install "$image"; version=$(dpkg-query -W -f='${Version}' "$image"); }
[ -f "/boot/vmlinuz-$abi" ] || { echo "virtual board: /boot/vmlinuz-$abi is missing after installing $image" >&2; exit 1; }

need=()
installed "linux-headers-$abi" || need+=("linux-headers-$abi")
if ! installed linux-source-6.1 || [ "$(dpkg-query -W -f='${Version}' linux-source-6.1)" != "$version" ]; then
    need+=("linux-source-6.1=$version")
fi
[ ${#need[@]} -eq 0 ] || apt_install "${need[@]}"

if [ ! -f "$cache/hush-gpio-sim.ko" ] || [ "$(cat "$cache/hush-gpio-sim.abi" 2>/dev/null)" != "$abi" ]; then
    echo "virtual board: building gpio-sim for $abi" >&2
    "$root/board/virtual/build-gpio-sim.sh" "$abi" "$cache" >&2
fi
echo "$abi"
