#!/usr/bin/env bash
# After the e2e scenario, on the host: hushd's serial console (the guest's /dev/ttyS1, kept in a file) must show
# the banner and every decision with its rule, for the behaviours the scenario exercised.
#   e2e.after.sh TTYS1-LOG
set -uo pipefail
log="$1"
failed=0
check() {
    if grep -qE -- "$2" "$log"; then
        echo "ok: console shows $1"
    else
        echo "not ok: console shows $1 (no line matching '$2' in $log)"
        failed=1
    fi
}
check "the banner" "hush [0-9.]+ on board 'virtual'"
check "the silence switch and rule R1" "\[R1 silence-switch\] set session [0-9]+ gain"
check "the volume buttons (R3)" "\[R3 volume-buttons\] set (music|effect) bus gain"
check "the unplug pausing music (R5)" "\[R5 headphones-unplugged\] pause session"
check "the ringtone's interruption (R6)" "\[R6 non-mixable-interrupts\] pause session"
check "ducking (R7)" "\[R7 duck-others\]"
check "a client going away (R10)" "\[R10 client-gone\]"
check "the plug rerouting (R4)" "\[R4 headphones-plugged\] select route headphones"
exit $failed
