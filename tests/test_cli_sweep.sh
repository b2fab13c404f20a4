#!/bin/sh
# Every option of the command-line tool against hostile values: each option that `nbody --help`
# lists (so a new option is swept without editing this file) with each of 0, -1, a tiny, a
# huge, NaN, Inf, the largest 64-bit count, a missing value and garbage (a printf format),
# added to a short run (16 bodies, 5 steps), on the double build and on the float build
# (build/nbody_float, NBODY_REAL = float). Each run must end within its time bound with
# exit status 0, or 1 or 2 and a message on stderr: never a signal (a crash), never the time
# bound (a hang), never an error without a word; a refusal (exit 2) names the option or the
# value in its first line. Runs two at a time, each in its own folder
# (--out, --archive and --video write where they are told). Prints the counts and
# "RESULT passed failed skipped".
cd "$(dirname "$0")/.." || exit 1
ROOT=$(pwd)
BUILD=${BUILD:-build}
NB="$ROOT/$BUILD/nbody"
BOUND=${SWEEP_SECONDS:-10}           # seconds a run may take (they take well under one)
for b in "$NB" "$NB"_float; do [ -x "$b" ] || { echo "FAIL $b missing"; echo "RESULT 0 1 0"; exit 1; }; done

# one case: PROGRAM OPTION VALUE NAME; writes NAME.res: "status program option value", keeps stderr
run_case() {
    mkdir -p "$tmp/$4" && cd "$tmp/$4" || exit 1
    base="--scenario plummer --n 16 --dt 1e-3 --t-end 0.005 --size 16 --out o"
    if [ "$3" = MISSING ]; then timeout -k 2 "$BOUND" "$1" $base "$2" >out 2>err </dev/null
    else timeout -k 2 "$BOUND" "$1" $base "$2" "$3" >out 2>err </dev/null; fi
    rc=$?
    printf '%s %s %s %s\n' "$rc" "${1##*/}" "$2" "$3" >"$tmp/$4.res"
}
# xargs runs each case through this script again: sh test_cli_sweep.sh --case TMP PROGRAM OPTION VALUE NAME
if [ "$1" = --case ]; then tmp=$2; shift 2; run_case "$@"; exit 0; fi

tmp=$(mktemp -d); [ -n "$SWEEP_KEEP" ] && echo "cases in $tmp" || trap 'rm -rf "$tmp"' EXIT

options=$("$NB" --help | sed -n 's/^  \(--[a-z][a-z-]*\).*/\1/p' | sort -u)
values='0
-1
1e-300
1e300
nan
inf
18446744073709551615
MISSING
%s%n%x'
[ "$(printf '%s\n' "$options" | wc -l)" -ge 20 ] || { echo "FAIL nbody --help lists only: $options"; echo "RESULT 0 1 0"; exit 1; }

for b in "$NB" "$NB"_float; do
    for o in $options; do
        printf '%s\n' "$values" | while IFS= read -r v; do
            i=$((${i:-0} + 1)); printf '%s\n%s\n%s\n%s\n' "$b" "$o" "$v" "${b##*/}${o}_$i"
        done
    done
done | tr '\n' '\0' | xargs -0 -n 4 -P 2 sh "$ROOT/tests/test_cli_sweep.sh" --case "$tmp"

pass=0; fail=0; crashes=0; hangs=0; silent=0; unnamed=0; ok=0; refused=0; failed=0; runs=0
for res in "$tmp"/*.res; do
    read -r rc prog opt val <"$res"
    dir=${res%.res}
    runs=$((runs + 1))
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        hangs=$((hangs + 1)); fail=$((fail + 1)); echo "FAIL $prog $opt $val: still running after $BOUND s"
    elif [ "$rc" -ge 128 ]; then
        crashes=$((crashes + 1)); fail=$((fail + 1)); echo "FAIL $prog $opt $val: killed by signal $((rc - 128))"
    elif [ "$rc" -ne 0 ] && [ ! -s "$dir/err" ]; then
        silent=$((silent + 1)); fail=$((fail + 1)); echo "FAIL $prog $opt $val: exit $rc without a message on stderr"
    elif [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ] && [ "$rc" -ne 2 ]; then
        fail=$((fail + 1)); echo "FAIL $prog $opt $val: exit $rc (want 0, 1 or 2)"
    elif [ "$rc" -eq 2 ] && ! head -n 1 "$dir/err" | grep -q -F -e "$opt" -e "'$val'" -e " $val"; then
        unnamed=$((unnamed + 1)); fail=$((fail + 1))
        echo "FAIL $prog $opt $val: the refusal names neither the option nor the value: $(head -n 1 "$dir/err")"
    else
        pass=$((pass + 1))
        case $rc in 0) ok=$((ok + 1));; 1) failed=$((failed + 1));; 2) refused=$((refused + 1));; esac
    fi
done
nopt=$(printf '%s\n' "$options" | wc -l); nval=$(printf '%s\n' "$values" | wc -l)
[ "$runs" -eq $((2 * nopt * nval)) ] || { fail=$((fail + 1)); echo "FAIL $runs runs, want 2 x $nopt x $nval"; }
echo "CLI sweep: 2 builds (double, float) x $nopt options x $nval values = $runs runs: $ok ran (exit 0), $refused refused (exit 2), $failed stopped with an error (exit 1); $crashes crashes, $hangs hangs, $silent errors without a message, $unnamed refusals naming neither option nor value"
echo "RESULT $pass $fail 0"
[ "$fail" -eq 0 ]
