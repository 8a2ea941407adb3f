#!/usr/bin/env python3
"""Writes the sound-file seeds in Corpus/fuzz-soundfile: tiny files in each container and encoding hush reads,
written by the same libsndfile hush links (through ctypes), plus a few broken ones. Run once; the files are
committed. Usage: Fuzz/make-sound-seeds.py"""
import ctypes
import ctypes.util
import math
import os
import struct

here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "Corpus", "fuzz-soundfile")
lib = ctypes.CDLL(ctypes.util.find_library("sndfile") or "libsndfile.so.1")


class SFInfo(ctypes.Structure):
    _fields_ = [("frames", ctypes.c_int64), ("samplerate", ctypes.c_int), ("channels", ctypes.c_int),
                ("format", ctypes.c_int), ("sections", ctypes.c_int), ("seekable", ctypes.c_int)]


lib.sf_open.restype = ctypes.c_void_p
lib.sf_open.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(SFInfo)]
lib.sf_writef_float.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_float), ctypes.c_int64]
lib.sf_writef_float.restype = ctypes.c_int64
lib.sf_close.argtypes = [ctypes.c_void_p]
SFM_WRITE = 0x20
WAV, AIFF, W64, FLAC, CAF, OGG = 0x010000, 0x020000, 0x0B0000, 0x170000, 0x180000, 0x200000
PCM_S8, PCM_16, PCM_24, PCM_32, PCM_U8, FLOAT, DOUBLE = 1, 2, 3, 4, 5, 6, 7
ULAW, ALAW, IMA_ADPCM, MS_ADPCM, VORBIS = 0x10, 0x11, 0x12, 0x13, 0x60


def write(name, container, encoding, rate=48000, channels=1, frames=64):
    info = SFInfo(0, rate, channels, container | encoding, 0, 0)
    path = os.path.join(here, name)
    handle = lib.sf_open(path.encode(), SFM_WRITE, ctypes.byref(info))
    if not handle:
        raise SystemExit(f"libsndfile cannot write {name}")
    samples = (ctypes.c_float * (frames * channels))(
        *[0.5 * math.sin(2 * math.pi * 1000 * (i // channels) / rate) for i in range(frames * channels)])
    lib.sf_writef_float(handle, samples, frames)
    lib.sf_close(handle)
    return path


os.makedirs(here, exist_ok=True)
good = write("wav-pcm16-mono-48k.wav", WAV, PCM_16)
write("wav-pcm24-stereo-48k.wav", WAV, PCM_24, channels=2)
write("wav-pcm32-mono-48k.wav", WAV, PCM_32)
write("wav-float-stereo-48k.wav", WAV, FLOAT, channels=2)
write("wav-double-mono-48k.wav", WAV, DOUBLE)
write("wav-u8-mono-8k.wav", WAV, PCM_U8, rate=8000)
write("wav-ulaw-mono-8k.wav", WAV, ULAW, rate=8000)
write("wav-ima-adpcm-mono-8k.wav", WAV, IMA_ADPCM, rate=8000, frames=505)
write("wav-ms-adpcm-stereo-22k.wav", WAV, MS_ADPCM, rate=22050, channels=2, frames=500)
write("wav-pcm16-stereo-44k1.wav", WAV, PCM_16, rate=44100, channels=2)
write("aiff-pcm16-mono-48k.aiff", AIFF, PCM_16)
write("w64-pcm16-mono-48k.w64", W64, PCM_16)
write("caf-alaw-mono-8k.caf", CAF, ALAW, rate=8000)
write("flac-pcm16-mono-48k.flac", FLAC, PCM_16)
write("flac-pcm24-stereo-44k1.flac", FLAC, PCM_24, rate=44100, channels=2)
write("ogg-vorbis-mono-48k.ogg", OGG, VORBIS, frames=256)

data = open(good, "rb").read()
bad = {
    "bad-truncated-header.wav": data[:30],
    "bad-no-data.wav": data[:44],
    # The header claims far more frames than the file holds (a cut-off download).
    "bad-claims-long.wav": data[:40] + struct.pack("<I", 0x7FFFFFF0) + data[44:],
    "bad-zero-channels.wav": data[:22] + struct.pack("<H", 0) + data[24:],
    "bad-six-channels.wav": data[:22] + struct.pack("<H", 6) + data[24:],
    "bad-rate-1hz.wav": data[:24] + struct.pack("<I", 1) + data[28:],
    "bad-not-sound.txt": b"this is not a sound file\n",
}
for name, content in bad.items():
    with open(os.path.join(here, name), "wb") as f:
        f.write(content)
