#!/usr/bin/env bash
# Fetches Debian packages of another suite or architecture without touching the machine's apt sources or dpkg
# database: apt-get with its own sources, lists and cache under DIR/apt (the machine's apt.conf, proxies included,
# still applies), `apt-get download`, then each package unpacked with `dpkg-deb -R` into DIR/pkg/NAME (its files and
# its DEBIAN control directory: shlibs, symbols) and with `dpkg -x` into DIR/root (one tree, for compilers and
# linkers). Nothing is installed. Used by the Makefile (the arm64 ALSA plugin's alsa-lib) and deploy/deb/build-deb.sh
# (the target's libraries, for dpkg-shlibdeps).
#
#   deploy/deb/fetch-debs.sh SUITE ARCH DIR PACKAGE...
#
# A package that is already unpacked in DIR is not fetched again; the lists are refreshed once a day.
# A PACKAGE that is only a virtual name in SUITE (libasound2 in trixie) is fetched as the package providing it.
set -euo pipefail

[ $# -ge 4 ] || { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 64; }
suite="$1" arch="$2" dir="$3"
shift 3
die() { echo "fetch-debs: $*" >&2; exit 1; }
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"

missing=()
for package in "$@"; do [ -f "$dir/pkg/$package/DEBIAN/control" ] || missing+=("$package"); done
[ ${#missing[@]} -gt 0 ] || exit 0

keyring=/usr/share/keyrings/debian-archive-keyring.gpg
[ -f "$keyring" ] || die "no $keyring: apt-get install debian-archive-keyring"
mkdir -p "$dir/apt/lists/partial" "$dir/apt/cache/archives/partial" "$dir/apt/preferences.d" "$dir/debs"
# The Debian mirror this machine already uses, for the other suite (its format is apt's, not the shell's).
# shellcheck disable=SC2016
mirror=$(apt-get indextargets --format '$(REPO_URI)' 'Origin: Debian' 'Label: Debian' 'Component: main' 2>/dev/null |
    head -1 || true)
mirror="${mirror:-http://deb.debian.org/debian/}"
echo "deb [arch=$arch signed-by=$keyring] $mirror $suite main" >"$dir/apt/sources.list"
apt=(-o "Dir::Etc::sourcelist=$dir/apt/sources.list" -o Dir::Etc::sourceparts=/dev/null
    -o "Dir::State::Lists=$dir/apt/lists" -o "Dir::Cache=$dir/apt/cache" -o Dir::State::status=/dev/null
    -o "Dir::Etc::preferencesparts=$dir/apt/preferences.d" -o "APT::Architecture=$arch"
    -o "APT::Architectures=$arch" -o APT::Sandbox::User=root -qq)
if [ -z "$(find "$dir/apt/lists" -maxdepth 1 -name '*Packages*' -mtime -1 2>/dev/null)" ]; then
    apt-get "${apt[@]}" update || die "apt-get update of $suite/$arch ($mirror) failed"
fi

for package in "${missing[@]}"; do
    # A virtual name (trixie's libasound2, provided by libasound2t64) is fetched as its one provider.
    real="$package"
    candidate=$(apt-cache "${apt[@]}" policy "$package" 2>/dev/null | awk '$1 == "Candidate:" { print $2 }')
    if [ -z "$candidate" ] || [ "$candidate" = "(none)" ]; then
        real=$(apt-cache "${apt[@]}" showpkg "$package" 2>/dev/null |
            awk '/^Reverse Provides:/ { getline; print $1; exit }')
        [ -n "$real" ] || die "$suite/$arch has no package $package"
    fi
    rm -f "$dir/debs/${real}_"*.deb
    (cd "$dir/debs" && apt-get "${apt[@]}" download "$real:$arch") || die "could not download $real from $suite/$arch"
    deb=$(ls "$dir/debs/${real}_"*.deb)
    rm -rf "$dir/pkg/$package" && mkdir -p "$dir/pkg"
    dpkg-deb -R "$deb" "$dir/pkg/$package"
    dpkg -x "$deb" "$dir/root"
    echo "fetch-debs: $package: $(basename "$deb") ($suite/$arch)"
done
