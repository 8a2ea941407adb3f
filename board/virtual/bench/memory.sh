# shellcheck shell=dash
# memory: a figure, not a test (make memory-board; not one of run-all.sh's scenarios/*.sh). hushd's resident set on
# the virtual board (the virtual profile: its speaker on snd-aloop, the gpio-sim lines, real ALSA controls) at
# "ready" and with three tone sessions playing (hushctl play --tone, mixWithOthers), with the kernel's fault-around
# at its default (64 KiB: a read fault on a file page maps the 16 pages around it that are cached) and at one page
# (what deploy/systemd/hush-fault-around.service sets), alternating, ROUNDS times (/payload/memory-rounds, default
# 2). Runs on the amd64 board (board/virtual/run.sh) and on the arm64 one (board/virtual/arm64/run.sh, hush from
# its .deb). Rss, Anonymous and Locked are /proc/PID/smaps_rollup's; docs/performance.md.
# vboard-timeout: 300
# vboard-payload: hushd  build it with 'swift build --product hushd'; make memory-board passes it
# vboard-payload: hushctl  build it with 'swift build --product hushctl'; make memory-board passes it
# vboard-payload: virtual.toml  make memory-board copies board/profiles/virtual.toml
. /guest-lib.sh
mount -t debugfs none /sys/kernel/debug 2>/dev/null || true
knob=/sys/kernel/debug/fault_around_bytes
expect "the kernel's fault-around can be set ($knob)" test -w "$knob" || exit 1
rounds=2
[ -f /payload/memory-rounds ] && rounds=$(cat /payload/memory-rounds)
mkdir -p /run/hush /tmp/memory
figures() { # PID: "Rss N kB, Anonymous N kB, Locked N kB"
    awk '/^(Rss|Anonymous|Locked):/ { sub(":", "", $1); printf "%s%s %s kB", sep, $1, $2; sep = ", " } END { print "" }' \
        "/proc/$1/smaps_rollup"
}
measure() { # FAULT_AROUND_BYTES ROUND
    echo "$1" >"$knob"
    log="/tmp/memory/hushd-$1-$2.log"
    /payload/hushd --board /payload/virtual.toml --console none >"$log" 2>&1 &
    pid=$!
    wait_for 20 /payload/hushctl status >/dev/null 2>&1 || { tail -20 "$log"; return 1; }
    sleep 1
    echo "fault_around_bytes $1, round $2: $(sed -n 's/.*info: memory: //p' "$log")"
    echo "  ready:         $(figures $pid)"
    clients=""
    for hz in 440 550 660; do
        /payload/hushctl play --tone "$hz" --mix-with-others --for 30 >/dev/null 2>&1 &
        clients="$clients $!"
    done
    sleep 5
    sessions=$(/payload/hushctl status | sed -n 's/^sessions *//p')
    echo "  $sessions sessions:    $(figures $pid)"
    # shellcheck disable=SC2086
    kill $clients 2>/dev/null
    kill $pid
    wait $pid 2>/dev/null
    [ "$sessions" = 3 ]
}
status=0
round=1
while [ "$round" -le "$rounds" ]; do
    measure 65536 "$round" || status=1
    measure 4096 "$round" || status=1
    round=$((round + 1))
done
echo 65536 >"$knob"
exit $status
