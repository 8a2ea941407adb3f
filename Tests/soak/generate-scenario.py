#!/usr/bin/env python3
"""Writes a long random `hush-render` scenario for the soak (issue 6, docs/reliability.md#soak).

    Tests/soak/generate-scenario.py SEED SECONDS > soak.txt

The same seed and length always give the same file. Every kind of input a board sees comes up, at random times
0.05-2 s apart: the silence switch, volume taps and holds, headphones plugged and unplugged from every source,
media keys, volume and ringer settings, route overrides; and sessions on every bus and category, with and without
mix, duck and transient, that are played, paused, stopped, finish (a tone without loop ends by itself, or a
'finished' line), are deactivated with and without notify, or whose client goes away. Session ids are never
reused, so a leak per session shows as growth; at most eight sessions are alive at once, as on a device.
The last line says how many events and sessions the file has.
"""

import random
import sys

BUSES = ["effect", "music", "ringer"]
CATEGORIES = ["ambient", "soloAmbient", "playback", "record", "playAndRecord"]
JACK_SOURCES = ["", " alsa", " evdev", " gpio", " console"]
KEYS = ["play", "pause", "playpause", "next", "previous"]
ROUTES = ["speaker", "headphones", "auto"]
MAX_ALIVE = 8


def generate(seed: int, seconds: float, out) -> None:
    rng = random.Random(seed)
    time = 0.0
    next_session = 1
    next_client = 1000
    alive = {}  # session id -> client id
    held = None
    events = 0
    sessions = 0
    out.write(f"# soak scenario: seed {seed}, {seconds:.0f} s (Tests/soak/generate-scenario.py)\n")
    while True:
        time += rng.uniform(0.05, 2.0)
        if time >= seconds:
            break
        stamp = f"{time:.3f}"
        if held is not None and rng.random() < 0.5:
            out.write(f"{stamp} release\n")
            held = None
            events += 1
            continue
        roll = rng.random()
        line = None
        if len(alive) == MAX_ALIVE and roll < 0.5:
            # A full device: sessions end more often than they start, as apps come and go.
            roll = 0.50 + roll * 0.32
        if roll < 0.30 and len(alive) < MAX_ALIVE:
            # A new session, on a client of its own or sharing one (so that 'gone' ends several).
            session = next_session
            next_session += 1
            if alive and rng.random() < 0.3:
                client = rng.choice(list(alive.values()))
            else:
                client = next_client
                next_client += 1
            options = [o for o in ("mix", "duck", "transient") if rng.random() < 0.25]
            tone = rng.choice([220, 440, 1000, 1500, 2500])
            loop = " loop" if rng.random() < 0.7 else ""
            line = (
                f"activate {session} {rng.choice(BUSES)} {rng.choice(CATEGORIES)} {' '.join(options)} "
                f"client={client} tone={tone}{loop}"
            )
            alive[session] = client
            sessions += 1
            # Most sessions play right away, as a client does.
            if rng.random() < 0.8:
                out.write(f"{stamp} {' '.join(line.split())}\n")
                events += 1
                stamp = "+0.01"
                line = f"play {session}"
        elif roll < 0.50 and alive:
            session = rng.choice(list(alive))
            verb = rng.choices(["play", "pause", "stop", "finished"], [4, 3, 1, 1])[0]
            line = f"{verb} {session}"
        elif roll < 0.62 and alive:
            session = rng.choice(list(alive))
            del alive[session]
            line = f"deactivate {session}" + (" notify" if rng.random() < 0.5 else "")
        elif roll < 0.66 and alive:
            client = rng.choice(list(alive.values()))
            for session in [s for s, c in alive.items() if c == client]:
                del alive[session]
            line = f"gone {client}"
        elif roll < 0.72:
            line = "silence " + rng.choice(["on", "off"])
        elif roll < 0.80:
            line = rng.choice(["up", "down"])
        elif roll < 0.84 and held is None:
            held = rng.choice(["up", "down"])
            line = f"press {held}"
        elif roll < 0.90:
            line = rng.choice(["plug", "unplug"]) + rng.choice(JACK_SOURCES)
        elif roll < 0.95:
            line = "key " + rng.choice(KEYS)
        elif roll < 0.98:
            line = f"{rng.choice(['volume', 'ringer'])} {rng.randint(0, 16)}"
        else:
            line = "route " + rng.choice(ROUTES)
        if line is None:
            continue
        out.write(f"{stamp} {line}\n")
        events += 1
    if held is not None:
        out.write(f"{seconds - 0.01:.3f} release\n")
        events += 1
    out.write(f"{seconds:.3f} end\n")
    out.write(f"# {events} events, {sessions} sessions\n")


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 64
    try:
        seed = int(sys.argv[1])
        seconds = float(sys.argv[2])
    except ValueError:
        print("generate-scenario.py: SEED is a whole number, SECONDS a number of seconds", file=sys.stderr)
        return 64
    if not 10 <= seconds < 86400:
        print("generate-scenario.py: SECONDS must be at least 10 and less than a day", file=sys.stderr)
        return 64
    generate(seed, seconds, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
