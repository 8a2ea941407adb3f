# hush — the two commands a person needs: `make run` and `make test`.
# Both install what is missing (Debian packages), build, and go.

SWIFT ?= swift
# Debian packages hush builds against (the C libraries' -dev packages; toml++'s is headers only; speexdsp's is for
# HushVoiceTests only, which measure its echo canceller beside webrtc-audio-processing's).
APT_PACKAGES := pkg-config libasound2-dev libgpiod-dev libevdev-dev libsndfile1-dev libsamplerate0-dev \
    libtomlplusplus-dev libwebrtc-audio-processing-dev libspeexdsp-dev
SUDO := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)
# What the virtual board, the soaks and the faults run: release builds, as on a board (a debug HushMixer renders a
# period about 200 times slower, and the emulated board would be judged on that; docs/architecture.md).
RELEASE_BIN = $$($(SWIFT) build -c release --show-bin-path)

.PHONY: all deps build run test check help lint architecture format clean vboard boards bench deploy-check

all: build

# $(call install-missing,PACKAGES): apt-get update, then install those of the Debian PACKAGES dpkg does not have.
define install-missing
@missing=""; for p in $(1); do \
  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
done; \
if [ -n "$$missing" ]; then \
  echo "Installing:$$missing"; \
  $(SUDO) apt-get update -qq && \
  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq -o DPkg::Lock::Timeout=600 $$missing; \
fi
endef

## deps: install the Debian packages hush needs, if any are missing.
deps:
	$(call install-missing,$(APT_PACKAGES))

## test-tools: the programs the host tests play through the hush ALSA device besides aplay (ALSAApplicationsTests;
## make test, never make run): Debian's alsa-utils, mpd and mpc, espeak-ng, GStreamer with alsasink and PortAudio,
## baresip-core (the SIP phone of BaresipCallTests, with its alsa, aufile, aubridge and sndfile modules), and
## Python's sounddevice from PyPI in .build/python-venv at the versions
## Tests/HushIntegrationTests/Fixtures/python/requirements.txt pins.
TEST_APT_PACKAGES := alsa-utils mpd mpc espeak-ng gstreamer1.0-tools gstreamer1.0-alsa gstreamer1.0-plugins-base \
    libportaudio2 python3-venv baresip-core
PYTHON_VENV := .build/python-venv
PYTHON_REQUIREMENTS := Tests/HushIntegrationTests/Fixtures/python/requirements.txt
.PHONY: test-tools test-packages
test-tools: test-packages $(PYTHON_VENV)/requirements.txt

test-packages:
	$(call install-missing,$(TEST_APT_PACKAGES))

# Debian's python3 (python3-venv is its venv), not whichever python3 comes first in PATH. The copy of the
# requirements is written last, so an interrupted install is redone.
$(PYTHON_VENV)/requirements.txt: $(PYTHON_REQUIREMENTS) | test-packages
	rm -rf $(PYTHON_VENV)
	/usr/bin/python3 -m venv $(PYTHON_VENV)
	$(PYTHON_VENV)/bin/pip install --quiet --disable-pip-version-check --no-input --only-binary=:all: \
	  -r $(PYTHON_REQUIREMENTS)
	cp $(PYTHON_REQUIREMENTS) $@

build: deps alsa-plugin
	$(SWIFT) build

## alsa-plugin: the `hush` ALSA device (Sources/hush-alsa-plugin: C with alsa-lib's ioplug, no Swift runtime, so
## cc builds it, not SwiftPM), and an ALSA configuration that uses it from here without installing anything:
##   ALSA_CONFIG_PATH=.build/alsa-plugin/asound-test.conf aplay -D hush:music song.wav
ALSA_PLUGIN_DIR := .build/alsa-plugin
# The C compiler: the system's cc when there is one, else the clang every Swift toolchain carries (a machine set
# up only for Swift has no gcc).
PLUGIN_CC ?= $(shell command -v cc 2>/dev/null || command -v clang 2>/dev/null || echo cc)
ALSA_PLUGIN := $(ALSA_PLUGIN_DIR)/libasound_module_pcm_hush.so
ALSA_PLUGIN_SOURCES := $(wildcard Sources/hush-alsa-plugin/*.c)
ALSA_PLUGIN_HEADERS := $(wildcard Sources/hush-alsa-plugin/*.h) Sources/CHushWire/hush_wire.h
.PHONY: alsa-plugin
alsa-plugin: $(ALSA_PLUGIN) $(ALSA_PLUGIN_DIR)/asound-test.conf $(ALSA_PLUGIN_DIR)/hush-request-lines \
  $(ALSA_PLUGIN_DIR)/hush-delay-probe $(ALSA_PLUGIN_DIR)/hush-xrun-probe

# -DPIC: alsa-lib's headers then declare the plugin's version symbol for a shared object (as libtool would).
# -z defs: every symbol resolves against alsa-lib and libc now, not in the program that loads the plugin.
$(ALSA_PLUGIN): $(ALSA_PLUGIN_SOURCES) $(ALSA_PLUGIN_HEADERS) | deps
	@mkdir -p $(@D)
	$(PLUGIN_CC) -std=c11 -O2 -g -fPIC -DPIC -shared -Wall -Wextra -Werror -fvisibility=hidden \
	  $$(pkg-config --cflags alsa) -ISources/CHushWire -Wl,-z,defs -o $@ $(ALSA_PLUGIN_SOURCES) \
	  $$(pkg-config --libs alsa)

# Test programs (Tests/alsa-plugin): the plugin's category table and open-stream lines, built by its own code,
# for PluginRequestLineTests; a player that samples snd_pcm_delay between hushd's periods, for
# ALSADelayInterpolationTests; and the xrun probe below.
$(ALSA_PLUGIN_DIR)/hush-request-lines: Tests/alsa-plugin/request_lines.c $(ALSA_PLUGIN_SOURCES) $(ALSA_PLUGIN_HEADERS) | deps
	@mkdir -p $(@D)
	$(PLUGIN_CC) -std=c11 -O2 -g -DPIC -Wall -Wextra -Werror $$(pkg-config --cflags alsa) -ISources/CHushWire \
	  -o $@ Tests/alsa-plugin/request_lines.c Sources/hush-alsa-plugin/hush_client.c $$(pkg-config --libs alsa)

$(ALSA_PLUGIN_DIR)/hush-delay-probe: Tests/alsa-plugin/delay_probe.c | deps
	@mkdir -p $(@D)
	$(PLUGIN_CC) -std=c11 -O2 -g -Wall -Wextra -Werror $$(pkg-config --cflags alsa) -o $@ \
	  Tests/alsa-plugin/delay_probe.c $$(pkg-config --libs alsa)

# A program that falls behind on purpose and prints what ALSA tells it (R23), for ALSAXrunTests.
$(ALSA_PLUGIN_DIR)/hush-xrun-probe: Tests/alsa-plugin/xrun_probe.c | deps
	@mkdir -p $(@D)
	$(PLUGIN_CC) -std=c11 -O2 -g -Wall -Wextra -Werror $$(pkg-config --cflags alsa) -o $@ \
	  Tests/alsa-plugin/xrun_probe.c $$(pkg-config --libs alsa) -lm

$(ALSA_PLUGIN_DIR)/asound-test.conf: deploy/alsa/50-hush.conf $(ALSA_PLUGIN)
	@mkdir -p $(@D)
	{ echo '# Written by make alsa-plugin: the system configuration, then the hush device from this checkout.'; \
	  echo '</usr/share/alsa/alsa.conf>'; \
	  echo 'pcm_type.hush { lib "$(abspath $(ALSA_PLUGIN))" }'; \
	  cat deploy/alsa/50-hush.conf; } >$@

## run: hushd on its built-in default board (no hardware needed).
run: build
	$(SWIFT) run hushd

## test: format check, overlays, the virtual board (real kernel drivers in a VM: adapters, end to end, faults),
## its GPIO checks again against libgpiod 2.x (make gpiod2), hushd and hushctl for arm64 and every target and test
## built with Swift 6.0.3, the unit tests run under qemu-user and every scenario rendered the same on x86-64 and arm64
## (make arm64 test-arm64), every unit test, then the quick hardening runs: every
## fuzz harness replays its corpus and known crash inputs and tries 20 000 new inputs from a fixed seed (seconds
## each), and 3 hours of soak on the simulated clock
## (docs/reliability.md). The real-time soak in the VM is `make soak`: 90 s is too short for hushd's RSS to
## settle within 64 KiB after warm-up.
## Each of TEST_STAGES runs whatever the others did (.ci/run-stages): at the end a summary lists every stage, and
## every failed one with its FAIL lines; make test fails if any did. TEST_STAGES="lint vboard" runs only those.
TEST_STAGES ?= lint architecture boards deploy-check test-build config-corpus deb-check booted-board vboard gpiod2 arm64 \
    test-arm64 vboard-arm64 swift-test fuzz-brief soak-render-quick
.PHONY: test-build config-corpus swift-test
test: deps test-tools alsa-plugin
	MAKE="$(MAKE)" HUSH_RENDER="$(RELEASE_BIN)/hush-render" .ci/run-stages $(TEST_STAGES)

# make test's stages that are not targets of their own elsewhere: the debug build with the tests and the release
# build, and that the release hushd links no plotter; every configuration corpus file through both hushd builds; every unit test.
test-build:
	$(SWIFT) build --build-tests
	$(SWIFT) build -c release
	.ci/check-hushd-links.sh "$(RELEASE_BIN)"

config-corpus:
	.ci/check-config-corpus.sh

swift-test:
	$(SWIFT) test

## check: the quick rung before make test (a few minutes): the format check, the architecture check, and every
## unit test; not HushIntegrationTests, the tests that start hushd, hushctl, hush-render or an application.
check: deps lint architecture
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build --skip HushIntegrationTests

## help: the targets a person uses, each with the first line of its comment in the Makefile (which says more).
help:
	@sed -n 's/^## \([a-z0-9][a-z0-9-]*\): /\1\t/p' $(MAKEFILE_LIST) | \
	  awk -F '\t' '{ printf "  %-18s %s\n", $$1, (length($$2) > 96 ? substr($$2, 1, 95) "…" : $$2) }'

## faults: the faults scenario at length (LOAD_SECONDS of stress-ng with three buses, SWEEP_SECONDS per period,
## CYCLES device removals); make test runs it quick (8 s, 4 s, 3).
LOAD_SECONDS ?= 240
SWEEP_SECONDS ?= 60
CYCLES ?= 20
.PHONY: faults
faults: deps
	$(SWIFT) build -c release
	@mkdir -p .build/virtual-board/faults-conf
	printf 'load_seconds=%s\nsweep_seconds=%s\ncycles=%s\n' $(LOAD_SECONDS) $(SWEEP_SECONDS) $(CYCLES) \
	  >.build/virtual-board/faults-conf/faults.conf
	HUSH_VBOARD_CHECK="$(RELEASE_BIN)/hush-vboard-check" \
	  VBOARD_EXTRA_PAYLOAD=.build/virtual-board/faults-conf/faults.conf VBOARD_TIMEOUT=$$(( $(LOAD_SECONDS) \
	  + 7 * $(SWEEP_SECONDS) + 4 * $(CYCLES) + 400 )) board/virtual/run-all.sh faults

## vboard: only the virtual-board scenarios (qemu with gpio-sim, uinput, snd-aloop, snd-dummy); test-tools for the apps
## scenario's espeak-ng, GStreamer and Python.
vboard: deps alsa-plugin test-tools
	$(SWIFT) build -c release
	HUSH_VBOARD_CHECK="$(RELEASE_BIN)/hush-vboard-check" board/virtual/run-all.sh

## vboard-voice: the voice scenario (a call's echo through hushd; 3-5 min), on demand: not in make test until it is
## robust beside a busy machine (docs/virtual-board.md, "The voice scenario").
.PHONY: vboard-voice
vboard-voice: deps alsa-plugin
	$(SWIFT) build -c release
	HUSH_VBOARD_CHECK="$(RELEASE_BIN)/hush-vboard-check" board/virtual/run-all.sh voice

## gpiod2: the virtual board's GPIO checks again, with hush-vboard-check built against libgpiod 2.x: Debian trixie's
## libgpiod-dev and libgpiod3, fetched with a private apt configuration and unpacked under .build/gpiod2 (nothing
## installed), built in .build-gpiod2 (board/virtual/libgpiod2/run.sh; about 30 s once fetched). make test runs it after the 1.6 ones.
.PHONY: gpiod2
gpiod2: deps
	SWIFT="$(SWIFT)" board/virtual/libgpiod2/run.sh

## Two compilers and arm64 (deploy/cross/trixie.sh; docs/deploy.md, docs/architecture.md "Two compilers"): Debian trixie's
## swiftlang 6.0.3 in a debootstrapped trixie chroot under .build/trixie, with arm64 multiarch as the cross sysroot.
## toolchain-trixie: make the chroot (about 1 minute from nothing; skipped when complete; needs root).
## swift60: every target and test built with Swift 6.0.3 for x86-64, in .build-swift60 (the quick check while
## fixing code for 6.0; make test's test-arm64 builds the same for arm64).
## arm64: hushd and hushctl for aarch64 (release, Swift's runtime linked in, stripped) into .build/arm64, for
## Raspberry Pi OS trixie (glibc 2.38 or later); make test runs it; make deb-arm64 packages them.
## test-arm64: every target and test built for aarch64 with 6.0.3 and the unit tests run under qemu-user (those
## emulation cannot run skipped by name, with the reason), then every scenario rendered by the arm64 hush-render and
## this machine's (HUSH_RENDER, else a release build), which must give the same bytes.
.PHONY: toolchain-trixie swift60 arm64 test-arm64
toolchain-trixie:
	deploy/cross/trixie.sh toolchain

swift60:
	deploy/cross/trixie.sh swift60

arm64:
	deploy/cross/trixie.sh arm64

test-arm64:
	HUSH_RENDER="$(HUSH_RENDER)" deploy/cross/trixie.sh test-arm64

## vboard-arm64: the e2e scenario on an arm64 virtual board (board/virtual/arm64/run.sh; docs/virtual-board.md "The
## arm64 board"): Debian's arm64 6.1 kernel under qemu-system-aarch64 (TCG), hush installed from make deb-arm64's
## package by dpkg, the checks by the arm64 hush-vboard-check (deploy/cross/trixie.sh vboard-check-arm64). make test runs
## it (e2e, about 2.5 minutes once make arm64 has built the toolchain).
## VBOARD_ARM64_SCENARIOS="e2e adapters streams" runs those three (the ones that pass there), one after another.
VBOARD_ARM64_SCENARIOS ?= e2e
.PHONY: vboard-arm64
vboard-arm64: deb-arm64
	deploy/cross/trixie.sh vboard-check-arm64
	for scenario in $(VBOARD_ARM64_SCENARIOS); do board/virtual/arm64/run.sh --scenario $$scenario || exit 1; done

## memory-board: a figure, not a test: hushd's resident set on the virtual board at "ready" and with three tone
## sessions playing, with the kernel's fault-around at 64 KiB and at one page (board/virtual/bench/memory.sh,
## docs/performance.md), on the amd64 board and, with MEMORY_ARM64=1 (make deb-arm64's package), the arm64 one.
MEMORY_ROUNDS ?= 2
MEMORY_ARM64 ?= 0
MEMORY_PAYLOAD := .build/virtual-board/memory-payload
.PHONY: memory-board
memory-board: deps
	$(SWIFT) build -c release --static-swift-stdlib --scratch-path $(DEB_SCRATCH) --product hushd
	$(SWIFT) build -c release --static-swift-stdlib --scratch-path $(DEB_SCRATCH) --product hushctl
	rm -rf $(MEMORY_PAYLOAD) && mkdir -p $(MEMORY_PAYLOAD)
	cp "$$($(SWIFT) build -c release --static-swift-stdlib --scratch-path $(DEB_SCRATCH) --show-bin-path)"/hushd \
	  "$$($(SWIFT) build -c release --static-swift-stdlib --scratch-path $(DEB_SCRATCH) --show-bin-path)"/hushctl \
	  board/profiles/virtual.toml $(MEMORY_PAYLOAD)/
	echo $(MEMORY_ROUNDS) >$(MEMORY_PAYLOAD)/memory-rounds
	board/virtual/run.sh --scenario board/virtual/bench/memory.sh --payload $(MEMORY_PAYLOAD)
	if [ "$(MEMORY_ARM64)" = 1 ]; then $(MAKE) --no-print-directory deb-arm64 && \
	  board/virtual/arm64/run.sh --scenario board/virtual/bench/memory.sh; fi

## latency: a figure, not a test: aplay -> loopback round trip through plain hw:, dmix and hush in the virtual board
## (board/virtual/bench/latency.sh, docs/performance.md); TAKES per path (default 5).
TAKES ?= 5
.PHONY: latency
latency: deps alsa-plugin
	$(SWIFT) build -c release
	rm -rf .build/virtual-board/latency-payload && mkdir -p .build/virtual-board/latency-payload
	bin=$(RELEASE_BIN) && cp $$bin/hush-vboard-latency $$bin/hushd $$bin/hushctl \
	  $(ALSA_PLUGIN) board/profiles/virtual.toml deploy/alsa/50-hush.conf \
	  .build/virtual-board/latency-payload/
	echo $(TAKES) >.build/virtual-board/latency-payload/latency-takes
	board/virtual/run.sh --scenario board/virtual/bench/latency.sh --payload .build/virtual-board/latency-payload

## test-sanitizers: every Swift test target under AddressSanitizer (with LeakSanitizer), then ThreadSanitizer;
## fails on any report, the spawned hushd and hushctl included (Tests/sanitizers/run.sh, docs/reliability.md#sanitizers).
.PHONY: test-sanitizers test-asan test-tsan
test-sanitizers: test-asan test-tsan

test-asan: deps
	SWIFT="$(SWIFT)" Tests/sanitizers/run.sh address

test-tsan: deps
	SWIFT="$(SWIFT)" Tests/sanitizers/run.sh thread

## fuzz: every libFuzzer harness (a package of its own, Fuzz/) for FUZZ_SECONDS each (FUZZ_RUNS caps the
## executions), after replaying its corpus and known crashes; fails on a finding. Fuzz/README.md, docs/reliability.md.
## fuzz-quick: the same, a few seconds each: the corpus and Fuzz/Regressions replayed, so a fixed crash stays fixed.
FUZZ_SECONDS ?= 600
FUZZ_RUNS ?=
.PHONY: fuzz fuzz-quick fuzz-replay fuzz-brief
## fuzz-replay: only the corpus and Fuzz/Regressions through every harness (make test): a fixed crash stays fixed.
fuzz-replay: deps
	SWIFT=$(SWIFT) Fuzz/run.sh --replay

## fuzz-brief (make test): the replay, then 20 000 new inputs per harness from seed 1, so a run is repeatable.
fuzz-brief: fuzz-replay
	FUZZ_SECONDS=120 FUZZ_RUNS=20000 FUZZ_SEED=1 SWIFT=$(SWIFT) Fuzz/run.sh

fuzz: deps
	FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_RUNS=$(FUZZ_RUNS) SWIFT=$(SWIFT) Fuzz/run.sh

fuzz-quick: deps
	FUZZ_SECONDS=5 FUZZ_RUNS= SWIFT=$(SWIFT) Fuzz/run.sh

## bench: the benchmarks (a package of their own, Benchmarks/): see docs/performance.md.
bench: deps
	Benchmarks/run.sh
	$(MAKE) bench-peers
	$(MAKE) memory-board MEMORY_ARM64=1

## bench-peers: hushd beside PipeWire + WirePlumber and PulseAudio (issue 20): three aplay streams with aplay's
## default buffers and with 1024/4096-frame ones, 1, 3, 8 and 16 streams, idle, memory, start-up, three alternating
## rounds, medians and ratios (Benchmarks/peers.sh, about 24 minutes; PEERS_SECONDS per window, default 20;
## PEERS_ROUNDS, default 3; docs/performance.md). peer-tools installs Debian's pipewire and wireplumber without their
## recommends (no pipewire-pulse, no rtkit) and unpacks pipewire-alsa, at pipewire's version, into .build/peers
## without installing it: installed, it would make ALSA's `default` PipeWire for every program on the machine.
## PulseAudio likewise: the libraries its daemon and the two modules the bench loads link are installed, the
## pulseaudio package itself (at libpulse0's version) and libasound2-plugins (the `pulse` PCM) are unpacked into
## .build/peers: installed, pulseaudio drops /etc/alsa/conf.d/99-pulse.conf (ALSA's `default` goes to any PulseAudio
## a program can reach) and turns autospawn on for every user.
PEER_APT_PACKAGES := pipewire pipewire-bin wireplumber sox libpulse0 libltdl7 libwrap0 libcap2 libdbus-1-3 \
  liborc-0.4-0 libsndfile1 libsoxr0 libspeexdsp1 libsystemd0 libtdb1 libx11-6 libx11-xcb1 libxcb1
PEERS_DIR := .build/peers
PEERS_SECONDS ?= 20
PEERS_ROUNDS ?= 3
.PHONY: bench-peers peer-tools
# hushd as the Debian package ships it (the Swift runtime linked statically), in a build directory of its own.
PEERS_SCRATCH := .build-bench
bench-peers: deps alsa-plugin peer-tools
	$(SWIFT) build -c release --static-swift-stdlib --scratch-path $(PEERS_SCRATCH) --product hushd
	Benchmarks/peers.sh $$($(SWIFT) build -c release --static-swift-stdlib --scratch-path $(PEERS_SCRATCH) \
	  --show-bin-path)/hushd $(PEERS_SECONDS) $(PEERS_ROUNDS)

peer-tools:
	@missing=""; for p in $(PEER_APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "Installing:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq \
	    --no-install-recommends -o DPkg::Lock::Timeout=600 $$missing; \
	fi
	@v=$$(dpkg-query -W -f='$${Version}' pipewire); \
	if [ "$$(dpkg-deb -f $(PEERS_DIR)/pipewire-alsa.deb Version 2>/dev/null)" != "$$v" ]; then \
	  rm -rf $(PEERS_DIR) && mkdir -p $(PEERS_DIR) && chmod 777 $(PEERS_DIR) && \
	  (cd $(PEERS_DIR) && apt-get download -q pipewire-alsa=$$v) && \
	  mv $(PEERS_DIR)/pipewire-alsa_*.deb $(PEERS_DIR)/pipewire-alsa.deb && \
	  dpkg-deb -x $(PEERS_DIR)/pipewire-alsa.deb $(PEERS_DIR)/pipewire-alsa; \
	fi
	@v=$$(dpkg-query -W -f='$${Version}' libpulse0); \
	if [ "$$(dpkg-deb -f $(PEERS_DIR)/pulseaudio.deb Version 2>/dev/null)" != "$$v" ] || \
	  [ ! -d $(PEERS_DIR)/libasound2-plugins ]; then \
	  rm -rf $(PEERS_DIR)/pulseaudio* $(PEERS_DIR)/libasound2-plugins* && mkdir -p $(PEERS_DIR) && \
	  chmod 777 $(PEERS_DIR) && (cd $(PEERS_DIR) && apt-get download -q pulseaudio=$$v libasound2-plugins) && \
	  mv $(PEERS_DIR)/pulseaudio_*.deb $(PEERS_DIR)/pulseaudio.deb && \
	  mv $(PEERS_DIR)/libasound2-plugins_*.deb $(PEERS_DIR)/libasound2-plugins.deb && \
	  dpkg-deb -x $(PEERS_DIR)/pulseaudio.deb $(PEERS_DIR)/pulseaudio && \
	  dpkg-deb -x $(PEERS_DIR)/libasound2-plugins.deb $(PEERS_DIR)/libasound2-plugins; \
	fi

## load: the control socket under issue 6's full load against a real hushd (docs/reliability.md); make test runs
## a quick version.
.PHONY: load powercut
load: deps
	$(SWIFT) build --build-tests
	HUSH_LOAD=full $(SWIFT) test --skip-build --filter ControlLoadTests

## powercut: N SIGKILLs (default 1000) of a real hushd during volume changes; make test runs 40.
powercut: N ?= 1000
powercut: deps
	$(SWIFT) build --build-tests
	HUSH_POWERCUT_KILLS=$(N) $(SWIFT) test --skip-build --filter PowerCutTests

## soak: hushd for DURATION (default 30m; 90s, 2h, or seconds) in the virtual board under random events and
## sessions, and a random scenario of 24 times DURATION (at most 23.9 h) through hush-render on the simulated
## clock; RSS growth after warm-up at most 64 KiB, descriptors constant, no underrun (docs/reliability.md#soak).
## soak-quick: 3 simulated hours and 90 s in the VM; make test runs it.
.PHONY: soak soak-quick soak-render-quick
soak-render-quick: deps
	$(SWIFT) build -c release --product hush-render
	HUSH_RENDER="$(RELEASE_BIN)/hush-render" Tests/soak/render-soak.sh 10800

soak: DURATION ?= 30m
soak: deps
	$(SWIFT) build -c release
	@seconds=$$(echo "$(DURATION)" | awk '/^[0-9]+[smh]?$$/ { n = $$0 + 0; u = substr($$0, length($$0)); \
	  print (u == "m" ? n * 60 : u == "h" ? n * 3600 : n) }'); \
	[ -n "$$seconds" ] && [ "$$seconds" -ge 40 ] || { echo "make soak: DURATION=$(DURATION): say 90s, 30m, 2h (40 s or more)"; exit 64; }; \
	simulated=$$((seconds * 24 < 86000 ? seconds * 24 : 86000)); \
	HUSH_RENDER="$(RELEASE_BIN)/hush-render" Tests/soak/render-soak.sh $$simulated && \
	  HUSH_VBOARD_CHECK="$(RELEASE_BIN)/hush-vboard-check" board/virtual/soak/vboard-soak.sh $$seconds

soak-quick: deps
	$(SWIFT) build -c release
	HUSH_RENDER="$(RELEASE_BIN)/hush-render" Tests/soak/render-soak.sh 10800 && \
	  HUSH_VBOARD_CHECK="$(RELEASE_BIN)/hush-vboard-check" board/virtual/soak/vboard-soak.sh 90

## plots: the timeline pictures docs/images/timeline-*.svg, drawn by hush-render --plot from docs/scenarios.
PLOTS := silence-switch unplug ringtone ducking silence-and-unplug session-level
.PHONY: plots
plots: deps
	$(SWIFT) build --product hush-render
	@bin="$$($(SWIFT) build --show-bin-path)"; for s in $(PLOTS); do \
	  "$$bin/hush-render" --scenario docs/scenarios/$$s.txt --plot docs/images/timeline-$$s.svg || exit 1; \
	done

## boards: compile every device-tree overlay with dtc; check every board profile with hushd check-config.
boards:
	board/overlays/check.sh
	$(SWIFT) build --product hushd
	@for p in board/profiles/*.toml; do "$$($(SWIFT) build --show-bin-path)/hushd" check-config --board $$p \
	  >/dev/null && echo "PASS $$p" || exit 1; done

## deploy-check: the systemd unit's security score (at most 2.0), udev rule, scripts, an install into a temp root.
deploy-check:
	deploy/check.sh

## lint: the format check (swift format lint --strict, .swift-format); make format rewrites in place.
lint:
	$(SWIFT) format lint --strict -r Package.swift Sources Tests

## architecture: docs/architecture.md names every target of Package.swift and draws every dependency downward.
architecture:
	.ci/check-architecture.py .

format:
	$(SWIFT) format -i -r Package.swift Sources Tests

clean:
	rm -rf .build .build-asan .build-tsan .build-gpiod2 .build-deb .build-swift60 .build-arm64 Fuzz/.build

## deb: hush's Debian package for this machine's architecture and release, .build/deb/hush_VERSION_ARCH.deb: hushd and
## hushctl from a release build with Swift's runtime linked in (its own scratch path, .build-deb), the ALSA plugin
## built for the package, the rest laid out by deploy/install.sh --package (deploy/deb/build-deb.sh; docs/deploy.md).
## deb-arm64: the same for Raspberry Pi OS trixie on arm64, from make arm64's hushd and hushctl and the ALSA plugin
## cross-compiled with aarch64-linux-gnu-gcc against trixie's alsa-lib, fetched and unpacked into .build/deb (nothing
## installed). deb-check (make test): builds the package and checks it, installed into a scratch root
## (deploy/deb/test-deb.sh).
DEB_DIR := .build/deb
DEB_SCRATCH ?= .build-deb
DEB_ARCH := $(shell dpkg --print-architecture 2>/dev/null)
DEB_APT_PACKAGES := dpkg-dev binutils device-tree-compiler lintian shellcheck
# Linked as Debian's hardening flags link (lintian: hardening-no-bindnow, hardening-no-fortify-functions).
DEB_HARDENING := -D_FORTIFY_SOURCE=2 -Wl,-z,relro,-z,now
DEB_SWIFT_BUILD = $(SWIFT) build -c release --static-swift-stdlib --scratch-path $(DEB_SCRATCH) \
  -Xlinker -z -Xlinker relro -Xlinker -z -Xlinker now
DEB_PLUGIN_DIR := $(DEB_DIR)/alsa-plugin-$(DEB_ARCH)
DEB_PLUGIN := $(DEB_PLUGIN_DIR)/libasound_module_pcm_hush.so
ARM64_SUITE ?= trixie
# Where make arm64 leaves the arm64 hushd and hushctl (deploy/cross/trixie.sh arm64).
ARM64_BIN_DIR ?= .build/arm64
ARM64_ROOT := $(abspath $(DEB_DIR)/$(ARM64_SUITE)-arm64)/root
ALSA_PLUGIN_ARM64_DIR := $(DEB_DIR)/alsa-plugin-arm64
ALSA_PLUGIN_ARM64 := $(ALSA_PLUGIN_ARM64_DIR)/libasound_module_pcm_hush.so
.PHONY: deb deb-check deb-inputs deb-arm64 alsa-plugin-arm64

deb-inputs: deps
	$(call install-missing,$(DEB_APT_PACKAGES))
	$(DEB_SWIFT_BUILD) --product hushd
	$(DEB_SWIFT_BUILD) --product hushctl
	$(MAKE) --no-print-directory ALSA_PLUGIN_DIR=$(DEB_PLUGIN_DIR) PLUGIN_CC="$(PLUGIN_CC) $(DEB_HARDENING)" \
	  $(DEB_PLUGIN)

deb: deb-inputs
	deploy/deb/build-deb.sh $(DEB_ARCH) "$$($(DEB_SWIFT_BUILD) --show-bin-path)" $(DEB_PLUGIN) $(DEB_DIR)

deb-check: deb-inputs
	deploy/deb/test-deb.sh $(DEB_ARCH) "$$($(DEB_SWIFT_BUILD) --show-bin-path)" $(DEB_PLUGIN)

## booted-board: the package on a booted Debian (board/booted/run.sh; docs/virtual-board.md "The booted board"): a
## debootstrapped userland with systemd and udev on a disk in qemu, hush installed from make deb's package with apt
## (a local repository, no network), then checked across three boots: started at boot with nobody logged in, its
## first sound, the journal, the sandbox's exposure, users and groups, devices, two users' programs, kill -9,
## fault-around on 1024 and 2048 MB, a volume across poweroff, apt remove and purge. make test runs it.
.PHONY: booted-board
booted-board: deb
	board/booted/run.sh --deb $(DEB_DIR)/hush_$$(sed -n 's/^ *\(public \|package \)\{0,1\}static let version = "\(.*\)"$$/\2/p' Sources/HushDaemon/Hushd.swift)_$(DEB_ARCH).deb

# The ALSA plugin for arm64: the same rule as alsa-plugin's, with the cross compiler and pkg-config looking only at
# trixie's arm64 alsa-lib (libasound2-dev and libasound2t64, unpacked by deploy/deb/fetch-debs.sh).
alsa-plugin-arm64: deps
	$(call install-missing,gcc-aarch64-linux-gnu dpkg-dev)
	deploy/deb/fetch-debs.sh $(ARM64_SUITE) arm64 $(DEB_DIR)/$(ARM64_SUITE)-arm64 libasound2-dev libasound2
	PKG_CONFIG_LIBDIR=$(ARM64_ROOT)/usr/lib/aarch64-linux-gnu/pkgconfig PKG_CONFIG_SYSROOT_DIR=$(ARM64_ROOT) \
	  $(MAKE) --no-print-directory ALSA_PLUGIN_DIR=$(ALSA_PLUGIN_ARM64_DIR) \
	  PLUGIN_CC="aarch64-linux-gnu-gcc -Wl,-rpath-link=$(ARM64_ROOT)/usr/lib/aarch64-linux-gnu $(DEB_HARDENING)" \
	  $(ALSA_PLUGIN_ARM64)

deb-arm64: alsa-plugin-arm64 arm64
	$(call install-missing,$(DEB_APT_PACKAGES))
	@for f in hushd hushctl; do [ -f $(ARM64_BIN_DIR)/$$f ] || { echo "make deb-arm64: no arm64 $$f in" \
	  "$(ARM64_BIN_DIR) (make arm64 builds it; ARM64_BIN_DIR=DIR names another directory)" >&2; exit 1; }; done
	deploy/deb/build-deb.sh --suite $(ARM64_SUITE) arm64 $(ARM64_BIN_DIR) $(ALSA_PLUGIN_ARM64) $(DEB_DIR)
