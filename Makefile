# hush — the two commands a person needs: `make run` and `make test`.
# Both install what is missing (Debian packages), build, and go.

SWIFT ?= swift
# Debian packages hush builds against (the C libraries' -dev packages).
APT_PACKAGES := pkg-config libasound2-dev libgpiod-dev libevdev-dev libsndfile1-dev libsamplerate0-dev
SUDO := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)

.PHONY: all deps build run test lint format clean vboard boards bench deploy-check

all: build

## deps: install the Debian packages hush needs, if any are missing.
deps:
	@missing=""; for p in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "Installing:$$missing"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq -o DPkg::Lock::Timeout=600 $$missing; \
	fi

build: deps
	$(SWIFT) build

## run: hushd on its built-in default board (no hardware needed).
run: build
	$(SWIFT) run hushd

## test: format check, overlays, the virtual board (real kernel drivers in a VM), every unit test.
test: deps lint boards deploy-check
	$(SWIFT) build --build-tests
	board/virtual/run-all.sh
	$(SWIFT) test

## vboard: only the virtual-board scenarios (qemu with gpio-sim, uinput, snd-aloop, snd-dummy).
vboard: deps
	$(SWIFT) build --product hush-vboard-check
	$(SWIFT) build --product hushd
	board/virtual/run-all.sh

## bench: the benchmarks (a package of their own, Benchmarks/): see docs/performance.md.
bench: deps
	Benchmarks/run.sh

## plots: the timeline pictures docs/images/timeline-*.svg, drawn by hushd render --plot from docs/scenarios.
PLOTS := silence-switch unplug ringtone ducking silence-and-unplug
.PHONY: plots
plots: deps
	$(SWIFT) build --product hushd
	@bin="$$($(SWIFT) build --show-bin-path)"; for s in $(PLOTS); do \
	  "$$bin/hushd" render --scenario docs/scenarios/$$s.txt --plot docs/images/timeline-$$s.svg || exit 1; \
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

lint:
	$(SWIFT) format lint --strict -r Package.swift Sources Tests

format:
	$(SWIFT) format -i -r Package.swift Sources Tests

clean:
	rm -rf .build
