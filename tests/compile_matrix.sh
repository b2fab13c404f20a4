#!/bin/sh
# Builds the header in every configuration the style guide names, warnings as errors, and runs
# each build; two at a time (tests/check.sh's job). Prints a FAIL line per configuration that
# fails and a RESULT line for tests/run.sh.
# gcc and g++ build and run every configuration at -O0 (gcc warns from its optimiser's passes
# too: control reaching the end of a function, unused static functions, uninitialised
# variables, so only a compilation gives all of its diagnostics). clang and clang++ check every
# configuration with -fsyntax-only: clang gives all of its warnings from its front end, so
# these are the same diagnostics as -c at a fraction of the time (the implementation's
# code generation was most of this script's time), and the gcc builds run each configuration;
# one clang and one clang++ configuration are built at -O2 and run (the warnings only the
# optimiser gives: a loop the vectoriser was told to vectorise and could not, -Wpass-failed).
# gcc's own -O2 builds are the Makefile's: every test program in double, float and long double.
cd "$(dirname "$0")/.." || exit 1
. tests/check.sh
JOB_RUN=1
cat > "$tmp/impl.c" <<'SRC'
#define NBODY_IMPLEMENTATION
#include "nbody.h"
int main(void) { static nbody_system s; int r = nbody_ic_figure_eight(&s); nbody_system_free(&s); return r; }
SRC
cat > "$tmp/hooks.c" <<'SRC'
#include <stdlib.h>
static int calls;
static void *my_malloc(size_t n) { calls++; return malloc(n); }
#define NBODY_MALLOC(n) my_malloc(n)
#define NBODY_REALLOC(p, n) realloc(p, n)
#define NBODY_FREE(p) free(p)
#define NBODY_ASSERT(x) ((void)0)
#define NBODY_IMPLEMENTATION
#include "nbody.h"
int main(void) { static nbody_system s; nbody_ic_figure_eight(&s); nbody_system_free(&s); return calls == 1 ? 0 : 1; }
SRC
cp "$tmp/impl.c" "$tmp/impl.cc"
cp "$tmp/hooks.c" "$tmp/hooks.cc"
W="-Wall -Wextra -pedantic -Werror -I."
# try NAME COMMAND...: built as job's FILE and run (gcc), checked with -fsyntax-only (clang)
try() {
  name=$1; shift
  case $1 in
    clang*)   # (without the libraries: a linker input unused is an error under -Werror)
      for a; do shift; case $a in -l*) ;; *) set -- "$@" "$a";; esac; done
      JOB_RUN=0; job "check: $name" "$@" -fsyntax-only; JOB_RUN=1;;
    *) job "build: $name" "$@";;
  esac
}
for cc in gcc clang; do
  command -v $cc >/dev/null 2>&1 || continue
  case $cc in gcc) cxx=g++;; clang) cxx=clang++;; esac
  if [ $cc = clang ]; then
    comp=; echo 'int main(void){return 0;}' | clang -fopenmp -x c - -o "$tmp/o" 2>/dev/null && comp=-fopenmp
    job "build: clang c99 -O2 $comp double" clang -std=c99 $W -O2 $comp "$tmp/impl.c" -lm
    job "build: clang++ c++11 -O2 float" clang++ -std=c++11 $W -O2 -DNBODY_REAL=float "$tmp/impl.cc" -lm
  fi
  for omp in "" "-fopenmp"; do
    [ "$cc" = clang ] && [ -n "$omp" ] && ! echo 'int main(void){return 0;}' | $cc -fopenmp -x c - -o "$tmp/o" 2>/dev/null && continue
    for real in double float; do
      try "$cc c99 $omp $real" $cc -std=c99 $W $omp -DNBODY_REAL=$real "$tmp/impl.c" -lm
      try "$cxx c++11 $omp $real" $cxx -std=c++11 $W $omp -DNBODY_REAL=$real "$tmp/impl.cc" -lm
    done
    try "$cc c99 $omp static" $cc -std=c99 $W $omp -DNBODY_STATIC "$tmp/impl.c" -lm
    try "$cc c99 $omp long double" $cc -std=c99 $W $omp "-DNBODY_REAL=long double" "$tmp/impl.c" -lm
    try "$cc c99 $omp allocator hooks" $cc -std=c99 $W $omp "$tmp/hooks.c" -lm
    try "$cxx c++11 $omp allocator hooks" $cxx -std=c++11 $W $omp "$tmp/hooks.cc" -lm
  done
done
# ---- OpenCL engines (nbody_cl.h) wherever CL/cl.h and -lOpenCL work
if printf '#define CL_TARGET_OPENCL_VERSION 120\n#include <CL/cl.h>\nint main(void){cl_uint n; return (int)clGetPlatformIDs(0, 0, &n);}\n' |
        cc -x c - -o "$tmp/o" -lOpenCL >/dev/null 2>&1; then
  for cc in gcc clang; do
    command -v $cc >/dev/null 2>&1 || continue
    case $cc in gcc) cxx=g++;; clang) cxx=clang++;; esac
    for real in double float; do
      try "$cc c99 opencl $real" $cc -std=c99 $W -DNBODY_WITH_OPENCL -DNBODY_REAL=$real "$tmp/impl.c" -lOpenCL -lm
      try "$cxx c++11 opencl $real" $cxx -std=c++11 $W -DNBODY_WITH_OPENCL -DNBODY_REAL=$real "$tmp/impl.cc" -lOpenCL -lm
    done
    try "$cc c99 opencl static" $cc -std=c99 $W -DNBODY_WITH_OPENCL -DNBODY_STATIC "$tmp/impl.c" -lOpenCL -lm
  done
fi
report
finish
