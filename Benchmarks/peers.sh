#!/usr/bin/env bash
# hushd beside PipeWire + WirePlumber and PulseAudio (issue 20 §3): the same aplay streams, 48 kHz, a timer-paced
# sink without hardware for each, rounds alternating hush, PipeWire and PulseAudio. Prints a markdown table of medians
# (and the spread) with the ratios hush / PipeWire and hush / PulseAudio. Figures, not pass/fail checks: never assert
# on them.
#
# Usage: Benchmarks/peers.sh [HUSHD] [SECONDS] [ROUNDS]
#   HUSHD    default .build/release/hushd; `make bench-peers` builds it and installs the peers (peer-tools)
#   SECONDS  each measurement window (default 20); ROUNDS (default 3)
# PEERS_STACKS: the stacks each round runs, in order (default "hush pipewire pulse"): a quicker look at one of them.
# PEERS_START_DETAIL=1: hushd starts with LD_DEBUG=statistics, and each start says on stderr when hushd logged its
# socket ready and how long its loader took (what an exec → socket figure is made of).
# Environment: PEERS_DIR (default .build/peers) holds, unpacked and not installed, Debian's pipewire-alsa (installed,
# it would make ALSA's `default` PipeWire for every program on the machine), pulseaudio (installed, it drops
# /etc/alsa/conf.d/99-pulse.conf, which makes `default` PulseAudio for any program that reaches one, and turns
# autospawn on) and libasound2-plugins (the `pulse` PCM); HUSH_ALSA_CONFIG the hush device's test configuration
# (default .build/alsa-plugin/asound-test.conf, `make alsa-plugin`).
#
# Each round and stack: start-up, then three streams with 1024-frame periods in a 4096-frame buffer (--period-size,
# --buffer-size: the rows that do not say "default buffers"), then streams with aplay's default buffers (no buffer
# arguments: aplay asks for at most 500 ms in four periods), 1, then 3, 8 and 16 at once, then idle.
# hush:     hushd, [output] pcm that does not open, fallback_wav = "/dev/null" (written paced like a card),
#           period_frames = 64 (48 kHz; no max_period_frames: hushd's default, adaptive periods up to 1024 frames
#           when the streams' buffers allow them), realtime_priority = 0; streams `aplay -D hush:music`.
# PipeWire: Debian's pipewire.conf plus a drop-in: clock rate 48000, quantum, min- and max-quantum 64, and a
#           support.null-audio-sink node (the Dummy-Driver's timer paces the graph); WirePlumber with Debian's
#           configuration less what needs D-Bus (no session bus: support.dbus = false, no bluetooth.lua, no
#           flatpak portal, no device reservation); streams `aplay -D pipewire` through pipewire-alsa.
# PulseAudio: Debian's pulseaudio 16.1 as the current user, `--daemonize=no --exit-idle-time=-1 -n -F` a script of
#           its own: module-null-sink (48 kHz stereo s16le, its timer paces the sink, latency as the streams ask)
#           and module-native-protocol-unix (anonymous: the socket is in a private directory); no D-Bus, no udev,
#           no default.pa; Debian's daemon.conf defaults otherwise (but default-sample-rate 48000: no resampler),
#           high-priority and realtime-scheduling on as Debian ships them. Streams `aplay -D pulse` through
#           libasound2-plugins' pulse PCM, PULSE_SERVER the daemon's socket, no autospawn. Its start-up tone ends
#           about 2 s after exec (1.99 s in a smoke run): module-null-sink sleeps in 2 s blocks while no stream
#           asks for a latency and the first stream waits for the block to end; a card's sink would not.
# Everything runs in a private directory (XDG_RUNTIME_DIR, XDG_CONFIG_HOME, HOME for PulseAudio, the control socket):
# Unix sockets only.
set -euo pipefail
cd "$(dirname "$0")/.."
hushd=$(realpath "${1:-.build/release/hushd}")
seconds=${2:-20}
rounds=${3:-3}
peers=$(realpath "${PEERS_DIR:-.build/peers}")
hush_alsa=$(realpath "${HUSH_ALSA_CONFIG:-.build/alsa-plugin/asound-test.conf}")
pw_alsa=$peers/pipewire-alsa
pa=$peers/pulseaudio
pa_modules=$pa/usr/lib/pulse-16.1+dfsg1/modules
pa_alsa=$peers/libasound2-plugins
warmup=3    # s of playing before a window starts
idle_wait=8 # s after the last stream before an idle window (hushd's idle_seconds and WirePlumber's suspend: 5 s)
tick=$(getconf CLK_TCK)

for need in "$hushd" "$hush_alsa" "$pw_alsa/usr/lib/x86_64-linux-gnu/alsa-lib/libasound_module_pcm_pipewire.so" \
    "$pa/usr/bin/pulseaudio" "$pa_modules/module-null-sink.so" "$pa_modules/module-native-protocol-unix.so" \
    "$pa_alsa/usr/lib/x86_64-linux-gnu/alsa-lib/libasound_module_pcm_pulse.so" \
    /usr/bin/pipewire /usr/bin/wireplumber /usr/bin/aplay /usr/bin/sox /usr/bin/python3; do
    [ -e "$need" ] || { echo "peers.sh: $need is missing (make bench-peers installs and builds what it needs)" >&2; exit 1; }
done

work=$(mktemp -d /tmp/hush-peers.XXXXXX)
chmod 700 "$work"
pids="$work/pids" # every process this script starts, one pid a line: the trap ends them
: >"$pids"
stop() { # PID...: TERM, then KILL after 5 s; waits until each is gone
    local p n
    for p in "$@"; do kill "$p" 2>/dev/null || true; done
    for p in "$@"; do
        for ((n = 0; n < 50; n++)); do [ -e /proc/"$p" ] || break; sleep 0.1; done
        if [ -e /proc/"$p" ]; then kill -KILL "$p" 2>/dev/null || true; fi
    done
}
cleanup() {
    local rc=$? all log
    if [ "$rc" -ne 0 ]; then
        for log in "$work"/*.log; do [ -s "$log" ] && { echo "--- $log" >&2; tail -n 8 "$log" >&2; }; done
    fi
    all=$(sort -u "$pids" 2>/dev/null | tr '\n' ' ')
    # shellcheck disable=SC2086
    [ -n "$all" ] && stop $all
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- the three stacks' files -------------------------------------------------------------------------------------
# Long enough for the first default-buffer stream, which plays through the 1-, 3-, 8- and 16-stream windows.
sox -q -n -r 48000 -c 2 -b 16 "$work/tone.wav" synth $((4 * (warmup + seconds) + 10)) sine 440 vol 0.25
sox -q -n -r 48000 -c 2 -b 16 "$work/short.wav" synth 0.2 sine 880 vol 0.25

cat >"$work/asound-pipewire.conf" <<EOF
</usr/share/alsa/alsa.conf>
pcm_type.pipewire { lib "$pw_alsa/usr/lib/x86_64-linux-gnu/alsa-lib/libasound_module_pcm_pipewire.so" }
ctl_type.pipewire { lib "$pw_alsa/usr/lib/x86_64-linux-gnu/alsa-lib/libasound_module_ctl_pipewire.so" }
<$pw_alsa/usr/share/alsa/alsa.conf.d/50-pipewire.conf>
EOF
cat >"$work/asound-pulse.conf" <<EOF
</usr/share/alsa/alsa.conf>
pcm_type.pulse { lib "$pa_alsa/usr/lib/x86_64-linux-gnu/alsa-lib/libasound_module_pcm_pulse.so" }
ctl_type.pulse { lib "$pa_alsa/usr/lib/x86_64-linux-gnu/alsa-lib/libasound_module_ctl_pulse.so" }
<$pa_alsa/usr/share/alsa/alsa.conf.d/50-pulseaudio.conf>
EOF

mkdir -p "$work/run" "$work/config/pipewire/pipewire.conf.d" "$work/config/wireplumber/main.lua.d" \
    "$work/config/pulse" "$work/pulse-home"
chmod 700 "$work/run"
cat >"$work/config/pipewire/pipewire.conf.d/90-hush-bench.conf" <<'EOF'
context.properties = {
    default.clock.rate = 48000
    default.clock.allowed-rates = [ 48000 ]
    default.clock.quantum = 64
    default.clock.min-quantum = 64
    default.clock.max-quantum = 64
}
context.objects = [
    { factory = adapter
      args = {
          factory.name = support.null-audio-sink
          node.name = hush-bench-sink
          node.description = "hush bench null sink"
          media.class = Audio/Sink
          audio.rate = 48000
          audio.channels = 2
          audio.position = [ FL FR ]
          object.linger = true
      }
    }
]
EOF
sed -e 's/^ *#support.dbus *= *true/  support.dbus = false/' -e '/name = bluetooth.lua, type = config\/lua/d' \
    /usr/share/wireplumber/wireplumber.conf >"$work/config/wireplumber/wireplumber.conf"
# Before 90-enable-all.lua, which loads what these switch off.
cat >"$work/config/wireplumber/main.lua.d/60-hush-bench.lua" <<'EOF'
default_access.properties["enable-flatpak-portal"] = false
alsa_monitor.properties["alsa.reserve"] = false
EOF
# PulseAudio: daemon.conf from XDG_CONFIG_HOME (the package's own is all comments: the defaults), the script -F loads.
cat >"$work/config/pulse/daemon.conf" <<'EOF'
default-sample-rate = 48000
alternate-sample-rate = 48000
EOF
cat >"$work/pulse.pa" <<'EOF'
.fail
load-module module-null-sink sink_name=hush_bench rate=48000 channels=2 channel_map=front-left,front-right
set-default-sink hush_bench
load-module module-native-protocol-unix auth-anonymous=1
EOF
echo "autospawn = no" >"$work/pulse-client.conf"

hush_config() { # KEEP_WARM (true or false) [FALLBACK_WAV (default /dev/null)]
    cat >"$work/hushd.toml" <<EOF
[output]
pcm = "hush-no-such-pcm"
fallback_wav = "${2:-/dev/null}"
realtime_priority = 0
period_frames = 64
keep_warm = $1
[control]
socket = "$work/control.sock"
[state]
file = "$work/state"
EOF
}

# The stacks' environment: the peers' private directories, each client's ALSA configuration. PulseAudio's daemon
# and clients also get a HOME of their own, its clients the server and a client.conf without autospawn (pulse_env).
export XDG_RUNTIME_DIR="$work/run" XDG_CONFIG_HOME="$work/config" XDG_STATE_HOME="$work/state-home" \
    HUSH_SOCKET="$work/control.sock"
unset DBUS_SESSION_BUS_ADDRESS PIPEWIRE_REMOTE PULSE_SERVER
pulse_env=(HOME="$work/pulse-home" PULSE_SERVER="unix:$work/run/pulse/native"
    PULSE_CLIENTCONFIG="$work/pulse-client.conf")

# Start-up: exec of the daemon → its socket accepts a connection (polled every ms), and exec → the end of a 0.2 s
# tone that `aplay` started as soon as the socket accepted (retried every 5 ms while it fails), less 0.2 s; aplay
# asks for the streams' 1024-frame periods and 4096-frame buffer, so it starts the stream before it drains. For
# PipeWire, WirePlumber is exec'd the moment pipewire-0 accepts (as systemd's ordering would); the tone waits for
# WirePlumber to link the stream to the sink. For PulseAudio, the socket is pulse/native, which exists once -F's
# script has loaded module-native-protocol-unix. Prints "SOCKET_MS SOUND_MS PID..." and appends the pids to $pids.
# hush-first (hushd only; its fallback_wav a FIFO this helper reads): exec → the first sample of a tone asked for on
# the control socket (activate, then play) the moment it accepts, as it comes out of hushd's output: what hushd's own
# start-up costs a first sound, without a client program's start-up. Prints "SOCKET_MS FIRST_MS PID".
cat >"$work/startup.py" <<'EOF'
import os, select, socket, subprocess, sys, time
stack, work, hushd, peers = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
pids = open(os.path.join(work, "pids"), "a")
pa = os.path.join(peers, "pulseaudio")
pa_modules = os.path.join(pa, "usr", "lib", "pulse-16.1+dfsg1", "modules")
pulse_home = dict(HOME=os.path.join(work, "pulse-home"))
def spawn(argv, log, env=None):
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=open(os.path.join(work, log), "ab"),
                         stderr=subprocess.STDOUT, env=env)
    pids.write(f"{p.pid}\n"); pids.flush()
    return p
def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path); return s
    except OSError:
        s.close(); return None
def ask(conn, line):  # one request, its reply line
    conn.sendall((line + "\n").encode())
    reply = b""
    while not reply.endswith(b"\n"):
        chunk = conn.recv(4096)
        if not chunk: sys.exit(f"hushd closed the control connection after {line}")
        reply += chunk
    if b'"ok":true' not in reply: sys.exit(f"hushd refused {line}: {reply.decode().strip()}")
    return reply.decode()
def first_sample(fifo, started):  # ms from `started` to the first sample not silence in the WAV hushd writes
    data = b""; header = None
    while time.monotonic() - started < 20:
        if not select.select([fifo], [], [], 1)[0]: continue
        data += os.read(fifo, 65536)
        if header is None:
            at = data.find(b"data")
            if at < 0 or len(data) < at + 8: continue
            header = at + 8; data = data[header:]
        usable = len(data) - len(data) % 2
        for i in range(0, usable, 2):
            if abs(int.from_bytes(data[i:i + 2], "little", signed=True)) >= 2:
                return (time.monotonic() - started) * 1000
        data = data[usable:]
    sys.exit("hush-first: no sound came out of hushd within 20 s")
fifo = None
if stack == "hush-first":
    fifo = os.open(os.path.join(work, "first.fifo"), os.O_RDONLY | os.O_NONBLOCK)
started = time.monotonic()
started_wall = time.time()
if stack.startswith("hush"):
    env = dict(os.environ, LD_DEBUG="statistics") if os.environ.get("PEERS_START_DETAIL") else None
    daemons = [spawn([hushd, "--config", os.path.join(work, "hushd.toml")], "hushd.log", env)]
    sock, device, conf = os.path.join(work, "control.sock"), "hush:music", os.path.join(work, "asound-hush.conf")
elif stack == "pulse":
    # The unpacked package: its libpulsecore and its modules' libprotocol-*.so (their RUNPATHs name /usr/lib).
    env = dict(os.environ, **pulse_home,
               LD_LIBRARY_PATH=os.path.join(pa, "usr", "lib", "x86_64-linux-gnu", "pulseaudio") + ":" + pa_modules)
    env.pop("DISPLAY", None)  # no X11, so no D-Bus autolaunch either
    daemons = [spawn([os.path.join(pa, "usr", "bin", "pulseaudio"), "--daemonize=no", "--exit-idle-time=-1", "-n",
                      "-F", os.path.join(work, "pulse.pa"), "--dl-search-path=" + pa_modules, "--log-target=stderr"],
                     "pulseaudio.log", env)]
    sock, device, conf = os.path.join(work, "run", "pulse", "native"), "pulse", os.path.join(work, "asound-pulse.conf")
else:
    daemons = [spawn(["pipewire"], "pipewire.log")]
    sock, device, conf = os.path.join(work, "run", "pipewire-0"), "pipewire", os.path.join(work, "asound-pipewire.conf")
while (conn := connect(sock)) is None:
    if time.monotonic() - started > 20: sys.exit(f"{stack}: {sock} never accepted")
    time.sleep(0.001)
socket_ms = (time.monotonic() - started) * 1000
if stack.startswith("hush") and os.environ.get("PEERS_START_DETAIL"):
    # Where hushd's start-up went: its own log stamps the socket's readiness (ms, wall clock), and with
    # LD_DEBUG=statistics the loader says how long relocation took; printed to stderr, not in the table.
    import datetime, re
    text = open(os.path.join(work, "hushd.log"), errors="replace").read()
    ready = [l for l in text.splitlines() if " control socket " in l and " ready " in l]
    detail = []
    if ready:
        hms = ready[-1].split()[0]
        day = datetime.datetime.fromtimestamp(started_wall).strftime("%Y-%m-%d ")
        at = datetime.datetime.strptime(day + hms, "%Y-%m-%d %H:%M:%S.%f").timestamp()
        # The log is appended to across starts: a line from before this exec is an earlier start's.
        if at >= started_wall - 0.001:
            detail.append(f"hushd logged its socket ready {(at - started_wall) * 1000:.0f} ms after exec")
    loader = re.findall(r"total startup time in dynamic loader: ([0-9,.]+ \w+)", text)
    if loader: detail.append(f"loader {loader[-1]}")
    print(f"  {stack} start detail: " + "; ".join(detail), file=sys.stderr)
if fifo is not None:
    reply = ask(conn, '{"command":"activate","id":1,"bus":"music","category":"playback"}')
    session = int(reply.split('"session":')[1].split(",")[0].split("}")[0])
    ask(conn, f'{{"command":"play","id":2,"session":{session},"tone":1000}}')
    print(f"{socket_ms:.1f} {first_sample(fifo, started):.1f} {daemons[0].pid}")
    sys.exit(0)
conn.close()
if stack == "pipewire":
    daemons.append(spawn(["wireplumber"], "wireplumber.log"))
env = dict(os.environ, ALSA_CONFIG_PATH=conf)
if stack == "pulse":
    env.update(pulse_home, PULSE_SERVER="unix:" + sock, PULSE_CLIENTCONFIG=os.path.join(work, "pulse-client.conf"))
while True:
    if time.monotonic() - started > 20 or any(d.poll() is not None for d in daemons):
        sys.exit(f"{stack}: the first tone never played (the logs: {work}/*.log)")
    try:
        r = subprocess.run(["aplay", "-q", "-D", device, "--period-size=1024", "--buffer-size=4096",
                            os.path.join(work, "short.wav")], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=10)
    except subprocess.TimeoutExpired:
        continue
    if r.returncode == 0: break
    time.sleep(0.005)
sound_ms = (time.monotonic() - started - 0.2) * 1000
print(f"{socket_ms:.1f} {sound_ms:.1f} " + " ".join(str(p.pid) for p in daemons))
EOF
cp "$hush_alsa" "$work/asound-hush.conf"

# --- /proc ---------------------------------------------------------------------------------------------------------
ticks() { # utime + stime of PIDs, clock ticks
    local t=0 p
    for p in "$@"; do t=$((t + $(awk '{ sub(/^.*\) /, ""); print $12 + $13 }' /proc/"$p"/stat))); done
    echo "$t"
}
switches() { # voluntary + involuntary context switches of every thread of PIDs
    local p
    for p in "$@"; do cat /proc/"$p"/task/*/status 2>/dev/null; done | awk '/ctxt_switches/ { s += $2 } END { print s + 0 }'
}
rss() { # KEY PIDS...: the KiB of smaps_rollup's KEY (Rss, Anonymous) summed over PIDS
    local key=$1 p
    shift
    for p in "$@"; do awk -v k="$key:" '$1 == k { print $2 }' /proc/"$p"/smaps_rollup; done | awk '{ s += $1 } END { print s + 0 }'
}
results="$work/results"
record() { echo "$1 $2 $3" >>"$results"; }
# window STACK WHAT "DAEMON PIDS" "CLIENT PIDS": counts over $seconds and records CPU s/min, switches/s, RSS MiB
window() {
    local stack=$1 what=$2 d c d0 c0 s0 d1 c1 s1
    read -ra d <<<"$3"
    read -ra c <<<"$4"
    d0=$(ticks "${d[@]}"); c0=$(ticks "${c[@]}"); s0=$(switches "${d[@]}")
    sleep "$seconds"
    d1=$(ticks "${d[@]}"); c1=$(ticks "${c[@]}"); s1=$(switches "${d[@]}")
    local cpu_d cpu_c cs mib anon
    cpu_d=$(awk -v t=$((d1 - d0)) -v k="$tick" -v s="$seconds" 'BEGIN { printf "%.3f", t / k / s * 60 }')
    cpu_c=$(awk -v t=$((c1 - c0)) -v k="$tick" -v s="$seconds" 'BEGIN { printf "%.3f", t / k / s * 60 }')
    cs=$(awk -v n=$((s1 - s0)) -v s="$seconds" 'BEGIN { printf "%.1f", n / s }')
    mib=$(awk -v k="$(rss Rss "${d[@]}")" 'BEGIN { printf "%.1f", k / 1024 }')
    anon=$(awk -v k="$(rss Anonymous "${d[@]}")" 'BEGIN { printf "%.1f", k / 1024 }')
    record "$stack" "$what.cpu" "$cpu_d"
    record "$stack" "$what.switches" "$cs"
    record "$stack" "$what.rss" "$mib"
    record "$stack" "$what.anon" "$anon"
    [ ${#c[@]} -gt 0 ] && record "$stack" "$what.clients" "$cpu_c" && \
        record "$stack" "$what.all" "$(awk -v a="$cpu_d" -v b="$cpu_c" 'BEGIN { printf "%.3f", a + b }')"
    printf '  %-9s %-9s CPU %s s/min (clients %s), %s switches/s, RSS %s MiB (anonymous %s)\n' "$stack" "$what" "$cpu_d" \
        "$([ ${#c[@]} -gt 0 ] && echo "$cpu_c" || echo -)" "$cs" "$mib" "$anon" >&2
}

clients=() # the aplay clients playing now
# streams N [APLAY ARGS...]: N more aplay clients of the tone on $device (pids onto clients and $pids), warmup seconds,
# then every client still playing
streams() {
    local n=$1 i p
    shift
    for ((i = 0; i < n; i++)); do
        env "${client_env[@]}" ALSA_CONFIG_PATH="$conf" aplay -q -D "$device" "$@" "$work/tone.wav" \
            </dev/null >>"$work/aplay.log" 2>&1 &
        p=$!
        clients+=("$p")
        echo "$p" >>"$pids"
    done
    sleep "$warmup"
    for p in "${clients[@]}"; do
        [ -e /proc/"$p" ] || { echo "peers.sh: an aplay on $device ended early:" >&2; cat "$work/aplay.log" >&2; exit 1; }
    done
}

round() { # STACK
    local stack=$1 device conf out daemons client_env=() n
    case $stack in
        hush)
            hush_config false
            device=hush:music conf="$work/asound-hush.conf"
            ;;
        pipewire)
            rm -rf "$work/run"/* "$work/state-home" 2>/dev/null || true
            device=pipewire conf="$work/asound-pipewire.conf"
            ;;
        pulse)
            rm -rf "$work/run"/* 2>/dev/null || true
            device=pulse conf="$work/asound-pulse.conf" client_env=("${pulse_env[@]}")
            ;;
    esac
    out=$(python3 "$work/startup.py" "$stack" "$work" "$hushd" "$peers")
    read -r socket_ms sound_ms daemons <<<"$out"
    record "$stack" start.socket "$socket_ms"
    record "$stack" start.sound "$sound_ms"
    printf '  %-9s start     socket accepts %s ms, 0.2 s tone ends after %s ms + 0.2 s\n' "$stack" "$socket_ms" "$sound_ms" >&2
    sleep 2
    clients=()
    streams 3 --period-size=1024 --buffer-size=4096
    window "$stack" play "$daemons" "${clients[*]}"
    stop "${clients[@]}"
    # aplay's default buffers: 1 stream, then 2 more, 5 more, 8 more (the figures of 3 streams: default3.*)
    clients=()
    for n in 1 3 8 16; do
        streams $((n - ${#clients[@]}))
        window "$stack" "default$n" "$daemons" "${clients[*]}"
    done
    stop "${clients[@]}"
    clients=()
    sleep "$idle_wait"
    window "$stack" idle "$daemons" ""
    # shellcheck disable=SC2086
    stop $daemons
    if [ "$stack" = hush ]; then
        grep -qE "output idle" "$work/hushd.log" || echo "  (hushd's log shows no idle output)" >&2
        hush_config true
        out=$(python3 "$work/startup.py" hush "$work" "$hushd" "$peers")
        read -r _ _ daemons <<<"$out"
        sleep "$warmup"
        window hush warm "$daemons" ""
        # shellcheck disable=SC2086
        stop $daemons
        rm -f "$work/first.fifo" && mkfifo "$work/first.fifo"
        hush_config false "$work/first.fifo"
        out=$(python3 "$work/startup.py" hush-first "$work" "$hushd" "$peers")
        read -r _ first_ms daemons <<<"$out"
        record hush start.first "$first_ms"
        printf '  %-9s start     first sample of a tone asked for on the socket after %s ms\n' hush "$first_ms" >&2
        stop "$daemons"
    fi
}

echo "hush beside PipeWire + WirePlumber and PulseAudio: $rounds rounds, ${seconds} s windows;" \
    "hushd $(git rev-parse --short HEAD 2>/dev/null || echo '?') ($hushd);" \
    "pipewire $(dpkg-query -W -f='${Version}' pipewire), wireplumber $(dpkg-query -W -f='${Version}' wireplumber)," \
    "pipewire-alsa $(dpkg-deb -f "$peers"/pipewire-alsa.deb Version 2>/dev/null || echo '?')," \
    "pulseaudio $(dpkg-deb -f "$peers"/pulseaudio.deb Version 2>/dev/null || echo '?')," \
    "libasound2-plugins $(dpkg-deb -f "$peers"/libasound2-plugins.deb Version 2>/dev/null || echo '?');" \
    "load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
started=$SECONDS
for ((r = 1; r <= rounds; r++)); do
    echo "round $r" >&2
    for stack in ${PEERS_STACKS:-hush pipewire pulse}; do round "$stack"; done
done
echo "$rounds rounds in $((SECONDS - started)) s" >&2

# --- the table -----------------------------------------------------------------------------------------------------
echo
echo "| figure | hushd | PipeWire + WirePlumber | PulseAudio | hushd / PipeWire | hushd / PulseAudio |"
echo "|---|---|---|---|---|---|"
row() { # LABEL HUSH-KEY PIPEWIRE-KEY PULSE-KEY UNIT ("none": no such figure)
    awk -v label="$1" -v hk="$2" -v pk="$3" -v qk="$4" -v unit="$5" '
        function median(a, n,   i, j, t) {
            for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
            return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
        }
        function cell(a, n, m) { return n == 0 ? "—" : sprintf("%s %s (%s–%s)", fmt(m), unit, fmt(a[1]), fmt(a[n])) }
        function fmt(v) { return v >= 100 ? sprintf("%.0f", v) : v >= 10 ? sprintf("%.1f", v) : sprintf("%.2f", v) }
        function ratio(mh, nh, m, n, peer) {
            return !(nh && n) ? "—" : m > 0 ? sprintf("**%.2f×**", mh / m) : mh == 0 ? "both 0" : peer " 0"
        }
        $1 == "hush" && $2 == hk { h[++nh] = $3 }
        $1 == "pipewire" && $2 == pk { p[++np] = $3 }
        $1 == "pulse" && $2 == qk { q[++nq] = $3 }
        END {
            mh = nh ? median(h, nh) : 0; mp = np ? median(p, np) : 0; mq = nq ? median(q, nq) : 0
            printf "| %s | %s | %s | %s | %s | %s |\n", label, cell(h, nh, mh), cell(p, np, mp), cell(q, nq, mq),
                ratio(mh, nh, mp, np, "PipeWire"), ratio(mh, nh, mq, nq, "PulseAudio")
        }' "$results"
}
row "CPU playing 3 streams, daemons (hushd; pipewire + wireplumber)" play.cpu play.cpu play.cpu "s/min"
row "CPU playing 3 streams, the three aplay clients" play.clients play.clients play.clients "s/min"
row "CPU playing 3 streams, daemons + clients" play.all play.all play.all "s/min"
row "context switches playing, daemons' threads" play.switches play.switches play.switches "/s"
row "resident memory playing, daemons (Rss)" play.rss play.rss play.rss "MiB"
row "of it anonymous (heap, stacks, written data: what only swap could take)" play.anon play.anon play.anon "MiB"
row "CPU playing 3 streams, aplay's default buffers, daemons" default3.cpu default3.cpu default3.cpu "s/min"
row "CPU playing 3 streams, aplay's default buffers, the three aplay clients" default3.clients default3.clients \
    default3.clients "s/min"
row "CPU playing 3 streams, aplay's default buffers, daemons + clients" default3.all default3.all default3.all "s/min"
row "context switches playing, aplay's default buffers, daemons' threads" default3.switches default3.switches \
    default3.switches "/s"
row "resident memory playing, aplay's default buffers, daemons (Rss)" default3.rss default3.rss default3.rss "MiB"
for n in 1 3 8 16; do
    row "CPU, daemons + clients, $n stream$([ "$n" = 1 ] || echo s), aplay's default buffers" "default$n.all" \
        "default$n.all" "default$n.all" "s/min"
done
row "CPU idle (hushd: idle output after 5 s)" idle.cpu idle.cpu idle.cpu "s/min"
row "CPU idle, hushd keep_warm = true" warm.cpu idle.cpu idle.cpu "s/min"
row "context switches idle (hushd idle)" idle.switches idle.switches idle.switches "/s"
row "context switches idle, hushd keep_warm" warm.switches idle.switches idle.switches "/s"
row "resident memory idle, daemons (Rss)" idle.rss idle.rss idle.rss "MiB"
row "start-up: exec → socket accepts" start.socket start.socket start.socket "ms"
row "start-up: exec → 0.2 s tone through aplay ends, less 0.2 s" start.sound start.sound start.sound "ms"
row "start-up: exec → first sample out of hushd of a tone asked for on the socket" start.first none none "ms"
