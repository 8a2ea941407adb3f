# shellcheck shell=bash
# Phase "reboot" (board/booted/run.sh): the next power-on, with 2048 MB; then stop, remove and purge.
check "the system finished booting" wait_for 240 bash -c '[[ $(systemctl is-system-running) =~ ^(running|degraded)$ ]]'
noise_wav /tmp/noise.wav 1
equal "hushd.service is active" "$(unit_property hushd ActiveState)" active
status=$(hushctl status)
equal "the volume set just before poweroff" "$(sed -n 's/^system volume *\([0-9]*\).*/\1/p' <<<"$status")" 9
equal "the route picked before" "$(sed -n 's/^route *//p' <<<"$status")" "headphones (override)"
hushctl route auto >/dev/null

# --- fault-around leaves a 2048 MB board alone.
equal "hush-fault-around.service is skipped on 2048 MB" "$(systemctl show -P ConditionResult hush-fault-around)" no
equal "fault_around_bytes" "$(cat /sys/kernel/debug/fault_around_bytes)" 65536
three_sessions_rss 2048

# --- systemctl stop saves the state.
hushctl volume 11 >/dev/null
check "systemctl stop hushd" systemctl stop hushd
check "systemctl start hushd" systemctl start hushd
equal "the volume after stop and start" "$(hushctl status | sed -n 's/^system volume *\([0-9]*\).*/\1/p')" 11

# --- apt remove: hushd stops and its files go; the configuration and the volumes stay (docs/deploy.md §2).
export DEBIAN_FRONTEND=noninteractive
check "apt-get remove hush" apt-get remove -y hush
equal "dpkg's status after remove" "$(dpkg-query -W -f='${Status}' hush)" "deinstall ok config-files"
equal "hushd.service after remove" "$(systemctl is-active hushd)" inactive
check "no hushd process" bash -c '! pgrep -x hushd'
for gone in /usr/bin/hushd /usr/bin/hushctl /usr/lib/systemd/system/hushd.service /usr/share/hush/boards; do
    [ ! -e "$gone" ] && pass "removed: $gone" || fail "still there after remove: $gone"
done
for kept in /etc/hush/hushd.toml /var/lib/hush/state; do
    [ -e "$kept" ] && pass "kept by remove: $kept" || fail "gone after remove: $kept"
done
check "aplay -D hush says there is no such device, not a crash" bash -c \
    'out=$(aplay -q -D hush /tmp/noise.wav 2>&1); [ $? -ne 0 ] && echo "$out" && ! grep -qi "segmentation" <<<"$out"'

# --- apt purge: the configuration and the volumes go too; the user hush stays.
check "apt-get purge hush" apt-get purge -y hush
equal "dpkg knows no hush after purge" "$(dpkg-query -W -f='${Status}' hush 2>/dev/null || echo none)" none
for gone in /etc/hush /var/lib/hush /etc/systemd/system/multi-user.target.wants/hushd.service \
    /etc/systemd/system/multi-user.target.wants/hush-fault-around.service; do
    [ ! -e "$gone" ] && pass "purged: $gone" || fail "still there after purge: $gone"
done
check "the user hush stays (docs/deploy.md)" getent passwd hush
