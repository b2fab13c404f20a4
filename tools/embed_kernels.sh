#!/bin/sh
# Writes kernels.cl into nbody_cl.h as a byte array, between the lines
# "/* BEGIN EMBEDDED kernels.cl" and "/* END EMBEDDED kernels.cl */" (a byte array because
# one string literal breaks -pedantic past 4095 characters). Only od and awk are needed.
#   sh tools/embed_kernels.sh [kernels.cl [nbody_cl.h [output]]]   (output defaults to nbody_cl.h)
src=${1:-kernels.cl}; host=${2:-nbody_cl.h}; out=${3:-$host}
[ -r "$src" ] && [ -r "$host" ] || { echo "embed_kernels: cannot read $src or $host" >&2; exit 1; }
tmp=$(mktemp) || exit 1
od -An -v -tu1 "$src" | awk -v host="$host" '
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
    }' > "$tmp" || { rm -f "$tmp"; exit 1; }
cat "$tmp" > "$out"; rm -f "$tmp"
