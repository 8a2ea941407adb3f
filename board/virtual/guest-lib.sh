# Shell functions for virtual-board scenarios (sourced by the guest's /init and available to scenarios).
#
# The hardware the board offers once vboard_bring_up has run:
#   gpio-sim chip labelled "hush-sim" with lines 0 silence-switch, 1 volume-up, 2 volume-down,
#     3 headphone-sense, 4 led, 5 spare (inputs start released: pull-up, i.e. inactive for active-low wiring)
#   snd-aloop card 0 "Loopback" (playback on device 0 is captured on device 1), snd-dummy card 1 "Dummy"
#   /dev/uinput, and evdev for the devices it creates

VBOARD_LINES="silence-switch volume-up volume-down headphone-sense led spare"

vboard_load_modules() {
    # Modules in dependency order, copied by the host from modules.dep.
    for module in $(cat /modules/order); do
        case "$module" in
            snd-dummy.ko) args="hrtimer=1" ;;
            snd-aloop.ko) args="index=0 id=Loopback pcm_substreams=2" ;;
            *) args="" ;;
        esac
        [ "$module" = snd-dummy.ko ] && args="$args index=1 id=Dummy"
        insmod "/modules/$module" $args || { echo "virtual board: insmod $module failed"; return 1; }
    done
}

vboard_gpio_sim() {
    mount -t configfs none /sys/kernel/config || return 1
    local dir=/sys/kernel/config/gpio-sim/hush
    mkdir "$dir" "$dir/bank0" || return 1
    echo hush-sim >"$dir/bank0/label"
    set -- $VBOARD_LINES
    echo $# >"$dir/bank0/num_lines"
    local i=0
    for name in "$@"; do
        mkdir "$dir/bank0/line$i"
        echo "$name" >"$dir/bank0/line$i/name"
        i=$((i + 1))
    done
    echo 1 >"$dir/live" || return 1
    for name in silence-switch volume-up volume-down headphone-sense spare; do
        gpio_sim_set "$name" 0 || return 1
    done
}

# The sysfs directory of a gpio-sim line, by its name.
gpio_sim_dir() {
    local i=0
    for name in $VBOARD_LINES; do
        if [ "$name" = "$1" ]; then
            ls -d /sys/devices/platform/gpio-sim.*/gpiochip*/sim_gpio$i 2>/dev/null | head -1
            return 0
        fi
        i=$((i + 1))
    done
    echo "gpio_sim_dir: no line named '$1'" >&2
    return 1
}

# gpio_sim_set NAME 1|0: press/close (pull-down: the switch shorts the line to ground) or release (pull-up).
gpio_sim_set() {
    local dir
    dir=$(gpio_sim_dir "$1") || return 1
    [ -n "$dir" ] || { echo "gpio_sim_set: gpio-sim line '$1' has no sysfs directory" >&2; return 1; }
    if [ "$2" = 1 ]; then echo pull-down >"$dir/pull"; else echo pull-up >"$dir/pull"; fi
}

vboard_bring_up() {
    vboard_load_modules || return 1
    vboard_gpio_sim || { echo "virtual board: gpio-sim did not come up"; return 1; }
    # devtmpfs makes the nodes; give the kernel a moment for the sound and input devices.
    local tries=0
    while [ ! -e /dev/snd/controlC1 ] || [ ! -e /dev/uinput ]; do
        tries=$((tries + 1))
        [ $tries -lt 50 ] || { echo "virtual board: /dev/snd or /dev/uinput missing"; return 1; }
        sleep 0.1
    done
}

# expect DESCRIPTION COMMAND...: runs COMMAND, failing the scenario with DESCRIPTION if it fails.
expect() {
    local what="$1"
    shift
    if "$@"; then echo "ok: $what"; else echo "not ok: $what"; return 1; fi
}
