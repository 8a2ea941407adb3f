# shellcheck shell=dash
# Shell library of the virtual board's guest (busybox sh). The guest's /init sources it to bring the simulated
# hardware up; scenarios source it too (". /guest-lib.sh") for the helpers below. Nothing here runs on the host.
#
# The hardware, once vboard_bring_up has run:
#   GPIO   gpio-sim chip labelled "hush-sim" (/dev/gpiochipN: see gpio_sim_chip), one bank of 7 lines:
#            0 silence-switch  1 volume-up  2 volume-down  3 headphone-sense  4 led  5 mic-led  6 mic-privacy
#          The inputs start pulled up: a released button / open switch on active-low wiring. The outputs ("led",
#          the alert light, and "mic-led", the microphone light) are left to the program that drives them.
#   sound  card 0 "Loopback" (snd-aloop: what is played on hw:Loopback,0,N is captured on hw:Loopback,1,N,
#          2 substreams), card 1 "Dummy" (snd-dummy, hrtimer=1)
#   input  /dev/uinput; evdev turns uinput devices into /dev/input/eventN
#   serial /dev/ttyS0 is the console (the host's log); /dev/ttyS1 goes to a second file on the host
#
# Helpers for scenarios:
#   gpio_sim_set NAME 0|1       drive an input line's level: 0 = pull-down, 1 = pull-up
#   gpio_sim_press NAME         active-low press / close (= gpio_sim_set NAME 0)
#   gpio_sim_release NAME       release / open (= gpio_sim_set NAME 1)
#   gpio_sim_get NAME           the line's value as the chip sees it (an output line: what a consumer drives)
#   gpio_sim_dir NAME           the line's sysfs directory .../gpio-sim.N/gpiochipM/sim_gpioK (pull, value)
#   gpio_sim_offset NAME        the line's offset K on the chip
#   gpio_sim_chip               the chip's character device, e.g. /dev/gpiochip0
#   expect "WHAT" COMMAND...    run COMMAND; print "ok: WHAT" or "not ok: WHAT" and return its failure
#   wait_for SECONDS COMMAND... retry COMMAND every 0.1 s until it succeeds; fail after SECONDS
#   vboard_load_module NAME [ARGS]  insmod a module packed into /modules (NAME without .ko)

VBOARD_GPIO_LABEL=hush-sim
VBOARD_LINES="silence-switch volume-up volume-down headphone-sense led mic-led mic-privacy"
VBOARD_GPIO_SIM_CONFIG=/sys/kernel/config/gpio-sim/hush
VBOARD_OUTPUT_LINES="led mic-led"

# Module parameters, by module file name. The card indexes and ids are part of the board's contract
# (board/profiles/virtual.toml and the tests use "Loopback" and "Dummy").
vboard_module_args() {
    case "$1" in
        snd-aloop) echo "index=0 id=Loopback pcm_substreams=2" ;;
        snd-dummy) echo "index=1 id=Dummy hrtimer=1" ;;
        *) echo "" ;;
    esac
}

vboard_load_module() {
    local name="$1"
    shift
    local file="/modules/$name.ko"
    [ -f "$file" ] || { echo "virtual board: module $name is not in the initramfs (run.sh packs the list in /modules/order)" >&2; return 1; }
    grep -q "^$(echo "$name" | tr - _) " /proc/modules && return 0
    if ! insmod "$file" "$@"; then
        echo "virtual board: insmod $file $* failed; the kernel said:" >&2
        dmesg | tail -5 >&2
        return 1
    fi
}

# Loads the modules run.sh packed, in the dependency order it wrote to /modules/order.
vboard_load_modules() {
    local name
    for name in $(cat /modules/order); do
        # shellcheck disable=SC2046 # the arguments are words on purpose
        vboard_load_module "$name" $(vboard_module_args "$name") || return 1
    done
}

# Creates and enables the gpio-sim chip through configfs.
vboard_gpio_sim() {
    grep -q configfs /proc/mounts || mount -t configfs none /sys/kernel/config || return 1
    local dir="$VBOARD_GPIO_SIM_CONFIG"
    mkdir "$dir" "$dir/bank0" || return 1
    echo "$VBOARD_GPIO_LABEL" >"$dir/bank0/label"
    set -- $VBOARD_LINES
    echo $# >"$dir/bank0/num_lines"
    local i=0 name
    for name in "$@"; do
        mkdir "$dir/bank0/line$i"
        echo "$name" >"$dir/bank0/line$i/name"
        i=$((i + 1))
    done
    echo 1 >"$dir/live" || { echo "virtual board: gpio-sim refused to go live" >&2; return 1; }
    for name in $VBOARD_LINES; do
        case " $VBOARD_OUTPUT_LINES " in *" $name "*) continue ;; esac
        gpio_sim_release "$name" || return 1
    done
}

# The line's offset, read back from the configfs layout (lineK/name).
gpio_sim_offset() {
    local line
    for line in "$VBOARD_GPIO_SIM_CONFIG"/bank0/line*; do
        if [ "$(cat "$line/name")" = "$1" ]; then
            echo "${line##*/line}"
            return 0
        fi
    done
    echo "gpio-sim: no line named '$1' (lines: $VBOARD_LINES)" >&2
    return 1
}

# /dev/gpiochipM of the hush-sim bank (configfs tells its name once the device is live).
gpio_sim_chip() {
    local chip
    chip=$(cat "$VBOARD_GPIO_SIM_CONFIG/bank0/chip_name" 2>/dev/null)
    [ -n "$chip" ] || { echo "gpio-sim: the chip is not live (no $VBOARD_GPIO_SIM_CONFIG/bank0/chip_name)" >&2; return 1; }
    echo "/dev/$chip"
}

gpio_sim_dir() {
    local offset device chip dir
    offset=$(gpio_sim_offset "$1") || return 1
    device=$(cat "$VBOARD_GPIO_SIM_CONFIG/dev_name") || return 1
    chip=$(cat "$VBOARD_GPIO_SIM_CONFIG/bank0/chip_name") || return 1
    dir="/sys/devices/platform/$device/$chip/sim_gpio$offset"
    [ -d "$dir" ] || { echo "gpio-sim: line '$1' has no sysfs directory $dir" >&2; return 1; }
    echo "$dir"
}

gpio_sim_set() {
    local dir pull
    case "$2" in
        0) pull="pull-down" ;;
        1) pull="pull-up" ;;
        *) echo "gpio_sim_set: level must be 0 or 1, not '$2'" >&2; return 1 ;;
    esac
    dir=$(gpio_sim_dir "$1") || return 1
    echo "$pull" >"$dir/pull"
}

gpio_sim_press() { gpio_sim_set "$1" 0; }
gpio_sim_release() { gpio_sim_set "$1" 1; }

gpio_sim_get() {
    local dir
    dir=$(gpio_sim_dir "$1") || return 1
    cat "$dir/value"
}

expect() {
    local what="$1"
    shift
    if "$@"; then
        echo "ok: $what"
    else
        echo "not ok: $what"
        return 1
    fi
}

wait_for() {
    local tenths=$(($1 * 10))
    shift
    while ! "$@" 2>/dev/null; do
        tenths=$((tenths - 1))
        [ $tenths -gt 0 ] || return 1
        sleep 0.1
    done
}

# Everything /init needs before a scenario runs.
vboard_bring_up() {
    vboard_load_modules || return 1
    vboard_gpio_sim || { echo "virtual board: gpio-sim did not come up" >&2; return 1; }
    # devtmpfs creates the nodes asynchronously.
    wait_for 5 test -e /dev/snd/controlC1 -a -e /dev/uinput -a -e "$(gpio_sim_chip)" ||
        { echo "virtual board: /dev/snd/controlC1, /dev/uinput or the gpio chip did not appear" >&2; return 1; }
}
