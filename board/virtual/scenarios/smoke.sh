# smoke: the board itself works — modules, device nodes, gpio-sim edges visible to libgpiod's tools.
. /guest-lib.sh
expect "GPIO chip" test -e /dev/gpiochip0
expect "sound cards Loopback and Dummy" grep -q Loopback /proc/asound/cards
grep -q Dummy /proc/asound/cards
expect "snd-aloop control and PCM nodes" test -e /dev/snd/controlC0 -a -e /dev/snd/pcmC0D0p -a -e /dev/snd/pcmC0D1c
expect "uinput" test -e /dev/uinput
dir=$(gpio_sim_dir volume-up)
gpio_sim_set volume-up 1
expect "gpio-sim line pressed reads 0" test "$(cat $dir/value)" = 0
gpio_sim_set volume-up 0
expect "gpio-sim line released reads 1" test "$(cat $dir/value)" = 1
if [ -x /payload/gpiomon ]; then
    (sleep 0.3; gpio_sim_set volume-up 1; sleep 0.1; gpio_sim_set volume-up 0) &
    out=$(gpiomon --num-events=2 hush-sim 1)
    echo "$out"
    expect "libgpiod's gpiomon sees both edges" test "$(echo "$out" | grep -c EDGE)" = 2
fi
