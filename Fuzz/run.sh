#!/usr/bin/env bash
# make fuzz / make fuzz-quick: builds hush's libFuzzer harnesses (this package, with AddressSanitizer) and runs
# each one: first every input in Corpus/<harness> and Regressions/<harness> (a known crash fails here), then new
# inputs for FUZZ_SECONDS seconds or FUZZ_RUNS executions. Exits non-zero when any harness finds something.
#
#   Fuzz/run.sh [HARNESS...]        FUZZ_SECONDS=600 (default) FUZZ_RUNS= (no limit) FUZZ_SEED= (random)
#                                   FUZZ_JOBS=N: libFuzzer's fork mode, N processes at once (long runs)
#   Fuzz/run.sh --replay [HARNESS...]   only the corpus and the regressions, no new inputs
#
# New inputs worth keeping go to Fuzz/.build/corpus/<harness> (not committed); findings to
# Fuzz/.build/findings/<harness>/crash-* (or leak-, oom-, timeout-), with a line saying how to keep one as a
# regression. Fuzz/README.md has the rest.
set -uo pipefail
fuzz="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$fuzz")"
all=(fuzz-control fuzz-scenario fuzz-config fuzz-state fuzz-soundfile)
seconds="${FUZZ_SECONDS:-600}"
runs="${FUZZ_RUNS:-}"
seed="${FUZZ_SEED:-}"
jobs="${FUZZ_JOBS:-0}"
replay=no
if [ "${1:-}" = "--replay" ]; then replay=yes; shift; fi
harnesses=("$@")
[ ${#harnesses[@]} -eq 0 ] && harnesses=("${all[@]}")

SWIFT="${SWIFT:-swift}"
# `--sanitize fuzzer --sanitize address` alone is not enough: SwiftPM passes swiftc `-sanitize=fuzzer` and
# `-sanitize=address` in an order that changes from build to build, and for swiftc the last one wins, so a build
# had either libFuzzer's coverage counters or AddressSanitizer in hush's Swift code, never both. The combined
# `-sanitize=fuzzer,address` comes after them on every swiftc command line. (clang adds up its -fsanitize flags,
# so CTOMLShim's C++ (toml++) always has both.)
build=("$SWIFT" build --package-path "$fuzz" -c release --sanitize fuzzer --sanitize address
    -Xswiftc "-sanitize=fuzzer,address" -Xswiftc -parse-as-library)
echo "== building the fuzz harnesses: ${build[*]}"
mkdir -p "$fuzz/.build/logs"
if ! "${build[@]}" >"$fuzz/.build/logs/build.log" 2>&1; then
    grep -E "error" "$fuzz/.build/logs/build.log" | head -20
    echo "FAIL: the fuzz harnesses do not build (Fuzz/.build/logs/build.log)"
    exit 1
fi
grep -E "Build complete" "$fuzz/.build/logs/build.log"
bin="$("${build[@]}" --show-bin-path)"

# Every hush module must carry both libFuzzer's coverage counters (a __sancov_cntrs section) and
# AddressSanitizer's checks (calls to __asan_*): a build with only one of them (as before the flag above) fuzzes
# blind or unchecked, and proves nothing.
for module in HushCore HushProtocol HushConfiguration HushConsole HushOutput HushRender HushAudioFile; do
    objects=("$bin/$module.build"/*.o)
    # grep reads everything (no -q): with pipefail, a writer cut short by grep's early exit fails the test.
    if [ ! -e "${objects[0]}" ] || ! objdump -h "${objects[@]}" | grep __sancov_cntrs >/dev/null ||
        ! nm "${objects[@]}" 2>/dev/null | grep __asan_ >/dev/null; then
        echo "FAIL: $module was built without libFuzzer's coverage counters or AddressSanitizer's checks" \
            "(look for -sanitize=fuzzer,address on its swiftc line in Fuzz/.build/release.yaml)"
        exit 1
    fi
done

# Leaks in code that is not hush's are suppressed, each with its reason (lsan.supp). Swift's own crash
# backtracer is off: it reads freed memory while the process dies and buries AddressSanitizer's report.
export LSAN_OPTIONS="suppressions=$fuzz/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export SWIFT_BACKTRACE="enable=no"

failed=()
for harness in "${harnesses[@]}"; do
    [ -x "$bin/$harness" ] || { echo "no harness '$harness'; harnesses: ${all[*]}"; exit 2; }
    work="$fuzz/.build/corpus/$harness"
    findings="$fuzz/.build/findings/$harness"
    log="$fuzz/.build/logs/$harness.log"
    mkdir -p "$work" "$findings" "$(dirname "$log")" "$fuzz/Regressions/$harness"
    options=(-print_final_stats=1 -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$findings/")
    if [ "$replay" = yes ]; then
        options+=(-runs=0)
    else
        # Leaks are checked once, when the run ends (LeakSanitizer's exit check, which fails the run), not after
        # every input: when TOMLKit (gone now) leaked on every parse, a per-input check scanned the
        # heap after each one and spent 80% of the time there (config: 81 executions/s with it, 7 249 without).
        # The replay (make test) keeps the per-input check, which names the input. FUZZ_DETECT_LEAKS=1 restores it.
        options+=(-detect_leaks="${FUZZ_DETECT_LEAKS:-0}")
        # Nor does AddressSanitizer record where each block was allocated: unwinding the stack at every malloc
        # was a third of fuzz-control's time (perf). Errors are found all the same; to see the allocation
        # stack of a finding, run its input alone (the command is printed below), which records it.
        export ASAN_OPTIONS="malloc_context_size=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
        options+=(-max_total_time="$seconds")
        [ -n "$runs" ] && options+=(-runs="$runs")
        [ -n "$seed" ] && options+=(-seed="$seed")
        # Fork mode: the fuzzing runs in child processes that libFuzzer replaces every few seconds to minutes,
        # merging what each found. Long runs needed it while TOMLKit leaked a few hundred bytes per parse, when
        # one process fuzzing the configuration or the state file for millions of inputs would pass the RSS
        # limit on leaked memory alone (fuzz-state: 1.5 GB after 1.5 M). A child that crashes stops the run.
        [ "$jobs" -gt 0 ] && options+=(-fork="$jobs")
    fi
    echo "== $harness: ${options[*]}"
    # The working directory is the checkout: the configuration harness finds board/profiles from there.
    # Standard input is /dev/null: a configuration that includes /dev/stdin must not wait for a terminal.
    started=$(date +%s)
    (cd "$root" && "$bin/$harness" "${options[@]}" "$work" "$fuzz/Corpus/$harness" "$fuzz/Regressions/$harness" \
        </dev/null >"$log" 2>&1)
    status=$?
    elapsed=$(($(date +%s) - started))
    executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    if [ "$jobs" -gt 0 ] && [ "$replay" = no ]; then
        # The parent of fork mode prints no final stats: its progress lines ("#N: cov: …") carry the total.
        executions=$(sed -n 's/^#\([0-9]*\): cov:.*/\1/p' "$log" | tail -1)
        [ -n "$executions" ] && [ "$elapsed" -gt 0 ] && rate=$((executions / elapsed))
    fi
    rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -1)
    coverage=$(grep -oE "cov: [0-9]+ ft: [0-9]+" "$log" | tail -1)
    if [ "$status" -eq 0 ] && [ "$replay" = no ] && grep -aq "Is the code instrumented for coverage" "$log"; then
        # Seen once while another build rewrote the products: a binary that fuzzes blind proves nothing.
        status=3
        echo "FAIL $harness: libFuzzer saw no coverage; rebuild (rm -rf Fuzz/.build) and run again"
    fi
    if [ "$status" -eq 0 ]; then
        echo "PASS $harness: ${executions:-?} executions in ${elapsed} s (${rate:-?}/s), ${coverage:-no coverage line}," \
            "peak RSS ${rss:-?} MB"
    else
        failed+=("$harness")
        echo "FAIL $harness (exit $status): the end of $log:"
        grep -aE "FUZZ FINDING|ERROR: |Fatal error|SUMMARY|Test unit written|^==[0-9]+==" "$log" | head -20
        for artifact in "$findings"/*; do
            [ -e "$artifact" ] || continue
            echo "   to keep it as a regression: cp $artifact Fuzz/Regressions/$harness/"
            echo "   to run it alone:            (cd $root && $bin/$harness $artifact)"
        done
    fi
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "FUZZ FAILED: ${failed[*]}"
    exit 1
fi
