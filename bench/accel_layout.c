/* accel_layout.c - BLOCK's nbody_accelerations against where the caller's arrays lie: a CPU
   engine reads the positions and writes the outputs in place, so their addresses are the
   caller's heap's. The system is laid out as nbody_system_alloc does (x, y, z, vx, vy, vz, m one
   after another, n reals apart) at 0, 16, 32 or 48 bytes past a page boundary, the three outputs
   n reals apart at 0, 16, 32 or 48 bytes past another; the best and median time of an evaluation
   for each of the 16 layouts. The same bodies and the same bits in every layout. Built for Linux
   and for Windows alike and run under Wine, it shows whether the two builds differ at the same
   addresses or only because their heaps place the arrays differently:
       cc -O2 -ffp-contract=off -fopenmp -I. [-DNBODY_REAL=float] bench/accel_layout.c -lm && ./a.out [n] [reps] [threads]
   One line a layout: "LAYOUT float avx512 N=4096 threads=2 positions+16 outputs+48: best 1.4 median 1.5 ms". */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include <stdio.h>

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    size_t n = argc > 1 ? (size_t)atol(argv[1]) : 4096, bytes;
    int reps = argc > 2 ? atoi(argv[2]) : 15, threads = argc > 3 ? atoi(argv[3]) : 2, r, at;
    nbody_system ic, s;
    nbody_desc d;
    nbody_sim *sim = NULL;
    char *arena, *page;
    double *t;
    if (n < 2 || reps < 1) return 1;
    memset(&ic, 0, sizeof ic); memset(&d, 0, sizeof d);
    bytes = n * sizeof(nbody_real);
    arena = (char *)malloc(7 * bytes + 3 * bytes + 4 * 4096);
    t = (double *)malloc((size_t)reps * sizeof *t);
    if (!arena || !t || nbody_ic_plummer(&ic, n, 2026) != NBODY_OK) return 1;
    page = arena + (4096 - (size_t)arena % 4096) % 4096;
    d.engine = NBODY_ENGINE_BLOCK; d.threads = threads; d.softening = (nbody_real)0.01;
    if (nbody_create(&sim, &d, &ic) != NBODY_OK) return 1;   /* for the SIMD level's name */
    for (at = 0; at < 16; ++at) {   /* the positions at at / 4 * 16 bytes past a page, the outputs at at % 4 * 16 */
        size_t px = (size_t)(at / 4) * 16, pa = (size_t)(at % 4) * 16;
        nbody_real *a = (nbody_real *)(void *)(page + (7 * bytes + 4095) / 4096 * 4096 + 4096 + pa);
        s = ic;   /* the same bodies, copied */
        s.x = (nbody_real *)(void *)(page + px); s.y = s.x + n; s.z = s.y + n; s.vx = s.z + n; s.vy = s.vx + n; s.vz = s.vy + n; s.m = s.vz + n;
        memcpy(s.x, ic.x, bytes); memcpy(s.y, ic.y, bytes); memcpy(s.z, ic.z, bytes);
        memcpy(s.vx, ic.vx, bytes); memcpy(s.vy, ic.vy, bytes); memcpy(s.vz, ic.vz, bytes); memcpy(s.m, ic.m, bytes);
        for (r = 0; r < reps; ++r) {
            double t0 = nbody__wall_seconds();
            if (nbody_accelerations(&d, &s, a, a + n, a + 2 * n) != NBODY_OK) return 1;
            t[r] = nbody__wall_seconds() - t0;
        }
        qsort(t, (size_t)reps, sizeof *t, by_value);
        printf("LAYOUT %s %s N=%lu threads=%d positions+%lu outputs+%lu: best %.3f median %.3f ms\n",
               sizeof(nbody_real) == sizeof(float) ? "float" : "double", nbody_simd_name(sim), (unsigned long)n, threads,
               (unsigned long)px, (unsigned long)pa, t[0] * 1e3, t[reps / 2] * 1e3);
    }
    nbody_destroy(sim); nbody_system_free(&ic); free(arena); free(t);
    return 0;
}
