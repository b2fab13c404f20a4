#!/bin/sh
# Runs every test binary given on the command line, prints their output, and ends with the
# summary line "N passed, N failed[, N skipped]". Exit status 1 when anything failed.
# NBODY_TEST_RUNNER: a command put before each test program (not before the .sh scripts,
# which use it themselves), e.g. wine for Windows builds (make test-windows).
# NBODY_REQUIRE_NO_SKIPS=1: a skipped check fails the run (CI's make test: the checks that need an
# absent runtime fail by NBODY_REQUIRE_*; this catches any other skip).
# NBODY_TEST_JOBS=N: N tests at a time (default 1), for suites whose programs use one core
# each (under node or qemu: make test-wasm, make test-arm64); each output is printed whole,
# in the order given, when all have ended.
# NBODY_TEST_TIMES=FILE (an absolute path): a line "wall user system name" in seconds is
# appended to FILE for each test, the processes it starts included (/usr/bin/time; how
# bench/ci_time.sh measures CI's steps in CPU seconds).
timed() {   # $1: the test's name; the rest: the command
    n=$1; shift
    if [ -n "${NBODY_TEST_TIMES:-}" ]; then /usr/bin/time -a -o "$NBODY_TEST_TIMES" -f "%e %U %S $n" "$@"
    else "$@"; fi
}
one() {   # test $1: its output to $2.out, exit status to $2.rc, seconds to $2.sec
    t0=$(date +%s)
    case $1 in
        *.sh) timed "$1" "./$1" >"$2.out" 2>&1; echo $? >"$2.rc";;
        *) { timed "$1" ${NBODY_TEST_RUNNER:-} "./$1" 2>&1; echo $? >"$2.rc"; } | tr -d '\r' >"$2.out";;   # Windows programs end lines with CR LF
    esac
    echo $(( $(date +%s) - t0 )) >"$2.sec"
}
if [ "${1:-}" = --one ]; then one "$3" "$2/$4"; exit 0; fi
# N programs on the machine's cores: OpenMP threads that wait sleep at once instead of spinning
# (LLVM's runtime spins 200 ms by default, GCC's a while), so that one program's idle team
# does not take the cores the other program's threads need; no result depends on it
if [ "${NBODY_TEST_JOBS:-1}" -gt 1 ]; then export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"; fi
out=$(mktemp -d) || exit 1
trap 'rm -rf "$out"' EXIT
if [ "${NBODY_TEST_JOBS:-1}" -gt 1 ]; then
    i=0
    for t in "$@"; do i=$((i + 1)); printf '%s %s\n' "$t" "$i"; done |
        xargs -P "$NBODY_TEST_JOBS" -n 2 sh "$0" --one "$out"
fi
passed=0; failed=0; skipped=0; i=0
for t in "$@"; do
    i=$((i + 1))
    echo "== $t"
    [ "${NBODY_TEST_JOBS:-1}" -gt 1 ] || one "$t" "$out/$i"
    rc=$(cat "$out/$i.rc" 2>/dev/null || echo 127); sec=$(cat "$out/$i.sec" 2>/dev/null || echo 0)
    [ "$sec" -ge 10 ] && echo "   ($t took $sec s)"
    grep -v '^RESULT ' "$out/$i.out"
    res=$(grep '^RESULT ' "$out/$i.out" | tail -n 1)
    if [ -z "$res" ]; then
        echo "FAIL $t ended without a RESULT line (exit $rc)"; failed=$((failed + 1)); continue
    fi
    set -- $res "$@"; p=$2; f=$3; s=$4; shift 4
    passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then echo "FAIL $t exited with $rc"; failed=$((failed + 1)); fi
done
if [ "$skipped" -gt 0 ]; then echo "$passed passed, $failed failed, $skipped skipped"
else echo "$passed passed, $failed failed"; fi
if [ "$skipped" -gt 0 ] && [ "${NBODY_REQUIRE_NO_SKIPS:-0}" = 1 ]; then
    echo "FAIL $skipped check(s) skipped: NBODY_REQUIRE_NO_SKIPS=1 (CI's make test) allows none"; exit 1
fi
[ "$failed" -eq 0 ]
