#!/usr/bin/env bash
# Installs a built hushd (and hushctl) with everything it needs to run under systemd on a board: the unit, the
# udev rule, the sysusers and tmpfiles entries, a configuration (never overwriting one), the board profiles and
# the device-tree overlays, and the `hush` ALSA device (plugin and configuration). Then it creates the user, the directories, re-applies udev rules and starts hushd.
# Running it again changes only what differs (an update restarts hushd); docs/deploy.md walks through it.
set -euo pipefail

usage() {
    cat <<'EOF'
usage: deploy/install.sh [--prefix DIR] [--board NAME] [--bin-dir DIR] [--dest-dir DIR [--package]] [--no-start]
                         [--plugin FILE] [--alsa-lib-dir DIR] [--default-device]
       deploy/install.sh --uninstall [--purge] [--prefix DIR] [--dest-dir DIR] [--alsa-lib-dir DIR]

  --prefix DIR    where hushd and hushctl go: DIR/bin (default /usr/local)
  --board NAME    the board profile a new /etc/hush/hushd.toml starts from (default pi4-dac-hat);
                  one of board/profiles/*.toml. An existing hushd.toml is never touched.
  --bin-dir DIR   where the built hushd and hushctl are (default .build/release: swift build -c release)
  --dest-dir DIR  install below DIR instead of / (packaging, tests); the system steps (users, directories,
                  udev, systemctl) are then skipped
  --package       with --dest-dir: a distribution package's layout (deploy/deb/build-deb.sh): the unit in
                  /usr/lib/systemd/system, the udev rule in /usr/lib/udev/rules.d, the compiled overlays in
                  /usr/share/hush/overlays (the package copies them to the firmware's directory), --prefix /usr
                  unless given
  --no-start      enable hushd.service but do not start or restart it (e.g. before the reboot that loads
                  the overlays)
  --plugin FILE   the built hush ALSA plugin (default .build/alsa-plugin/libasound_module_pcm_hush.so:
                  make alsa-plugin); without it hush is installed without its ALSA device
  --alsa-lib-dir DIR
                  where alsa-lib loads plugins from (default: pkg-config's libdir for alsa, /alsa-lib; else
                  the directory of libasound.so.2, /alsa-lib)
  --default-device
                  also make hush the default ALSA device: programs that play to "default" go through hushd
                  (a link in /etc/alsa/conf.d; remove it to undo)
  --uninstall     stop and disable hushd and remove what install.sh put in place, except
                  /etc/hush/hushd.toml and /var/lib/hush (add --purge to remove those too)
EOF
}

here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
prefix=""
board=pi4-dac-hat
bin_dir="$root/.build/release"
dest=""
start=yes
uninstall=no
purge=no
plugin="$root/.build/alsa-plugin/libasound_module_pcm_hush.so"
alsa_lib_dir=""
default_device=no
package=no

while [ $# -gt 0 ]; do
    case "$1" in
        --prefix | --board | --bin-dir | --dest-dir | --plugin | --alsa-lib-dir)
            if [ $# -lt 2 ] || [ -z "$2" ]; then
                echo "install.sh: $1 needs a value" >&2
                usage >&2
                exit 64
            fi
            case "$1" in
                --prefix) prefix="${2%/}" ;;
                --board) board="$2" ;;
                --bin-dir) bin_dir="$2" ;;
                --dest-dir) dest="$(mkdir -p "$2" && cd "$2" && pwd)" ;;
                --plugin) plugin="$2" ;;
                --alsa-lib-dir) alsa_lib_dir="${2%/}" ;;
            esac
            shift 2
            ;;
        --no-start) start=no; shift ;;
        --package) package=yes; shift ;;
        --uninstall) uninstall=yes; shift ;;
        --purge) purge=yes; shift ;;
        --default-device) default_device=yes; shift ;;
        -h | --help) usage; exit 0 ;;
        *) echo "install.sh: unknown option '$1'" >&2; usage >&2; exit 64 ;;
    esac
done
if [ "$package" = yes ] && { [ -z "$dest" ] || [ "$uninstall" = yes ]; }; then
    echo "install.sh: --package lays out a package's files: it needs --dest-dir and no --uninstall" >&2
    exit 64
fi
[ -n "$prefix" ] || prefix="$([ "$package" = yes ] && echo /usr || echo /usr/local)"
case "$prefix" in
    /*) ;;
    *) echo "install.sh: --prefix must be an absolute path, not '$prefix'" >&2; exit 64 ;;
esac
if [ "$purge" = yes ] && [ "$uninstall" = no ]; then
    echo "install.sh: --purge goes with --uninstall" >&2
    exit 64
fi
if [ -z "$dest" ] && [ "$(id -u)" -ne 0 ]; then
    echo "install.sh: installing into / needs root: sudo $0 $*" >&2
    exit 77
fi

# The paths hushd and the unit expect. Board profiles live in /usr/share/hush/boards whatever the prefix: it is
# on hushd's search path (HushdConfiguration.boardSearchPath).
bin="$prefix/bin"
unit=/etc/systemd/system/hushd.service
rules=/etc/udev/rules.d/99-hush.rules
# A package puts them where the distribution's own go, leaving /etc to the administrator.
if [ "$package" = yes ]; then
    unit=/usr/lib/systemd/system/hushd.service
    rules=/usr/lib/udev/rules.d/99-hush.rules
fi
# Enabled with hushd; it acts only on a board of 1 GiB or less (docs/deploy.md, "Memory on a Zero 2 W").
fault_around_unit="$(dirname "$unit")/hush-fault-around.service"
sysusers=/usr/lib/sysusers.d/hush.conf
tmpfiles=/usr/lib/tmpfiles.d/hush.conf
config=/etc/hush/hushd.toml
share=/usr/share/hush
docs=/usr/share/doc/hush
man=/usr/share/man
# The ALSA device's configuration lives in alsa.conf.d and is enabled by a link in /etc/alsa/conf.d, which
# alsa.conf loads (as Debian's libasound2-data enables its own files).
alsa_share=/usr/share/alsa/alsa.conf.d
alsa_etc=/etc/alsa/conf.d
plugin_name=libasound_module_pcm_hush.so

# alsa-lib's plugin directory (its ALSA_PLUGIN_DIR; /usr/lib/<triplet>/alsa-lib on Debian).
find_alsa_lib_dir() {
    local libdir lib
    if libdir="$(pkg-config --variable=libdir alsa 2>/dev/null)" && [ -n "$libdir" ]; then
        echo "$libdir/alsa-lib"
    elif lib="$(ldconfig -p 2>/dev/null | awk '/libasound\.so\.2 / { print $NF; exit }')" && [ -n "$lib" ]; then
        echo "$(dirname "$(readlink -f "$lib")")/alsa-lib"
    else
        return 1
    fi
}
if [ -z "$alsa_lib_dir" ]; then alsa_lib_dir="$(find_alsa_lib_dir)" || alsa_lib_dir=""; fi

changed=0
note() { echo "install.sh: $*"; }

# install_file MODE SOURCE TARGET: copies SOURCE to DEST/TARGET unless it is already there with the same content
# and mode, so that a second run reports (and restarts for) nothing.
install_file() {
    local mode="$1" source="$2" target="$dest$3"
    if [ -f "$target" ] && cmp -s "$source" "$target" && [ "$(stat -c %a "$target")" = "${mode#0}" ]; then
        return 0
    fi
    install -D -m "$mode" "$source" "$target"
    echo "  installed $3 ($mode)"
    changed=$((changed + 1))
}

# install_link TARGET LINK: makes DEST/LINK a symbolic link to TARGET, a path on the installed system.
install_link() {
    local target="$1" link="$dest$2"
    if [ -L "$link" ] && [ "$(readlink "$link")" = "$target" ]; then
        return 0
    fi
    mkdir -p "$(dirname "$link")"
    ln -sfn "$target" "$link"
    echo "  linked $2 -> $1"
    changed=$((changed + 1))
}

remove_path() {
    local target="$dest$1"
    if [ -e "$target" ] || [ -L "$target" ]; then
        rm -rf -- "$target"
        echo "  removed $1"
    fi
}

# system STEP COMMAND...: runs a step that acts on the running system, or says why it was skipped.
system() {
    local step="$1"
    shift
    if [ -n "$dest" ]; then
        note "skipped ($step): --dest-dir installs files only"
    elif ! command -v "$1" >/dev/null; then
        note "skipped ($step): $1 is not installed"
    else
        "$@"
    fi
}

if [ "$uninstall" = yes ]; then
    note "uninstalling hush${dest:+ from $dest}"
    system "stop and disable hushd" systemctl disable --now hushd.service || true
    system "stop and disable hush-fault-around" systemctl disable --now hush-fault-around.service || true
    for path in "$bin/hushd" "$bin/hushctl" "$unit" "$fault_around_unit" "$rules" "$sysusers" "$tmpfiles" "$share/boards" "$share/sounds/startup.wav" "$share/sounds/hearing-warning.wav" "$man/man8/hushd.8.gz" "$man/man1/hushctl.1.gz" "$docs" \
        "$alsa_etc/50-hush.conf" "$alsa_etc/99-hush-default.conf" "$alsa_share/50-hush.conf" \
        "$alsa_share/99-hush-default.conf"; do
        remove_path "$path"
    done
    if [ -n "$alsa_lib_dir" ]; then
        remove_path "$alsa_lib_dir/$plugin_name"
    else
        note "could not tell where alsa-lib keeps plugins: remove $plugin_name from it by hand (or give --alsa-lib-dir)"
    fi
    for overlays in /boot/firmware/overlays /boot/overlays; do
        for overlay in "$root"/board/overlays/*.dts; do
            remove_path "$overlays/$(basename "$overlay" .dts).dtbo"
        done
    done
    if [ "$purge" = yes ]; then
        remove_path /etc/hush
        remove_path /var/lib/hush
        remove_path "$share"
    else
        note "kept $config and /var/lib/hush (volumes); --purge removes them"
    fi
    system "reload systemd" systemctl daemon-reload
    system "reload udev rules" udevadm control --reload
    note "the user and group hush are left in place (other files may belong to them); remove with: userdel hush"
    exit 0
fi

# What is about to be installed must exist before anything is touched.
if [ ! -x "$bin_dir/hushd" ]; then
    echo "install.sh: no built hushd in $bin_dir: build it with 'swift build -c release' (or pass --bin-dir)" >&2
    exit 66
fi
if [ ! -f "$root/board/profiles/$board.toml" ]; then
    known=""
    for profile in "$root"/board/profiles/*.toml; do known="$known $(basename "$profile" .toml)"; done
    echo "install.sh: no board profile '$board' (board/profiles/$board.toml); known boards:$known" >&2
    exit 65
fi

if [ ! -f "$plugin" ] && [ "$default_device" = yes ]; then
    echo "install.sh: --default-device needs the ALSA plugin, and there is none at $plugin: make alsa-plugin" \
        "(or pass --plugin)" >&2
    exit 66
fi
if [ -f "$plugin" ] && [ -z "$alsa_lib_dir" ]; then
    echo "install.sh: cannot tell where alsa-lib loads plugins from (no pkg-config for alsa, no libasound.so.2" \
        "in ldconfig's cache): give --alsa-lib-dir, e.g. /usr/lib/$(uname -m)-linux-gnu/alsa-lib" >&2
    exit 69
fi

note "installing hush${dest:+ into $dest} (prefix $prefix, board $board)"
install_file 0755 "$bin_dir/hushd" "$bin/hushd"
if [ -x "$bin_dir/hushctl" ]; then
    install_file 0755 "$bin_dir/hushctl" "$bin/hushctl"
else
    note "warning: no hushctl in $bin_dir: installing hushd alone"
fi

# The unit names hushd by its installed path.
staged="$(mktemp -d)"
trap 'rm -rf "$staged"' EXIT
sed "s|^ExecStart=/usr/local/bin/hushd |ExecStart=$bin/hushd |" "$here/hushd.service" >"$staged/hushd.service"
# The hush ALSA device: the plugin where alsa-lib looks for `type hush`, its configuration enabled in
# /etc/alsa/conf.d, and hush as the default device only when asked. hushd does not use them: changing them
# does not restart it (what plays through hushd would stop).
hushd_changed=$changed
if [ -f "$plugin" ]; then
    install_file 0644 "$plugin" "$alsa_lib_dir/$plugin_name"
    install_file 0644 "$here/alsa/50-hush.conf" "$alsa_share/50-hush.conf"
    install_file 0644 "$here/alsa/99-hush-default.conf" "$alsa_share/99-hush-default.conf"
    install_link "$alsa_share/50-hush.conf" "$alsa_etc/50-hush.conf"
    if [ "$default_device" = yes ]; then
        install_link "$alsa_share/99-hush-default.conf" "$alsa_etc/99-hush-default.conf"
        note "hush is the default ALSA device (remove $alsa_etc/99-hush-default.conf to undo)"
    elif [ -L "$dest$alsa_etc/99-hush-default.conf" ]; then
        note "kept hush as the default ALSA device (an earlier --default-device): remove" \
            "$alsa_etc/99-hush-default.conf to undo"
    fi
else
    note "warning: no ALSA plugin at $plugin (make alsa-plugin): installing hush without its ALSA device"
fi
alsa_changed=$((changed - hushd_changed))

install_file 0644 "$staged/hushd.service" "$unit"
install_file 0644 "$here/hush-fault-around.service" "$fault_around_unit"
install_file 0644 "$here/99-hush.rules" "$rules"
install_file 0644 "$here/hush.sysusers" "$sysusers"
install_file 0644 "$here/hush.tmpfiles" "$tmpfiles"

for profile in "$root"/board/profiles/*.toml; do
    install_file 0644 "$profile" "$share/boards/$(basename "$profile")"
done
# The manual pages, compressed as Debian keeps them (gzip -n: the same bytes on every build).
for page in "$root"/docs/man/hushd.8 "$root"/docs/man/hushctl.1; do
    gzip -9nc "$page" >"$staged/$(basename "$page").gz"
    install_file 0644 "$staged/$(basename "$page").gz" "$man/man${page##*.}/$(basename "$page").gz"
done
# hush's start-up chime, for `[sounds] startup` (policy R25): rendered from board/sounds/startup.txt.
install_file 0644 "$root/board/sounds/startup.wav" "$share/sounds/startup.wav"
# The hearing warning, for `[sounds] hearing_warning` (policy R30): rendered from board/sounds/hearing-warning.txt.
install_file 0644 "$root/board/sounds/hearing-warning.wav" "$share/sounds/hearing-warning.wav"
install_file 0644 "$here/hushd.toml.example" "$docs/hushd.toml.example"
for doc in deploy wiring configuration console; do
    if [ -f "$root/docs/$doc.md" ]; then install_file 0644 "$root/docs/$doc.md" "$docs/$doc.md"; fi
done

if [ -e "$dest$config" ]; then
    note "kept the existing $config (the example for this version is $docs/hushd.toml.example)"
else
    sed "s|^board = \".*\"|board = \"$board\"|" "$here/hushd.toml.example" >"$staged/hushd.toml"
    install_file 0644 "$staged/hushd.toml" "$config"
fi

# Overlays go where the firmware reads them: /boot/firmware/overlays (bookworm), /boot/overlays (before). A package
# ships them in /usr/share/hush/overlays and copies them there when it is installed (deploy/deb/postinst): the
# firmware's directory is another file system, and the firmware's packages own it.
overlays=""
[ "$package" = yes ] && mkdir -p "$dest$share/overlays"
for candidate in $([ "$package" = yes ] && echo "$share/overlays") /boot/firmware/overlays /boot/overlays; do
    if [ -d "$dest$candidate" ]; then
        overlays="$candidate"
        break
    fi
done
if [ -z "$overlays" ]; then
    note "skipped (overlays): no /boot/firmware/overlays or /boot/overlays${dest:+ in $dest}: not a Raspberry Pi?"
elif ! command -v dtc >/dev/null; then
    if [ "$package" = yes ]; then
        echo "install.sh: a package needs its overlays, and dtc is not installed: apt install device-tree-compiler" >&2
        exit 69
    fi
    note "skipped (overlays): dtc is not installed (apt install device-tree-compiler)"
else
    for source in "$root"/board/overlays/*.dts; do
        name="$(basename "$source" .dts)"
        if ! dtc -@ -q -I dts -O dtb -o "$staged/$name.dtbo" "$source"; then
            echo "install.sh: dtc could not compile $source (board/overlays/check.sh says more)" >&2
            exit 65
        fi
        install_file 0644 "$staged/$name.dtbo" "$overlays/$name.dtbo"
    done
    note "overlays are in $overlays: load one with a dtoverlay= line in config.txt (docs/deploy.md), then reboot"
fi

if [ -L "$dest$alsa_etc/99-hush-default.conf" ] && grep -Eq '^[[:space:]]*pcm[[:space:]]*=[[:space:]]*"default"' "$dest$config"; then
    note "warning: $config sends sound to the ALSA device \"default\", which is now hush itself: give its routes" \
        "hw: devices (the hush device refuses to feed hushd with itself)"
fi

note "$changed file(s) changed"
system "create the user hush and its groups" systemd-sysusers "$sysusers"
system "create /run/hush and /var/lib/hush" systemd-tmpfiles --create "$tmpfiles"
system "reload udev rules" udevadm control --reload
system "apply udev rules to GPIO and input devices" udevadm trigger --action=change \
    --subsystem-match=gpio --subsystem-match=input
system "reload systemd" systemctl daemon-reload
system "enable hush-fault-around (one page per page fault on a board of 1 GiB or less)" \
    systemctl enable hush-fault-around.service
if [ "$start" = no ]; then
    system "enable hushd" systemctl enable hushd.service
elif [ -z "$dest" ] && command -v systemctl >/dev/null && systemctl is-active --quiet hushd.service; then
    if [ $((changed - alsa_changed)) -gt 0 ]; then
        system "restart hushd with the new files" systemctl restart hushd.service
    else
        note "hushd is running and nothing changed: left alone"
    fi
else
    system "enable and start hushd" systemctl enable --now hushd.service
fi
[ -n "$dest" ] || note "done: check it with 'hushctl status' and 'journalctl -u hushd'"
