#!/bin/sh
# The tests whose numbers go through the BLOCK and TREE kernels, once per SIMD level this
# machine runs (NBODY_SIMD=portable, avx2, avx512, neon, simd128), so that a fault in one level
# cannot hide behind another machine's CPU. test_block and test_simd loop over the levels themselves.
# Prints "SIMD levels tested: ..." and a RESULT line for tests/run.sh.
cd "$(dirname "$0")/.." || exit 1
BUILD=${BUILD:-build}
# NBODY_TEST_RUNNER and NBODY_TEST_EXE: a Windows build under Wine (make test-windows)
RUN=${NBODY_TEST_RUNNER:-}; EXE=${NBODY_TEST_EXE:-}
levels=$($RUN "./$BUILD/test_simd$EXE" --levels) || { echo "FAIL $BUILD/test_simd --levels"; echo "RESULT 0 1 0"; exit 1; }
levels=$(printf '%s\n' "$levels" | tr -d '\r')     # Windows programs end lines with CR LF
pass=0; fail=0; skip=0
for level in $levels; do
    tests="test_numeric_faults test_reproducible"
    # the tree walk of the best level (AVX2 code at avx2 and avx512, the 128-bit buckets at neon
    # and simd128) is what plain make test runs already; the portable walk is plain C, the same
    # x86 code under Wine as natively (make test-windows leaves it to the native run)
    [ "$level" = portable ] && [ -z "$EXE" ] && tests="$tests test_tree"
    for t in $tests; do
        # NBODY_TEST_QUICK: test_tree's million bodies (a test of scale, not of the level) is
        # left to make test's own run of test_tree at the best level
        out=$(NBODY_TEST_QUICK=1 NBODY_SIMD=$level $RUN "./$BUILD/$t$EXE" 2>&1); rc=$?
        out=$(printf '%s\n' "$out" | tr -d '\r')
        res=$(printf '%s\n' "$out" | grep '^RESULT ' | tail -n 1)
        if [ -z "$res" ] || [ "$rc" -ne 0 ]; then
            printf '%s\n' "$out" | grep -E '^FAIL' | head -n 20
            echo "FAIL NBODY_SIMD=$level $t (exit $rc)"; fail=$((fail + 1)); continue
        fi
        set -- $res; pass=$((pass + $2)); fail=$((fail + $3)); skip=$((skip + $4))
        [ "$3" -gt 0 ] && printf '%s\n' "$out" | grep -E '^FAIL' | sed "s/^/NBODY_SIMD=$level /"
        echo "NBODY_SIMD=$level $t: $2 passed, $3 failed"
    done
done
echo "SIMD levels tested: $levels"
echo "RESULT $pass $fail $skip"
