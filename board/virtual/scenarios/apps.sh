# apps: applications other than aplay through the `hush` ALSA device, as ALSAApplicationsTests has them on the
# host: espeak-ng speaking into hush:CATEGORY=ambient (and silenced by the switch), gst-launch-1.0's alsasink on
# hush:music, and Python's sounddevice through Debian's PortAudio. hushd runs on the virtual profile without a
# microphone; hush-vboard-streams --apps judges what reached the loopback's capture side (docs/virtual-board.md,
# "The apps scenario"). The programs, with what they dlopen, are the payload's apps/ (board/virtual/apps-payload.sh).
# vboard-timeout: 480
# vboard-payload: hush-vboard-streams  build it with 'swift build --product hush-vboard-streams'; run-all.sh passes it
# vboard-payload: hushd  build it with 'swift build --product hushd'; run-all.sh passes it
# vboard-payload: hushctl  build it with 'swift build --product hushctl'; run-all.sh passes it
# vboard-payload: virtual.toml  run-all.sh copies board/profiles/virtual.toml
# vboard-payload: libasound_module_pcm_hush.so  build it with 'make alsa-plugin'; run-all.sh passes it
# vboard-payload: 50-hush.conf  run-all.sh copies deploy/alsa/50-hush.conf
# vboard-payload: apps/bin/espeak-ng  make test-tools, then board/virtual/apps-payload.sh DIR; run-all.sh does
. /guest-lib.sh

# The hush device installed as on a board (as the streams scenario does).
libasound=$(ls /lib/*/libasound.so.2 /usr/lib/*/libasound.so.2 2>/dev/null | head -1)
plugin_dir=$(strings "$libasound" | grep '^/.*/alsa-lib$' | head -1)
expect "alsa-lib names its plugin directory ($plugin_dir)" test -n "$plugin_dir"
mkdir -p "$plugin_dir" /etc/alsa/conf.d
cp /payload/libasound_module_pcm_hush.so "$plugin_dir/"
cp /payload/50-hush.conf /etc/alsa/conf.d/50-hush.conf
# PortAudio lists ALSA's PCMs by name and cannot give one arguments: a name for each category, on hush_raw
# (docs/applications.md, "Python").
printf 'pcm.hush_music "hush_raw:music"\npcm.hush_record "hush_raw:CATEGORY=record"\n' >/etc/alsa/conf.d/60-portaudio.conf

# Where the programs find what they dlopen: espeak-ng its data, GStreamer its plugins and scanner (a registry in
# /tmp), Python its standard library and the venv's packages; sounddevice finds PortAudio with
# ctypes.util.find_library, which reads `/sbin/ldconfig -p`: the library's directory goes in ld.so.conf.
apps=/payload/apps
export ESPEAK_DATA_PATH=$apps GST_PLUGIN_SYSTEM_PATH_1_0=$apps/gstreamer-1.0 GST_PLUGIN_SCANNER=$apps/bin/gst-plugin-scanner \
    GST_REGISTRY_1_0=/tmp/gst-registry.bin PYTHONHOME=$apps PYTHONPATH=$apps/site-packages PYTHONDONTWRITEBYTECODE=1
cp $apps/bin/ldconfig /sbin/ldconfig
echo "$apps/lib" >/etc/ld.so.conf
/sbin/ldconfig
expect "ldconfig lists PortAudio" sh -c '/sbin/ldconfig -p | grep -q libportaudio.so.2'

status=0
# shellcheck disable=SC2086 # a file "apps-checks" in the payload names the checks to run
hush-vboard-streams --apps $(cat /payload/apps-checks 2>/dev/null) || status=$?
echo "hushd's underrun warnings: $(grep -c 'underrun(s) (' /tmp/hushd.log)"
if [ $status -ne 0 ]; then
    echo "--- hushd's streams and underruns (/tmp/hushd.log) ---"
    grep -E 'opened by|ended:|underrun' /tmp/hushd.log | tail -40
    echo "--- the end of hushd's log ---"
    tail -30 /tmp/hushd.log
fi
exit $status
