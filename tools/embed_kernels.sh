#!/bin/sh
# Writes the OpenCL program into nbody_cl.h as a byte array, between the lines
# "/* BEGIN EMBEDDED kernels.cl" and "/* END EMBEDDED kernels.cl */" (a byte array because
# one string literal breaks -pedantic past 4095 characters). The program is nbody.h's block of
# shared formulas (the lines "/* BEGIN SHARED FORMULAS */" to "/* END SHARED FORMULAS */"),
# then kernels.cl. Only od and awk are needed.
#   sh tools/embed_kernels.sh [kernels.cl [nbody_cl.h [output [nbody.h]]]]   (output defaults to nbody_cl.h)
src=${1:-kernels.cl}; host=${2:-nbody_cl.h}; out=${3:-$host}; formulas=${4:-nbody.h}
[ -r "$src" ] && [ -r "$host" ] && [ -r "$formulas" ] || { echo "embed_kernels: cannot read $src, $host or $formulas" >&2; exit 1; }
tmp=$(mktemp) || exit 1
prog=$(mktemp) || { rm -f "$tmp"; exit 1; }
trap 'rm -f "$tmp" "$prog"' EXIT
awk '/^\/\* BEGIN SHARED FORMULAS \*\/$/ { on = 1; found = 1 }
     on { print }
     /^\/\* END SHARED FORMULAS \*\/$/ { if (on) ended = 1; on = 0 }
     END { if (!found || !ended) { print "embed_kernels: no SHARED FORMULAS block in '"$formulas"'" > "/dev/stderr"; exit 1 } }' \
    "$formulas" > "$prog" || exit 1
cat "$src" >> "$prog" || exit 1
od -An -v -tu1 "$prog" | awk -v host="$host" '
    { for (i = 1; i <= NF; ++i) bytes[n++] = $i }
    END {
        while ((getline line < host) > 0) {
            if (skip && line ~ /^\/\* END EMBEDDED kernels\.cl/) skip = 0
            if (skip) continue
            print line
            if (line ~ /^\/\* BEGIN EMBEDDED kernels\.cl/) {
                found = 1; skip = 1
                print "static const unsigned char nbody__cl_source[] = {"
                row = ""
                for (i = 0; i < n; ++i) {
                    row = row bytes[i] ","
                    if (length(row) > 92) { print "    " row; row = "" }
                }
                print "    " row "0};"
            }
        }
        if (!found) { print "embed_kernels: no BEGIN EMBEDDED line in " host > "/dev/stderr"; exit 1 }
    }' > "$tmp" || exit 1
cat "$tmp" > "$out"
