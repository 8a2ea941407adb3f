# adapters: hush's GPIO, evdev and ALSA-control adapters against gpio-sim, uinput, snd-aloop and snd-dummy.
# Needs the payload hush-vboard-check (make test builds it). Pass check names in /payload/checks to run a few.
. /guest-lib.sh
checks=""
[ -f /payload/checks ] && checks=$(cat /payload/checks)
hush-vboard-check $checks
