#!/bin/sh
# Every piece of C a user may copy compiles as C99 and as C++11 with -Wall -Wextra -pedantic
# -Werror, with gcc and clang: each ```c block of README.md and docs/*.md, the complete
# program in nbody.h's manual, and every example program (examples/*.c; the viewer where
# GLFW and OpenGL are installed). Prints one PASS/FAIL line each and a RESULT line.
#
# How a block is compiled:
#   - a block with `int main(` is a complete program and is compiled as it stands;
#   - any other block is a snippet: its preprocessor lines go to the top of the file (the
#     #define NBODY_IMPLEMENTATION of a snippet is dropped: a snippet exercises the
#     interface, the implementation is compiled by the complete programs and the examples),
#     then #include "nbody.h", <stdio.h>, <string.h>, and the rest goes inside main(). A line
#     that is only "..." stands for elided code: the parts around it go into separate
#     blocks { } (each may declare its own names). main() declares, zeroed, the names that
#     snippets use without declaring them: sim, s, sys, system, desc, t_end, argc, argv and
#     a log function my_log. A block that defines NBODY_WITH_MPI is compiled by mpicc as C99
#     (skipped where there is no mpicc). Snippets stop before using what they compute, so they are compiled
#     with -Wno-unused-variable (and -Wno-unused-but-set-variable).
# Examples: clang as C99, g++ and clang++ as C++11, at -O0 (the Makefile's own build of
# examples/ is gcc as C99 with the same warnings at -O2).
# The library's implementation is not compiled again for every program here (it was most of
# this script's time: about 50 compilations of the whole library): clang and clang++ check
# each file whole with -fsyntax-only (clang gives every warning from its front end: the same
# diagnostics as -c), gcc and g++ compile each program's own code with the line
# `#define NBODY_IMPLEMENTATION` blanked (gcc warns from its optimiser's passes too, so it
# compiles; the implementation itself is compiled by gcc and g++ in every configuration by
# tests/compile_matrix.sh, and after each example's own includes by the Makefile's build of
# examples/). A block for NBODY_WITH_MPI keeps its implementation (mpicc compiles it whole).
# The compilations run two at a time (tests/check.sh's job).
cd "$(dirname "$0")/.." || exit 1
. tests/check.sh
W="-Wall -Wextra -pedantic -Werror -I."
have() { command -v "$1" >/dev/null 2>&1; }
OMP=""
printf 'int main(void){return 0;}' | gcc -fopenmp -x c - -o "$tmp/o" 2>/dev/null && OMP=-fopenmp

# own FILE: FILE with its `#define NBODY_IMPLEMENTATION` line blanked (line numbers kept), as
# $tmp/own/NAME; the directory of FILE stays on the include path (examples/example.h)
own() {
    mkdir -p "$tmp/own"
    o="$tmp/own/$(basename "$1")"
    sed 's/^[ \t]*#[ \t]*define[ \t][ \t]*NBODY_IMPLEMENTATION[ \t]*$//' "$1" > "$o"
}
compile() { # what, file, extra flags...: every compiler there is, C99 and C++11 (gcc's C99 not
    what=$1; file=$2; shift 2   # with NO_GCC_C=1: the Makefile builds the examples with it)
    own "$file"
    for c in "gcc -std=c99" "clang -std=c99" "g++ -std=c++11 -x c++" "clang++ -std=c++11 -x c++"; do
        [ "$c" = "gcc -std=c99" ] && [ "${NO_GCC_C:-0}" = 1 ] && continue
        if [ -n "$MPI_BLOCK" ]; then   # a block for NBODY_WITH_MPI: mpicc (C99) alone
            [ "$c" = "gcc -std=c99" ] || continue
            c="mpicc -std=c99"
            if ! have mpicc; then skip=$((skip + 1)); echo "SKIP $what: no mpicc"; continue; fi
            job "$what: $c" $c $W "$@" -c "$file"; continue
        fi
        have "${c%% *}" || continue
        case $c in
            clang*) job "$what: ${c%% -x*}" $c $W "$@" -fsyntax-only "$file";;
            *)      job "$what: ${c%% -x*}" $c $W -I"$(dirname "$file")" "$@" -c "$o";;
        esac
    done
}

# ---- code blocks of the docs
k=0
for md in README.md docs/*.md; do
    [ -f "$md" ] || continue
    awk -v dir="$tmp" -v md="$(echo "$md" | tr '/.' '__')" '
        /^```c[ \t]*$/ { inb = 1; n++; f = dir "/" md "_" n ".blk"; print FNR > (f ".line"); close(f ".line"); next }
        /^```/ { inb = 0; next }
        inb { print > f }
    ' "$md"
done
# the complete program of the manual in nbody.h (indented, between A COMPLETE PROGRAM and BUILD)
awk '/^   A COMPLETE PROGRAM/ { on = 1; next } /^   BUILD/ { on = 0 } on && /^       / { print substr($0, 8) }' nbody.h \
    > "$tmp/nbody_h_manual_1.blk"
echo 17 > "$tmp/nbody_h_manual_1.blk.line"

for blk in "$tmp"/*.blk; do
    [ -s "$blk" ] || continue
    name=$(basename "$blk" .blk)
    what="$(echo "$name" | sed 's/_\([0-9]*\)$/ block \1/') (line $(cat "$blk.line"))"
    src="$tmp/$name.c"
    MPI_BLOCK=$(grep -l 'define NBODY_WITH_MPI' "$blk")
    if grep -q 'int main(' "$blk"; then
        cp "$blk" "$src"
        compile "$what" "$src" $OMP
    else
        {
            # (an MPI block keeps it: <mpi.h> comes in with the implementation)
            if [ -n "$MPI_BLOCK" ]; then grep '^[ \t]*#' "$blk"; else grep '^[ \t]*#' "$blk" | grep -v 'define NBODY_IMPLEMENTATION'; fi
            cat <<'HEAD'
#include "nbody.h"
#include <stdio.h>
#include <string.h>
static void my_log(nbody_log_level level, const char *message, void *user_data) {
    (void)level; (void)message; (void)user_data;
}
int main(int argc, char **argv) {
    nbody_sim *sim = NULL;
    nbody_system s = NBODY_ZERO, sys = NBODY_ZERO, system = NBODY_ZERO;
    nbody_desc desc = NBODY_ZERO;
    nbody_real t_end = 1;
    {
HEAD
            grep -v '^[ \t]*#' "$blk" | sed 's/^[ \t]*\.\.\.[ \t]*$/    }\n    {/'
            cat <<'TAIL'
    }
    (void)argc; (void)argv; (void)sim; (void)s; (void)sys; (void)system; (void)desc; (void)t_end; (void)my_log;
    return 0;
}
TAIL
        } > "$src"
        compile "$what" "$src" -Wno-unused-variable -Wno-unused-but-set-variable
    fi
    k=$((k + 1))
done
echo "compiled $k code blocks of README.md, docs/*.md and nbody.h"

# ---- example programs
MPI_BLOCK=; NO_GCC_C=1
PNG=""; pkg-config --exists libpng 2>/dev/null && PNG="-DNBODY_EX_PNG $(pkg-config --cflags libpng)"
for src in examples/*.c; do
    name=$(basename "$src" .c)
    flags="$OMP $PNG"
    if [ "$name" = viewer ]; then
        if ! pkg-config --exists glfw3 gl 2>/dev/null; then
            skip=$((skip + 1)); echo "SKIP example viewer: GLFW/OpenGL not installed (pkg-config glfw3 gl)"; continue
        fi
        flags="$flags $(pkg-config --cflags glfw3 gl)"
    fi
    compile "example $name" "$src" -O0 $flags
done
report
finish
