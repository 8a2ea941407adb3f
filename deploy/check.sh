#!/usr/bin/env bash
# Checks everything in deploy/: the unit's `systemd-analyze security` exposure (at most 2.0, issue 6), the udev
# rule's syntax, the example configuration, shellcheck on the scripts, and an install into a temporary root
# (deploy/test-install.sh). Installs systemd (for the analyzer), shellcheck and dtc from Debian's packages when
# they are missing, as the Makefile's deps target does. Run by `make deploy-check`, which `make test` runs.
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
limit=2.0
failed=0
fail() {
    echo "FAIL $*"
    failed=$((failed + 1))
}

# need COMMAND PACKAGE: installs PACKAGE when COMMAND is missing (apt-get update only if the first try fails,
# since the package lists are usually fresh); says what to do when that is impossible.
need() {
    command -v "$1" >/dev/null && return 0
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    echo "deploy: installing $2 (for $1)" >&2
    local install=(apt-get install -y -qq -o DPkg::Lock::Timeout=600 "$2")
    if ! DEBIAN_FRONTEND=noninteractive $sudo "${install[@]}" >&2 2>/dev/null; then
        $sudo apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive $sudo "${install[@]}" >&2
    fi
    command -v "$1" >/dev/null || {
        echo "deploy: $1 is missing and could not be installed: apt-get install $2" >&2
        return 1
    }
}

need systemd-analyze systemd || exit 1
need shellcheck shellcheck || exit 1
need dtc device-tree-compiler || exit 1
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# 1. The sandbox's score. A key the analyzer does not know is reported on stderr and would silently weaken the
#    sandbox, so any diagnostic fails the check too.
unit="$here/hushd.service"
systemd-analyze security --offline=yes --no-pager "$unit" >"$work/security" 2>"$work/security.err"
score="$(grep -o 'Overall exposure level for hushd.service: [0-9.]*' "$work/security" | grep -o '[0-9.]*$')"
if [ -z "$score" ]; then
    fail "systemd-analyze security printed no exposure level for $unit:"
    sed 's/^/    /' "$work/security" "$work/security.err"
elif awk -v s="$score" -v l="$limit" 'BEGIN { exit !(s > l) }'; then
    fail "hushd.service exposure $score is above $limit; what is exposed:"
    grep '✗' "$work/security" | sed 's/^/    /'
else
    echo "PASS hushd.service exposure $score (at most $limit): $(grep -c '✗' "$work/security") findings left," \
        "each explained in docs/deploy.md"
fi
if [ -s "$work/security.err" ]; then
    fail "systemd-analyze security complained about $unit:"
    sed 's/^/    /' "$work/security.err"
fi

# 1b. Privileges (issue 6 §5, docs/security.md): hushd runs as the hush user, and no capability is granted but
#     CAP_SYS_NICE (none is: real time comes from LimitRTPRIO). The score alone would not notice a capability
#     added for convenience.
privileges_ok=1
grep -qx 'User=hush' "$unit" || { fail "hushd.service must run as User=hush"; privileges_ok=0; }
grep -qx 'NoNewPrivileges=yes' "$unit" || { fail "hushd.service must set NoNewPrivileges=yes"; privileges_ok=0; }
for key in CapabilityBoundingSet AmbientCapabilities; do
    value="$(grep "^$key=" "$unit" | tail -1 | cut -d= -f2-)"
    if ! grep -q "^$key=" "$unit" || { [ -n "$value" ] && [ "$value" != "CAP_SYS_NICE" ]; }; then
        fail "hushd.service: $key=${value:-(unset)}; allowed: empty or CAP_SYS_NICE"
        privileges_ok=0
    fi
done
[ "$privileges_ok" -eq 1 ] && echo "PASS hushd.service runs as hush, no capabilities, no new privileges"

# 2. The udev rule: `udevadm verify` (systemd 254 and later), else `udevadm test` reading only this rule from a
#    private mount of /run/udev/rules.d, so the running udev never sees it. Unknown groups are expected here (the
#    host may have no gpio group; sysusers makes it on the board).
rules="$here/99-hush.rules"
if udevadm verify --help >/dev/null 2>&1; then
    if udevadm verify --no-style "$rules" >"$work/udev" 2>&1; then
        echo "PASS 99-hush.rules: udevadm verify"
    else
        fail "udevadm verify rejected 99-hush.rules:"
        sed 's/^/    /' "$work/udev"
    fi
elif [ "$(id -u)" -eq 0 ] && command -v unshare >/dev/null && [ -e /sys/class/tty/tty0 ]; then
    unshare --mount sh -c "mkdir -p /run/udev/rules.d && mount -t tmpfs hush-udev-check /run/udev/rules.d &&
        cp '$rules' /run/udev/rules.d/99-hush.rules && udevadm test /sys/class/tty/tty0" >"$work/udev" 2>&1
    problems="$(grep '^/run/udev/rules.d/99-hush.rules:' "$work/udev" | grep -v "Unknown group '[a-z]*', ignoring")"
    if ! grep -q 'Reading rules file: /run/udev/rules.d/99-hush.rules' "$work/udev"; then
        echo "SKIP 99-hush.rules: udevadm test did not read it here (no private mount?):"
        tail -3 "$work/udev" | sed 's/^/    /'
    elif [ -n "$problems" ]; then
        fail "udevadm rejected lines of 99-hush.rules:"
        printf '    %s\n' "$problems"
    else
        echo "PASS 99-hush.rules: udevadm test parsed every line"
    fi
else
    echo "SKIP 99-hush.rules: needs udevadm verify (systemd 254+) or root with unshare"
fi

# 3. The example configuration: valid TOML naming a board that exists; and, once hushd can check a
#    configuration, what hushd itself says about it.
example="$here/hushd.toml.example"
if board="$(python3 -c 'import sys, tomllib; print(tomllib.load(open(sys.argv[1], "rb"))["board"])' "$example" 2>"$work/toml")"; then
    if [ -f "$root/board/profiles/$board.toml" ]; then
        echo "PASS hushd.toml.example: valid TOML, board $board exists"
    else
        fail "hushd.toml.example names board '$board', which is not in board/profiles"
    fi
else
    fail "hushd.toml.example is not valid TOML with a board key:"
    sed 's/^/    /' "$work/toml"
fi
hushd="${HUSHD:-$root/.build/debug/hushd}"
if [ -x "$hushd" ] && "$hushd" --help 2>&1 | grep -q check-config; then
    if (cd "$root" && "$hushd" check-config --config "$example") >"$work/config" 2>&1; then
        echo "PASS hushd.toml.example: hushd check-config accepts it"
    else
        fail "hushd check-config rejects hushd.toml.example:"
        sed 's/^/    /' "$work/config"
    fi
else
    echo "SKIP hushd check-config: $hushd is not built or has no check-config yet"
fi

# 4. The scripts, the package's maintainer scripts among them (-x: the sourced test-lib.sh too).
if shellcheck -x "$here"/*.sh "$here"/deb/*.sh "$here"/deb/postinst "$here"/deb/prerm "$here"/deb/postrm \
    >"$work/shellcheck" 2>&1; then
    echo "PASS shellcheck deploy/*.sh deploy/deb/*.sh and the maintainer scripts"
else
    fail "shellcheck deploy/*.sh deploy/deb:"
    sed 's/^/    /' "$work/shellcheck"
fi

# 5. An install into a temporary root.
if "$here/test-install.sh" >"$work/install" 2>&1; then
    echo "PASS $(tail -1 "$work/install")"
else
    fail "deploy/test-install.sh:"
    grep -v '^PASS' "$work/install" | sed 's/^/    /'
fi

echo "deploy: $([ $failed -eq 0 ] && echo "all checks passed" || echo "$failed check(s) failed")"
[ $failed -eq 0 ]
