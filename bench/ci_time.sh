#!/bin/sh
# CI's steps (.ci/run after its apt-get) in this checkout, one after the other, each under
# /usr/bin/time, with tests/run.sh writing a line per test program (NBODY_TEST_TIMES): the
# wall and CPU seconds of each step, of the programs it runs and of the rest (its builds).
# CPU seconds hardly depend on what else the machine runs, wall seconds do: docs/platforms.md
# estimates CI's wall time from the CPU figures. Use a fresh clone (the builds are timed too).
#   sh bench/ci_time.sh [step ...]     steps: test windows web wasm arm64 asan fuzz (all by default)
# Writes OUT (default build/ci_time): steps.txt "step wall cpu tests_wall tests_cpu" and
# tests.txt "step wall cpu program"; prints both, the programs by CPU time.
cd "$(dirname "$0")/.." || exit 1
OUT=$(mkdir -p "${OUT:-build/ci_time}" && cd "${OUT:-build/ci_time}" && pwd) || exit 1
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (Debian package time)"; exit 1; }
export NBODY_REQUIRE_OPENCL=1 NBODY_REQUIRE_VIEWER=1 NBODY_REQUIRE_MPI=1 NBODY_REQUIRE_PLATFORMS=1
steps=${*:-test windows web wasm arm64 asan fuzz}
for s in $steps; do
    case $s in
        test)    cmd="make -j2 test";;
        windows) cmd="make -j2 test-windows";;
        web)     cmd="env NBODY_REQUIRE_WEB=1 make test-web";;
        wasm)    cmd="make -j2 test-wasm";;
        arm64)   cmd="make -j2 test-arm64";;
        asan)    cmd="make -j2 test-asan";;
        fuzz)    cmd="make -j2 fuzz FUZZ_SECONDS=60";;
        *) echo "unknown step $s"; exit 1;;
    esac
    : >"$OUT/$s.tests"
    NBODY_TEST_TIMES="$OUT/$s.tests" /usr/bin/time -o "$OUT/$s.time" -f "%e %U %S" $cmd >"$OUT/$s.log" 2>&1
    echo "$s: exit $?, $(tail -n 1 "$OUT/$s.log")"
    set -- $(tail -n 1 "$OUT/$s.time")     # (a first line "Command exited with non-zero status N")
    awk -v s="$s" -v w="$1" -v c="$2" -v c2="$3" \
        '$0 !~ /^Command/ && NF >= 4 { tw += $1; tc += $2 + $3 }
         END { printf "%s %.0f %.0f %.0f %.0f\n", s, w, c + c2, tw, tc }' "$OUT/$s.tests" >>"$OUT/steps.txt"
    awk -v s="$s" '$0 !~ /^Command/ && NF >= 4 { print s, $1, $2 + $3, $4 }' "$OUT/$s.tests" >>"$OUT/tests.txt"
done
echo "step wall cpu tests_wall tests_cpu (seconds; the builds: cpu - tests_cpu)"
cat "$OUT/steps.txt"
echo "the programs by CPU seconds (step wall cpu program):"
sort -k3,3gr "$OUT/tests.txt" | head -n 40
