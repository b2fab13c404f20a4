#!/bin/sh
# Fails when the OpenCL program embedded in nbody_cl.h (nbody.h's shared formulas, then
# kernels.cl) is stale (fix: make embed).
# Prints a RESULT line for tests/run.sh.
cd "$(dirname "$0")/.." || exit 1
tmp=$(mktemp) || exit 1; trap 'rm -f "$tmp"' EXIT
if sh tools/embed_kernels.sh kernels.cl nbody_cl.h "$tmp" nbody.h && cmp -s "$tmp" nbody_cl.h; then
    echo "PASS nbody_cl.h embeds the current kernels.cl and shared formulas"; echo "RESULT 1 0 0"
else
    echo "FAIL nbody_cl.h embeds a stale kernels.cl or shared formulas (nbody.h): run 'make embed' and commit nbody_cl.h"; echo "RESULT 0 1 0"
fi
