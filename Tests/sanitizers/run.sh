#!/bin/bash
# Builds every Swift test target under one sanitizer and runs `swift test` with it; fails on any report.
#
#   Tests/sanitizers/run.sh address   # AddressSanitizer with LeakSanitizer, scratch path .build-asan
#   Tests/sanitizers/run.sh thread    # ThreadSanitizer, scratch path .build-tsan
#
# The hushd and hushctl that tests spawn are built with the same sanitizer and inherit the options below, so a
# report in a child counts too: every process writes its reports to <scratch>/sanitizer-logs/<tool>.<pid>, and any
# such file fails the run, even when the test that spawned the child did not look at its exit status.
# Suppressions (Tests/sanitizers/*.supp) carry a reason per entry; docs/reliability.md lists every report found.
set -euo pipefail

SWIFT=${SWIFT:-swift}
case "${1:-}" in
address) scratch=.build-asan ;;
thread) scratch=.build-tsan ;;
*)
    echo "usage: $0 address|thread" >&2
    exit 2
    ;;
esac
sanitizer=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
logs="$root/$scratch/sanitizer-logs"
output="$root/$scratch/sanitizer-test-output.txt"

start=$(date +%s)
"$SWIFT" build --build-tests --sanitize="$sanitizer" --scratch-path "$scratch"
built=$(date +%s)

rm -rf "$logs"
mkdir -p "$logs"
# Tests that cannot work under a sanitizer read HUSH_SANITIZER and skip themselves, saying why.
export HUSH_SANITIZER="$sanitizer"
case $sanitizer in
address)
    # ASan stops at its first error whatever the options say: memory is not trustworthy after it.
    export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:detect_stack_use_after_return=1:log_path=$logs/asan"
    export LSAN_OPTIONS="suppressions=$root/Tests/sanitizers/lsan.supp:print_suppressions=0"
    ;;
thread)
    # Keep going after a race so that one run lists them all; exitcode still fails every process that had one.
    export TSAN_OPTIONS="halt_on_error=0:exitcode=66:second_deadlock_stack=1:suppressions=$root/Tests/sanitizers/tsan.supp:print_suppressions=0:log_path=$logs/tsan"
    ;;
esac

# hush's tests use Swift Testing only; the XCTest runner, given nothing to run, still leaks its own suite objects
# at exit, which LeakSanitizer would report against hush. --no-parallel: under a sanitizer, suites running side by
# side on two cores starve the tests that play audio in real time (DaemonTests.loop heard 0.1 s of its 1.2 s);
# one at a time is no slower here, and races inside hush happen between its own threads, not between tests.
status=0
"$SWIFT" test --skip-build --disable-xctest --no-parallel --sanitize="$sanitizer" --scratch-path "$scratch" 2>&1 \
    | tee "$output" || status=$?
finished=$(date +%s)

reports=$(find "$logs" -type f -size +0 | sort)
summary=$(grep -E 'Test run with [0-9]+ tests? ' "$output" | tail -1 || true)
echo
echo "== $sanitizer sanitizer: build $((built - start)) s, tests $((finished - built)) s"
echo "== ${summary:-no Swift Testing summary line (the test process did not finish)}"
if [ -n "$reports" ]; then
    echo "== $(echo "$reports" | wc -l) process(es) reported; the first lines of each:"
    for report in $reports; do
        echo "-- $report"
        grep -E 'ERROR|WARNING|SUMMARY' "$report" | head -5
    done
    exit 1
fi
if [ "$status" -ne 0 ]; then
    echo "== swift test failed (status $status) with no sanitizer report: see $output"
    exit "$status"
fi
echo "== no sanitizer reports"
