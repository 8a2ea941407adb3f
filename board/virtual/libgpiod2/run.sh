#!/usr/bin/env bash
# hush against libgpiod 2.x on a bookworm machine (which has 1.6): fetches Debian trixie's libgpiod-dev and
# libgpiod3 with a private apt configuration, unpacks them under .build/gpiod2/root (the machine's packages and apt
# sources are left as they were), builds hush-vboard-check against them, and runs its GPIO checks in the virtual
# board. `make test` runs it after the virtual board's scenarios on 1.6 (make gpiod2; docs/virtual-board.md).
#
#   board/virtual/libgpiod2/run.sh            fetch (once), build, run the gpio-* checks in the VM
#   board/virtual/libgpiod2/run.sh --fetch    only fetch and unpack; prints the PKG_CONFIG_PATH that selects 2.x
#   board/virtual/libgpiod2/run.sh --build    fetch and build, no VM
#
# Environment: SWIFT (default swift); GPIOD2_SUITE (default trixie); GPIOD2_SCRATCH, the build's own scratch path
# (default .build-gpiod2: the 1.6 build in .build is untouched); GPIOD2_CONFIGURATION (default debug: the GPIO
# checks measure no performance, and a debug build of one product takes about a fifth of a release build's time).
set -euo pipefail

root="$(cd "$(dirname "$0")/../../.." && pwd)"
cd "$root"
swift="${SWIFT:-swift}"
suite="${GPIOD2_SUITE:-trixie}"
scratch="${GPIOD2_SCRATCH:-.build-gpiod2}"
configuration="${GPIOD2_CONFIGURATION:-debug}"
dir="$root/.build/gpiod2"
tree="$dir/root"
pkgconfig="$dir/pkgconfig"
mode="${1:-all}"
case "$mode" in
    all | --fetch | --build) ;;
    *) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 64 ;;
esac
die() { echo "libgpiod2: $*" >&2; exit 1; }
now() { date +%s%N; }
seconds() { local ns=$(($2 - $1)); printf '%d.%d' $((ns / 1000000000)) $((ns % 1000000000 / 100000000)); }

# --- fetch: apt-get with its lists, cache and sources under .build/gpiod2/apt, the machine's apt.conf (proxies)
# kept; the packages are only unpacked (dpkg -x), never installed.
fetch() {
    local stamp="$dir/fetched" arch mirror apt pc
    arch=$(dpkg --print-architecture)
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$suite $arch" ] && [ -f "$pkgconfig/libgpiod.pc" ]; then return 0; fi
    rm -rf "$dir/apt" "$dir/debs" "$tree" "$pkgconfig" "$stamp"
    mkdir -p "$dir/apt/lists/partial" "$dir/apt/cache/archives/partial" "$dir/apt/preferences.d" "$dir/debs"
    # The Debian mirror this machine already uses, for the other suite.
    mirror=$(apt-get indextargets --format '$(REPO_URI)' 'Codename: bookworm' 'Component: main' 2>/dev/null |
        grep -v security | head -1 || true)
    mirror="${mirror:-http://deb.debian.org/debian/}"
    echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $suite main" >"$dir/apt/sources.list"
    apt=(-o "Dir::Etc::sourcelist=$dir/apt/sources.list" -o Dir::Etc::sourceparts=/dev/null
        -o "Dir::State::Lists=$dir/apt/lists" -o "Dir::Cache=$dir/apt/cache" -o Dir::State::status=/dev/null
        -o "Dir::Etc::preferencesparts=$dir/apt/preferences.d" -o "APT::Architecture=$arch"
        -o APT::Sandbox::User=root -qq)
    [ -f /usr/share/keyrings/debian-archive-keyring.gpg ] ||
        die "no /usr/share/keyrings/debian-archive-keyring.gpg: apt-get install debian-archive-keyring"
    apt-get "${apt[@]}" update || die "apt-get update of $suite ($mirror) failed"
    (cd "$dir/debs" && apt-get "${apt[@]}" download libgpiod-dev libgpiod3) ||
        die "could not download $suite's libgpiod-dev and libgpiod3"
    mkdir -p "$tree" "$pkgconfig"
    for deb in "$dir/debs"/*.deb; do dpkg -x "$deb" "$tree"; done
    pc=$(find "$tree/usr/lib" -name libgpiod.pc | head -1)
    [ -n "$pc" ] || die "$suite's libgpiod-dev has no libgpiod.pc"
    # The .pc names /usr: point it at the unpacked tree (SwiftPM reads .pc files itself; no sysroot variable). And
    # name the library by its file: the linker searches every -L before it looks at any -l, and alsa's .pc puts
    # -L/usr/lib/x86_64-linux-gnu first, where -lgpiod is bookworm's libgpiod.so.2 (1.6): a mix of both.
    sed -e "s|^prefix=.*|prefix=$tree/usr|" -e 's|^Libs:.*|Libs: -L${libdir} -l:libgpiod.so.3|' "$pc" \
        >"$pkgconfig/libgpiod.pc"
    echo "$suite $arch" >"$stamp"
}

t0=$(now)
fetch
version=$(PKG_CONFIG_PATH="$pkgconfig" pkg-config --modversion libgpiod)
libdir=$(PKG_CONFIG_PATH="$pkgconfig" pkg-config --variable=libdir libgpiod)
[[ "$version" == 2.* ]] || die "pkg-config reports libgpiod $version from $pkgconfig, not 2.x"
echo "libgpiod2: $suite's libgpiod $version in $tree ($(seconds "$t0" "$(now)") s)"
if [ "$mode" = --fetch ]; then echo "PKG_CONFIG_PATH=$pkgconfig"; exit 0; fi

# --- build: the one product the GPIO checks need, with its own scratch path; a RUNPATH finds libgpiod.so.3 in the
# unpacked tree on the host.
t1=$(now)
# SwiftPM rebuilds neither when pkg-config's answer changes nor when only a system library's header (the shim)
# does: a scratch built against another libgpiod or another shim.h starts over.
built_for="$version $pkgconfig $(sha256sum Sources/CGPIOD/shim.h | cut -d' ' -f1)"
[ "$(cat "$scratch/hush-libgpiod" 2>/dev/null)" = "$built_for" ] || rm -rf "$scratch"
mkdir -p "$scratch"
echo "$built_for" >"$scratch/hush-libgpiod"
PKG_CONFIG_PATH="$pkgconfig" "$swift" build -c "$configuration" --scratch-path "$scratch" \
    --product hush-vboard-check -Xlinker -rpath -Xlinker "$libdir"
bin="$("$swift" build -c "$configuration" --scratch-path "$scratch" --show-bin-path)"
check="$bin/hush-vboard-check"
linked=$(ldd "$check" | grep 'libgpiod\.' || true)
[[ "$linked" == *"libgpiod.so.3 => $libdir/"* ]] ||
    die "$check is not linked against $libdir/libgpiod.so.3: ${linked:-no libgpiod at all}"
echo "libgpiod2: built hush-vboard-check against libgpiod $version ($(seconds "$t1" "$(now)") s): $linked"
[ "$mode" = --build ] && exit 0

# --- the GPIO checks, and only those, in the virtual board's adapters scenario.
payload="$dir/payload"
rm -rf "$payload"
mkdir -p "$payload"
cp "$check" "$payload/"
# In the guest the library comes from the payload (the scenario sets LD_LIBRARY_PATH): the RUNPATH's host path
# may be under /tmp, which the guest mounts a tmpfs over.
cp -L "$libdir/libgpiod.so.3" "$payload/"
checks=$("$check" --list | grep '^gpio-' | tr '\n' ' ')
[ -n "$checks" ] || die "hush-vboard-check --list names no gpio-* check"
echo "$checks" >"$payload/checks"
echo "libgpiod2: running in the virtual board against libgpiod $version: $checks"
board/virtual/run.sh --scenario "$root/board/virtual/libgpiod2/adapters-libgpiod2.sh" --payload "$payload" --timeout 120 | tee "$dir/vboard.log"
grep -q "^    libgpiod $version (API 2)$" "$dir/vboard.log" ||
    die "the guest did not say it ran the checks with libgpiod $version (gpio-library check)"
