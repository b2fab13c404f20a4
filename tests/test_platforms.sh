#!/bin/sh
# The same bits on every platform (docs/determinism.md): tests/test_determinism.c built
# natively and for aarch64 (run under qemu-aarch64), wasm32 (emscripten, run under node) and
# Windows (MinGW-w64, run under Wine); each run's own checks must pass and its "HASH name
# value" lines (every initial condition's bodies, every deterministic trajectory's final
# state) must equal the native run's, line for line. A platform whose tools are absent is
# skipped, failed instead under NBODY_REQUIRE_PLATFORMS=1 (CI). Prints
# "RESULT passed failed skipped": one check for each platform's own run, one for its hashes.
cd "$(dirname "$0")/.." || exit 1
BUILD=${BUILD:-build}
MAKE=${MAKE:-make}
export WINEDEBUG=-all                                     # Wine: no debug chatter
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0; skip=0

# run NAME RUNNER PROGRAM: its own checks, then its hashes against the native ones
run() {
    name=$1; runner=$2; prog=$3
    $runner "./$prog" >"$tmp/$name.out" 2>&1; rc=$?
    tr -d '\r' <"$tmp/$name.out" >"$tmp/$name.txt"       # Wine's stdout ends lines with CR LF
    res=$(grep '^RESULT ' "$tmp/$name.txt" | tail -n 1)
    if [ "$rc" -eq 0 ] && [ -n "$res" ]; then pass=$((pass + 1)); echo "$name: test_determinism $res"
    else fail=$((fail + 1)); echo "FAIL $name: test_determinism exited with $rc ($res)"; grep '^FAIL' "$tmp/$name.txt" | head -n 5; fi
    grep '^HASH ' "$tmp/$name.txt" >"$tmp/$name.hash"
    if [ "$name" = native ]; then return; fi
    if [ -s "$tmp/$name.hash" ] && cmp -s "$tmp/native.hash" "$tmp/$name.hash"; then
        pass=$((pass + 1)); echo "$name: $(wc -l <"$tmp/$name.hash") hashes equal to the native ones"
    else
        fail=$((fail + 1)); echo "FAIL $name: hashes differ from the native ones (< native, > $name):"
        diff "$tmp/native.hash" "$tmp/$name.hash" | head -n 20
    fi
}
absent() {
    if [ "${NBODY_REQUIRE_PLATFORMS:-0}" = 1 ]; then fail=$((fail + 1)); echo "FAIL (required by NBODY_REQUIRE_PLATFORMS) $*"
    else skip=$((skip + 1)); echo "SKIP $*"; fi
}
# build PLATFORM TARGET: make's rule for the target (the Makefile's cross sections)
build() {
    $MAKE --no-print-directory BUILD="$BUILD" "$2" >"$tmp/$1.log" 2>&1 && return 0
    cat "$tmp/$1.log"; fail=$((fail + 1)); echo "FAIL $1: $2 does not build"; return 1
}
have() { for c in "$@"; do command -v "$c" >/dev/null 2>&1 || return 1; done; }

build native "$BUILD/test_determinism" || { echo "RESULT $pass $fail $skip"; exit 1; }
run native "" "$BUILD/test_determinism"
if have "${ARM64_CC:-aarch64-linux-gnu-gcc}" qemu-aarch64; then
    build arm64 "$BUILD/arm64/test_determinism" && run aarch64-qemu "qemu-aarch64 -L ${ARM64_SYSROOT:-/usr/aarch64-linux-gnu}" "$BUILD/arm64/test_determinism"
else absent "aarch64: no aarch64-linux-gnu-gcc or qemu-aarch64 (Debian: gcc-aarch64-linux-gnu qemu-user)"; fi
if have "${EMCC:-emcc}" node; then
    build wasm "$BUILD/wasm/test_determinism.js" && run wasm32-node "node --no-experimental-fetch" "$BUILD/wasm/test_determinism.js"
else absent "wasm32: no emcc or node (Debian: emscripten nodejs)"; fi
if have "${WIN_CC:-x86_64-w64-mingw32-gcc}" wine; then       # in make test-windows' Wine prefix
    export WINEPREFIX="$(pwd)/$BUILD/windows/wineprefix"
    build windows "$BUILD/windows/test_determinism.exe" && run windows-wine wine "$BUILD/windows/test_determinism.exe"
else absent "windows: no x86_64-w64-mingw32-gcc or wine (Debian: gcc-mingw-w64-x86-64 wine)"; fi
echo "RESULT $pass $fail $skip"
[ "$fail" -eq 0 ]
