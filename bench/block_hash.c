/* block_hash.c - the BLOCK kernels' bits, one hash per SIMD level over 368 cases (n = 1..2100, softening
   0 and 0.01, n_active, 1 and 2 threads, block_size 0 and 64): run before and after a change to
   the kernels, natively, under qemu-aarch64 and node, to show that each level gives the same bits.
       cc -O2 -ffp-contract=off -fopenmp -I. [-DNBODY_REAL=float] bench/block_hash.c -lm && ./a.out */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static unsigned long long fnv(unsigned long long h, const void *p, size_t n) {
    const unsigned char *c = (const unsigned char *)p; size_t i;
    for (i = 0; i < n; ++i) { h ^= c[i]; h *= 1099511628211ULL; }
    return h;
}
int main(void) {
    static const size_t ns[] = {1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 129, 257, 700, 1100, 2100};
    static const nbody_simd lv[] = {NBODY_SIMD_PORTABLE, NBODY_SIMD_AVX2, NBODY_SIMD_AVX512, NBODY_SIMD_NEON, NBODY_SIMD_SIMD128};
    static const char *lvn[] = {"portable", "avx2", "avx512", "neon", "simd128"};
    size_t l, k; int e, a, t, b;
    for (l = 0; l < 5; ++l) {
        unsigned long long h = 1469598103934665603ULL; int cases = 0, fails = 0;
        for (k = 0; k < sizeof ns / sizeof *ns; ++k)
            for (e = 0; e < 2; ++e) for (a = 0; a < 2; ++a) for (t = 1; t <= 2; ++t) for (b = 0; b < 2; ++b) {
                nbody_system s = {0}; nbody_desc d = {0}; size_t n = ns[k];
                nbody_real *acc = (nbody_real *)calloc(3 * n, sizeof *acc);
                if (nbody_ic_plummer(&s, n, 7 + (unsigned)n) != NBODY_OK) return 1;
                d.engine = NBODY_ENGINE_BLOCK; d.simd = lv[l]; d.threads = t; d.softening = e ? (nbody_real)0.01 : 0;
                d.n_active = a ? (n + 1) / 2 : 0; d.block_size = b ? 64 : 0;

                if (nbody_accelerations(&d, &s, acc, acc + n, acc + 2 * n) != NBODY_OK) { ++fails; }
                else { h = fnv(h, acc, 3 * n * sizeof *acc); ++cases; }
                nbody_system_free(&s); free(acc);
            }
        printf("%s %s cases=%d refused=%d hash=%016llx\n", sizeof(nbody_real) == 4 ? "float" : "double", lvn[l], cases, fails, h);
    }
    return 0;
}
