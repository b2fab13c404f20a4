# check.sh - the shell tests' tiny harness, as tests/check.h is the C tests'. A test script
# sets CHECK_REQUIRE to the environment variable that turns its skips into failures (CI sets
# it to 1), sources this file from the repository root, calls ok / bad / absent for every
# assertion and ends with finish, whose last line "RESULT passed failed skipped" tests/run.sh
# sums. $tmp is a scratch folder removed at exit (after check_at_exit, which a script may
# redefine to stop what it started); build_png_stats builds tests/png_stats.c into it.
pass=0; fail=0; skip=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
# a runtime the test needs is absent: skipped, or failed when ${CHECK_REQUIRE} is 1
absent() {
    if [ -n "${CHECK_REQUIRE:-}" ] && [ "$(eval echo "\${$CHECK_REQUIRE:-}")" = 1 ]; then bad "(required by $CHECK_REQUIRE) $*"
    else skip=$((skip + 1)); echo "SKIP $*"; fi
}
finish() { echo "RESULT $pass $fail $skip"; [ "$fail" -eq 0 ]; exit $?; }
check_at_exit() { :; }
tmp=$(mktemp -d) || exit 1
trap 'check_at_exit; rm -rf "$tmp"' EXIT
# job NAME COMMAND...: COMMAND with "-o FILE" appended (a compiler), run in the background, two
# at a time (the machine's two cores; the jobs must be independent); with JOB_RUN=1 FILE is run
# too. report waits for the jobs under way and counts each, in the order they were started:
# ok, or bad NAME and the first lines of what it printed. A script calls report before finish.
njob=0; nshown=0
job() {
    njob=$((njob + 1)); d="$tmp/job$njob"; mkdir "$d"; printf '%s\n' "$1" >"$d/name"; shift
    { "$@" -o "$d/out" >"$d/log" 2>&1 && { [ "${JOB_RUN:-0}" = 0 ] || "$d/out" >>"$d/log" 2>&1; }; echo $? >"$d/rc"; } &
    [ $((njob % 2)) -eq 1 ] || report
}
report() {
    wait
    while [ "$nshown" -lt "$njob" ]; do
        nshown=$((nshown + 1)); d="$tmp/job$nshown"
        if [ "$(cat "$d/rc")" = 0 ]; then ok; else bad "$(cat "$d/name")"; head -n 8 "$d/log"; fi
    done
}
# $tmp/png_stats PNG: width, height, lit pixels, distinct colours (libpng); absent without libpng
build_png_stats() {
    PNG=$(pkg-config --cflags --libs libpng 2>/dev/null) || { absent "libpng missing"; finish; }
    ${CC:-cc} -O1 tests/png_stats.c -o "$tmp/png_stats" $PNG || { bad "png_stats does not build"; finish; }
}
