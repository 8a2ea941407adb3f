#!/bin/bash
# The booted board's GPIO (hush-booted-hardware.service): the virtual board's gpio-sim chip, made with the same
# shell library the busybox board uses (guest-lib.sh).
set -u
# shellcheck source=../../virtual/guest-lib.sh
. /usr/local/lib/hush-booted/guest-lib.sh
modprobe hush-gpio-sim || { echo "booted board: modprobe hush-gpio-sim failed" >&2; exit 1; }
vboard_gpio_sim || { echo "booted board: the gpio-sim chip did not come up" >&2; exit 1; }
echo "booted board: gpio-sim chip $(gpio_sim_chip) with lines $VBOARD_LINES"
