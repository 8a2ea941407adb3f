# smoke: the board itself works, with no hush code: modules, device nodes, sound cards, gpio-sim levels,
# libgpiod 1.6's tools seeing the simulated lines and their edges, and the second serial port.
# vboard-tools: gpiodetect gpioinfo gpiofind gpioget gpiomon
. /guest-lib.sh

echo "modules: $(cut -d' ' -f1 /proc/modules | tr '\n' ' ')"
for module in configfs snd_aloop snd_dummy uinput evdev hush_gpio_sim; do
    expect "module $module loaded" grep -q "^$module " /proc/modules
done

chip=$(gpio_sim_chip)
expect "gpio-sim chip $chip exists" test -c "$chip"
echo "gpiodetect: $(gpiodetect)"
expect "libgpiod finds the chip labelled hush-sim" sh -c "gpiodetect | grep -q '\[hush-sim\]'"
for name in $VBOARD_LINES; do
    expect "line '$name' is at offset $(gpio_sim_offset "$name") of hush-sim" \
        test "$(gpiofind "$name")" = "${chip#/dev/} $(gpio_sim_offset "$name")"
done
gpioinfo hush-sim

cat /proc/asound/cards
expect "sound card 0 is Loopback" grep -q '^ 0 \[Loopback' /proc/asound/cards
expect "sound card 1 is Dummy" grep -q '^ 1 \[Dummy' /proc/asound/cards
expect "Loopback control and PCM nodes (playback device 0, capture device 1)" \
    test -c /dev/snd/controlC0 -a -c /dev/snd/pcmC0D0p -a -c /dev/snd/pcmC0D1c
expect "Dummy control and PCM nodes" test -c /dev/snd/controlC1 -a -c /dev/snd/pcmC1D0p
expect "/dev/uinput" test -c /dev/uinput

# Levels through sysfs: inputs start released (pull-up, 1); a press pulls the line down.
expect "volume-up starts released (1)" test "$(gpio_sim_get volume-up)" = 1
gpio_sim_press volume-up
expect "volume-up pressed reads 0 in sysfs" test "$(gpio_sim_get volume-up)" = 0
expect "volume-up pressed reads 0 through libgpiod" test "$(gpioget hush-sim "$(gpio_sim_offset volume-up)")" = 0
gpio_sim_release volume-up
expect "volume-up released reads 1 in sysfs" test "$(gpio_sim_get volume-up)" = 1
expect "volume-up released reads 1 through libgpiod" test "$(gpioget hush-sim "$(gpio_sim_offset volume-up)")" = 1

# Edges: libgpiod's gpiomon waits on the line while the switch closes and opens again.
offset=$(gpio_sim_offset silence-switch)
(sleep 0.5; gpio_sim_set silence-switch 0; sleep 0.2; gpio_sim_set silence-switch 1) &
events=$(timeout 10 gpiomon --num-events=2 hush-sim "$offset")
wait
echo "$events"
expect "gpiomon sees a falling edge on silence-switch" sh -c "echo '$events' | sed -n 1p | grep -q 'FALLING EDGE'"
expect "then a rising edge" sh -c "echo '$events' | sed -n 2p | grep -q 'RISING EDGE'"

expect "/dev/ttyS1 takes output (the host keeps it in logs/smoke.ttyS1.log)" \
    sh -c 'echo "hello from the guest on ttyS1" >/dev/ttyS1'
