# adapters-libgpiod2: the adapters scenario's GPIO checks with hush-vboard-check built against libgpiod 2.x
# (libgpiod2/run.sh writes the payload: the program, its libgpiod.so.3 through its RUNPATH, and "checks"). Kept out of
# board/virtual/scenarios so run-all.sh does not run it with the 1.6 payload; its own name keeps its own log.
# vboard-payload: hush-vboard-check  libgpiod2/run.sh builds it against libgpiod 2.x
# vboard-payload: checks  libgpiod2/run.sh lists the gpio-* checks in it
. /guest-lib.sh
hush-vboard-check $(cat /payload/checks)
