# voice: a call through hushd with an echo path of real drivers. hushd runs on the virtual profile with its microphone
# on the loopback (hw:Loopback,0,0); the echo room (payload voice/echo-room, board/virtual/voice/echo-room.c) hears
# each route on the loopback's other side, delays it, passes it through a room response, adds a near-end talker and
# a noise floor and plays it into the microphone; the far end (voice/far-end) plays a talker into the hush device
# and records from it in one process. hush-vboard-voice judges what the far end received against the
# room's tap: ERLE, the near end in double-talk, the ERLE after a route change, in voiceChat and in default mode
# (docs/virtual-board.md, "The voice scenario"). Last, the same call with the microphone on a loopback subdevice
# whose clock snd-aloop's PCM Rate Shift moves by 100 ppm, hushd matching it ([capture] clock = "match").
# vboard-timeout: 900
# vboard-tools: amixer arecord
# vboard-on-demand: not yet robust beside a busy machine (issue 26); make vboard-voice runs it
# vboard-payload: hush-vboard-voice  build it with 'swift build --product hush-vboard-voice'; run-all.sh passes it
# vboard-payload: hushd  build it with 'swift build --product hushd'; run-all.sh passes it
# vboard-payload: hushctl  build it with 'swift build --product hushctl'; run-all.sh passes it
# vboard-payload: virtual.toml  run-all.sh copies board/profiles/virtual.toml
# vboard-payload: libasound_module_pcm_hush.so  build it with 'make alsa-plugin'; run-all.sh passes it
# vboard-payload: 50-hush.conf  run-all.sh copies deploy/alsa/50-hush.conf
# vboard-payload: voice/echo-room  run-all.sh builds it (board/virtual/voice/build.sh DIR)
# vboard-payload: voice/far-end  run-all.sh builds it (board/virtual/voice/build.sh DIR)
. /guest-lib.sh

# The hush device installed as on a board (as the streams scenario does).
libasound=$(ls /lib/*/libasound.so.2 /usr/lib/*/libasound.so.2 2>/dev/null | head -1)
plugin_dir=$(strings "$libasound" | grep '^/.*/alsa-lib$' | head -1)
expect "alsa-lib names its plugin directory ($plugin_dir)" test -n "$plugin_dir"
mkdir -p "$plugin_dir" /etc/alsa/conf.d
cp /payload/libasound_module_pcm_hush.so "$plugin_dir/"
cp /payload/50-hush.conf /etc/alsa/conf.d/50-hush.conf

# The drift check's microphone is on a third loopback subdevice, with a clock of its own (the other scenarios load
# snd-aloop with two): loaded again here, before hushd opens it.
rmmod snd_aloop
vboard_load_module snd-aloop index=0 id=Loopback pcm_substreams=3
expect "snd-aloop has a third subdevice" test -e /proc/asound/Loopback/pcm0c/sub2

status=0
# shellcheck disable=SC2046 # a file "voice-checks" in the payload names the checks to run
hush-vboard-voice $(cat /payload/voice-checks 2>/dev/null) || status=$?
echo "hushd's underrun warnings: $(grep -c 'underrun(s) (' /tmp/hushd.log)"
grep -E 'voice processing|R22' /tmp/hushd.log | tail -10
if [ $status -ne 0 ]; then
    echo "--- the end of hushd's log ---"
    tail -40 /tmp/hushd.log
fi
exit $status
