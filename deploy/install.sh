#!/usr/bin/env bash
# Installs a built hushd (and hushctl) with everything it needs to run under systemd on a board: the unit, the
# udev rule, the sysusers and tmpfiles entries, a configuration (never overwriting one), the board profiles and
# the device-tree overlays. Then it creates the user, the directories, re-applies udev rules and starts hushd.
# Running it again changes only what differs (an update restarts hushd); docs/deploy.md walks through it.
set -euo pipefail

usage() {
    cat <<'EOF'
usage: deploy/install.sh [--prefix DIR] [--board NAME] [--bin-dir DIR] [--dest-dir DIR] [--no-start]
       deploy/install.sh --uninstall [--purge] [--prefix DIR] [--dest-dir DIR]

  --prefix DIR    where hushd and hushctl go: DIR/bin (default /usr/local)
  --board NAME    the board profile a new /etc/hush/hushd.toml starts from (default pi4-dac-hat);
                  one of board/profiles/*.toml. An existing hushd.toml is never touched.
  --bin-dir DIR   where the built hushd and hushctl are (default .build/release: swift build -c release)
  --dest-dir DIR  install below DIR instead of / (packaging, tests); the system steps (users, directories,
                  udev, systemctl) are then skipped
  --no-start      enable hushd.service but do not start or restart it (e.g. before the reboot that loads
                  the overlays)
  --uninstall     stop and disable hushd and remove what install.sh put in place, except
                  /etc/hush/hushd.toml and /var/lib/hush (add --purge to remove those too)
EOF
}

here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
prefix=/usr/local
board=pi4-dac-hat
bin_dir="$root/.build/release"
dest=""
start=yes
uninstall=no
purge=no

while [ $# -gt 0 ]; do
    case "$1" in
        --prefix | --board | --bin-dir | --dest-dir)
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
            esac
            shift 2
            ;;
        --no-start) start=no; shift ;;
        --uninstall) uninstall=yes; shift ;;
        --purge) purge=yes; shift ;;
        -h | --help) usage; exit 0 ;;
        *) echo "install.sh: unknown option '$1'" >&2; usage >&2; exit 64 ;;
    esac
done
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
sysusers=/usr/lib/sysusers.d/hush.conf
tmpfiles=/usr/lib/tmpfiles.d/hush.conf
config=/etc/hush/hushd.toml
share=/usr/share/hush
docs=/usr/share/doc/hush

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
    for path in "$bin/hushd" "$bin/hushctl" "$unit" "$rules" "$sysusers" "$tmpfiles" "$share/boards" "$docs"; do
        remove_path "$path"
    done
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
install_file 0644 "$staged/hushd.service" "$unit"
install_file 0644 "$here/99-hush.rules" "$rules"
install_file 0644 "$here/hush.sysusers" "$sysusers"
install_file 0644 "$here/hush.tmpfiles" "$tmpfiles"

for profile in "$root"/board/profiles/*.toml; do
    install_file 0644 "$profile" "$share/boards/$(basename "$profile")"
done
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

# Overlays go where the firmware reads them: /boot/firmware/overlays (bookworm), /boot/overlays (before).
overlays=""
for candidate in /boot/firmware/overlays /boot/overlays; do
    if [ -d "$dest$candidate" ]; then
        overlays="$candidate"
        break
    fi
done
if [ -z "$overlays" ]; then
    note "skipped (overlays): no /boot/firmware/overlays or /boot/overlays${dest:+ in $dest}: not a Raspberry Pi?"
elif ! command -v dtc >/dev/null; then
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

note "$changed file(s) changed"
system "create the user hush and its groups" systemd-sysusers "$sysusers"
system "create /run/hush and /var/lib/hush" systemd-tmpfiles --create "$tmpfiles"
system "reload udev rules" udevadm control --reload
system "apply udev rules to GPIO and input devices" udevadm trigger --action=change \
    --subsystem-match=gpio --subsystem-match=input
system "reload systemd" systemctl daemon-reload
if [ "$start" = no ]; then
    system "enable hushd" systemctl enable hushd.service
elif [ -z "$dest" ] && command -v systemctl >/dev/null && systemctl is-active --quiet hushd.service; then
    if [ "$changed" -gt 0 ]; then
        system "restart hushd with the new files" systemctl restart hushd.service
    else
        note "hushd is running and nothing changed: left alone"
    fi
else
    system "enable and start hushd" systemctl enable --now hushd.service
fi
[ -n "$dest" ] || note "done: check it with 'hushctl status' and 'journalctl -u hushd'"
