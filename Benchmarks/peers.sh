#!/usr/bin/env bash
# hushd beside PipeWire + WirePlumber (issue 20 §3): the same three aplay streams, the same 64-frame quantum at
# 48 kHz, the same timer-paced sink without hardware, rounds alternating hush and PipeWire. Prints a markdown table
# of medians (and the spread) with the ratio hush / PipeWire. Figures, not pass/fail checks: never assert on them.
#
# Usage: Benchmarks/peers.sh [HUSHD] [SECONDS] [ROUNDS]
#   HUSHD    default .build/release/hushd; `make bench-peers` builds it and installs the peers (peer-tools)
#   SECONDS  each measurement window (default 20); ROUNDS (default 3)
# Environment: PEERS_DIR (default .build/peers) holds Debian's pipewire-alsa unpacked, not installed (installing
# it would make ALSA's `default` PipeWire for every program on the machine); HUSH_ALSA_CONFIG the hush device's
# test configuration (default .build/alsa-plugin/asound-test.conf, `make alsa-plugin`).
#
# hush:     hushd, [output] pcm that does not open, fallback_wav = "/dev/null" (written paced like a card),
#           period_frames = 64 (48 kHz), realtime_priority = 0; streams `aplay -D hush:music`.
# PipeWire: Debian's pipewire.conf plus a drop-in: clock rate 48000, quantum, min- and max-quantum 64, and a
#           support.null-audio-sink node (the Dummy-Driver's timer paces the graph); WirePlumber with Debian's
#           configuration less what needs D-Bus (no session bus: support.dbus = false, no bluetooth.lua, no
#           flatpak portal, no device reservation); streams `aplay -D pipewire` through pipewire-alsa.
# Everything runs in a private directory (XDG_RUNTIME_DIR, XDG_CONFIG_HOME, the control socket): Unix sockets only.
set -euo pipefail
cd "$(dirname "$0")/.."
hushd=$(realpath "${1:-.build/release/hushd}")
seconds=${2:-20}
rounds=${3:-3}
peers=$(realpath "${PEERS_DIR:-.build/peers}")
hush_alsa=$(realpath "${HUSH_ALSA_CONFIG:-.build/alsa-plugin/asound-test.conf}")
pw_alsa=$peers/pipewire-alsa
warmup=3    # s of playing before a window starts
idle_wait=8 # s after the last stream before an idle window (hushd's idle_seconds and WirePlumber's suspend: 5 s)
tick=$(getconf CLK_TCK)

for need in "$hushd" "$hush_alsa" "$pw_alsa/usr/lib/x86_64-linux-gnu/alsa-lib/libasound_module_pcm_pipewire.so" \
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

# --- the two stacks' files ---------------------------------------------------------------------------------------
sox -q -n -r 48000 -c 2 -b 16 "$work/tone.wav" synth $((warmup + seconds + 5)) sine 440 vol 0.25
sox -q -n -r 48000 -c 2 -b 16 "$work/short.wav" synth 0.2 sine 880 vol 0.25

cat >"$work/asound-pipewire.conf" <<EOF
</usr/share/alsa/alsa.conf>
pcm_type.pipewire { lib "$pw_alsa/usr/lib/x86_64-linux-gnu/alsa-lib/libasound_module_pcm_pipewire.so" }
ctl_type.pipewire { lib "$pw_alsa/usr/lib/x86_64-linux-gnu/alsa-lib/libasound_module_ctl_pipewire.so" }
<$pw_alsa/usr/share/alsa/alsa.conf.d/50-pipewire.conf>
EOF

mkdir -p "$work/run" "$work/config/pipewire/pipewire.conf.d" "$work/config/wireplumber/main.lua.d"
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

# Both stacks' environment: the peers' private directories, each client's ALSA configuration.
export XDG_RUNTIME_DIR="$work/run" XDG_CONFIG_HOME="$work/config" XDG_STATE_HOME="$work/state-home" \
    HUSH_SOCKET="$work/control.sock"
unset DBUS_SESSION_BUS_ADDRESS PIPEWIRE_REMOTE PULSE_SERVER

# Start-up: exec of the daemon → its socket accepts a connection (polled every ms), and exec → the end of a 0.2 s
# tone that `aplay` started as soon as the socket accepted (retried every 5 ms while it fails), less 0.2 s; aplay
# asks for the streams' 1024-frame periods and 4096-frame buffer, so it starts the stream before it drains. For
# PipeWire, WirePlumber is exec'd the moment pipewire-0 accepts (as systemd's ordering would); the tone waits for
# WirePlumber to link the stream to the sink. Prints "SOCKET_MS SOUND_MS PID..." and appends the pids to $pids.
# hush-first (hushd only; its fallback_wav a FIFO this helper reads): exec → the first sample of a tone asked for on
# the control socket (activate, then play) the moment it accepts, as it comes out of hushd's output: what hushd's own
# start-up costs a first sound, without a client program's start-up. Prints "SOCKET_MS FIRST_MS PID".
cat >"$work/startup.py" <<'EOF'
import os, select, socket, subprocess, sys, time
stack, work, hushd = sys.argv[1], sys.argv[2], sys.argv[3]
pids = open(os.path.join(work, "pids"), "a")
def spawn(argv, log):
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=open(os.path.join(work, log), "ab"),
                         stderr=subprocess.STDOUT)
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
if stack.startswith("hush"):
    daemons = [spawn([hushd, "--config", os.path.join(work, "hushd.toml")], "hushd.log")]
    sock, device, conf = os.path.join(work, "control.sock"), "hush:music", os.path.join(work, "asound-hush.conf")
else:
    daemons = [spawn(["pipewire"], "pipewire.log")]
    sock, device, conf = os.path.join(work, "run", "pipewire-0"), "pipewire", os.path.join(work, "asound-pipewire.conf")
while (conn := connect(sock)) is None:
    if time.monotonic() - started > 20: sys.exit(f"{stack}: {sock} never accepted")
    time.sleep(0.001)
socket_ms = (time.monotonic() - started) * 1000
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
    printf '  %-9s %-6s CPU %s s/min (clients %s), %s switches/s, RSS %s MiB (anonymous %s)\n' "$stack" "$what" "$cpu_d" \
        "$([ ${#c[@]} -gt 0 ] && echo "$cpu_c" || echo -)" "$cs" "$mib" "$anon" >&2
}

round() { # STACK
    local stack=$1 device conf out daemons clients=() p
    if [ "$stack" = hush ]; then
        hush_config false
        device=hush:music conf="$work/asound-hush.conf"
    else
        rm -rf "$work/run"/* "$work/state-home" 2>/dev/null || true
        device=pipewire conf="$work/asound-pipewire.conf"
    fi
    out=$(python3 "$work/startup.py" "$stack" "$work" "$hushd")
    read -r socket_ms sound_ms daemons <<<"$out"
    record "$stack" start.socket "$socket_ms"
    record "$stack" start.sound "$sound_ms"
    printf '  %-9s start  socket accepts %s ms, 0.2 s tone ends after %s ms + 0.2 s\n' "$stack" "$socket_ms" "$sound_ms" >&2
    sleep 2
    for _ in 1 2 3; do
        ALSA_CONFIG_PATH=$conf aplay -q -D "$device" --period-size=1024 --buffer-size=4096 "$work/tone.wav" \
            </dev/null >>"$work/aplay.log" 2>&1 &
        p=$!
        clients+=("$p")
        echo "$p" >>"$pids"
    done
    sleep "$warmup"
    for p in "${clients[@]}"; do
        [ -e /proc/"$p" ] || { echo "peers.sh: an aplay on $device ended early:" >&2; cat "$work/aplay.log" >&2; exit 1; }
    done
    window "$stack" play "$daemons" "${clients[*]}"
    stop "${clients[@]}"
    sleep "$idle_wait"
    window "$stack" idle "$daemons" ""
    # shellcheck disable=SC2086
    stop $daemons
    if [ "$stack" = hush ]; then
        grep -qE "output idle" "$work/hushd.log" || echo "  (hushd's log shows no idle output)" >&2
        hush_config true
        out=$(python3 "$work/startup.py" hush "$work" "$hushd")
        read -r _ _ daemons <<<"$out"
        sleep "$warmup"
        window hush warm "$daemons" ""
        # shellcheck disable=SC2086
        stop $daemons
        rm -f "$work/first.fifo" && mkfifo "$work/first.fifo"
        hush_config false "$work/first.fifo"
        out=$(python3 "$work/startup.py" hush-first "$work" "$hushd")
        read -r _ first_ms daemons <<<"$out"
        record hush start.first "$first_ms"
        printf '  %-9s start  first sample of a tone asked for on the socket after %s ms\n' hush "$first_ms" >&2
        stop "$daemons"
    fi
}

echo "hush beside PipeWire + WirePlumber: $rounds rounds, ${seconds} s windows; hushd $(git rev-parse --short HEAD 2>/dev/null || echo '?')" \
    "($hushd); pipewire $(dpkg-query -W -f='${Version}' pipewire), wireplumber $(dpkg-query -W -f='${Version}' wireplumber)," \
    "pipewire-alsa $(dpkg-deb -f "$peers"/pipewire-alsa.deb Version 2>/dev/null || echo '?'); load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for ((r = 1; r <= rounds; r++)); do
    echo "round $r" >&2
    round hush
    round pipewire
done

# --- the table -----------------------------------------------------------------------------------------------------
echo
echo "| figure | hushd | PipeWire + WirePlumber | hushd / PipeWire |"
echo "|---|---|---|---|"
row() { # LABEL HUSH-KEY PEER-KEY UNIT
    awk -v label="$1" -v hk="$2" -v pk="$3" -v unit="$4" '
        function median(a, n,   i, j, t) {
            for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
            return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
        }
        function cell(a, n, m) { return n == 0 ? "—" : sprintf("%s %s (%s–%s)", fmt(m), unit, fmt(a[1]), fmt(a[n])) }
        function fmt(v) { return v >= 100 ? sprintf("%.0f", v) : v >= 10 ? sprintf("%.1f", v) : sprintf("%.2f", v) }
        $1 == "hush" && $2 == hk { h[++nh] = $3 }
        $1 == "pipewire" && $2 == pk { p[++np] = $3 }
        END {
            mh = nh ? median(h, nh) : 0; mp = np ? median(p, np) : 0
            ratio = !(nh && np) ? "—" : mp > 0 ? sprintf("**%.2f×**", mh / mp) : mh == 0 ? "both 0" : "PipeWire 0"
            printf "| %s | %s | %s | %s |\n", label, cell(h, nh, mh), cell(p, np, mp), ratio
        }' "$results"
}
row "CPU playing 3 streams, daemons (hushd; pipewire + wireplumber)" play.cpu play.cpu "s/min"
row "CPU playing 3 streams, the three aplay clients" play.clients play.clients "s/min"
row "CPU playing 3 streams, daemons + clients" play.all play.all "s/min"
row "context switches playing, daemons' threads" play.switches play.switches "/s"
row "resident memory playing, daemons (Rss)" play.rss play.rss "MiB"
row "of it anonymous (heap, stacks, written data: what only swap could take)" play.anon play.anon "MiB"
row "CPU idle (hushd: idle output after 5 s)" idle.cpu idle.cpu "s/min"
row "CPU idle, hushd keep_warm = true" warm.cpu idle.cpu "s/min"
row "context switches idle (hushd idle)" idle.switches idle.switches "/s"
row "context switches idle, hushd keep_warm" warm.switches idle.switches "/s"
row "resident memory idle, daemons (Rss)" idle.rss idle.rss "MiB"
row "start-up: exec → socket accepts" start.socket start.socket "ms"
row "start-up: exec → 0.2 s tone through aplay ends, less 0.2 s" start.sound start.sound "ms"
row "start-up: exec → first sample out of hushd of a tone asked for on the socket" start.first none "ms"
