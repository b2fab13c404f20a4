/* cuda_multi.c - several GPUs in one process (desc.devices > 1, NCCL), on a GPU machine with
   at least NBODY_TEST_DEVICES GPUs (default 2): make WITH_CUDA=1 WITH_NCCL=1 build/cuda_multi.
   Against one GPU: the tree's forces bitwise (each GPU walks its slice's leaves as the one
   GPU walks them), the dense engine's to rounding (its source split follows the slice);
   every method, fixed step and adaptive, on the tree to the same bits; nbody_get_state,
   stats; a checkpoint written on several GPUs restarts on one and continues to the same bits.
   Skipped where fewer GPUs are present (failed under NBODY_REQUIRE_CUDA=1). */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include "tests/check.h"
#include <math.h>
#include <cuda_runtime_api.h>

static int devices_ = 2;

/* the largest difference of a body's acceleration, relative to its size: |a_i - b_i| / |b_i|
   over the bodies (a component near zero would otherwise measure only its own cancellation) */
static double rel_diff(const nbody_real *a, const nbody_real *b, size_t len) {
    double worst = 0;
    size_t i, n = len / 3;
    for (i = 0; i < n; ++i) {
        double d2 = 0, b2 = 0, e;
        int c;
        for (c = 0; c < 3; ++c) {
            double d = (double)a[c * n + i] - (double)b[c * n + i];
            d2 += d * d; b2 += (double)b[c * n + i] * (double)b[c * n + i];
        }
        e = sqrt(d2 / (b2 + 1e-300));
        if (!(e <= worst)) worst = e;
    }
    return worst;
}

static void check_forces(size_t n) {
    const int dbl = sizeof(nbody_real) == sizeof(double);
    nbody_system s = {0};
    nbody_real *a, *b;
    int tree;
    nbody_ic_plummer(&s, n, 5);
    a = (nbody_real *)malloc(3 * n * sizeof *a); b = (nbody_real *)malloc(3 * n * sizeof *b);
    for (tree = 0; tree < 2; ++tree) {
        nbody_desc d = NBODY__ZERO_INIT;
        nbody_result ra, rb;
        double e;
        d.engine = tree ? NBODY_ENGINE_CUDA_TREE : NBODY_ENGINE_CUDA; d.softening = (nbody_real)0.01;
        d.block_size = 256;      /* a fixed kernel choice (the one-sided tiles): no tuning on either side */
        d.devices = devices_;
        ra = nbody_accelerations(&d, &s, a, a + n, a + 2 * n);
        d.devices = 0;
        rb = nbody_accelerations(&d, &s, b, b + n, b + 2 * n);
        e = rel_diff(a, b, 3 * n);
        CHECK(ra == NBODY_OK && rb == NBODY_OK && (tree ? !memcmp(a, b, 3 * n * sizeof *a) : e <= (dbl ? 1e-12 : 1e-5)),
              "%d GPUs, %s, n = %lu: %s / %s, largest relative difference %.3g", devices_, nbody_engine_name(d.engine),
              (unsigned long)n, nbody_result_string(ra), nbody_result_string(rb), e);
    }
    free(a); free(b);
    nbody_system_free(&s);
}

static void check_methods(void) {
    const int dbl = sizeof(nbody_real) == sizeof(double);
    nbody_system s0 = {0}, a = {0}, b = {0};
    int m, k;
    nbody_ic_plummer(&s0, 1001, 3);
    nbody_system_alloc(&a, s0.n); nbody_system_alloc(&b, s0.n);
    for (m = 1; m < NBODY_METHOD_COUNT_; ++m)
        for (k = 0; k < 2 && m != NBODY_RADAU && m != NBODY_WHFAST; ++k) {
            /* RADAU at machine precision cannot step over the tree's force discontinuities
               (on one GPU as on two); WHFast needs a dominant body 0 */
            nbody_desc d = NBODY__ZERO_INIT;
            nbody_sim *sa = NULL, *sb = NULL;
            nbody_result ra, rb;
            nbody_stats ta, tb;
            d.engine = NBODY_ENGINE_CUDA_TREE; d.method = (nbody_method)m; d.softening = (nbody_real)0.05;
            d.dt = (nbody_real)2e-3; d.tolerance = k ? (nbody_real)(dbl ? 1e-8 : 1e-4) : 0;
            rb = nbody_create(&sb, &d, &s0);
            if (rb == NBODY_ERR_UNAVAILABLE) break;
            if (rb == NBODY_OK) rb = nbody_advance(sb, (nbody_real)0.05);
            if (rb == NBODY_OK) rb = nbody_get_state(sb, &b);
            d.devices = devices_;
            ra = nbody_create(&sa, &d, &s0);
            if (ra == NBODY_OK) ra = nbody_advance(sa, (nbody_real)0.05);
            if (ra == NBODY_OK) ra = nbody_get_state(sa, &a);
            ta = nbody_get_stats(sa); tb = nbody_get_stats(sb);
            CHECK(ra == NBODY_OK && rb == NBODY_OK && !memcmp(a.x, b.x, s0.n * sizeof *a.x) && !memcmp(a.vz, b.vz, s0.n * sizeof *a.x) &&
                      ta.steps == tb.steps && ta.rejected == tb.rejected,
                  "%d GPUs, cuda-tree, %s%s: %s / %s, steps %llu / %llu", devices_, nbody_method_name(d.method),
                  k ? " adaptive" : "", nbody_result_string(ra), nbody_result_string(rb), ta.steps, tb.steps);
            nbody_destroy(sa); nbody_destroy(sb);
        }
    nbody_system_free(&s0); nbody_system_free(&a); nbody_system_free(&b);
}

static void check_checkpoint(void) {
    nbody_system s0 = {0}, a = {0}, b = {0};
    nbody_desc d = NBODY__ZERO_INIT;
    nbody_sim *sim = NULL, *back = NULL;
    nbody_result r;
    int k;
    nbody_ic_plummer(&s0, 777, 9);
    nbody_system_alloc(&a, s0.n); nbody_system_alloc(&b, s0.n);
    d.engine = NBODY_ENGINE_CUDA_TREE; d.method = NBODY_RKDP; d.tolerance = (nbody_real)1e-6; d.softening = (nbody_real)0.05;
    d.devices = devices_;
    r = nbody_create(&sim, &d, &s0);
    for (k = 0; k < 10 && r == NBODY_OK; ++k) r = nbody_step(sim);
    if (r == NBODY_OK) r = nbody_checkpoint_save(sim, "cuda_multi.ckp");
    for (k = 0; k < 10 && r == NBODY_OK; ++k) r = nbody_step(sim);
    if (r == NBODY_OK) r = nbody_get_state(sim, &a);
    d.devices = 0;
    if (r == NBODY_OK) r = nbody_checkpoint_load(&back, &d, "cuda_multi.ckp");
    for (k = 0; k < 10 && r == NBODY_OK; ++k) r = nbody_step(back);
    if (r == NBODY_OK) r = nbody_get_state(back, &b);
    CHECK(r == NBODY_OK && !memcmp(a.x, b.x, s0.n * sizeof *a.x) && !memcmp(a.vy, b.vy, s0.n * sizeof *a.x),
          "a checkpoint of %d GPUs restarted on one: %s", devices_, nbody_result_string(r));
    nbody_destroy(sim); nbody_destroy(back);
    remove("cuda_multi.ckp");
    nbody_system_free(&s0); nbody_system_free(&a); nbody_system_free(&b);
}

int main(void) {
    int count = 0;
    const char *env = getenv("NBODY_TEST_DEVICES");
    if (env) devices_ = atoi(env);
    if (cudaGetDeviceCount(&count) != cudaSuccess || count < devices_ || devices_ < 2) {
        check_skip("NBODY_REQUIRE_CUDA", "fewer GPUs than NBODY_TEST_DEVICES (default 2)");
        return check_finish();
    }
    check_forces(4099);
    if (getenv("NBODY_TEST_SMALL")) return check_finish();     /* compute-sanitizer: the small case */
    check_forces(100003);
    check_methods();
    check_checkpoint();
    return check_finish();
}
