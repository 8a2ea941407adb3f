#!/usr/bin/env bash
# Builds hush's Debian package from built binaries (deploy/deb/build-deb.sh) and checks it: the control fields
# (the version hushd reports, the package of every library the binaries need in Depends), conffiles, the files
# against what deploy/install.sh --package lays out, owners and modes, lintian; then installs it with dpkg into a
# scratch root (--root with --force-script-chrootless: the maintainer scripts act on that tree through DPKG_ROOT,
# never on this machine), runs the installed hushd, upgrades it over an edited configuration, removes and purges
# it. `make deb-check` runs it (make test).
#
#   deploy/deb/test-deb.sh ARCH BIN_DIR PLUGIN      (ARCH this machine's: the installed hushd is run)
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
[ $# -eq 3 ] || { sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 64; }
arch="$1" bin_dir="$2" plugin="$3"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# shellcheck source-path=SCRIPTDIR/.. source=test-lib.sh
. "$root/deploy/test-lib.sh"

# --- the package
if deb="$("$here/build-deb.sh" "$arch" "$bin_dir" "$plugin" "$work/out" 2>"$work/build.err")"; then
    pass "build-deb.sh builds $(basename "$deb") ($(($(stat -c %s "$deb") / 1024)) KiB)"
else
    fail "build-deb.sh:"
    sed 's/^/    /' "$work/build.err"
    echo "deb: $passed passed, $failed failed"
    exit 1
fi
field() { dpkg-deb -f "$deb" "$1"; }
version="$("$bin_dir/hushd" --version | head -1)"
expect "Package: hush" test "$(field Package)" = hush
expect "Version: $(field Version) is what hushd --version says ($version)" test "hushd $(field Version)" = "$version"
expect "Architecture: $arch" test "$(field Architecture)" = "$arch"
depends="$(field Depends)"
multiarch="$(dpkg-architecture -qDEB_HOST_MULTIARCH)"
objects=("$bin_dir/hushd" "$bin_dir/hushctl" "$plugin")
# Each library the binaries need, found as the dynamic linker finds it, belongs to a package Depends names.
for soname in $(for o in "${objects[@]}"; do readelf -d "$o"; done | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort -u); do
    path="$(ldconfig -p | awk -v s="$soname" '$1 == s && /x86-64|AArch64|aarch64/ { print $NF; exit }')"
    owner="$( { [ -n "$path" ] && dpkg -S "$(readlink -f "$path")" 2>/dev/null; } | head -1 | cut -d: -f1)"
    if [ -z "$owner" ]; then owner="$( { [ -n "$path" ] && dpkg -S "$path" 2>/dev/null; } | head -1 | cut -d: -f1)"; fi
    expect "Depends names $soname's package (${owner:-not found})" \
        sh -c "[ -n '$owner' ] && echo '$depends' | tr ',|' '\n\n' | awk '{ print \$1 }' | grep -Fqx '$owner'"
done
# And what hushd opens with dlopen when first needed (Sources/CSndfile, Sources/CVoiceProcessing): not loaded at
# start (no NEEDED entry), its package in Depends all the same.
dlopened="$("$root/deploy/dlopened-libraries.sh" "$bin_dir/hushd")"
expect "hushd names the two libraries it opens with dlopen (${dlopened//$'\n'/, })" test -n "$dlopened"
for soname in $dlopened; do
    expect "hushd does not load $soname at start (no NEEDED entry)" \
        sh -c "! readelf -d '$bin_dir/hushd' | grep -qF '[$soname]'"
    path="$(ldconfig -p | awk -v s="$soname" '$1 == s && /x86-64|AArch64|aarch64/ { print $NF; exit }')"
    owner="$( { [ -n "$path" ] && dpkg -S "$(readlink -f "$path")" 2>/dev/null; } | head -1 | cut -d: -f1)"
    expect "Depends names $soname's package (${owner:-not found}), which hushd opens with dlopen" \
        sh -c "[ -n '$owner' ] && echo '$depends' | tr ',|' '\n\n' | awk '{ print \$1 }' | grep -Fqx '$owner'"
done
expect "Depends asks libc6 for a version (>= ...)" sh -c "echo '$depends' | grep -Eq 'libc6 \\(>= [0-9.]+\\)'"
expect "Depends names no Swift runtime" sh -c "! echo '$depends' | grep -qi swift"
dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles >"$work/conffiles" 2>/dev/null
expect "conffiles: /etc/hush/hushd.toml, nothing else" test "$(cat "$work/conffiles")" = /etc/hush/hushd.toml
for script in postinst prerm postrm; do
    expect "$script is in the package, 0755" sh -c "dpkg-deb --ctrl-tarfile '$deb' | tar -tv ./$script | grep -q '^-rwxr-xr-x root/root'"
done
expect "Maintainer names the project (deploy/deb/maintainer)" \
    test "$(dpkg-deb -f "$deb" Maintainer)" = "${HUSH_DEB_MAINTAINER:-$(sed -n '/^[^#]/{p;q}' "$here/maintainer")}"
expect "the maintainer scripts pass shellcheck (POSIX sh)" shellcheck -s sh "$here/postinst" "$here/prerm" "$here/postrm"

# The files: exactly what install.sh --package lays out, with the copyright and the changelog; root's, and only
# the executables executable.
"$root/deploy/install.sh" --dest-dir "$work/layout" --package --bin-dir "$bin_dir" --plugin "$plugin" \
    --alsa-lib-dir "/usr/lib/$multiarch/alsa-lib" >/dev/null 2>&1
{ (cd "$work/layout" && find . -mindepth 1 ! -type d | sed 's|^\.||')
  printf '%s\n' /usr/share/doc/hush/copyright /usr/share/doc/hush/changelog.gz; } | sort >"$work/expected"
dpkg-deb -c "$deb" >"$work/contents"
awk '$1 !~ /^d/ { print $6 }' "$work/contents" | sed 's|^\.||' | sort >"$work/packaged"
if diff "$work/expected" "$work/packaged" >"$work/diff"; then
    pass "the package holds install.sh --package's $(wc -l <"$work/expected") files, the copyright and the changelog"
else
    fail "the package's files differ from install.sh --package's (< expected, > packaged):"
    sed 's/^/    /' "$work/diff"
fi
for path in /usr/bin/hushd /usr/bin/hushctl /usr/lib/systemd/system/hushd.service \
    /usr/lib/systemd/system/hush-fault-around.service /usr/lib/udev/rules.d/99-hush.rules \
    /usr/lib/sysusers.d/hush.conf /usr/lib/tmpfiles.d/hush.conf /etc/hush/hushd.toml \
    "/usr/lib/$multiarch/alsa-lib/libasound_module_pcm_hush.so" /usr/share/alsa/alsa.conf.d/50-hush.conf \
    /usr/share/hush/boards/pi4-dac-hat.toml /usr/share/hush/overlays/hush-all.dtbo /usr/share/hush/sounds/startup.wav /usr/share/hush/sounds/hearing-warning.wav; do
    expect "the package has $path" grep -qx "$path" "$work/packaged"
done
expect "every file and directory is root's" sh -c "! awk '\$2 != \"root/root\"' '$work/contents' | grep -q ."
expect "only hushd and hushctl are executable" \
    test "$(awk '$1 ~ /^-..x/ { print $6 }' "$work/contents" | tr '\n' ' ')" = "./usr/bin/hushctl ./usr/bin/hushd "
expect "the unit starts /usr/bin/hushd" sh -c "dpkg-deb --fsys-tarfile '$deb' | tar -xO ./usr/lib/systemd/system/hushd.service | grep -qx 'ExecStart=/usr/bin/hushd --config /etc/hush/hushd.toml'"

# lintian: no error and no warning.
if command -v lintian >/dev/null; then
    lintian "$deb" >"$work/lintian" 2>/dev/null
    if grep -E '^(E|W):' "$work/lintian" >"$work/lintian.bad"; then
        fail "lintian:"
        sed 's/^/    /' "$work/lintian.bad"
    else
        pass "lintian: no error, no warning"
    fi
else
    echo "SKIP lintian is not installed (apt-get install lintian)"
fi

# --- installed into a scratch root by dpkg. Its libraries are this machine's (--force-depends: the scratch root has
# no packages); the firmware's overlay directory exists, as on Raspberry Pi OS.
scratch="$work/root"
mkdir -p "$scratch/var/lib/dpkg/info" "$scratch/var/lib/dpkg/updates" "$scratch/boot/firmware/overlays"
touch "$scratch/var/lib/dpkg/status"
install_deb() {
    dpkg --root="$scratch" --force-script-chrootless --force-depends --log=/dev/null "$@" >"$work/dpkg" 2>&1
}
expect "dpkg -i installs it into a scratch root" install_deb -i "$deb"
grep -v -e 'depends on' -e 'not installed' -e 'however:' -e 'dependency problems' "$work/dpkg" | sed 's/^/    /'
expect "dpkg says hush is installed" \
    sh -c "dpkg --root='$scratch' -s hush 2>/dev/null | grep -qx 'Status: install ok installed'"
expect "every packaged file is in the scratch root" \
    sh -c "while read -r p; do [ -e '$scratch'\"\$p\" ] || [ -L '$scratch'\"\$p\" ] || exit 1; done <'$work/packaged'"
expect "postinst made the user hush (sysusers), in audio, gpio, input, dialout" \
    sh -c "grep -q '^hush:' '$scratch/etc/passwd' && for g in audio gpio input dialout; do grep -q \"^\$g:.*hush\" '$scratch/etc/group' || exit 1; done"
uid="$(awk -F: '$1 == "hush" { print $3 }' "$scratch/etc/passwd")"
expect "postinst made /var/lib/hush, 0750, the user hush's (tmpfiles)" \
    sh -c "[ '$(stat -c %a:%u "$scratch/var/lib/hush" 2>/dev/null)' = '750:$uid' ]"
expect "postinst copied the overlays into /boot/firmware/overlays" \
    sh -c "for o in '$scratch'/usr/share/hush/overlays/*.dtbo; do cmp -s \"\$o\" '$scratch/boot/firmware/overlays/'\"\${o##*/}\" || exit 1; done"
expect "postinst enabled hushd.service (multi-user.target.wants)" \
    links_to "$scratch/etc/systemd/system/multi-user.target.wants/hushd.service" /usr/lib/systemd/system/hushd.service
expect "postinst enabled hush-fault-around.service (multi-user.target.wants)" \
    links_to "$scratch/etc/systemd/system/multi-user.target.wants/hush-fault-around.service" \
    /usr/lib/systemd/system/hush-fault-around.service
if [ "$arch" = "$(dpkg --print-architecture)" ]; then
    expect "the installed hushd runs: $("$scratch/usr/bin/hushd" --version 2>&1 | head -1)" \
        sh -c "'$scratch/usr/bin/hushd' --version | head -1 | grep -qx '$version'"
    for profile in "$scratch"/usr/share/hush/boards/*.toml; do
        expect "the installed hushd accepts the installed board ${profile##*/}" \
            sh -c "'$scratch/usr/bin/hushd' check-config --board '$profile' >/dev/null 2>&1"
    done
    # The configuration names its board; hushd finds it in board/profiles below the working directory first.
    mkdir -p "$work/cwd/board" && ln -s "$scratch/usr/share/hush/boards" "$work/cwd/board/profiles"
    expect "the installed hushd accepts the installed /etc/hush/hushd.toml" \
        sh -c "cd '$work/cwd' && '$scratch/usr/bin/hushd' check-config --config '$scratch/etc/hush/hushd.toml' >/dev/null 2>&1"
    expect "the installed hushctl runs" sh -c "'$scratch/usr/bin/hushctl' --help >/dev/null 2>&1"
fi

# An upgrade (the same package again) keeps an edited configuration; removal keeps it and the volumes; purge not.
echo '# edited on the board' >>"$scratch/etc/hush/hushd.toml"
cp "$scratch/etc/hush/hushd.toml" "$work/edited.toml"
echo state >"$scratch/var/lib/hush/state"
expect "dpkg -i again (an upgrade) succeeds" install_deb -i "$deb"
expect "an upgrade keeps the edited /etc/hush/hushd.toml" cmp -s "$work/edited.toml" "$scratch/etc/hush/hushd.toml"
expect "dpkg -r removes it" install_deb -r hush
for path in /usr/bin/hushd /usr/lib/systemd/system/hushd.service /usr/share/hush/boards/pi4-dac-hat.toml \
    /boot/firmware/overlays/hush-all.dtbo; do
    expect "dpkg -r removes $path" test ! -e "$scratch$path"
done
expect "dpkg -r keeps the configuration and the volumes" \
    sh -c "cmp -s '$work/edited.toml' '$scratch/etc/hush/hushd.toml' && test -f '$scratch/var/lib/hush/state'"
expect "dpkg -P purges it" install_deb -P hush
expect "a purge removes /etc/hush, /var/lib/hush and the enablement" \
    sh -c "[ ! -e '$scratch/etc/hush' ] && [ ! -e '$scratch/var/lib/hush' ] && [ ! -L '$scratch/etc/systemd/system/multi-user.target.wants/hushd.service' ]"
expect "a purge removes hush-fault-around's enablement too" \
    test ! -e "$scratch/etc/systemd/system/multi-user.target.wants/hush-fault-around.service"
expect "dpkg forgets hush" sh -c "! dpkg --root='$scratch' -s hush >/dev/null 2>&1"

echo "deb: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
