# faults: hushd on the virtual profile stopped (SIGSTOP 10, 50, 200 ms), starved (stress-ng on every CPU), robbed
# of its sound card (snd-dummy and the Loopback card unbound and bound again) and killed (kill -9 under a
# supervisor), each time checked by listening to the loopback, reading hushd's counters and its clients
# (Sources/hush-vboard-check/FaultChecks.swift). Quick by default; `make faults` passes faults.conf for the long run.
# vboard-tools: stress-ng
# vboard-timeout: 420
# vboard-payload: hush-vboard-check  build it with 'swift build --product hush-vboard-check'; run-all.sh passes it
# vboard-payload: hushd  build it with 'swift build --product hushd'; run-all.sh passes it
# vboard-payload: hushctl  build it with 'swift build --product hushctl'; run-all.sh passes it
# vboard-payload: virtual.toml  run-all.sh copies board/profiles/virtual.toml
. /guest-lib.sh
status=0
hush-vboard-check --faults || status=$?
if [ $status -ne 0 ]; then
    echo "--- hushd's log (/tmp/hushd.log) ---"
    tail -60 /tmp/hushd.log
    echo "--- hushd play's log (/tmp/hushd-play.log) ---"
    tail -20 /tmp/hushd-play.log 2>/dev/null
fi
exit $status
