#!/bin/sh
# Fails on constructs MSVC (cl /W4, C and C++) rejects or warns about in nbody.h, nbody_cl.h
# and the examples' example.h, outside the portability block (>>portability) that spells them
# per compiler: raw _Pragma and #pragma omp; OpenMP beyond MSVC's 2.0 (task, depend,
# taskwait, simd, collapse, min/max reductions) through NBODY__PRAGMA instead of
# NBODY__PRAGMA_OMP4; the restrict keyword; __attribute__ and __builtin_ outside a macro or
# block guarded by __GNUC__/__clang__; variable-length arrays (gcc -Wvla); C11 atomics and
# complex numbers (MSVC's C has neither by default). Then, where clang is installed, builds
# the implementation for x86_64-pc-windows-msvc (clang in MSVC mode, with MinGW-w64's C
# headers: docs/platforms.md says what that does and does not check).
# Prints PASS/FAIL lines and a RESULT line for tests/run.sh.
cd "$(dirname "$0")/.." || exit 1
tmp=$(mktemp -d) || exit 1; trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0; skip=0
ok() { pass=$((pass + 1)); echo "PASS $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; sed -n 1,8p "$tmp/hits"; }
files="nbody.h nbody_cl.h examples/example.h"
# the code without comments and string literals (so prose may name anything); line numbers kept
strip() {
    awk '{
        out = ""; i = 1; n = length($0)
        while (i <= n) {
            c = substr($0, i, 1); c2 = substr($0, i, 2)
            if (inc) { if (c2 == "*/") { inc = 0; i += 2 } else i++; continue }
            if (c2 == "/*") { inc = 1; i += 2; continue }
            if (c2 == "//") break
            if (c == "\"") { out = out "\"\""; i++; while (i <= n && substr($0, i, 1) != "\"") { if (substr($0, i, 1) == "\\") i++; i++ } i++; continue }
            out = out c; i++
        }
        print FILENAME ":" FNR ": " out
    }' "$@"
}
strip $files > "$tmp/code"
# the portability block's lines (where each compiler's spelling is allowed)
block=$(awk '/>>portability  PORTABILITY/ { s = FNR } /#endif \/\* portability \*\// { e = FNR } END { print s ":" e }' nbody.h)
bs=${block%:*}; be=${block#*:}
outside() { awk -v bs="$bs" -v be="$be" -F: '!($1 == "nbody.h" && $2 + 0 >= bs + 0 && $2 + 0 <= be + 0)'; }
check() { # name, extended regex over the stripped code outside the block
    grep -E "$2" "$tmp/code" | outside > "$tmp/hits"
    if [ -s "$tmp/hits" ]; then bad "$1"; else ok "$1"; fi
}
[ -n "$bs" ] && [ -n "$be" ] && ok "nbody.h has its portability block (lines $bs-$be)" || { fail=$((fail + 1)); echo "FAIL no >>portability block"; }
check "no raw _Pragma (NBODY__PRAGMA_RAW: __pragma under MSVC)" '_Pragma'
check "no raw #pragma omp (NBODY__PRAGMA / NBODY__PRAGMA_OMP4)" '#[[:space:]]*pragma[[:space:]]+omp'
check "NBODY__PRAGMA holds OpenMP 2.0 only (task, depend, taskwait, simd, taskloop, collapse: NBODY__PRAGMA_OMP4)" \
    'NBODY__PRAGMA\([^)]*(task|depend|simd|collapse|target|teams|cancel)'
check "no min/max reductions (OpenMP 3.1)" 'reduction\((min|max)[[:space:]]*:'
check "NBODY__PRAGMA_OMP4 holds task, taskwait or simd" 'NBODY__PRAGMA_OMP4\([[:space:]]*omp[[:space:]]+(parallel|for|single|critical|teams|target)'
check "no restrict keyword (NBODY__RESTRICT)" '(^|[^_[:alnum:]])restrict([^_[:alnum:]]|$)'
check "no C11 atomics or complex numbers (_Atomic, stdatomic.h, _Complex, complex.h)" '_Atomic|stdatomic\.h|_Complex|complex\.h'
check "no typeof, statement expressions or case ranges" '(^|[^_[:alnum:]])(typeof|__typeof__)|\(\{|case[^:]*\.\.\.'
# __attribute__ and __builtin_: only inside #if/#elif blocks that name __GNUC__ or __clang__
awk -v bs="$bs" -v be="$be" '
    { split($0, a, ": "); loc = a[1]; split(loc, b, ":"); f = b[1]; ln = b[2] + 0
      line = substr($0, length(loc) + 3) }
    f != pf { depth = 0; pf = f }
    line ~ /^[[:space:]]*#[[:space:]]*if/ { depth++; cond[depth] = line; next }
    line ~ /^[[:space:]]*#[[:space:]]*elif/ { cond[depth] = line; next }
    line ~ /^[[:space:]]*#[[:space:]]*else/ { cond[depth] = "else of " cond[depth]; next }
    line ~ /^[[:space:]]*#[[:space:]]*endif/ { depth--; next }
    line ~ /__attribute__|__builtin_|__asm__/ {
        if (f == "nbody.h" && ln >= bs && ln <= be) next
        guarded = 0
        for (k = 1; k <= depth; k++) if (cond[k] ~ /__GNUC__|__clang__|__CUDACC__|__OPENCL_VERSION__/ && cond[k] !~ /^else of/) guarded = 1
        if (!guarded) print loc ": " line
    }' "$tmp/code" > "$tmp/hits"
if [ -s "$tmp/hits" ]; then bad "__attribute__/__builtin_/__asm__ only where __GNUC__ or __clang__ is tested"; else ok "__attribute__/__builtin_/__asm__ only where __GNUC__ or __clang__ is tested"; fi
# variable-length arrays: the compiler knows
printf '#define NBODY_IMPLEMENTATION\n#include "nbody.h"\nint main(void) { return 0; }\n' > "$tmp/impl.c"
if gcc -std=c99 -Wvla -Werror -fopenmp -I. -fsyntax-only "$tmp/impl.c" > "$tmp/hits" 2>&1; then ok "no variable-length arrays (gcc -Wvla)"; else bad "no variable-length arrays (gcc -Wvla)"; fi
# clang in MSVC mode: C99, C11, C++14, float, OpenMP, static. MinGW-w64's headers stand in
# for MSVC's: -fgnuc-version and a __declspec macro let them through (their _mingw.h
# defines __attribute__ away for compilers that are not GNU), -ffreestanding keeps clang's
# intrin.h from redeclaring their _setjmp.
clangw=$(command -v clang-14 || command -v clang)
inc=$(x86_64-w64-mingw32-gcc -print-sysroot 2>/dev/null)
[ -d "$inc/include" ] || inc=/usr/x86_64-w64-mingw32
if [ -z "$clangw" ] || [ ! -f "$inc/include/stdio.h" ]; then
    skip=$((skip + 1)); echo "SKIP clang in MSVC mode: needs clang and MinGW-w64's headers (gcc-mingw-w64-x86-64)"
else
    cp "$tmp/impl.c" "$tmp/impl.cc"
    M="--target=x86_64-pc-windows-msvc -fms-compatibility -fms-extensions -fms-compatibility-version=19.29 -fgnuc-version=12"
    M="$M -D__declspec=__declspec -ffreestanding -idirafter $inc/include -O1 -Wall -Wextra -pedantic -Werror -Wno-pass-failed -I."
    for cfg in "c99:-std=c99 $tmp/impl.c" "c11:-std=c11 $tmp/impl.c" "c++14:-std=c++14 $tmp/impl.cc" \
               "c11 float:-std=c11 -DNBODY_REAL=float $tmp/impl.c" "c11 long double:-std=c11 -DNBODY_REAL=long\ double $tmp/impl.c" \
               "c11 openmp:-std=c11 -fopenmp $tmp/impl.c" "c++14 openmp float:-std=c++14 -fopenmp -DNBODY_REAL=float $tmp/impl.cc" \
               "c11 static:-std=c11 -DNBODY_STATIC $tmp/impl.c"; do
        name=${cfg%%:*}; args=${cfg#*:}
        # clang gives its warnings from its front end: -fsyntax-only has the same diagnostics
        # in a fraction of the time; two configurations are compiled to objects, so that code
        # generation for the MSVC target runs too (OpenMP's lowering, in C and in C++)
        case $name in "c11 openmp"|"c++14 openmp float") out="-c -o $tmp/impl.obj";; *) out=-fsyntax-only;; esac
        if eval "$clangw $M $args $out" > "$tmp/hits" 2>&1; then ok "clang x86_64-pc-windows-msvc $name"
        else bad "clang x86_64-pc-windows-msvc $name"; fi
    done
fi
# <windows.h> before and after nbody.h (docs/platforms.md promises both): its near, far,
# min and max macros must not meet a name in the implementation. MinGW-w64's windows.h, gcc.
mingw=$(command -v x86_64-w64-mingw32-gcc || true)
if [ -z "$mingw" ]; then
    skip=$((skip + 1)); echo "SKIP <windows.h> with nbody.h: needs MinGW-w64 (gcc-mingw-w64-x86-64)"
else
    printf '#include <windows.h>\n#define NBODY_IMPLEMENTATION\n#include "nbody.h"\nint main(void) { return 0; }\n' > "$tmp/win_first.c"
    printf '#define NBODY_IMPLEMENTATION\n#include "nbody.h"\n#include <windows.h>\nint main(void) { return 0; }\n' > "$tmp/win_after.c"
    for order in first after; do
        if "$mingw" -std=c99 -fopenmp -Wall -Wextra -pedantic -Werror -I. -fsyntax-only "$tmp/win_$order.c" > "$tmp/hits" 2>&1; then
            ok "MinGW-w64: <windows.h> $order, nbody.h's implementation builds"
        else cat "$tmp/hits" | head -5; bad "MinGW-w64: <windows.h> $order, nbody.h's implementation builds"; fi
    done
fi
echo "RESULT $pass $fail $skip"
[ "$fail" -eq 0 ]
