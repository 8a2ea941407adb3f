# streams: applications' own audio through the `hush` ALSA device. hushd runs on the virtual profile with a
# microphone (hushd records hw:Loopback,0,0, where the check plays a tone into hw:Loopback,1,0), its light (the
# gpio-sim line 'mic-led') and its privacy switch ('mic-privacy'); unmodified aplay and arecord play and record through hush:…, and raw clients that break
# the stream protocol play beside aplay (HostileChecks.swift); hush-vboard-streams judges what they did on the
# loopback's capture side, in the files arecord wrote, by how long they took, by hushd's status and its log
# (Sources/hush-vboard-streams, docs/virtual-board.md "The streams scenario").
# vboard-tools: aplay arecord
# vboard-timeout: 420
# vboard-payload: hush-vboard-streams  build it with 'swift build --product hush-vboard-streams'; run-all.sh passes it
# vboard-payload: hushd  build it with 'swift build --product hushd'; run-all.sh passes it
# vboard-payload: hushctl  build it with 'swift build --product hushctl'; run-all.sh passes it
# vboard-payload: virtual.toml  run-all.sh copies board/profiles/virtual.toml
# vboard-payload: libasound_module_pcm_hush.so  build it with 'make alsa-plugin'; run-all.sh passes it
# vboard-payload: 50-hush.conf  run-all.sh copies deploy/alsa/50-hush.conf
. /guest-lib.sh

# The hush device installed as deploy/install.sh installs it on a board: the plugin where alsa-lib looks for plugins
# (its ALSA_PLUGIN_DIR, which the library itself names), the configuration in /etc/alsa/conf.d, which alsa.conf
# loads. alsa-lib dlopens the plugin, so run.sh's ldd cannot see it: it comes as payload (and its own libraries,
# libasound and libc, come along as a payload file's do).
libasound=$(ls /lib/*/libasound.so.2 /usr/lib/*/libasound.so.2 2>/dev/null | head -1)
plugin_dir=$(strings "$libasound" | grep '^/.*/alsa-lib$' | head -1)
expect "alsa-lib names its plugin directory ($plugin_dir)" test -n "$plugin_dir"
mkdir -p "$plugin_dir" /etc/alsa/conf.d
cp /payload/libasound_module_pcm_hush.so "$plugin_dir/"
cp /payload/50-hush.conf /etc/alsa/conf.d/50-hush.conf
expect "aplay lists the hush device" sh -c 'aplay -L | grep -q "^hush$"'

# A file "streams-checks" in the payload names the checks to run (hush-vboard-streams --list prints them).
checks=""
[ -f /payload/streams-checks ] && checks=$(cat /payload/streams-checks)
status=0
# shellcheck disable=SC2086 # the names are words
hush-vboard-streams $checks || status=$?
# How often the emulated machine held hushd's audio thread off (each a re-take when it spoiled a take).
echo "hushd's underrun warnings: $(grep -c 'underrun(s) (' /tmp/hushd.log)"
if [ $status -ne 0 ]; then
    echo "--- hushd's streams, microphone and underruns (/tmp/hushd.log) ---"
    grep -E 'opened by|ended:|microphone|underrun' /tmp/hushd.log | tail -60
    echo "--- the end of hushd's log ---"
    tail -40 /tmp/hushd.log
fi
exit $status
