#!/usr/bin/env bash
# Builds hush's Debian package from built binaries of any architecture: hushd, hushctl and the ALSA plugin, laid out
# by deploy/install.sh --package (the one list of what hush installs and where), with the copyright, a changelog,
# DEBIAN/control whose Depends dpkg-shlibdeps computes from the binaries' NEEDED libraries against the target
# release's own packages, conffiles, md5sums and the maintainer scripts beside this file. `make deb` (amd64, this
# machine's release) and `make deb-arm64` (Raspberry Pi OS trixie) run it; docs/deploy.md installs the result.
#
#   deploy/deb/build-deb.sh [--suite SUITE] ARCH BIN_DIR PLUGIN OUT_DIR
#
#   ARCH     Debian architecture of the binaries (amd64, arm64)
#   BIN_DIR  holds hushd and hushctl, linked with --static-swift-stdlib (no Swift runtime on the board)
#   PLUGIN   libasound_module_pcm_hush.so built for ARCH
#   OUT_DIR  gets hush_VERSION_ARCH.deb (and its tree, hush_VERSION_ARCH/)
#   --suite  the Debian release the package is for (default: this machine's). For another release or
#            architecture, its library packages are fetched (deploy/deb/fetch-debs.sh, nothing installed) so that
#            dpkg-shlibdeps reads their own shlibs and symbols files: trixie names alsa-lib libasound2t64.
#
# Environment: HUSH_DEB_MAINTAINER ("Name <address>"; default the project's, deploy/deb/maintainer: a product team
# that ships its own build names itself here).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 64; }
die() { echo "build-deb: $*" >&2; exit 1; }

# shellcheck disable=SC1091
host_suite="$(. /etc/os-release && echo "${VERSION_CODENAME:-}")"
suite="$host_suite"
if [ "${1:-}" = --suite ]; then
    [ $# -ge 2 ] || usage
    suite="$2"
    shift 2
fi
[ $# -eq 4 ] || usage
arch="$1" bin_dir="$2" plugin="$3" out="$4"

multiarch="$(dpkg-architecture -a"$arch" -qDEB_HOST_MULTIARCH 2>/dev/null)" || die "unknown architecture '$arch'"
gnu_type="$(dpkg-architecture -a"$arch" -qDEB_HOST_GNU_TYPE 2>/dev/null)"
case "$arch" in
    amd64) machine="X86-64" ;;
    arm64) machine="AArch64" ;;
    *) machine="" ;;
esac

# --- the binaries: there, for ARCH, and without the Swift runtime's shared libraries.
binaries=("$bin_dir/hushd" "$bin_dir/hushctl" "$plugin")
for binary in "${binaries[@]}"; do
    [ -f "$binary" ] || die "no $binary"
    found="$(readelf -h "$binary" 2>/dev/null | sed -n 's/^ *Machine: *//p')" || true
    [ -z "$machine" ] || [[ "$found" == *"$machine"* ]] || die "$binary is for ${found:-no known machine}, not $arch"
    swift_libs="$(readelf -d "$binary" | grep -oE '\[lib(swift|Foundation)[^]]*\]' | tr -d '[]' | tr '\n' ' ')" || true
    [ -z "$swift_libs" ] || die "$binary needs the Swift runtime's $swift_libs: build it with --static-swift-stdlib"
done

# --- the version hushd reports (hushd --version's first line: "hushd 0.1.0"), checked against the binary when it
# runs here.
version="$(sed -n 's/^ *\(public \|package \)\{0,1\}static let version = "\(.*\)"$/\2/p' "$root/Sources/HushDaemon/Hushd.swift")"
[ -n "$version" ] || die "no version in Sources/HushDaemon/Hushd.swift"
if [ "$arch" = "$(dpkg --print-architecture)" ] && reported="$("$bin_dir/hushd" --version 2>/dev/null | head -1)"; then
    [ "$reported" = "hushd $version" ] || die "$bin_dir/hushd --version says '$reported', the source 'hushd $version'"
fi

name="hush_${version}_$arch"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
tree="$out/$name"
rm -rf "$tree" "$out/$name.deb"

# --- the files, from the one list install.sh keeps.
"$root/deploy/install.sh" --dest-dir "$tree" --package --bin-dir "$bin_dir" --plugin "$plugin" \
    --alsa-lib-dir "/usr/lib/$multiarch/alsa-lib" >"$out/$name.install.log" ||
    { cat "$out/$name.install.log" >&2; die "install.sh --package failed"; }
installed_plugin="$tree/usr/lib/$multiarch/alsa-lib/libasound_module_pcm_hush.so"
[ -f "$installed_plugin" ] || die "install.sh did not install the ALSA plugin"

# Stripped as dh_strip does (a Debian package ships debugging symbols apart). strip from binutils reads only its
# own architecture; the cross binutils (binutils-aarch64-linux-gnu) read the others.
strip="$gnu_type-strip"
if ! command -v "$strip" >/dev/null; then
    [ "$arch" = "$(dpkg --print-architecture)" ] || die "no $strip: apt-get install binutils-${gnu_type//_/-}"
    strip="strip"
fi
"$strip" --remove-section=.comment --remove-section=.note "$tree/usr/bin/hushd" "$tree/usr/bin/hushctl"
"$strip" --remove-section=.comment --remove-section=.note --strip-unneeded "$installed_plugin"

# Debian's documentation files: the copyright, and a changelog naming the commit it was built from.
doc="$tree/usr/share/doc/hush"
install -m 0644 "$here/copyright" "$doc/copyright"
commit="$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
dirty="$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null | head -1)"
maintainer="${HUSH_DEB_MAINTAINER:-$(sed -n '/^[^#]/{p;q}' "$here/maintainer")}"
[[ "$maintainer" =~ ^[^\<]+\ \<[^@\>]+@[^\>]+\>$ ]] || die "maintainer '$maintainer' is not 'Name <address>': set HUSH_DEB_MAINTAINER"
date="$(git -C "$root" log -1 --format=%aD 2>/dev/null || date -R)"
{
    echo "hush ($version) $suite; urgency=medium"
    echo
    echo "  * deploy/deb/build-deb.sh, from commit $commit${dirty:+ with uncommitted changes}."
    echo
    echo " -- $maintainer  $date"
} | gzip -9n >"$doc/changelog.gz"
chmod 0644 "$doc/changelog.gz"

# --- Depends: dpkg-shlibdeps, as debhelper runs it. For this machine's release and architecture the installed
# packages answer; otherwise the target's own library packages, named after each soname as Debian names them
# (libfoo.so.N: libfooN; glibc's several in libc6) and resolved in that release (trixie's libasound2 is
# libasound2t64).
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/debian"
printf 'Source: hush\n\nPackage: hush\nArchitecture: any\n' >"$work/debian/control"
objects=("$tree/usr/bin/hushd" "$tree/usr/bin/hushctl" "$installed_plugin")
shlibdeps=(dpkg-shlibdeps -O -e"${objects[0]}" -e"${objects[1]}" -e"${objects[2]}")
# What hushd opens with dlopen when first needed, which no NEEDED entry shows dpkg-shlibdeps (libsndfile,
# webrtc-audio-processing): their packages join Depends below.
dlopened="$("$root/deploy/dlopened-libraries.sh" "$tree/usr/bin/hushd")" || die "cannot tell what hushd opens with dlopen"
# The package of a soname as Debian names it (libfoo.so.N: libfooN; glibc's several in libc6).
package_of() {
    local soname="$1" base number
    case "$soname" in
        libc.so.* | libm.so.* | ld-linux*.so.* | libpthread.so.* | libdl.so.* | librt.so.*) echo libc6 ;;
        # Abseil (webrtc-audio-processing 1.x links it): one package for all its libraries, named by its date.
        libabsl_*.so.*) echo "libabsl${soname##*.so.}" ;;
        *.so.*)
            base="${soname%%.so.*}" number="${soname##*.so.}"
            [[ "$base" =~ [0-9]$ ]] && base="$base-"
            echo "$base$number" | tr '[:upper:]_' '[:lower:]-'
            ;;
        *) die "cannot name the package of $soname" ;;
    esac
}
# A dlopen'd soname's dependency as its package's shlibs file gives it ("libsndfile1 (>= 1.2.0)").
shlibs_of() {
    local soname="$1" file="$2"
    [ -f "$file" ] || die "no shlibs file $file for $soname"
    local line
    line="$(awk -v b="${soname%%.so.*}" -v n="${soname##*.so.}" '$1 == b && $2 == n { $1 = ""; $2 = ""; sub(/^ +/, ""); print; exit }' "$file")"
    [ -n "$line" ] || die "$file has no line for $soname"
    echo "$line"
}
extra=""
if [ "$arch" != "$(dpkg --print-architecture)" ] || [ "$suite" != "$host_suite" ]; then
    target="$root/.build/deb/$suite-$arch"
    packages=() needs=""
    for soname in $( { for o in "${objects[@]}"; do readelf -d "$o"; done | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; echo "$dlopened"; } | sort -u); do
        package="$(package_of "$soname")"
        packages+=("$package")
        needs="${needs:+$needs, }$soname ($package)"
    done
    mapfile -t packages < <(printf '%s\n' "${packages[@]}" | sort -u)
    "$here/fetch-debs.sh" "$suite" "$arch" "$target" "${packages[@]}" >&2 ||
        die "the binaries need $needs; are they built against $suite's libraries?"
    for package in "${packages[@]}"; do shlibdeps+=(-S"$target/pkg/$package"); done
    shlibdeps+=(-l"$target/root/usr/lib/$multiarch" -l"$target/root/lib/$multiarch")
    for soname in $dlopened; do
        extra="$extra, $(shlibs_of "$soname" "$target/pkg/$(package_of "$soname")/DEBIAN/shlibs")"
    done
else
    for soname in $dlopened; do
        package="$(package_of "$soname")"
        file="/var/lib/dpkg/info/$package:$arch.shlibs"
        [ -f "$file" ] || file="/var/lib/dpkg/info/$package.shlibs"
        extra="$extra, $(shlibs_of "$soname" "$file")"
    done
fi
depends="$(cd "$work" && DEB_HOST_ARCH="$arch" "${shlibdeps[@]}" 2>"$work/shlibdeps.err")" ||
    { cat "$work/shlibdeps.err" >&2; die "dpkg-shlibdeps failed"; }
depends="${depends#shlibs:Depends=}"
[ -n "$depends" ] || die "dpkg-shlibdeps found no dependency"
depends="$depends$extra"
# systemd-sysusers and systemd-tmpfiles run in postinst; debhelper names them the same way.
depends="$depends, systemd | systemd-standalone-sysusers | systemd-sysusers, systemd | systemd-standalone-tmpfiles | systemd-tmpfiles"

# --- DEBIAN/
mkdir -p "$tree/DEBIAN"
cat >"$tree/DEBIAN/control" <<EOF
Package: hush
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $(du -sk --exclude=DEBIAN "$tree" | cut -f1)
Depends: $depends
Section: sound
Priority: optional
Description: phone-like audio behaviour for headless Linux boards
 hushd reads a silence switch, volume buttons and a headphone jack (GPIO or
 gpio-keys input devices), applies a phone-like audio policy (silence,
 ducking, routing to the jack), mixes and plays through ALSA, and serves
 hushctl and the "hush" ALSA device, through which any ALSA program plays
 under that policy.
 .
 The package holds hushd.service (a sandboxed system service running as the
 user hush), its udev rule, sysusers and tmpfiles entries, the board profiles
 in /usr/share/hush/boards and device-tree overlays for Raspberry Pi boards,
 copied to /boot/firmware/overlays; and hush-fault-around.service, which
 sets the kernel's fault-around to one page on boards of 1 GiB or less.
EOF
(cd "$tree" && find etc -type f | sed 's|^|/|' | sort) >"$tree/DEBIAN/conffiles"
[ -s "$tree/DEBIAN/conffiles" ] || rm "$tree/DEBIAN/conffiles"
(cd "$tree" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z | xargs -0 md5sum) \
    >"$tree/DEBIAN/md5sums"
for script in postinst prerm postrm; do install -m 0755 "$here/$script" "$tree/DEBIAN/$script"; done
chmod 0644 "$tree/DEBIAN/control" "$tree/DEBIAN/md5sums" "$tree/DEBIAN/conffiles" 2>/dev/null || true

dpkg-deb --root-owner-group -Zxz --build "$tree" "$out/$name.deb" >/dev/null
echo "$out/$name.deb"
