#!/bin/busybox sh
# shellcheck shell=dash disable=SC2154 # scenario, timeout and nonce come from /vboard/config
# /init of the virtual board (PID 1 in the guest): mount the usual file systems, bring up the simulated
# hardware, run the scenario, print the result line, power off.
#
# The host (run.sh) believes only a line
#     HUSH-VBOARD-RESULT: PASS [run NONCE]      or      HUSH-VBOARD-RESULT: FAIL <reason> [run NONCE]
# whose NONCE is the one it wrote into this initramfs for this run. This script reads the nonce and deletes
# the file before the scenario starts, so nothing the scenario or a payload prints can pass for a result.
# No result line (a crash, a hang, a kernel panic) is a failure on the host.

/bin/busybox --install -s /bin
export PATH=/payload:/usr/local/bin:/usr/bin:/bin:/sbin
export HOME=/root
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm /tmp /run /root
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run

# shellcheck disable=SC1091 # written by run.sh: scenario, timeout (seconds), nonce
. /vboard/config
rm -f /vboard/config
export VBOARD_SCENARIO="$scenario"

result() {
    # Keep kernel messages from splitting the result line on the serial port.
    echo 1 >/proc/sys/kernel/printk
    echo "HUSH-VBOARD-RESULT: $* [run $nonce]"
    sync
    poweroff -f
    sleep 10
}

echo "virtual board: kernel $(uname -r), $(grep -c ^processor /proc/cpuinfo) CPU(s), $(awk '/MemTotal/ {print int($2/1024)}' /proc/meminfo) MB; /init started $(cut -d' ' -f1 /proc/uptime) s after the kernel"

. /guest-lib.sh
if ! vboard_bring_up; then
    result "FAIL the simulated hardware did not come up (see the messages above)"
fi
echo "virtual board: hardware up $(cut -d' ' -f1 /proc/uptime) s after the kernel started"

# A watchdog in the guest: reports a hanging scenario with its process list before the host's own timeout.
(
    sleep "$timeout"
    echo "virtual board: scenario '$scenario' still running after $timeout s; processes:"
    ps
    result "FAIL scenario '$scenario' timed out after $timeout s"
) &
watchdog=$!

echo "virtual board: running scenario '$scenario'"
cd /tmp || exit 1
sh -e /scenario.sh
status=$?
kill "$watchdog" 2>/dev/null
cd /
if [ $status -eq 0 ]; then
    result "PASS"
else
    result "FAIL scenario '$scenario' exited with status $status"
fi
