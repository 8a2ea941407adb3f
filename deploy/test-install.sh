#!/usr/bin/env bash
# Runs deploy/install.sh into a temporary root (--dest-dir) and checks what landed: every file at its path with
# its mode, the unit pointing at the installed hushd, the chosen board in a new config, an existing config left
# alone, a second run changing nothing, the user and directories that sysusers/tmpfiles make from the installed
# entries, the hush ALSA device (plugin, configuration enabled by a link, hush as the default device only with
# --default-device; alsa-lib reads the installed files), and --uninstall removing what install.sh added. Run by deploy/check.sh (`make deploy-check`).
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# shellcheck source-path=SCRIPTDIR source=test-lib.sh
. "$here/test-lib.sh"

# Stand-ins for the built executables: install.sh copies them, it never runs them.
mkdir -p "$work/bin"
printf '#!/bin/sh\necho hushd stand-in\n' >"$work/bin/hushd"
printf '#!/bin/sh\necho hushctl stand-in\n' >"$work/bin/hushctl"
chmod 0755 "$work/bin/hushd" "$work/bin/hushctl"
mkdir -p "$work/plugin"
printf 'hush ALSA plugin stand-in\n' >"$work/plugin/libasound_module_pcm_hush.so"

# Where install.sh puts the plugin: alsa-lib's plugin directory, as pkg-config tells it (else one given).
if alsa_libdir="$(pkg-config --variable=libdir alsa 2>/dev/null)" && [ -n "$alsa_libdir" ]; then
    alsa_lib_dir="$alsa_libdir/alsa-lib"
    alsa_args=()
else
    alsa_lib_dir=/usr/lib/hush-test/alsa-lib
    alsa_args=(--alsa-lib-dir "$alsa_lib_dir")
fi

dest="$work/root"
mkdir -p "$dest/boot/firmware/overlays"
run() {
    "$here/install.sh" --bin-dir "$work/bin" --dest-dir "$dest" --plugin "$work/plugin/libasound_module_pcm_hush.so" \
        "${alsa_args[@]}" "$@" >"$work/out" 2>&1
}

# First install: every file in place.
expect "install.sh --dest-dir succeeds" run --board pi5-dac-hat
sed 's/^/    /' "$work/out"
expect "hushd in /usr/local/bin, 0755" mode_is "$dest/usr/local/bin/hushd" 755
expect "hushctl in /usr/local/bin, 0755" mode_is "$dest/usr/local/bin/hushctl" 755
expect "unit in /etc/systemd/system, 0644" mode_is "$dest/etc/systemd/system/hushd.service" 644
expect "the optional hush-fault-around unit beside it, 0644" \
    mode_is "$dest/etc/systemd/system/hush-fault-around.service" 644
expect "hush-fault-around acts only on a board of 1 GiB or less" \
    grep -qx 'ConditionMemory=<=1G' "$dest/etc/systemd/system/hush-fault-around.service"
expect "udev rule in /etc/udev/rules.d, 0644" mode_is "$dest/etc/udev/rules.d/99-hush.rules" 644
expect "sysusers entry, 0644" mode_is "$dest/usr/lib/sysusers.d/hush.conf" 644
expect "tmpfiles entry, 0644" mode_is "$dest/usr/lib/tmpfiles.d/hush.conf" 644
expect "config in /etc/hush, 0644" mode_is "$dest/etc/hush/hushd.toml" 644
expect "example config in the docs, 0644" mode_is "$dest/usr/share/doc/hush/hushd.toml.example" 644
for profile in "$root"/board/profiles/*.toml; do
    name="$(basename "$profile")"
    expect "board profile $name, 0644, unchanged" \
        sh -c "[ \"\$(stat -c %a '$dest/usr/share/hush/boards/$name')\" = 644 ] && cmp -s '$profile' '$dest/usr/share/hush/boards/$name'"
done
expect "the ALSA plugin in $alsa_lib_dir, 0644" mode_is "$dest$alsa_lib_dir/libasound_module_pcm_hush.so" 644
for conf in 50-hush.conf 99-hush-default.conf; do
    expect "$conf in /usr/share/alsa/alsa.conf.d, 0644, unchanged" \
        sh -c "[ \"\$(stat -c %a '$dest/usr/share/alsa/alsa.conf.d/$conf')\" = 644 ] && cmp -s '$here/alsa/$conf' '$dest/usr/share/alsa/alsa.conf.d/$conf'"
done
expect "50-hush.conf is enabled by a link in /etc/alsa/conf.d" \
    links_to "$dest/etc/alsa/conf.d/50-hush.conf" /usr/share/alsa/alsa.conf.d/50-hush.conf
expect "hush is not the default ALSA device without --default-device" test ! -e "$dest/etc/alsa/conf.d/99-hush-default.conf"
expect "the new config starts from the board asked for" grep -qx 'board = "pi5-dac-hat"' "$dest/etc/hush/hushd.toml"
expect "the unit starts the installed hushd" \
    grep -qx 'ExecStart=/usr/local/bin/hushd --config /etc/hush/hushd.toml' "$dest/etc/systemd/system/hushd.service"
expect "system steps are skipped with a note under --dest-dir" grep -q 'skipped (reload systemd)' "$work/out"
if command -v dtc >/dev/null; then
    for source in "$root"/board/overlays/*.dts; do
        name="$(basename "$source" .dts).dtbo"
        expect "overlay $name in /boot/firmware/overlays, 0644" mode_is "$dest/boot/firmware/overlays/$name" 644
    done
else
    expect "without dtc the overlays are skipped with a note" grep -q 'skipped (overlays)' "$work/out"
fi

# Again: nothing changes, and a configuration someone edited is kept.
echo '# edited on the device' >>"$dest/etc/hush/hushd.toml"
cp "$dest/etc/hush/hushd.toml" "$work/edited.toml"
expect "a second run succeeds" run --board pi4-dac-hat
expect "a second run changes no file" grep -q '0 file(s) changed' "$work/out"
expect "an existing config is never overwritten" cmp -s "$work/edited.toml" "$dest/etc/hush/hushd.toml"

# An update: a new hushd is installed, the rest stays.
printf '#!/bin/sh\necho hushd stand-in, newer\n' >"$work/bin/hushd"
expect "an update succeeds" run
expect "an update installs exactly the new hushd" grep -q '1 file(s) changed' "$work/out"
expect "the new hushd is in place" cmp -s "$work/bin/hushd" "$dest/usr/local/bin/hushd"

# The default device, only on request; a later run without the flag keeps it.
expect "--default-device succeeds" run --default-device
expect "--default-device links 99-hush-default.conf" \
    links_to "$dest/etc/alsa/conf.d/99-hush-default.conf" /usr/share/alsa/alsa.conf.d/99-hush-default.conf
expect "--default-device changes only that link" grep -q '1 file(s) changed' "$work/out"
expect "a run without --default-device keeps it, and says so" \
    sh -c "'$here/install.sh' --bin-dir '$work/bin' --dest-dir '$dest' --plugin '$work/plugin/libasound_module_pcm_hush.so' ${alsa_args[*]} >'$work/out' 2>&1 && grep -q 'kept hush as the default ALSA device' '$work/out' && test -L '$dest/etc/alsa/conf.d/99-hush-default.conf'"
expect "--default-device without a plugin is refused" \
    sh -c "! '$here/install.sh' --bin-dir '$work/bin' --dest-dir '$work/none' --plugin '$work/missing.so' --default-device >'$work/out' 2>&1 && grep -q 'make alsa-plugin' '$work/out'"
expect "without a plugin hush is installed without its ALSA device, saying so" \
    sh -c "'$here/install.sh' --bin-dir '$work/bin' --dest-dir '$work/noplugin' --plugin '$work/missing.so' >'$work/out' 2>&1 && grep -q 'without its ALSA device' '$work/out' && test ! -e '$work/noplugin/usr/share/alsa'"

# alsa-lib itself reads the installed configuration: both devices are listed, with their descriptions.
if command -v aplay >/dev/null && [ -f /usr/share/alsa/alsa.conf ]; then
    printf '</usr/share/alsa/alsa.conf>\n<%s>\n<%s>\n' "$dest/usr/share/alsa/alsa.conf.d/50-hush.conf" \
        "$dest/usr/share/alsa/alsa.conf.d/99-hush-default.conf" >"$work/asound.conf"
    ALSA_CONFIG_PATH="$work/asound.conf" aplay -L >"$work/devices" 2>&1
    expect "alsa-lib lists the installed hush device" grep -qx 'hush' "$work/devices"
    expect "alsa-lib lists the installed default device as hush's" \
        sh -c "grep -A1 -x default '$work/devices' | grep -q 'plays and records through hushd'"
else
    echo "SKIP alsa-lib reading the installed configuration: aplay (alsa-utils) is not installed"
fi

# Another prefix: the binaries and the unit's ExecStart move, the profiles stay on hushd's search path.
expect "--prefix /usr succeeds" run --prefix /usr
expect "--prefix /usr puts hushd in /usr/bin" mode_is "$dest/usr/bin/hushd" 755
expect "--prefix /usr points the unit at /usr/bin/hushd" \
    grep -qx 'ExecStart=/usr/bin/hushd --config /etc/hush/hushd.toml' "$dest/etc/systemd/system/hushd.service"

# Mistakes are refused before anything is touched, with a message saying what to do.
expect "an unknown board is refused" sh -c "! '$here/install.sh' --bin-dir '$work/bin' --dest-dir '$work/none' --board pi9 >'$work/out' 2>&1"
expect "... naming the known boards" grep -q "known boards:.*pi4-dac-hat" "$work/out"
expect "... and installing nothing" sh -c "[ -z \"\$(find '$work/none' -type f)\" ]"
expect "a missing hushd is refused, saying how to build it" \
    sh -c "! '$here/install.sh' --bin-dir '$work/empty' --dest-dir '$work/none' >'$work/out' 2>&1 && grep -q 'swift build -c release' '$work/out'"

# What the installed sysusers and tmpfiles entries make, applied to the temporary root.
if command -v systemd-sysusers >/dev/null && command -v systemd-tmpfiles >/dev/null; then
    expect "systemd-sysusers creates the user from the installed entry" \
        sh -c "systemd-sysusers --root='$dest' >/dev/null 2>&1 && grep -q '^hush:' '$dest/etc/passwd'"
    for group in audio input gpio dialout; do
        expect "hush is in the group $group" grep -Eq "^$group:[^:]*:[0-9]+:(.*,)?hush(,|$)" "$dest/etc/group"
    done
    expect "systemd-tmpfiles creates the directories from the installed entry" \
        sh -c "systemd-tmpfiles --root='$dest' --create >/dev/null 2>&1"
    expect "/var/lib/hush is 0750" mode_is "$dest/var/lib/hush" 750
    expect "/run/hush is 0750" mode_is "$dest/run/hush" 750
    expect "/usr/share/hush/sounds is 0755" mode_is "$dest/usr/share/hush/sounds" 755
else
    echo "SKIP sysusers/tmpfiles: systemd-sysusers or systemd-tmpfiles is not installed"
fi

# The installed unit, checked by systemd itself with its ExecStart pointed at the installed stand-in.
if command -v systemd-analyze >/dev/null; then
    sed "s|^ExecStart=/usr/bin/hushd |ExecStart=$dest/usr/bin/hushd |" "$dest/etc/systemd/system/hushd.service" \
        >"$work/hushd.service"
    systemd-analyze verify "$work/hushd.service" >"$work/out" 2>&1
    status=$?
    expect "systemd-analyze verify accepts the installed unit without a warning" \
        sh -c "[ $status -eq 0 ] && [ ! -s '$work/out' ]"
    sed 's/^/    /' "$work/out"
    systemd-analyze verify "$dest/etc/systemd/system/hush-fault-around.service" >"$work/out" 2>&1
    status=$?
    expect "systemd-analyze verify accepts hush-fault-around.service without a warning" \
        sh -c "[ $status -eq 0 ] && [ ! -s '$work/out' ]"
    sed 's/^/    /' "$work/out"
fi

# Uninstall: the files go, the configuration and the state stay unless --purge.
mkdir -p "$dest/var/lib/hush" && echo state >"$dest/var/lib/hush/state"
expect "--uninstall succeeds" run --uninstall --prefix /usr
for path in usr/bin/hushd usr/bin/hushctl etc/systemd/system/hushd.service etc/systemd/system/hush-fault-around.service \
    etc/udev/rules.d/99-hush.rules usr/lib/sysusers.d/hush.conf usr/lib/tmpfiles.d/hush.conf usr/share/hush/boards usr/share/hush/sounds/startup.wav usr/share/hush/sounds/hearing-warning.wav boot/firmware/overlays/hush-all.dtbo \
    "${alsa_lib_dir#/}/libasound_module_pcm_hush.so" usr/share/alsa/alsa.conf.d/50-hush.conf \
    usr/share/alsa/alsa.conf.d/99-hush-default.conf etc/alsa/conf.d/50-hush.conf etc/alsa/conf.d/99-hush-default.conf; do
    expect "--uninstall removes /$path" test ! -e "$dest/$path"
done
expect "--uninstall keeps the config" test -f "$dest/etc/hush/hushd.toml"
expect "--uninstall keeps the state" test -f "$dest/var/lib/hush/state"
expect "--uninstall --purge succeeds" run --uninstall --purge
expect "--purge removes the config and the state" sh -c "[ ! -e '$dest/etc/hush' ] && [ ! -e '$dest/var/lib/hush' ]"

echo "install: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
