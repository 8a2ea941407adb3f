# latency: a figure, not a test (make latency; not one of run-all.sh's scenarios/*.sh). How long an impulse takes
# from the moment aplay starts to its place on the loopback's capture side, through plain hw:Loopback,0,1, through a
# dmix over it, and through hush:music (hushd on the virtual profile, its speaker on hw:Loopback,0,0): five takes
# each, interleaved, and their medians; and the way in: a write into the loopback, read plainly, through dsnoop and
# through hushd's microphone and hush:CATEGORY=record (hush-vboard-latency,
# Sources/hush-vboard-latency/Latency.swift; docs/performance.md). The emulated machine's times are not a board's: compare the paths, within one run.
# vboard-tools: aplay
# vboard-timeout: 300
# vboard-payload: hush-vboard-latency  build it with 'swift build --product hush-vboard-latency'; make latency passes it
# vboard-payload: hushd  build it with 'swift build --product hushd'; make latency passes it
# vboard-payload: hushctl  build it with 'swift build --product hushctl'; make latency passes it
# vboard-payload: virtual.toml  make latency copies board/profiles/virtual.toml
# vboard-payload: libasound_module_pcm_hush.so  build it with 'make alsa-plugin'; make latency passes it
# vboard-payload: 50-hush.conf  make latency copies deploy/alsa/50-hush.conf
. /guest-lib.sh

# The hush device installed as on a board (as the streams scenario does).
libasound=$(ls /lib/*/libasound.so.2 /usr/lib/*/libasound.so.2 2>/dev/null | head -1)
plugin_dir=$(strings "$libasound" | grep '^/.*/alsa-lib$' | head -1)
expect "alsa-lib names its plugin directory ($plugin_dir)" test -n "$plugin_dir"
mkdir -p "$plugin_dir" /etc/alsa/conf.d
cp /payload/libasound_module_pcm_hush.so "$plugin_dir/"
cp /payload/50-hush.conf /etc/alsa/conf.d/50-hush.conf

takes=5
[ -f /payload/latency-takes ] && takes=$(cat /payload/latency-takes)
hush-vboard-latency "$takes"
