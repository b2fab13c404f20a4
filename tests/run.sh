#!/bin/sh
# Runs every test binary given on the command line, prints their output, and ends with the
# summary line "N passed, N failed[, N skipped]". Exit status 1 when anything failed.
# NBODY_TEST_RUNNER: a command put before each test program (not before the .sh scripts,
# which use it themselves), e.g. wine for Windows builds (make test-windows).
passed=0; failed=0; skipped=0
for t in "$@"; do
    echo "== $t"
    t0=$(date +%s)
    case $t in
        *.sh) out=$("./$t" 2>&1); rc=$?;;
        *) out=$(${NBODY_TEST_RUNNER:-} "./$t" 2>&1); rc=$?
           out=$(printf '%s\n' "$out" | tr -d '\r');;    # Windows programs end lines with CR LF
    esac
    [ $(( $(date +%s) - t0 )) -ge 10 ] && echo "   ($t took $(( $(date +%s) - t0 )) s)"
    printf '%s\n' "$out" | grep -v '^RESULT '
    res=$(printf '%s\n' "$out" | grep '^RESULT ' | tail -n 1)
    if [ -z "$res" ]; then
        echo "FAIL $t ended without a RESULT line (exit $rc)"; failed=$((failed + 1)); continue
    fi
    set -- $res "$@"; p=$2; f=$3; s=$4; shift 4
    passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then echo "FAIL $t exited with $rc"; failed=$((failed + 1)); fi
done
if [ "$skipped" -gt 0 ]; then echo "$passed passed, $failed failed, $skipped skipped"
else echo "$passed passed, $failed failed"; fi
[ "$failed" -eq 0 ]
