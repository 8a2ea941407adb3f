"""Plays a tone and records through PortAudio with Python's sounddevice, as an application would.

    play_and_record.py PLAY_DEVICE RECORD_DEVICE [--seconds S] [--hertz F] [--rate R] [--record-rate R]

Plays a sine of F Hz at half scale for S seconds to PLAY_DEVICE with sounddevice.play, then records S seconds
from RECORD_DEVICE with sounddevice.rec (mono, 16-bit), and prints one JSON line: how long each took, the frames
recorded, their peak, and the devices PortAudio listed. ALSAApplicationsTests runs it with .build/python-venv's
python (make test-tools) against a real hushd.
"""

import argparse
import json
import sys
import time

parser = argparse.ArgumentParser()
parser.add_argument("play_device")
parser.add_argument("record_device")
parser.add_argument("--seconds", type=float, default=1.0)
parser.add_argument("--hertz", type=float, default=1000.0)
parser.add_argument("--rate", type=int, default=48000)
parser.add_argument("--record-rate", type=int, default=16000)
arguments = parser.parse_args()

try:
    import numpy
    import sounddevice
except ImportError as error:
    sys.exit(f"play_and_record.py: {error}: run `make test-tools` (make test does), which makes .build/python-venv")
except OSError as error:
    # sounddevice loads PortAudio when imported.
    sys.exit(f"play_and_record.py: {error}: install Debian's libportaudio2 (`make test-tools` does)")

devices = [device["name"] for device in sounddevice.query_devices()]
for name in (arguments.play_device, arguments.record_device):
    if name not in devices:
        sys.exit(f"play_and_record.py: PortAudio does not list '{name}'; it lists {devices}")

frames = int(arguments.seconds * arguments.rate)
tone = (0.5 * numpy.sin(2 * numpy.pi * arguments.hertz * numpy.arange(frames) / arguments.rate)).astype(numpy.float32)
start = time.monotonic()
sounddevice.play(tone, arguments.rate, device=arguments.play_device, blocking=True)
played = time.monotonic() - start

record_frames = int(arguments.seconds * arguments.record_rate)
start = time.monotonic()
recording = sounddevice.rec(
    record_frames, samplerate=arguments.record_rate, channels=1, dtype="int16", device=arguments.record_device,
    blocking=True)
recorded = time.monotonic() - start

print(json.dumps({
    "played": played,
    "recorded": recorded,
    "frames": int(recording.shape[0]),
    "peak": int(numpy.abs(recording.astype(numpy.int32)).max()) if recording.size else 0,
    "devices": devices,
}))
