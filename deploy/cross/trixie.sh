#!/usr/bin/env bash
# hush's second compiler and its arm64 build, on this bookworm x86-64 machine and offline but for Debian's archive:
# Debian trixie's swiftlang 6.0.3 in a debootstrapped trixie chroot under .build/trixie (made once, then cached),
# with arm64 multiarch: its arm64 -dev packages are the cross build's sysroot, and swiftlang:arm64 unpacked with
# dpkg -x is the arm64 Swift resource directory (docs/deploy.md, docs/architecture.md "Two compilers").
#
#   deploy/cross/trixie.sh toolchain     the chroot: debootstrap, swiftlang, the -dev packages (skipped when complete)
#   deploy/cross/trixie.sh swift60       the whole package, tests included, built with Swift 6.0.3 for x86-64
#   deploy/cross/trixie.sh arm64         hushd and hushctl (release, Swift runtime linked in) for aarch64, into .build/arm64
#   deploy/cross/trixie.sh test-arm64    every target and test built for aarch64, the unit tests run under qemu-user
#                                 (binfmt, in the chroot), then render-arm64
#   deploy/cross/trixie.sh render-arm64  every scenario rendered by the arm64 hush-render and by this machine's
#                                 (HUSH_RENDER, else a release build): the same bytes
#   deploy/cross/trixie.sh shell [CMD]   CMD (or a shell) in the chroot, with the checkout at its own path
#   deploy/cross/trixie.sh vboard-check-arm64   the check programs (hush-vboard-check, hush-vboard-streams,
#                                 hush-vboard-voice, hush-vboard-latency; release, Swift runtime linked in) for
#                                 aarch64, into .build/virtual-board-arm64, for the arm64 virtual board
#                                 (board/virtual/arm64/run.sh); built in their own copy of the checkout, .build-arm64vb;
#                                 make arm64 and test-arm64 do not build them
#
# Root is needed (debootstrap, mount namespaces, chroot, binfmt_misc). Swift 6.0 builds use a copy of the checkout
# (.build-swift60/hush, .build-arm64/hush), so their Package.resolved never meets the host's, and a swift-log the
# 6.0 compiler accepts: the only swift-log here (1.16.2) says swift-tools-version 6.2, so .build/trixie/swift-log is
# made from its sources with a tools-6.0 manifest and SwiftPM's mirrors point there (--config-path
# .build/trixie/swiftpm); swift-argument-parser 1.8.2 already says 6.0 and comes from the machine's copy. Nothing of
# either is committed.
#
# Environment: TRIXIE_MIRROR (default: the Debian mirror this machine's apt uses), SWIFT60_JOBS (default: nproc).
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
dir="$root/.build/trixie"
tree="$dir/root"
mode="${1:-}"
[ $# -gt 0 ] && shift
die() { echo "trixie: $*" >&2; exit 1; }
now() { date +%s%N; }
seconds() { local ns=$(($2 - $1)); printf '%d.%d' $((ns / 1000000000)) $((ns % 1000000000 / 100000000)); }
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 64; }

# What the chroot holds. Changing this list makes `toolchain` install again (the stamp is this text).
HOST_PACKAGES="swiftlang git pkgconf g++ binutils-aarch64-linux-gnu libtomlplusplus-dev libasound2-dev \
libgpiod-dev libevdev-dev libsndfile1-dev libsamplerate0-dev libwebrtc-audio-processing-dev \
libspeexdsp-dev"
# The arm64 sysroot; libxml2 and libcurl are for the arm64 Foundation the tests load under qemu (libswiftlang's
# dependencies).
ARM64_PACKAGES="libc6-dev:arm64 libstdc++-14-dev:arm64 libtomlplusplus-dev:arm64 libasound2-dev:arm64 \
libgpiod-dev:arm64 libevdev-dev:arm64 libsndfile1-dev:arm64 libsamplerate0-dev:arm64 \
libwebrtc-audio-processing-dev:arm64 libspeexdsp-dev:arm64 libxml2:arm64 libcurl4t64:arm64"
# Unpacked (dpkg -x), not installed, into /opt/swift-arm64 in the chroot: the arm64 Swift modules and runtime.
ARM64_UNPACKED="swiftlang:arm64 libswiftlang:arm64"
recipe="trixie 3 | $HOST_PACKAGES | $ARM64_PACKAGES | $ARM64_UNPACKED"

# need COMMAND PACKAGE: installs the host's PACKAGE when COMMAND is missing (as deploy/check.sh does).
need() {
    command -v "$1" >/dev/null && return 0
    echo "trixie: installing $2 (for $1)" >&2
    local install=(apt-get install -y -qq -o DPkg::Lock::Timeout=600 "$2")
    DEBIAN_FRONTEND=noninteractive "${install[@]}" >&2 2>/dev/null ||
        { apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive "${install[@]}" >&2; }
    command -v "$1" >/dev/null || die "$1 is missing and could not be installed: apt-get install $2"
}

# in_chroot SCRIPT: runs the shell SCRIPT as root in the chroot, in a mount namespace of its own (so nothing stays
# mounted under .build when it ends, whatever happens: `make clean` removes plain files): /proc, /dev, /sys, the
# checkout at its own path and /opt/swift-packages (read-only) are mounted for it.
in_chroot() {
    [ "$(id -u)" -eq 0 ] || die "the chroot needs root (debootstrap, mount, chroot)"
    local pkgs=/opt/swift-packages
    # shellcheck disable=SC2016 # the inner script expands its own arguments
    unshare --mount --propagation private -- /bin/sh -ec '
        tree=$1 root=$2 pkgs=$3 script=$4
        mount -t proc proc "$tree/proc"
        mount --rbind /dev "$tree/dev"
        mount --rbind /sys "$tree/sys"
        mkdir -p "$tree$root" "$tree$pkgs"
        mount --bind "$root" "$tree$root"
        if [ -d "$pkgs" ]; then mount --bind "$pkgs" "$tree$pkgs"; mount -o remount,bind,ro "$tree$pkgs"; fi
        exec chroot "$tree" /usr/bin/env -i HOME=/root PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin \
            LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive TERM=dumb /bin/bash -ec "$script"
    ' in_chroot "$tree" "$root" "$pkgs" "$*"
}

# --- toolchain: debootstrap trixie (minbase), then swiftlang, the -dev packages for amd64 and arm64, and the arm64
# Swift resource directory. A debootstrap that did not finish is started over; the apt steps are idempotent.
toolchain() {
    if [ "$(cat "$dir/complete" 2>/dev/null)" = "$recipe" ]; then return 0; fi
    local t0 mirror
    t0=$(now)
    need debootstrap debootstrap
    need unshare util-linux
    # shellcheck disable=SC2016 # $(REPO_URI) is apt's field, not the shell's
    mirror="${TRIXIE_MIRROR:-$(apt-get indextargets --format '$(REPO_URI)' 'Component: main' 2>/dev/null |
        grep -v security | head -1 || true)}"
    mirror="${mirror:-http://deb.debian.org/debian/}"
    rm -f "$dir/complete"
    if [ ! -f "$dir/debootstrapped" ]; then
        [ -d "$tree" ] && rm -rf --one-file-system "$tree"
        mkdir -p "$tree"
        echo "trixie: debootstrap trixie (amd64, minbase) from $mirror into $tree"
        debootstrap --variant=minbase --arch=amd64 --keyring=/usr/share/keyrings/debian-archive-keyring.gpg \
            trixie "$tree" "$mirror" >"$dir/debootstrap.log" 2>&1 ||
            { tail -20 "$dir/debootstrap.log" >&2; die "debootstrap failed (all of it: $dir/debootstrap.log)"; }
        echo "$mirror" >"$dir/debootstrapped"
        echo "trixie: debootstrapped in $(seconds "$t0" "$(now)") s"
    fi
    echo "trixie: installing swiftlang and the -dev packages (amd64 and arm64)"
    in_chroot "
        echo 'deb $(cat "$dir/debootstrapped") trixie main' >/etc/apt/sources.list
        dpkg --add-architecture arm64
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends $HOST_PACKAGES $ARM64_PACKAGES >/dev/null
        rm -rf /opt/swift-arm64 /tmp/swift-arm64-debs && mkdir -p /opt/swift-arm64 /tmp/swift-arm64-debs
        (cd /tmp/swift-arm64-debs && apt-get download -qq -o APT::Sandbox::User=root $ARM64_UNPACKED)
        for deb in /tmp/swift-arm64-debs/*.deb; do dpkg -x \"\$deb\" /opt/swift-arm64; done
        # Only the resource directories are used (and clang's headers, which lib/swift/clang links to): 1.3 GB of
        # arm64 programs and tools are not.
        cd /opt/swift-arm64/usr/libexec/swift/lib && mv swift swift_static clang /tmp/ && cd /
        rm -rf /opt/swift-arm64/usr && mkdir -p /opt/swift-arm64/usr/libexec/swift/lib
        mv /tmp/swift /tmp/swift_static /tmp/clang /opt/swift-arm64/usr/libexec/swift/lib/
        rm -rf /tmp/swift-arm64-debs
        apt-get clean
        swift --version
    "
    echo "$recipe" >"$dir/complete"
    echo "trixie: the toolchain is ready in $(seconds "$t0" "$(now)") s"
}

# --- Swift 6.0's dependencies: swift-log with a manifest 6.0 reads (made once from the machine's copy), and the
# mirrors that send SwiftPM there and to the machine's swift-argument-parser. Nothing here reaches the network.
SWIFT_LOG_ORIGIN=/opt/swift-packages/apple/swift-log.git
SWIFT_LOG_VERSION=1.16.2
swift60_dependencies() {
    local log="$dir/swift-log" stamp="$dir/swift-log.made"
    if [ "$(cat "$stamp" 2>/dev/null)" != "$SWIFT_LOG_VERSION 2" ]; then
        [ -d "$SWIFT_LOG_ORIGIN" ] || die "no $SWIFT_LOG_ORIGIN: this machine has no copy of swift-log"
        rm -rf "$log" "$stamp"
        mkdir -p "$log"
        git -C "$SWIFT_LOG_ORIGIN" archive "$SWIFT_LOG_VERSION" Sources LICENSE.txt NOTICE.txt | tar -x -C "$log"
        # Its sources use three things newer than 6.0, each rewritten to what 6.0 reads with the same meaning for
        # hush: trailing commas in parameter and argument lists (6.1; dropped), `_runtime(_multithreaded)` (6.1;
        # every platform but WASI is), and `nonisolated(nonsending)` on the task-local logger API (6.2; dropped:
        # those functions then run off the caller's actor, which hush, never calling them, does not see).
        find "$log/Sources" -name '*.swift' -exec perl -0pi -e \
            's/,(\s*\n\s*\))/$1/g; s/_runtime\(_multithreaded\)/!os(WASI)/g; s/nonisolated\(nonsending\) //g' {} +
        # The original's tools version (6.2) is for those traits, which only compile log levels out (hush enables
        # none), and upcoming-feature settings; Swift 5 mode keeps the dropped `nonsending`'s checks warnings.
        cat >"$log/Package.swift" <<'MANIFEST'
// swift-tools-version:6.0
// Written by hush's deploy/cross/trixie.sh: swift-log's own sources under a manifest Swift 6.0 reads. The original
// says 6.2 for its traits (MaxLogLevel*, which compile log levels out; hush enables none) and upcoming features.
import PackageDescription

let package = Package(
    name: "swift-log",
    products: [
        .library(name: "Logging", targets: ["Logging"]),
        .library(name: "InMemoryLogging", targets: ["InMemoryLogging"]),
    ],
    targets: [
        .target(name: "Logging", exclude: ["CMakeLists.txt"]),
        .target(name: "InMemoryLogging", dependencies: ["Logging"], exclude: ["CMakeLists.txt"]),
    ],
    swiftLanguageModes: [.v5]
)
MANIFEST
        git -C "$log" init -q
        git -C "$log" add -A
        git -C "$log" -c user.name=hush -c user.email=hush@localhost commit -q \
            -m "swift-log $SWIFT_LOG_VERSION with a swift-tools-version 6.0 manifest"
        git -C "$log" tag "$SWIFT_LOG_VERSION"
        echo "$SWIFT_LOG_VERSION 2" >"$stamp"
    fi
    mkdir -p "$dir/swiftpm"
    cat >"$dir/swiftpm/mirrors.json" <<MIRRORS
{
  "object" : [
    { "mirror" : "$log", "original" : "https://github.com/apple/swift-log.git" },
    { "mirror" : "/opt/swift-packages/apple/swift-argument-parser.git",
      "original" : "https://github.com/apple/swift-argument-parser.git" }
  ],
  "version" : 1
}
MIRRORS
}

# copy_checkout DIR: the checkout into DIR/hush (without builds, git and Package.resolved), mtimes kept so SwiftPM's builds there stay incremental; what went away goes there too.
copy_checkout() {
    need rsync rsync
    mkdir -p "$1/hush"
    rsync -a --delete --exclude='/.build*' --exclude=/.git --exclude=/.swiftpm --exclude=/Package.resolved \
        --exclude=/Fuzz/.build --exclude=/Benchmarks/.build ./ "$1/hush/"
    # A Package.resolved from before swift-log was made again names a commit that is gone.
    local resolved="$1/hush/Package.resolved"
    grep -qs "$(git -C "$dir/swift-log" rev-parse HEAD)" "$resolved" || rm -f "$resolved"
}

# --- swift60: every target and test built with Swift 6.0.3 for x86-64 (debug, as `swift build --build-tests`), in a
# copy of the checkout under .build-swift60, so CI keeps hush building with both compilers.
swift60() {
    local t0 scratch="$root/.build-swift60"
    toolchain
    swift60_dependencies
    t0=$(now)
    copy_checkout "$scratch"
    in_chroot "cd '$scratch/hush' && swift build --build-tests --config-path '$dir/swiftpm' -j ${SWIFT60_JOBS:-$(nproc)}"
    echo "trixie: built every target and test with Swift 6.0.3 in $(seconds "$t0" "$(now)") s"
}

# --- the cross build's Swift SDK: the chroot is the sysroot (its arm64 multiarch -dev packages, libc6-dev and
# libstdc++-14-dev among them), the arm64 Swift modules and libraries come from the unpacked swiftlang:arm64, the
# compiler, clang and lld are the chroot's own (x86-64).
ARM64_TRIPLE=aarch64-unknown-linux-gnu
ARM64_SWIFT=/opt/swift-arm64/usr/libexec/swift/lib
arm64_sdk() {
    mkdir -p "$dir/sdk"
    cat >"$dir/sdk/swift-sdk.json" <<SDK
{
  "schemaVersion" : "4.0",
  "targetTriples" : {
    "$ARM64_TRIPLE" : {
      "sdkRootPath" : "/",
      "swiftResourcesPath" : "$ARM64_SWIFT/swift",
      "swiftStaticResourcesPath" : "$ARM64_SWIFT/swift_static",
      "toolsetPaths" : [ "toolset.json" ]
    }
  }
}
SDK
    # lld, not the driver's default gold: trixie's binutils has no gold, and lld links for any target.
    cat >"$dir/sdk/toolset.json" <<'TOOLSET'
{
  "schemaVersion" : "1.0",
  "swiftCompiler" : { "extraCLIOptions" : [ "-use-ld=lld" ] }
}
TOOLSET
}

# arm64_build SWIFT-BUILD-ARGUMENTS: swift build for aarch64 in .build-arm64/hush (ARM64_COPY: another copy of the
# checkout), pkg-config reading the arm64 .pc files only.
arm64_build() {
    in_chroot "cd '${ARM64_COPY:-$root/.build-arm64}/hush' &&
        PKG_CONFIG_PATH=/usr/lib/aarch64-linux-gnu/pkgconfig PKG_CONFIG_LIBDIR=/usr/lib/aarch64-linux-gnu/pkgconfig \
        swift build --config-path '$dir/swiftpm' --destination '$dir/sdk/swift-sdk.json' --triple $ARM64_TRIPLE \
            -j ${SWIFT60_JOBS:-$(nproc)} $*"
}

# --- arm64: hushd and hushctl, release, with Swift's runtime linked in (--static-swift-stdlib), stripped, into
# .build/arm64. They need the C libraries' runtime packages and glibc from trixie (2.38 or later).
arm64() {
    local t0 out="$root/.build/arm64" bin
    toolchain
    swift60_dependencies
    arm64_sdk
    t0=$(now)
    copy_checkout "$root/.build-arm64"
    arm64_build -c release --static-swift-stdlib --product hushd
    arm64_build -c release --static-swift-stdlib --product hushctl
    bin="$root/.build-arm64/hush/.build/$ARM64_TRIPLE/release"
    mkdir -p "$out"
    for program in hushd hushctl; do
        in_chroot "aarch64-linux-gnu-strip -o '$out/$program' '$bin/$program'"
    done
    echo "trixie: built hushd and hushctl for arm64 in $(seconds "$t0" "$(now)") s:"
    for program in hushd hushctl; do
        echo "  $out/$program: $(stat -c %s "$out/$program") bytes, $(file -b "$out/$program" | cut -d, -f1-2)"
        echo "    needs: $(readelf -d "$out/$program" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')"
        echo "    glibc: $(readelf -V "$out/$program" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)"
    done
}

# --- vboard-check-arm64: the virtual board's check programs for the arm64 board, as arm64() builds hushd, in
# .build-arm64vb.
vboard_check_arm64() {
    local t0 out="$root/.build/virtual-board-arm64" bin program
    toolchain
    swift60_dependencies
    arm64_sdk
    t0=$(now)
    ARM64_COPY="$root/.build-arm64vb"
    copy_checkout "$ARM64_COPY"
    bin="$ARM64_COPY/hush/.build/$ARM64_TRIPLE/release"
    mkdir -p "$out"
    for program in hush-vboard-check hush-vboard-streams hush-vboard-voice hush-vboard-latency; do
        arm64_build -c release --static-swift-stdlib --product "$program"
        in_chroot "aarch64-linux-gnu-strip -o '$out/$program' '$bin/$program'"
    done
    echo "trixie: built hush-vboard-check, hush-vboard-streams, hush-vboard-voice and hush-vboard-latency for arm64 in $(seconds "$t0" "$(now)") s, into $out"
}

# binfmt: arm64 programs run through the host's qemu-aarch64-static (registered with the F flag, so also inside the
# chroot), as the tests' spawned hushd, hushctl and hush-render must.
binfmt_arm64() {
    need qemu-aarch64-static qemu-user-static
    need update-binfmts binfmt-support
    [ -e /proc/sys/fs/binfmt_misc/register ] ||
        mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc || die "cannot mount binfmt_misc"
    [ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] || update-binfmts --enable qemu-aarch64 ||
        die "cannot register qemu-aarch64 with binfmt_misc"
    grep -q '^flags: .*F' /proc/sys/fs/binfmt_misc/qemu-aarch64 ||
        die "qemu-aarch64 is registered without the F flag: it would not run inside the chroot"
}

# render_compare: every scenario of docs/scenarios and a generated 600 s soak scenario, each at the default format
# and at 44.1 kHz mono with 256-frame periods, rendered by the arm64 hush-render (release, under qemu) and by this
# machine's (HUSH_RENDER, else `swift build -c release` in .build): the WAV, the events and the picture must be
# the same bytes.
render_compare() {
    local t0 host work="$root/.build-arm64/render" arm="$root/.build-arm64/hush/.build/$ARM64_TRIPLE/release"
    local differ=0 count=0 name variant
    t0=$(now)
    arm64_build -c release --product hush-render
    host="${HUSH_RENDER:-}"
    if [ -z "$host" ]; then
        swift build -c release --product hush-render
        host="$(swift build -c release --show-bin-path)/hush-render"
    fi
    rm -rf "$work" && mkdir -p "$work/x86_64" "$work/aarch64" "$work/scenarios"
    cp docs/scenarios/*.txt "$work/scenarios/"
    Tests/soak/generate-scenario.py 1 600 >"$work/scenarios/soak-600.txt"
    local variants=("default:" "44k1-mono:--rate 44100 --channels 1 --period 256")
    local script=""
    for scenario in "$work"/scenarios/*.txt; do
        name=$(basename "$scenario" .txt)
        for variant in "${variants[@]}"; do
            local tag="$name-${variant%%:*}" options="${variant#*:}"
            for arch in x86_64 aarch64; do
                local args
                read -r -a args <<<"--scenario scenarios/$name.txt --out $arch/$tag.wav --events $arch/$tag.jsonl \
                    --plot $arch/$tag.svg $options"
                if [ $arch = x86_64 ]; then
                    (cd "$work" && "$host" "${args[@]}" >/dev/null) || die "hush-render (x86-64) failed on $tag"
                else
                    script="$script '$arm/hush-render' ${args[*]} >/dev/null || exit 1;"
                fi
            done
            count=$((count + 1))
        done
    done
    in_chroot "cd '$work' && $script" || die "hush-render (arm64, under qemu) failed"
    for file in "$work"/x86_64/*; do
        if cmp -s "$file" "$work/aarch64/${file##*/}"; then continue; fi
        echo "trixie: DIFFER ${file##*/}: x86-64 and arm64 renders are not the same bytes"
        differ=$((differ + 1))
    done
    echo "trixie: $count renders (WAV, events, picture) on x86-64 and arm64: $((count * 3 - differ)) of" \
        "$((count * 3)) files the same bytes ($(seconds "$t0" "$(now)") s)"
    [ "$differ" -eq 0 ] || die "$differ rendered files differ between x86-64 and arm64 ($work)"
}

# Tests skipped under qemu-user, each for what emulation does or the chroot lacks, not for hush: "ID-REGEX|reason"
# (a regular expression on Swift Testing's test IDs, Module.Type/function()).
ARM64_SKIPPED=(
    "EvdevInputSourceTests/(pathAppears|missingName|notEvdev|listing)\(|qemu-user does not translate evdev's ioctls\
 (EVIOCGNAME and the others answer ENOSYS, not the kernel's ENOTTY for a node that is no input device)"
    "SerialConsoleTests/termiosApplied\(|EveryKeyTests/checkConfigAndStartUpAgree\(|qemu-user's termios\
 translation knows no baud rate above 460800 (the tests set 500000 to 3000000 on a pseudo-terminal)"
    "DaemonTests/loop\(|wall clock: the WAV fallback is paced in real time and a debug build under qemu renders\
 fewer periods than 1.2 s of it"
    "ALSA(Applications|StreamRules|Device|Call|NamedSession|MusicPlayer|DelayInterpolation|Xrun)Tests/|\
HostileStreamTests/|PluginRequestLineTests/|BaresipCallTests/|SessionLevelTests/deviceLevel\(|\
HushctlRingerTests/ringtoneSilencedAlarmHeard\(|applications through the hush ALSA device: aplay, arecord,\
 alsaloop, mpd, GStreamer, espeak-ng, PortAudio and baresip with the C plugin (make alsa-plugin) and the programs built from its sources (the delay and xrun probes, the\
 request lines), which the chroot has not; make test runs them on x86-64 and the virtual board's streams scenario"
)

# --- test-arm64: the unit tests built for aarch64 (debug, as swift test) and run under qemu-user in the chroot, on
# trixie's arm64 libraries; then every scenario rendered by the arm64 hush-render (release) and by this machine's,
# which must give the same bytes.
test_arm64() {
    local t0 t1 bin skip=""
    toolchain
    swift60_dependencies
    arm64_sdk
    binfmt_arm64
    t0=$(now)
    copy_checkout "$root/.build-arm64"
    arm64_build --build-tests
    echo "trixie: built the tests for arm64 in $(seconds "$t0" "$(now)") s"
    t1=$(now)
    bin="$root/.build-arm64/hush/.build/$ARM64_TRIPLE/debug"
    local entry
    for entry in "${ARM64_SKIPPED[@]}"; do
        skip="$skip${skip:+|}${entry%|*}"
        echo "trixie: skipped under qemu: ${entry%|*}: ${entry##*|}"
    done
    in_chroot "cd '$root/.build-arm64/hush' && \
        '$bin/hushPackageTests.xctest' --testing-library swift-testing --skip '$skip'"
    echo "trixie: ran the unit tests under qemu-aarch64 in $(seconds "$t1" "$(now)") s"
    render_compare
}

[ -n "$mode" ] || usage
case "$mode" in
    toolchain) toolchain ;;
    swift60) swift60 ;;
    arm64) arm64 ;;
    test-arm64) test_arm64 ;;
    render-arm64)
        toolchain
        swift60_dependencies
        arm64_sdk
        binfmt_arm64
        copy_checkout "$root/.build-arm64"
        render_compare
        ;;
    vboard-check-arm64) vboard_check_arm64 ;;
    shell) toolchain; in_chroot "cd '$root'; ${*:-exec bash -i}" ;;
    *) usage ;;
esac
