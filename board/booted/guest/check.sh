#!/bin/bash
# The booted board's checks (hush-booted-check.service): runs phase-PHASE.sh for the phase the kernel command line
# names (hush.booted=PHASE), with its output on the second serial port, then prints the result line with this
# run's nonce (hush.nonce=) and powers off. The host (board/booted/run.sh) believes only that line.
set -u
phase="" nonce=""
for word in $(cat /proc/cmdline); do
    case "$word" in
        hush.booted=*) phase="${word#hush.booted=}" ;;
        hush.nonce=*) nonce="${word#hush.nonce=}" ;;
    esac
done
exec >/dev/ttyS1 2>&1
here=/usr/local/lib/hush-booted
# shellcheck source=lib.sh
. "$here/lib.sh"
failures=0

result() {
    echo "HUSH-BOOTED-RESULT: $* [run $nonce]"
    sync
    systemctl poweroff --no-block
    exit 0
}
[ -f "$here/phase-$phase.sh" ] || result "FAIL no phase '$phase' on this disk"
# The board's own watchdog: a phase that hangs is reported with what was running.
(
    sleep 420
    echo "booted board: phase '$phase' still running after 420 s; processes:"
    ps -eo pid,user,stat,etime,args
    result "FAIL phase '$phase' timed out"
) &
watchdog=$!
echo "booted board: phase '$phase', kernel $(uname -r), $(awk '/MemTotal/ {print int($2/1024)}' /proc/meminfo) MB, checks started $(cut -d' ' -f1 /proc/uptime) s after the kernel"
# shellcheck disable=SC1090
. "$here/phase-$phase.sh"
kill "$watchdog" 2>/dev/null
if [ "$failures" -eq 0 ]; then result PASS; else result "FAIL $failures check(s) of phase '$phase' failed"; fi
