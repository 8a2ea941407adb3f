# adapters: hush's GPIO, evdev and ALSA-control adapters against gpio-sim, uinput, snd-aloop and snd-dummy.
# The check program comes as payload (run-all.sh puts it there). To run only some checks, put their names in a
# file "checks" in the payload directory (hush-vboard-check --list prints them).
# vboard-tools: amixer
# vboard-payload: hush-vboard-check  build it with 'swift build --product hush-vboard-check'; run-all.sh passes it
. /guest-lib.sh
checks=""
[ -f /payload/checks ] && checks=$(cat /payload/checks)
hush-vboard-check $checks
