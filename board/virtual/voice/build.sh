#!/usr/bin/env bash
# Builds the voice scenario's two C programs into DIR/voice (a payload directory's subdirectory): echo-room, the
# acoustic path from hushd's routes to its microphone, and far-end, the call's other end playing into and recording
# from the hush device (board/virtual/voice/*.c; docs/virtual-board.md, "The voice scenario"). They need only
# alsa-lib and libm, which run.sh copies with them. About a second.
#
#   board/virtual/voice/build.sh DIR
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 64; }
out="$1/voice"
mkdir -p "$out"
flags=(-std=c11 -O2 -g -Wall -Wextra -Werror)
# shellcheck disable=SC2046 # pkg-config's words
cc "${flags[@]}" $(pkg-config --cflags alsa) -o "$out/echo-room" "$here/echo-room.c" $(pkg-config --libs alsa) -lm
# shellcheck disable=SC2046
cc "${flags[@]}" $(pkg-config --cflags alsa) -o "$out/far-end" "$here/far-end.c" $(pkg-config --libs alsa) -lpthread
echo "voice/build.sh: echo-room and far-end in $out"
