# soak: hushd on the virtual profile for a long time under random events (issue 6, docs/reliability.md#soak).
# Not in board/virtual/scenarios/, so run-all.sh (make test) does not run it: board/virtual/soak/vboard-soak.sh (make soak,
# make soak-quick) does, with a payload of its own whose soak.env sets HUSH_SOAK_SECONDS and HUSH_SOAK_SEED.
# hush-vboard-check --soak starts hushd, drives the gpio-sim lines, the "Headphone Jack" control, the uinput keys
# and hushctl clients at random, and samples hushd's resident set (smaps_rollup Rss), descriptors and underruns.
# vboard-payload: hush-vboard-check  build it with 'swift build --product hush-vboard-check'
# vboard-payload: hushd  build it with 'swift build --product hushd'
# vboard-payload: hushctl  build it with 'swift build --product hushctl'
# vboard-payload: virtual.toml  board/virtual/soak/vboard-soak.sh copies board/profiles/virtual.toml
# vboard-payload: soak.env  board/virtual/soak/vboard-soak.sh writes it
. /guest-lib.sh
# shellcheck disable=SC1091 # written by board/virtual/soak/vboard-soak.sh
. /payload/soak.env
export HUSH_SOAK_SECONDS HUSH_SOAK_SEED
echo "soak: kernel $(uname -r), command line: $(cat /proc/cmdline)"
status=0
hush-vboard-check --soak || status=$?
if [ $status -ne 0 ]; then
    echo "--- hushd's log (/tmp/hushd.log) ---"
    tail -60 /tmp/hushd.log
fi
exit $status
