#!/bin/busybox sh
# /init of the virtual board: bring up the simulated hardware, run the scenario, report, power off.
# The result line HUSH-VBOARD-RESULT is what the host looks for; without it the run counts as failed.
/bin/busybox --install -s /bin
export PATH=/bin:/sbin:/payload
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /tmp /run
mount -t tmpfs tmpfs /tmp

. /guest-lib.sh

result() {
    echo "HUSH-VBOARD-RESULT: $*"
    sync
    poweroff -f
    sleep 5
}

echo "virtual board: kernel $(uname -r), $(grep -c ^processor /proc/cpuinfo) CPU(s)"
if ! vboard_bring_up; then
    result "FAIL the simulated hardware did not come up"
fi
echo "virtual board: hardware up after $(cut -d' ' -f1 /proc/uptime) s"
scenario=$(cat /scenario-name)
echo "virtual board: running scenario '$scenario'"
if sh -e /scenario.sh; then
    result "PASS"
else
    result "FAIL scenario '$scenario' exited with status $?"
fi
