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
# $tmp/png_stats PNG: width, height, lit pixels, distinct colours (libpng); absent without libpng
build_png_stats() {
    PNG=$(pkg-config --cflags --libs libpng 2>/dev/null) || { absent "libpng missing"; finish; }
    ${CC:-cc} -O1 tests/png_stats.c -o "$tmp/png_stats" $PNG || { bad "png_stats does not build"; finish; }
}
