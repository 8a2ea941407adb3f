#!/usr/bin/env bash
# No configuration file aborts hushd: every fuzz-config corpus file and regression, and every bad-config fixture,
# through `hushd check-config` of the debug and the release build (toml++'s own assertions are compiled into the
# debug build's shim; CTOMLShim turns them into errors). Exit status 0 (accepted) or 1 (refused, with file and line)
# only: 134 (SIGABRT), 132 (SIGILL) or 139 (SIGSEGV) would be a crash.   make test runs it.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
failed=0
count=0
for build in debug release; do
    hushd="$(swift build -c "$build" --show-bin-path)/hushd"
    [ -x "$hushd" ] || { echo "check-config-corpus: $hushd is not built"; exit 2; }
    for file in Fuzz/Corpus/fuzz-config/* Fuzz/Regressions/fuzz-config/* Tests/HushIntegrationTests/Fixtures/bad-configs/*; do
        [ -f "$file" ] || continue
        "$hushd" check-config --config "$file" >/dev/null 2>&1
        status=$?
        count=$((count + 1))
        if [ "$status" -ne 0 ] && [ "$status" -ne 1 ]; then
            echo "FAIL $build hushd check-config --config $file: exit status $status"
            failed=1
        fi
    done
done
echo "config corpus: $count runs of check-config (debug and release), $([ $failed -eq 0 ] && echo "none aborted" || echo "some aborted")"
exit $failed
