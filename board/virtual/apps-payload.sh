#!/usr/bin/env bash
# Puts the applications the apps scenario plays through the `hush` device into DIR/apps (a payload directory's
# subdirectory; run-all.sh calls it): espeak-ng with its English data, gst-launch-1.0 with the five plugins its
# pipeline needs and its plugin scanner, Python 3.11 with a pruned standard library and .build/python-venv's
# sounddevice, cffi and numpy, Debian's libportaudio2, ldconfig (ctypes.util.find_library asks `ldconfig -p`) and
# the test's play_and_record.py. What these programs dlopen is what ldd cannot see, so it is copied here; run.sh
# copies the shared libraries of every ELF file in the payload, these included. `make test-tools` installs them.
#
#   board/virtual/apps-payload.sh DIR
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 64; }
apps="$1/apps"
multiarch=/usr/lib/x86_64-linux-gnu
venv="$root/.build/python-venv/lib/python3.11/site-packages"
missing=()
for file in /usr/bin/espeak-ng /usr/bin/gst-launch-1.0 /usr/bin/python3.11 /usr/sbin/ldconfig \
    "$multiarch/libportaudio.so.2" "$multiarch/espeak-ng-data" "$multiarch/gstreamer-1.0/libgstalsa.so" \
    "$multiarch/gstreamer1.0/gstreamer-1.0/gst-plugin-scanner" "$venv/sounddevice.py"; do
    [ -e "$file" ] || missing+=("$file")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "apps-payload.sh: missing ${missing[*]}: run 'make test-tools'" >&2
    exit 1
fi

rm -rf "$apps"
mkdir -p "$apps"/{bin,lib,gstreamer-1.0,espeak-ng-data,site-packages}
cp -L /usr/bin/espeak-ng /usr/bin/gst-launch-1.0 /usr/bin/python3.11 /usr/sbin/ldconfig "$apps/bin/"
cp -L "$multiarch/libportaudio.so.2" "$apps/lib/"

# espeak-ng's data (ESPEAK_DATA_PATH=DIR/apps): the phonemes, voices and English only (13 MB with every language).
data="$multiarch/espeak-ng-data"
cp -a "$data"/{phondata,phondata-manifest,phonindex,phontab,intonations,lang,voices,en_dict} "$apps/espeak-ng-data/"

# GStreamer (GST_PLUGIN_SYSTEM_PATH_1_0, GST_PLUGIN_SCANNER): the pipeline's plugins only.
for plugin in coreelements audiotestsrc audioconvert audioresample alsa; do
    cp -L "$multiarch/gstreamer-1.0/libgst$plugin.so" "$apps/gstreamer-1.0/"
done
cp -L "$multiarch/gstreamer1.0/gstreamer-1.0/gst-plugin-scanner" "$apps/bin/"

# Python: the interpreter finds its standard library at DIR/apps/lib/python3.11 (PYTHONHOME=DIR/apps), without
# what no client needs (the 25 MB static libpython, tests, tkinter, idle, lib2to3, ...).
cp -a /usr/lib/python3.11 "$apps/lib/python3.11"
rm -rf "$apps/lib/python3.11"/{test,config-3.11-x86_64-linux-gnu,idlelib,tkinter,turtledemo,lib2to3,ensurepip,pydoc_data,distutils,site-packages,dist-packages}
for package in sounddevice.py _sounddevice.py _cffi_backend.cpython-311-x86_64-linux-gnu.so cffi pycparser numpy numpy.libs; do
    cp -a "$venv/$package" "$apps/site-packages/"
done
rm -rf "$apps/site-packages/numpy"/{tests,*/tests,f2py,typing,_pyinstaller,doc}
cp "$root/Tests/HushIntegrationTests/Fixtures/python/play_and_record.py" "$apps/"
echo "apps-payload.sh: $(du -sh "$apps" | cut -f1) in $apps"
