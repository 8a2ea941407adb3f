# e2e: hushd end to end on the virtual board. hushd runs on the virtual profile (board/profiles/virtual.toml):
# the silence switch and volume buttons on gpio-sim lines, "Headphone Jack" as an ALSA user control on the Loopback
# card, output to snd-aloop, its console on /dev/ttyS1 (the host keeps it in logs/e2e.ttyS1.log and checks it
# afterwards: board/virtual/scenarios/e2e.after). hushctl clients play a tone per bus; hush-vboard-check drives
# the hardware and listens on the loopback's capture side.
# vboard-timeout: 360
# vboard-payload: hush-vboard-check  build it with 'swift build --product hush-vboard-check'; run-all.sh passes it
# vboard-payload: hushd  build it with 'swift build --product hushd'; run-all.sh passes it
# vboard-payload: hushctl  build it with 'swift build --product hushctl'; run-all.sh passes it
# vboard-payload: virtual.toml  run-all.sh copies board/profiles/virtual.toml
# vboard-payload: hearing-warning.wav  run-all.sh copies board/sounds/hearing-warning.wav (the last check's R30 sound)
. /guest-lib.sh
status=0
hush-vboard-check --end-to-end || status=$?
if [ $status -ne 0 ]; then
    echo "--- hushd's log (/tmp/hushd.log) ---"
    tail -60 /tmp/hushd.log
    for log in /tmp/client-*.log; do
        [ -f "$log" ] && { echo "--- $log ---"; tail -5 "$log"; }
    done
fi
exit $status
