# shellcheck shell=bash
# What the booted board's phase scripts share (sourced by check.sh): checks that print "ok: WHAT" or
# "not ok: WHAT (why)", figures, and waiting.

failures=0
# check WHAT COMMAND...: runs COMMAND; its output goes into the check's line when it fails.
check() {
    local what="$1" output
    shift
    if output=$("$@" 2>&1); then
        echo "ok: $what"
    else
        echo "not ok: $what"
        [ -z "$output" ] || printf '%s\n' "$output" | tail -15 | sed 's/^/    /'
        failures=$((failures + 1))
    fi
}
# fail WHAT: a check that failed for a reason given.
fail() {
    echo "not ok: $*"
    failures=$((failures + 1))
}
pass() { echo "ok: $*"; }
# figure NAME VALUE: a measured figure, for the host's report.
figure() { echo "figure: $1 = $2"; }

# equal WHAT ACTUAL EXPECTED
equal() {
    if [ "$2" = "$3" ]; then pass "$1 ($2)"; else fail "$1: '$2', expected '$3'"; fi
}

# wait_for SECONDS COMMAND...: retry every 0.1 s until COMMAND succeeds, for SECONDS of the clock (not of tries:
# a systemctl under emulation takes a good part of a second itself).
wait_for() {
    local deadline=$((SECONDS + $1))
    shift
    while ! "$@" >/dev/null 2>&1; do
        [ $SECONDS -lt $deadline ] || return 1
        sleep 0.1
    done
}

# The monotonic clock in microseconds (as systemd's *TimestampMonotonic properties).
monotonic_us() {
    local now
    now=$(awk '/^now at/ { print $3; exit }' /proc/timer_list)
    echo $((now / 1000))
}

unit_property() { systemctl show -P "$2" "$1"; }

# noise_wav FILE SECONDS: a WAV of white noise (48 kHz, stereo, S16_LE), something a capture cannot mistake for
# silence.
noise_wav() {
    local bytes=$(($2 * 48000 * 4))
    {
        printf 'RIFF'
        le32 $((36 + bytes))
        printf 'WAVEfmt '
        le32 16
        printf '\001\000\002\000'
        le32 48000
        le32 192000
        printf '\004\000\020\000data'
        le32 "$bytes"
        head -c "$bytes" /dev/urandom
    } >"$1"
}
le32() { printf "\\$(printf %03o $(($1 & 255)))\\$(printf %03o $((($1 >> 8) & 255)))\\$(printf %03o $((($1 >> 16) & 255)))\\$(printf %03o $((($1 >> 24) & 255)))"; }

# nonzero_bytes FILE [SKIP]: how many bytes of FILE (after SKIP bytes, a WAV's header) are not zero.
nonzero_bytes() { tail -c +$((${2:-0} + 1)) "$1" | tr -d '\000' | wc -c; }

# journal_by_priority UNIT: this boot's lines of UNIT, each with its priority's name.
journal_by_priority() {
    local priority names=(emerg alert crit err warning notice info debug)
    for priority in 0 1 2 3 4 5 6 7; do
        journalctl -b -u "$1" -p "$priority..$priority" --no-pager -o cat 2>/dev/null | sed "s/^/${names[priority]}: /"
    done
}

# hushd_rss_kib: hushd's resident set (VmRSS) in KiB.
hushd_rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$(unit_property hushd MainPID)/status"; }

# three_sessions_rss MB: hushd's resident set at rest and with three tone sessions playing, as figures.
three_sessions_rss() {
    local clients="" hz sessions
    figure "rss_idle_kib_$1mb" "$(hushd_rss_kib)"
    for hz in 440 550 660; do
        hushctl play --tone "$hz" --mix-with-others --for 20 >/dev/null 2>&1 &
        clients="$clients $!"
    done
    sleep 4
    sessions=$(hushctl status | sed -n 's/^sessions *//p')
    equal "three tone sessions play" "$sessions" 3
    figure "rss_three_sessions_kib_$1mb" "$(hushd_rss_kib)"
    # shellcheck disable=SC2086
    kill $clients 2>/dev/null
    # shellcheck disable=SC2086
    wait $clients 2>/dev/null
}
