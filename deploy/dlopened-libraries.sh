#!/usr/bin/env bash
# Prints, one per line, the sonames of the libraries BINARY (hushd) opens with dlopen when it first needs them
# rather than at start, which no NEEDED entry shows to ldd, readelf or dpkg-shlibdeps: libsndfile (the first sound
# file; Sources/CSndfile) and webrtc-audio-processing (the first call's voice processing; Sources/CVoiceProcessing).
# Their sonames are string literals in the binary. Used by the Debian package's Depends (deploy/deb/build-deb.sh,
# test-deb.sh) and by the virtual boards, which copy a program's libraries into the guest (board/virtual/run.sh,
# board/virtual/arm64/run.sh).
#
#   deploy/dlopened-libraries.sh BINARY
set -euo pipefail
[ $# -eq 1 ] || { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 64; }
found="$(strings -a "$1" |
    grep -xE 'libsndfile\.so\.[0-9]+|libwebrtc[-_]audio[-_]processing(-[0-9]+)?\.so\.[0-9]+' | sort -u || true)"
[ "$(echo "$found" | wc -w)" -eq 2 ] || {
    echo "dlopened-libraries: $1 names '${found//$'\n'/ }'; expected libsndfile's and webrtc-audio-processing's sonames" >&2
    exit 1
}
echo "$found"
