#!/bin/sh
# Builds nbody.h with NBODY_WITH_OPENCL (nbody_cl.h) in C99 and C++11, float and double,
# static, gcc and clang, warnings as errors; runs the engine far enough to pick a device.
# Prints one PASS/FAIL line per configuration and a RESULT line for tests/run.sh.
cd "$(dirname "$0")/.." || exit 1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/impl.c" <<'SRC'
#define NBODY_IMPLEMENTATION
#include "nbody.h"
int main(void) {
    static nbody_system s;
    nbody_real a[3];
    nbody_desc d = NBODY__ZERO_INIT;
    nbody_result r = nbody_ic_figure_eight(&s);
    d.engine = NBODY_ENGINE_OPENCL;
    if (r == NBODY_OK) r = nbody_accelerations(&d, &s, a, a, a);
    nbody_system_free(&s);
    return r == NBODY_OK || r == NBODY_ERR_UNAVAILABLE ? 0 : 1;
}
SRC
cp "$tmp/impl.c" "$tmp/impl.cc"
pass=0; fail=0
W="-Wall -Wextra -pedantic -Werror -I. -DNBODY_WITH_OPENCL"
try() { # name, command...
    name=$1; shift
    if "$@" >"$tmp/log" 2>&1 && "$tmp/a.out"; then pass=$((pass + 1)); echo "PASS build: $name"
    else fail=$((fail + 1)); echo "FAIL build: $name"; head -n 5 "$tmp/log"; fi
}
for cc in gcc clang; do
    command -v $cc >/dev/null 2>&1 || continue
    case $cc in gcc) cxx=g++;; clang) cxx=clang++;; esac
    for real in double float; do
        try "opencl $cc c99 $real" $cc -std=c99 $W -DNBODY_REAL=$real "$tmp/impl.c" -o "$tmp/a.out" -lOpenCL -lm
        try "opencl $cxx c++11 $real" $cxx -std=c++11 $W -DNBODY_REAL=$real "$tmp/impl.cc" -o "$tmp/a.out" -lOpenCL -lm
    done
    try "opencl $cc c99 static" $cc -std=c99 $W -DNBODY_STATIC "$tmp/impl.c" -o "$tmp/a.out" -lOpenCL -lm
done
echo "RESULT $pass $fail 0"
