#!/bin/busybox sh
# shellcheck shell=dash
# /init of the booted board's initramfs (board/booted/run.sh): Debian's kernel has virtio and ext4 as modules, so
# this loads them (in the order run.sh wrote), mounts the disk and hands over to systemd on it. Nothing else: the
# board's own userland does the rest, as on a Raspberry Pi whose kernel mounts its SD card.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
for name in $(cat /modules/order); do
    grep -q "^$(echo "$name" | tr - _) " /proc/modules || insmod "/modules/$name.ko" ||
        echo "booted board initramfs: insmod $name failed" >&2
done
tries=50
while [ ! -b /dev/vda ] && [ $tries -gt 0 ]; do sleep 0.1; tries=$((tries - 1)); done
if ! mount -t ext4 -o rw,noatime /dev/vda /newroot; then
    echo "booted board initramfs: could not mount /dev/vda; the kernel said:" >&2
    dmesg | tail -10 >&2
    poweroff -f
fi
umount /proc /sys
mount -o move /dev /newroot/dev || umount /dev
exec switch_root /newroot /lib/systemd/systemd
