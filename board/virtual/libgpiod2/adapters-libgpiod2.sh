# adapters-libgpiod2: the adapters scenario's GPIO checks with hush-vboard-check built against libgpiod 2.x
# (board/virtual/libgpiod2/run.sh writes the payload: the program, trixie's libgpiod.so.3 and "checks"). Kept out of
# board/virtual/scenarios so run-all.sh does not run it with the 1.6 payload; its own name keeps its own log.
# vboard-payload: hush-vboard-check  board/virtual/libgpiod2/run.sh builds it against libgpiod 2.x
# vboard-payload: checks  board/virtual/libgpiod2/run.sh lists the gpio-* checks in it
# vboard-payload: libgpiod.so.3  board/virtual/libgpiod2/run.sh copies it from trixie's libgpiod3
. /guest-lib.sh
# The payload's libgpiod.so.3, not the host path in the program's RUNPATH (under /tmp it is hidden by the tmpfs).
LD_LIBRARY_PATH=/payload hush-vboard-check $(cat /payload/checks)
