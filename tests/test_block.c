/* test_block.c - the BLOCK engine (explicit SIMD where the build has AVX2/AVX-512) against the
   SIMPLE reference: odd sizes (remainder tiles), softening 0 and > 0, the self term excluded
   by index (coincident distinct bodies give NaN as in SIMPLE), and bitwise independence of
   the thread count and of block_size. Built in double by the Makefile, and in float by the
   rule for build/test_block_float. */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include "tests/check.h"
#include <math.h>

/* round-off bound on max_i |a_block - a_simple| / |a_simple|: a few ulps of cancellation
   over a sum of N terms; the kernels differ only in summation order and 1/sqrt rounding */
#define TOL (sizeof(nbody_real) == sizeof(float) ? 1e-5 : 1e-13)

static nbody_real *accel(nbody_engine engine, int threads, int block, nbody_real eps, const nbody_system *s) {
    nbody_desc d = {0};
    nbody_real *a = (nbody_real *)malloc(3 * s->n * sizeof(nbody_real));
    d.engine = engine; d.threads = threads; d.block_size = block; d.softening = eps;
    if (a && nbody_accelerations(&d, s, a, a + s->n, a + 2 * s->n) != NBODY_OK) { free(a); a = NULL; }
    return a;
}

static double max_rel(const nbody_real *a, const nbody_real *b, size_t n) {
    double worst = 0;
    size_t i;
    for (i = 0; i < n; ++i) {
        double dx = (double)a[i] - (double)b[i], dy = (double)a[n + i] - (double)b[n + i], dz = (double)a[2 * n + i] - (double)b[2 * n + i];
        double ref = sqrt((double)b[i] * b[i] + (double)b[n + i] * b[n + i] + (double)b[2 * n + i] * b[2 * n + i]);
        double e = sqrt(dx * dx + dy * dy + dz * dz) / (ref > 0 ? ref : 1);
        if (!(e <= worst)) worst = e;   /* NaN sticks */
    }
    return worst;
}

static void compare_sizes(void) {
    static const size_t sizes[] = {1, 2, 3, 7, 1000, 4099, 16411};
    static const double eps[] = {0, 0.01};
    size_t k, e;
    for (k = 0; k < sizeof sizes / sizeof *sizes; ++k) {
        for (e = 0; e < 2; ++e) {
            nbody_system s = {0};
            nbody_real *ref, *blk;
            if (sizes[k] >= 16411 && e == 0) continue;   /* one large case is enough */
            nbody_ic_plummer(&s, sizes[k], 7 + k);
            ref = accel(NBODY_ENGINE_SIMPLE, 1, 0, (nbody_real)eps[e], &s);
            blk = accel(NBODY_ENGINE_BLOCK, 2, 0, (nbody_real)eps[e], &s);
            CHECK(ref && blk, "n=%zu: engines ran", sizes[k]);
            if (ref && blk) {
                double err = max_rel(blk, ref, s.n);
                CHECK(err <= TOL, "n=%zu eps=%g: block vs simple max relative %.3g > %.3g", sizes[k], eps[e], err, TOL);
                if (sizes[k] == 1) CHECK(blk[0] == 0 && blk[1] == 0 && blk[2] == 0, "a lone body feels no force");
                printf("n=%-6zu eps=%-5g block vs simple: max relative %.3g\n", sizes[k], eps[e], err);
            }
            free(ref); free(blk); nbody_system_free(&s);
        }
    }
}

/* bitwise: 1 thread vs 2 and 3 threads, and automatic vs odd block sizes */
static void thread_independence(void) {
    nbody_system s = {0};
    nbody_real *a1, *a2, *a3, *b7;
    size_t n = 4099;
    nbody_ic_plummer(&s, n, 3);
    a1 = accel(NBODY_ENGINE_BLOCK, 1, 0, (nbody_real)0.01, &s);
    a2 = accel(NBODY_ENGINE_BLOCK, 2, 0, (nbody_real)0.01, &s);
    a3 = accel(NBODY_ENGINE_BLOCK, 3, 40, (nbody_real)0.01, &s);
    b7 = accel(NBODY_ENGINE_BLOCK, 2, 7, (nbody_real)0.01, &s);
    CHECK(a1 && a2 && a3 && b7, "engines ran");
    if (a1 && a2 && a3 && b7) {
        CHECK(memcmp(a1, a2, 3 * n * sizeof(nbody_real)) == 0, "1 and 2 threads differ bitwise");
        CHECK(memcmp(a1, a3, 3 * n * sizeof(nbody_real)) == 0, "1 and 3 threads (block 40) differ bitwise");
        CHECK(memcmp(a1, b7, 3 * n * sizeof(nbody_real)) == 0, "block_size 0 and 7 differ bitwise");
    }
    free(a1); free(a2); free(a3); free(b7); nbody_system_free(&s);
}

/* softening 0: bodies 1 and 5 coincide -> NaN on both, as SIMPLE; the others stay finite
   only in SIMPLE's sense (they also see the NaN-free pairs), so compare the NaN pattern */
static void coincident_bodies(void) {
    nbody_system s = {0};
    nbody_real *ref, *blk;
    size_t i, n = 37;
    int same = 1;
    nbody_ic_uniform_cube(&s, n, 5);
    s.x[5] = s.x[1]; s.y[5] = s.y[1]; s.z[5] = s.z[1];
    ref = accel(NBODY_ENGINE_SIMPLE, 1, 0, 0, &s);
    blk = accel(NBODY_ENGINE_BLOCK, 2, 0, 0, &s);
    CHECK(ref && blk, "engines ran");
    if (ref && blk) {
        for (i = 0; i < 3 * n; ++i) same &= (ref[i] != ref[i]) == (blk[i] != blk[i]);
        CHECK(blk[1] != blk[1] && blk[5] != blk[5], "coincident bodies with softening 0 give NaN");
        CHECK(blk[0] == blk[0], "a body apart from the pair stays finite");
        CHECK(same, "NaN pattern equals SIMPLE's");
    }
    free(ref); free(blk); nbody_system_free(&s);
}

int main(void) {
    printf("BLOCK engine: %s, %s\n", NBODY__SIMD_ISA, sizeof(nbody_real) == sizeof(float) ? "float" : "double");
    if (!NBODY__SIMD) check_skip(NULL, "this build has no AVX2/AVX-512: the portable loop is what is tested");
    compare_sizes();
    thread_independence();
    coincident_bodies();
    return check_finish();
}
