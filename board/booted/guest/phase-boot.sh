# shellcheck shell=bash
# Phase "boot" (board/booted/run.sh): the board powered on with hush installed and configured, nobody logging in
# on any console; 1024 MB, so hush-fault-around.service acts.
check "the system finished booting" wait_for 240 bash -c '[[ $(systemctl is-system-running) =~ ^(running|degraded)$ ]]'
state=$(systemctl is-system-running)
[ "$state" = running ] ||
    fail "the system is '$state': failed units $(systemctl --failed --no-legend --plain | awk '{print $1}' | tr '\n' ' ')"
figure systemd_analyze "$(systemd-analyze time 2>/dev/null | head -1)"

# --- hushd started by systemd at boot and ready (Type=notify: active only after READY=1), nobody logged in.
equal "hushd.service is Type=notify" "$(unit_property hushd Type)" notify
equal "hushd.service is active" "$(unit_property hushd ActiveState)" active
equal "hushd has not restarted" "$(unit_property hushd NRestarts)" 0
equal "nobody is logged in (loginctl sessions)" "$(loginctl list-sessions --no-legend | wc -l)" 0
userspace=$(systemctl show -P UserspaceTimestampMonotonic)
started=$(unit_property hushd ExecMainStartTimestampMonotonic)
ready=$(unit_property hushd ActiveEnterTimestampMonotonic)
figure userspace_to_hushd_exec_ms $(((started - userspace) / 1000))
figure userspace_to_hushd_ready_ms $(((ready - userspace) / 1000))
figure hushd_exec_to_ready_ms $(((ready - started) / 1000))
echo "    what hushd waited for (systemd-analyze critical-chain hushd.service):"
systemd-analyze critical-chain hushd.service --no-pager 2>&1 | tail -n +3 | sed 's/^/      /'
# hushd's first sound, the start-up chime, heard on the speaker by the ear (hush-booted-ear.service, first-sound.c).
if wait_for 30 grep -q -E '^(first_sound_us|none)' /run/hush-booted-first-sound; then
    first=$(sed -n 's/^first_sound_us \([0-9]*\).*/\1/p' /run/hush-booted-first-sound)
    if [ -n "$first" ]; then
        pass "the start-up chime came out of the speaker ($(sed -n 's/^first_sound_us [0-9]* //p' /run/hush-booted-first-sound))"
        figure userspace_to_first_sound_ms $(((first - userspace) / 1000))
        figure hushd_ready_to_first_sound_ms $(((first - ready) / 1000))
        [ "$first" -gt "$ready" ] && pass "the first sound came after hushd was ready" ||
            fail "a sound came out $(((ready - first) / 1000)) ms before hushd was ready"
    else
        fail "the ear heard nothing: $(cat /run/hush-booted-first-sound)"
    fi
else
    fail "the ear did not report: $(cat /run/hush-booted-first-sound 2>&1)"
fi
check "hushctl (root) reaches hushd" hushctl status
hushctl status | sed 's/^/    /'

# --- the journal: hushd's warnings at warning priority, its info lines below it.
journal_by_priority hushd >/tmp/journal.txt
sed 's/^/    journal /' /tmp/journal.txt | head -80
info_count=$(grep -c '^info: ' /tmp/journal.txt || true)
warning_count=$(journalctl -b -u hushd -p warning --no-pager -o cat | grep -c . || true)
[ "$info_count" -gt 0 ] && pass "hushd's info lines reach the journal at info ($info_count)" ||
    fail "no line of hushd's at info priority in the journal"
[ "$warning_count" -gt 0 ] && pass "journalctl -u hushd -p warning shows hushd's warnings ($warning_count)" ||
    fail "journalctl -u hushd -p warning shows nothing"
if journalctl -b -u hushd -p warning --no-pager -o cat | grep -q -F -x -f <(sed -n 's/^info: //p' /tmp/journal.txt); then
    fail "an info line of hushd's shows with -p warning"
else
    pass "no info line of hushd's shows with -p warning"
fi

# --- the sandbox: the running unit's exposure, as the installed docs say.
security=$(systemd-analyze security hushd --no-pager 2>&1)
score=$(sed -n 's/.*Overall exposure level for hushd.service: *\([0-9.]*\).*/\1/p' <<<"$security")
docs=/usr/share/doc/hush/deploy.md
[ -f "$docs" ] || docs="$docs.gz"
claimed=$(zcat -f "$docs" | sed -n 's/.*rates it \*\*\([0-9.]*\) [A-Z]*\*\*.*/\1/p' | head -1)
figure exposure "$score"
equal "systemd-analyze security hushd: the exposure deploy.md claims" "$score" "$claimed"

# --- sysusers, tmpfiles and the socket.
equal "user hush: home and shell" "$(getent passwd hush | cut -d: -f6,7)" "/var/lib/hush:/usr/sbin/nologin"
groups=" $(id -nG hush) "
for group in hush audio input gpio dialout; do
    [[ "$groups" == *" $group "* ]] && pass "user hush is in group $group" || fail "user hush is not in $group ($groups)"
done
equal "/run/hush" "$(stat -c '%a %U %G' /run/hush)" "750 hush hush"
equal "/var/lib/hush" "$(stat -c '%a %U %G' /var/lib/hush)" "750 hush hush"
equal "/usr/share/hush/sounds" "$(stat -c '%a %U %G' /usr/share/hush/sounds)" "755 root root"
equal "the control socket" "$(stat -c '%F %a %G' /run/hush/control.sock)" "socket 660 hush"

# --- udev: the GPIO chip and hush's input devices get the groups the rule gives them.
# shellcheck source=../../virtual/guest-lib.sh
. /usr/local/lib/hush-booted/guest-lib.sh
chip=$(gpio_sim_chip)
equal "udev: $chip" "$(stat -c '%G %a' "$chip")" "gpio 660"
if wait_for 10 test -e /dev/input/by-hush/hush-virtual-keys; then
    event=$(readlink -f /dev/input/by-hush/hush-virtual-keys)
    equal "udev: hush-virtual-keys ($event) and its /dev/input/by-hush link" "$(stat -c '%G %a' "$event")" "input 660"
else
    fail "udev made no /dev/input/by-hush/hush-virtual-keys for the keys (hush-booted-keys.service)"
fi
check "hushd opened hush-virtual-keys (media keys, headphone switch)" \
    bash -c "journalctl -b -u hushd -o cat | grep -E 'hush-virtual-keys.*: opened'"

# --- a root service and alice's programs through the hush ALSA device at once, nobody logged in: root plays music
# and alice an effect (ambient: it mixes, R6), and both record the microphone ([capture] pcm hw:Loopback,1,1, which
# hears what is played into hw:Loopback,0,1) with mixWithOthers, so that no one interrupts another.
noise_wav /tmp/noise.wav 4
chmod 644 /tmp/noise.wav
aplay -q -D hw:Loopback,0,1 /tmp/noise.wav &
feeder=$!
arecord -q -D hw:Loopback,1,0 -f S16_LE -r 48000 -c 2 -t raw -d 3 /tmp/speaker.raw &
capture=$!
aplay -q -D hush:music /tmp/noise.wav >/tmp/root-play.log 2>&1 &
rootplay=$!
runuser -u alice -- aplay -q -D hush:effects /tmp/noise.wav >/tmp/alice-play.log 2>&1 &
alice=$!
recorder="hush:CATEGORY=record,OPTIONS=mixWithOthers"
arecord -q -D "$recorder" -f S16_LE -r 48000 -c 2 -d 2 /tmp/root.wav >/tmp/root-rec.log 2>&1 &
rootrec=$!
runuser -u alice -- arecord -q -D "$recorder" -f S16_LE -r 48000 -c 2 -d 2 /tmp/alice.wav >/tmp/alice-rec.log 2>&1 &
alicerec=$!
sleep 1.5
hushctl status >/tmp/status.txt
# Counted in the JSON: the 80x24 text lists as many streams as its rows leave room for.
running=$(hushctl --json status | grep -o '"state":"running"' | wc -l)
figure streams_running_at_once "$running"
[ "$running" -ge 4 ] && pass "hushd runs root's and alice's playback and capture streams at once ($running)" ||
    { fail "hushd runs $running streams at once, not 4"; sed 's/^/    /' /tmp/status.txt; }
wait "$capture"
heard=$(nonzero_bytes /tmp/speaker.raw)
[ "$heard" -gt 100000 ] && pass "the speaker (hw:Loopback) carries their sound ($heard non-zero bytes of 576000)" ||
    fail "the speaker carried $heard non-zero bytes"
# judge WHO PLAYER RECORDER: the aplay and arecord of WHO ended well, and the recording heard the microphone.
judge() {
    if wait "$2"; then pass "$1's aplay through hush: finished"; else fail "$1's aplay: $(cat "/tmp/$1-play.log")"; fi
    if wait "$3"; then
        heard=$(nonzero_bytes "/tmp/$1.wav" 44)
        [ "$heard" -gt 50000 ] && pass "$1 recorded the microphone through hush: ($heard non-zero bytes)" ||
            fail "$1's recording has $heard non-zero bytes"
    else
        fail "$1's arecord: $(cat "/tmp/$1-rec.log")"
    fi
}
judge root "$rootplay" "$rootrec"
judge alice "$alice" "$alicerec"
wait "$feeder"
if runuser -u bob -- aplay -q -D hush /tmp/noise.wav >/tmp/bob.log 2>&1; then
    fail "bob, not in group hush, played through hush:"
else
    grep -q "join the socket's group" /tmp/bob.log && pass "bob (not in hush) is refused: $(grep -m1 -o '/run/hush/control.sock[^;]*' /tmp/bob.log | head -1)" ||
        fail "bob is refused without the reason: $(cat /tmp/bob.log)"
fi
check "alice's hushctl reaches hushd" runuser -u alice -- hushctl status
if runuser -u bob -- hushctl status >/tmp/bob-ctl.log 2>&1; then fail "bob's hushctl reached hushd"; else
    pass "bob's hushctl is refused: $(head -1 /tmp/bob-ctl.log)"
fi

# --- the memory: fault-around on this 1024 MB board, and hushd's resident set with three sessions.
equal "hush-fault-around.service acts on 1024 MB" "$(systemctl is-active hush-fault-around)" active
equal "fault_around_bytes" "$(cat /sys/kernel/debug/fault_around_bytes)" 4096
three_sessions_rss 1024

# --- kill -9: systemd restarts hushd; a client sees the socket close; volumes and the route pick are kept.
hushctl route headphones >/dev/null
hushctl volume 5 >/dev/null
hushctl ringer 3 >/dev/null
before=$(hushctl status | grep -E '^(route|system volume|ringer volume) ')
# hushd writes the state file at most once a second ([state] write_interval_ms): what a crash may lose is the last
# second's changes, by design. What is promised is what was written; wait for it, then kill.
check "the state file has the changes (ringer 3)" wait_for 10 grep -qx 'ringer = 3' /var/lib/hush/state
runuser -u alice -- hushctl events >/tmp/events.log 2>&1 &
events=$!
sleep 0.5
old=$(unit_property hushd MainPID)
kill -9 "$old"
if wait_for 30 bash -c "[ \"\$(systemctl show -P NRestarts hushd)\" = 1 ] && systemctl is-active -q hushd"; then
    pass "systemd restarted hushd after kill -9 (pid $old, now $(unit_property hushd MainPID))"
else
    fail "hushd after kill -9: $(systemctl status hushd --no-pager | head -5)"
fi
if wait_for 10 bash -c "! kill -0 $events"; then
    pass "alice's hushctl events ended when the socket closed: $(tail -1 /tmp/events.log)"
else
    fail "alice's hushctl events still runs after hushd was killed"
    kill "$events"
fi
after=$(hushctl status | grep -E '^(route|system volume|ringer volume) ')
equal "route, volume and ringer after the restart" "$(echo $after)" "$(echo $before)"

# --- a volume changed just before poweroff is there after the next boot (phase reboot looks).
check "hushctl volume 9 before poweroff" hushctl volume 9
