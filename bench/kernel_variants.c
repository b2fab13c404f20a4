/* kernel_variants.c - tuning aid for the BLOCK kernels: single-thread interactions/s of the
   one-sided and the symmetric kernel, from thread CPU time (best of reps; robust on a shared
   machine), for the compile-time parameters given with -D (NBODY__TILE_U, NBODY__SYM_ROWS,
   NBODY__SYM_VECS, NBODY__AVX512_SYM_ROWS, ...), at every SIMD level this CPU runs, or the one
   NBODY_SIMD names; build it once per variant of those macros.
       cc -O2 -fopenmp -I. [-D...] bench/kernel_variants.c -lm && ./a.out [n] [reps] */
#define _POSIX_C_SOURCE 199309L
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include <stdio.h>
#include <time.h>

static double cpu_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv) {
    size_t n = argc > 1 ? (size_t)strtoul(argv[1], NULL, 10) : 8192;
    int reps = argc > 2 ? atoi(argv[2]) : 5, v, r, k;
    const char *only = getenv("NBODY_SIMD");
    nbody_system s = {0};
    nbody_real *a;
    nbody__forces f;
    if (nbody_ic_plummer(&s, n, 1) != NBODY_OK) return 1;
    a = (nbody_real *)malloc(3 * n * sizeof *a);
    if (!a) return 1;
    f.x = s.x; f.y = s.y; f.z = s.z; f.m = s.m; f.ax = a; f.ay = a + n; f.az = a + 2 * n;
    f.n = n; f.G = 1; f.eps2 = (nbody_real)1e-4;
    for (k = NBODY_SIMD_PORTABLE; k < NBODY_SIMD_COUNT_; ++k)
    for (v = 0; v < 2; ++v) {
        double best = 1e30;
        if (!nbody_simd_available((nbody_simd)k) || (only && *only && strcmp(only, nbody__simd_level_name((nbody_simd)k)) != 0)) continue;
        if (k == NBODY_SIMD_PORTABLE && v) continue;   /* one kernel there */
        for (r = 0; r < reps; ++r) {
            double t0 = cpu_seconds(), t;
            nbody__accel_block_kernel(&f, 1, 0, v, (nbody_simd)k);
            t = cpu_seconds() - t0;
            if (t < best) best = t;
        }
        printf("%s %s n=%zu %s: %.3g /s per core\n", nbody__simd_level_name((nbody_simd)k), sizeof(nbody_real) == sizeof(float) ? "float" : "double",
               n, v ? "symmetric" : "one-sided", (double)n * (double)n / best);
    }
    free(a);
    nbody_system_free(&s);
    return 0;
}
