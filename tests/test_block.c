/* test_block.c - the BLOCK engine (explicit SIMD where the build has AVX2/AVX-512), both its
   kernels (one-sided, and symmetric: each pair once, CUDA Handbook ch. 14) against the SIMPLE
   reference and against a long double sum: odd sizes (remainder tiles and blocks), softening
   0 and > 0, the self term excluded by index (coincident distinct bodies give NaN as in
   SIMPLE, also when they fall in different blocks), bitwise independence of the thread
   count (for a given block_size; the symmetric schedule's task order and waits), desc.block_size honoured (several sizes agree with SIMPLE)
   and refused outside its range with nothing created, test particles (desc.n_active: the
   level's one-sided tiles over the active bodies) equal to the full sum with their masses set
   to zero and to SIMPLE's; at every SIMD level this build and CPU run (portable, AVX2,
   AVX-512, NEON, SIMD128: desc.simd). Built in double by the Makefile, and in float by the rule for
   build/test_block_float. The references (SIMPLE's sums, the long double sums) do not depend on
   the level: each is computed once per case and shared by the levels. */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include "tests/check.h"
#include <math.h>

/* round-off bound on max_i |a_block - a_simple| / |a_simple|: a few ulps of cancellation
   over a sum of N terms; the kernels differ only in summation order and 1/sqrt rounding */
#define TOL (sizeof(nbody_real) == sizeof(float) ? 1e-5 : 1e-13)

static nbody_simd level;          /* the SIMD level under test */

/* NBODY_TEST_QUICK (the Makefile's emulated and instrumented builds: qemu-aarch64, node,
   Wine, AddressSanitizer) leaves out the largest systems, whose time there is minutes (every
   pair's floating point is emulated under qemu): each case is the smallest system that takes
   the same paths. BIG bodies is then 1031 (a prime): above NBODY__BLOCK_PARALLEL_N (the
   threaded schedules), partial tiles at every width, several symmetric blocks (8 automatic;
   17 of 64 bodies: an odd count, the phantom player; 11 of 96). The test particles: MID_TP
   bodies with 49 active (partial tiles of targets and of sources, one thread: 49 (n - 49) <
   1024^2) and BIG_TP with NA_TP active (the threaded path of few sources and many targets:
   NA_TP < 1024 and NA_TP (BIG_TP - NA_TP) >= 1024^2); their cost is the full n^2 sum they are
   compared with (36 and 25 million pairs at 6007 and 5001 bodies, every level; 4.2 and 1
   million at 2053 and 1003). So every path of every level still runs, with the same
   assertions and tolerances; native builds run every case. */
#ifdef NBODY_TEST_QUICK
#define BIG 1031
#define MID_TP 1003
#define BIG_TP 2053                /* test particles: 1001 (2053 - 1001) >= 1024^2, still threaded */
#define NA_TP 1001
#else
#define BIG 4099
#define MID_TP 5001
#define BIG_TP 20011
#define NA_TP 203
#endif

static nbody_real *accel(nbody_engine engine, int threads, int block, nbody_real eps, const nbody_system *s) {
    nbody_desc d = {0};
    nbody_real *a = (nbody_real *)malloc(3 * s->n * sizeof(nbody_real));
    d.engine = engine; d.threads = threads; d.block_size = block; d.softening = eps; d.simd = level;
    if (a && nbody_accelerations(&d, s, a, a + s->n, a + 2 * s->n) != NBODY_OK) { free(a); a = NULL; }
    return a;
}

/* the references of a case (system seed, n, softening): SIMPLE's accelerations and, with
   want_exact, the long double sums; computed on first use, kept for the other levels, freed
   by free_references */
typedef struct reference { size_t n; unsigned seed; nbody_real eps; nbody_real *simple; long double *exact; } reference;
static reference refs[32];
static size_t nrefs;
static long double *exact(nbody_real eps, const nbody_system *s);
static nbody_real *accel(nbody_engine engine, int threads, int block, nbody_real eps, const nbody_system *s);
static reference *reference_of(const nbody_system *s, unsigned seed, nbody_real eps, int want_exact) {
    size_t k;
    reference *r = NULL;
    for (k = 0; k < nrefs && !r; ++k)
        if (refs[k].n == s->n && refs[k].seed == seed && refs[k].eps == eps) r = &refs[k];
    if (!r && nrefs < sizeof refs / sizeof *refs) {
        r = &refs[nrefs++];
        r->n = s->n; r->seed = seed; r->eps = eps; r->exact = NULL;
        r->simple = accel(NBODY_ENGINE_SIMPLE, 1, 0, eps, s);
    }
    if (r && want_exact && !r->exact) r->exact = exact(eps, s);
    return r;
}
static void free_references(void) {
    size_t k;
    for (k = 0; k < nrefs; ++k) { free(refs[k].simple); free(refs[k].exact); }
    nrefs = 0;
}

/* one of the BLOCK engine's kernels directly (G = 1): 0 one-sided, 1 symmetric */
static nbody_real *kernel(int symmetric, int threads, nbody_real eps, const nbody_system *s) {
    nbody_real *a = (nbody_real *)malloc(3 * s->n * sizeof(nbody_real));
    nbody__forces f;
    if (!a) return NULL;
    f.x = s->x; f.y = s->y; f.z = s->z; f.m = s->m; f.ax = a; f.ay = a + s->n; f.az = a + 2 * s->n;
    f.n = s->n; f.G = 1; f.eps2 = eps * eps;
    nbody__accel_block_kernel(&f, threads, 0, symmetric, level);
    return a;
}

/* the accelerations summed in long double: the reference for the accuracy of each engine, for
   every exact_stride(n)-th body (about 256 of them, spread over the whole system): 256 n
   long double pairs instead of n^2, which where long double is binary128 in software (ARM64,
   wasm32) took most of the test's time; the engines' errors are compared on those bodies */
static size_t exact_stride(size_t n) { return n > 256 ? n / 256 : 1; }
static long double *exact(nbody_real eps, const nbody_system *s) {
    size_t i, j, n = s->n;
    long double *a = (long double *)calloc(3 * n, sizeof(long double)), e2 = (long double)eps * eps;
    for (i = 0; a && i < n; i += exact_stride(n))
        for (j = 0; j < n; ++j) {
            long double dx = (long double)s->x[j] - s->x[i], dy = (long double)s->y[j] - s->y[i];
            long double dz = (long double)s->z[j] - s->z[i], r2 = dx * dx + dy * dy + dz * dz + e2, w;
            if (j == i) continue;
            w = s->m[j] / (r2 * sqrtl(r2));
            a[i] += w * dx; a[n + i] += w * dy; a[2 * n + i] += w * dz;
        }
    return a;
}

/* max_i |a_i - b_i| / |b_i| over every step-th body, in long double (b is the reference) */
#define MAX_REL(a, b, n, step) do {                                                             \
        size_t i_;                                                                              \
        worst = 0;                                                                              \
        for (i_ = 0; i_ < (n); i_ += (step)) {                                                  \
            long double dx = (long double)(a)[i_] - (b)[i_], dy = (long double)(a)[(n) + i_] - (b)[(n) + i_]; \
            long double dz = (long double)(a)[2 * (n) + i_] - (b)[2 * (n) + i_];                 \
            long double r = sqrtl((long double)(b)[i_] * (b)[i_] + (long double)(b)[(n) + i_] * (b)[(n) + i_] \
                                  + (long double)(b)[2 * (n) + i_] * (b)[2 * (n) + i_]);         \
            double e = (double)(sqrtl(dx * dx + dy * dy + dz * dz) / (r > 0 ? r : 1));          \
            if (!(e <= worst)) worst = e;   /* NaN sticks */                                    \
        }                                                                                       \
    } while (0)

static double max_rel(const nbody_real *a, const nbody_real *b, size_t n) {
    double worst;
    MAX_REL(a, b, n, 1);
    return worst;
}
static double max_rel_exact(const nbody_real *a, const long double *b, size_t n) {
    double worst;
    MAX_REL(a, b, n, exact_stride(n));
    return worst;
}

/* the engine (default kernel) and both kernels vs SIMPLE to round-off; against the long
   double sum, each kernel at least as accurate as SIMPLE (up to a factor 2: other order) */
static void compare_sizes(void) {
#ifdef NBODY_TEST_QUICK
    static const size_t sizes[] = {1, 2, 3, 7, 1000, BIG};
#else
    static const size_t sizes[] = {1, 2, 3, 7, 1000, 2053, BIG, 16411};
#endif
    static const double eps[] = {0, 0.01};
    size_t k, e;
    int v;
    for (k = 0; k < sizeof sizes / sizeof *sizes; ++k) {
        for (e = 0; e < 2; ++e) {
            nbody_system s = {0};
            nbody_real *ref, *blk, *var[2];
            long double *ex;
            reference *R;
            if (sizes[k] >= 16411 && e == 0) continue;   /* one large case is enough */
            nbody_ic_plummer(&s, sizes[k], 7 + k);
            R = reference_of(&s, (unsigned)(7 + k), (nbody_real)eps[e], sizes[k] >= 1000);
            ref = R ? R->simple : NULL; ex = R ? R->exact : NULL;
            blk = accel(NBODY_ENGINE_BLOCK, 2, 0, (nbody_real)eps[e], &s);
            var[0] = kernel(0, 2, (nbody_real)eps[e], &s);
            var[1] = kernel(1, 2, (nbody_real)eps[e], &s);
            CHECK(ref && blk && var[0] && var[1], "n=%zu: engines ran", sizes[k]);
            if (ref && blk && var[0] && var[1]) {
                double err = max_rel(blk, ref, s.n), simple_exact = ex ? max_rel_exact(ref, ex, s.n) : 0;
                CHECK(err <= TOL, "n=%zu eps=%g: block vs simple max relative %.3g > %.3g", sizes[k], eps[e], err, TOL);
                if (sizes[k] == 1) CHECK(blk[0] == 0 && blk[1] == 0 && blk[2] == 0, "a lone body feels no force");
                printf("n=%-6zu eps=%-5g block vs simple: max relative %.3g", sizes[k], eps[e], err);
                for (v = 0; v < 2; ++v) {
                    double ev = max_rel(var[v], ref, s.n);
                    CHECK(ev <= TOL, "n=%zu eps=%g: kernel %d vs simple max relative %.3g > %.3g", sizes[k], eps[e], v, ev, TOL);
                    printf("; %s %.3g", v ? "symmetric" : "one-sided", ev);
                    if (ex) {
                        double ee = max_rel_exact(var[v], ex, s.n);
                        CHECK(ee <= 2 * simple_exact, "n=%zu eps=%g: kernel %d vs exact %.3g > 2 x simple's %.3g",
                              sizes[k], eps[e], v, ee, simple_exact);
                        printf(" (vs exact %.3g)", ee);
                    }
                }
                if (ex) printf("; simple vs exact %.3g", simple_exact);
                printf("\n");
            }
            free(blk); free(var[0]); free(var[1]); nbody_system_free(&s);
        }
    }
}

/* bitwise: 1 thread vs 2 and 3 threads, automatic and a given block size; each kernel */
static void thread_independence(void) {
    nbody_system s = {0};
    nbody_real *a1, *a2, *a3, *b1, *b3;
    size_t n = BIG;
    int v;
    nbody_ic_plummer(&s, n, 3);
    a1 = accel(NBODY_ENGINE_BLOCK, 1, 0, (nbody_real)0.01, &s);
    a2 = accel(NBODY_ENGINE_BLOCK, 2, 0, (nbody_real)0.01, &s);
    a3 = accel(NBODY_ENGINE_BLOCK, 3, 0, (nbody_real)0.01, &s);
    b1 = accel(NBODY_ENGINE_BLOCK, 1, 96, (nbody_real)0.01, &s);
    b3 = accel(NBODY_ENGINE_BLOCK, 3, 96, (nbody_real)0.01, &s);
    CHECK(a1 && a2 && a3 && b1 && b3, "engines ran");
    if (a1 && a2 && a3 && b1 && b3) {
        CHECK(memcmp(a1, a2, 3 * n * sizeof(nbody_real)) == 0, "1 and 2 threads differ bitwise");
        CHECK(memcmp(a1, a3, 3 * n * sizeof(nbody_real)) == 0, "1 and 3 threads differ bitwise");
        CHECK(memcmp(b1, b3, 3 * n * sizeof(nbody_real)) == 0, "block_size 96: 1 and 3 threads differ bitwise");
    }
    free(a1); free(a2); free(a3); free(b1); free(b3);
    /* many small blocks (an odd count: a phantom player) on more threads than cores: threads
       that wait for a block's earlier task yield their core */
    b1 = accel(NBODY_ENGINE_BLOCK, 1, 64, (nbody_real)0.01, &s);
    b3 = accel(NBODY_ENGINE_BLOCK, 7, 64, (nbody_real)0.01, &s);
    CHECK(b1 && b3, "engines ran");
    if (b1 && b3) CHECK(memcmp(b1, b3, 3 * n * sizeof(nbody_real)) == 0, "block_size 64: 1 and 7 threads differ bitwise");
    free(b3);
#ifdef _OPENMP
    {   /* two evaluations of 2 threads at once, from the threads of the caller's OpenMP region
           (MinGW-w64 builds with libgomp leave their own worker set to such calls): each as alone */
        nbody_real *in[2] = {NULL, NULL};
        int i;
#pragma omp parallel for num_threads(2)
        for (i = 0; i < 2; ++i) in[i] = accel(NBODY_ENGINE_BLOCK, 2, 64, (nbody_real)0.01, &s);
        CHECK(b1 && in[0] && in[1], "engines ran inside a parallel region");
        if (b1 && in[0] && in[1])
            CHECK(memcmp(b1, in[0], 3 * n * sizeof(nbody_real)) == 0 && memcmp(b1, in[1], 3 * n * sizeof(nbody_real)) == 0,
                  "evaluations inside a parallel region differ bitwise from 1 thread's");
        free(in[0]); free(in[1]);
    }
#endif
    free(b1);
    for (v = 0; v < 2; ++v) {
        a1 = kernel(v, 1, (nbody_real)0.01, &s);
        a2 = kernel(v, 2, (nbody_real)0.01, &s);
        a3 = kernel(v, 3, (nbody_real)0.01, &s);
        CHECK(a1 && a2 && a3, "kernels ran");
        if (a1 && a2 && a3) {
            CHECK(memcmp(a1, a2, 3 * n * sizeof(nbody_real)) == 0, "kernel %d: 1 and 2 threads differ bitwise", v);
            CHECK(memcmp(a1, a3, 3 * n * sizeof(nbody_real)) == 0, "kernel %d: 1 and 3 threads differ bitwise", v);
        }
        free(a1); free(a2); free(a3);
    }
    nbody_system_free(&s);
}

/* The symmetric schedule's numbering (nbody__sym_task) and the wait it implies (nbody__sym_before,
   the last task on a block before a round), against the tasks taken one by one in order: every
   task waits for exactly the previous task on each of its blocks, each block first meets
   itself, and every pair of blocks meets exactly once. */
static void schedule_order(void) {
    long long nb, k, last[81], met[81][81];
    for (nb = 1; nb <= 81; ++nb) {
        long long nt = nb + (nb & 1), ntask = nb + (nt - 1) * (nt / 2), lo, hi, r, b, c;
        int ok = 1, waits = 1, pairs = 1;
        memset(met, 0, sizeof met);
        for (b = 0; b < nb; ++b) last[b] = -1;
        for (k = 0; k < ntask; ++k) {
            if (!nbody__sym_task(k, nb, &lo, &hi, &r)) { ok &= hi == nb && lo < nb; continue; }
            ok &= lo <= hi && hi < nb && (r < 0) == (lo == hi) && (lo == hi ? last[lo] == -1 : last[lo] >= 0 && last[hi] >= 0);
            if (r >= 0) waits &= nbody__sym_before(lo, r, nb) == last[lo] && nbody__sym_before(hi, r, nb) == last[hi];
            met[lo][hi] += 1; last[lo] = last[hi] = k;
        }
        for (b = 0; b < nb; ++b)
            for (c = b; c < nb; ++c) pairs &= met[b][c] == 1;
        CHECK(ok, "nb=%lld: tasks in order, each block first against itself", nb);
        CHECK(waits, "nb=%lld: each task waits for the last earlier task on its blocks", nb);
        CHECK(pairs, "nb=%lld: every pair of blocks (and each block with itself) met once", nb);
    }
}

/* softening 0: bodies p and q coincide -> NaN on both, as SIMPLE; the others stay finite.
   n = 37: one tile; n = 2000 with p, q far apart: different blocks of the symmetric kernel */
static void coincident_bodies(void) {
    static const size_t ns[] = {37, 2000}, qs[] = {5, 1900};
    size_t k;
    for (k = 0; k < 2; ++k) {
        nbody_system s = {0};
        nbody_real *ref, *blk[3];
        size_t i, n = ns[k], p = 1, q = qs[k];
        int v;
        nbody_ic_uniform_cube(&s, n, 5);
        s.x[q] = s.x[p]; s.y[q] = s.y[p]; s.z[q] = s.z[p];
        ref = accel(NBODY_ENGINE_SIMPLE, 1, 0, 0, &s);
        blk[0] = accel(NBODY_ENGINE_BLOCK, 2, 0, 0, &s);
        blk[1] = kernel(0, 2, 0, &s);
        blk[2] = kernel(1, 2, 0, &s);
        for (v = 0; v < 3; ++v) {
            int same = 1;
            CHECK(ref && blk[v], "engines ran");
            if (!ref || !blk[v]) continue;
            for (i = 0; i < 3 * n; ++i) same &= (ref[i] != ref[i]) == (blk[v][i] != blk[v][i]);
            CHECK(blk[v][p] != blk[v][p] && blk[v][q] != blk[v][q], "n=%zu variant %d: coincident bodies with softening 0 give NaN", n, v);
            CHECK(blk[v][0] == blk[v][0], "n=%zu variant %d: a body apart from the pair stays finite", n, v);
            CHECK(same, "n=%zu variant %d: NaN pattern equals SIMPLE's", n, v);
        }
        free(ref); free(blk[0]); free(blk[1]); free(blk[2]); nbody_system_free(&s);
    }
}

/* desc.block_size is the symmetric kernel's block (and the one-sided chunk): each size gives
   SIMPLE's answer to round-off, and a size changes the summation order (the results differ
   from the automatic block's somewhere, else the field would be ignored) */
static void block_sizes(void) {
    static const int sizes[] = {32, 64, 96, 256, 1024, 16384};
    static const size_t ns[] = {1000, BIG};
    size_t k, q;
    for (q = 0; q < 2; ++q) {
        nbody_system s = {0};
        nbody_real *ref, *a0;
        reference *R;
        int differs = 0;
        nbody_ic_plummer(&s, ns[q], 11 + q);
        R = reference_of(&s, (unsigned)(11 + q), (nbody_real)0.01, 0);
        ref = R ? R->simple : NULL;
        a0 = accel(NBODY_ENGINE_BLOCK, 2, 0, (nbody_real)0.01, &s);
        CHECK(ref && a0, "n=%zu: engines ran", ns[q]);
        for (k = 0; ref && a0 && k < sizeof sizes / sizeof *sizes; ++k) {
            nbody_real *a = accel(NBODY_ENGINE_BLOCK, 2, sizes[k], (nbody_real)0.01, &s);
            double err;
            CHECK(a != NULL, "n=%zu block_size %d: accepted and ran", ns[q], sizes[k]);
            if (!a) continue;
            err = max_rel(a, ref, s.n);
            CHECK(err <= TOL, "n=%zu block_size %d: vs simple max relative %.3g > %.3g", ns[q], sizes[k], err, TOL);
            if (k == 0) printf("n=%-6zu block_size vs simple:", ns[q]);
            printf(" %d: %.3g", sizes[k], err);
            differs |= memcmp(a, a0, 3 * s.n * sizeof(nbody_real)) != 0;
            free(a);
        }
        printf("\n");
        if (level != NBODY_SIMD_PORTABLE)   /* the portable loop's per-body sums do not depend on it */
            CHECK(differs, "n=%zu: no block_size changed a bit of the result: is the field used?", ns[q]);
        free(a0); nbody_system_free(&s);
    }
}

/* a block_size out of range or not a multiple of 32: NBODY_ERR_INVALID_ARGUMENT and an error
   log line naming the field, no simulation, the output and the input untouched */
static int log_errors;
static char log_last[256];
static void log_keep(nbody_log_level lv, const char *msg, void *u) {
    (void)u;
    if (lv == NBODY_LOG_ERROR) { ++log_errors; strncpy(log_last, msg, sizeof log_last - 1); }
}
static void block_size_refused(void) {
    static const int bad[] = {1, 7, 16, 40, 100, 16416, 1 << 20};
    nbody_system s = {0}, keep = {0};
    size_t k;
    nbody_ic_plummer(&s, 100, 5);
    nbody_system_alloc(&keep, s.n);
    nbody_system_copy(&keep, &s);
    for (k = 0; k < sizeof bad / sizeof *bad; ++k) {
        nbody_desc d = {0};
        nbody_sim *sim = (nbody_sim *)&keep;   /* must stay as it is */
        nbody_real a[3 * 100];
        nbody_result r;
        size_t i;
        int same = 1;
        d.engine = NBODY_ENGINE_BLOCK; d.block_size = bad[k]; d.simd = level; d.log.func = log_keep;
        log_errors = 0; log_last[0] = 0;
        r = nbody_create(&sim, &d, &s);
        CHECK(r == NBODY_ERR_INVALID_ARGUMENT, "block_size %d: nbody_create gave %s", bad[k], nbody_result_string(r));
        CHECK(sim == (nbody_sim *)&keep, "block_size %d: *out changed on failure", bad[k]);
        CHECK(log_errors >= 1 && strstr(log_last, "block_size") != NULL, "block_size %d: error log line '%s'", bad[k], log_last);
        for (i = 0; i < 3 * 100; ++i) a[i] = 42;
        r = nbody_accelerations(&d, &s, a, a + 100, a + 200);
        CHECK(r == NBODY_ERR_INVALID_ARGUMENT, "block_size %d: nbody_accelerations gave %s", bad[k], nbody_result_string(r));
        for (i = 0; i < 3 * 100; ++i) same &= a[i] == 42;
        for (i = 0; i < s.n; ++i)
            same &= s.x[i] == keep.x[i] && s.y[i] == keep.y[i] && s.z[i] == keep.z[i] && s.vx[i] == keep.vx[i] && s.m[i] == keep.m[i];
        CHECK(same, "block_size %d: output or input touched", bad[k]);
    }
    if (k) printf("block_size refused: %s\n", log_last);
    nbody_system_free(&s); nbody_system_free(&keep);
}

/* test particles: the bodies past n_active feel the active ones only. Against the full sum
   with their masses zero (the same level) and SIMPLE's test particles, to round-off; bitwise
   the same for 1 and 2 threads; sizes with partial tiles and the threaded path (na (n - na) >=
   1024^2); a particle on an active body with softening 0 gives NaN there, as SIMPLE */
static void test_particles(void) {
    static const size_t ns[] = {300, MID_TP, BIG_TP}, nas[] = {30, 49, NA_TP};
    size_t k, i;
    for (k = 0; k < 3; ++k) {
        nbody_system s = {0}, z = {0};
        size_t n = ns[k], na = nas[k];
        nbody_desc d = {0};
        nbody_real *full, *ref, *t1, *t2;
        int c, same;
        nbody_ic_plummer(&s, n, 21 + k);
        nbody_system_alloc(&z, n);
        nbody_system_copy(&z, &s);
        for (i = na; i < n; ++i) z.m[i] = 0;
        full = accel(NBODY_ENGINE_BLOCK, 2, 0, (nbody_real)0.01, &z);
        d.engine = NBODY_ENGINE_SIMPLE; d.softening = (nbody_real)0.01; d.n_active = na;
        ref = (nbody_real *)malloc(3 * n * sizeof(nbody_real));
        t1 = (nbody_real *)malloc(3 * n * sizeof(nbody_real));
        t2 = (nbody_real *)malloc(3 * n * sizeof(nbody_real));
        CHECK(full && ref && t1 && t2, "n=%zu: memory", n);
        if (full && ref && t1 && t2) {
            double e_full, e_ref;
            CHECK(nbody_accelerations(&d, &s, ref, ref + n, ref + 2 * n) == NBODY_OK, "simple n_active ran");
            d.engine = NBODY_ENGINE_BLOCK; d.simd = level; d.threads = 1;
            CHECK(nbody_accelerations(&d, &s, t1, t1 + n, t1 + 2 * n) == NBODY_OK, "block n_active ran");
            d.threads = 2;
            CHECK(nbody_accelerations(&d, &s, t2, t2 + n, t2 + 2 * n) == NBODY_OK, "block n_active ran (2 threads)");
            e_full = max_rel(t1, full, n);
            e_ref = max_rel(t1, ref, n);
            CHECK(e_full <= TOL, "n=%zu na=%zu: test particles vs the full sum with their masses zero: %.3g > %.3g", n, na, e_full, TOL);
            CHECK(e_ref <= TOL, "n=%zu na=%zu: test particles vs SIMPLE's: %.3g > %.3g", n, na, e_ref, TOL);
            CHECK(memcmp(t1, t2, 3 * n * sizeof(nbody_real)) == 0, "n=%zu na=%zu: test particles, 1 and 2 threads differ bitwise", n, na);
            printf("n=%-6zu n_active=%-4zu test particles vs full sum (masses 0) %.3g, vs simple %.3g\n", n, na, e_full, e_ref);
            /* test particle na + 1 on active body 3, softening 0: NaN on it, as SIMPLE; others finite */
            s.x[na + 1] = s.x[3]; s.y[na + 1] = s.y[3]; s.z[na + 1] = s.z[3];
            d.softening = 0;
            CHECK(nbody_accelerations(&d, &s, t1, t1 + n, t1 + 2 * n) == NBODY_OK, "block n_active ran (softening 0)");
            d.engine = NBODY_ENGINE_SIMPLE;
            CHECK(nbody_accelerations(&d, &s, ref, ref + n, ref + 2 * n) == NBODY_OK, "simple n_active ran (softening 0)");
            same = 1;
            for (c = 0; c < 3; ++c)
                for (i = 0; i < n; ++i) same &= (t1[c * n + i] != t1[c * n + i]) == (ref[c * n + i] != ref[c * n + i]);
            CHECK(t1[na + 1] != t1[na + 1], "n=%zu: a test particle on an active body with softening 0 gives NaN", n);
            CHECK(same, "n=%zu: test particles' NaN pattern equals SIMPLE's", n);
        }
        free(full); free(ref); free(t1); free(t2);
        nbody_system_free(&s); nbody_system_free(&z);
    }
}

/* r^-3 = x^(-3/2) from a level's estimate and its series, lane by lane, against long double,
   x over the working precision's range (the kernel's one approximation) */
#if NBODY__HAVE_AVX512
static NBODY__TARGET_AVX512 void rsqrt3_512(const nbody_real *in, nbody_real *out) { nbody__v512_store(out, nbody__v512_rsqrt3(nbody__v512_load(in))); }
#endif
#if NBODY__HAVE_AVX2
static NBODY__TARGET_AVX2 void rsqrt3_256(const nbody_real *in, nbody_real *out) { nbody__v256_store(out, nbody__v256_rsqrt3(nbody__v256_load(in))); }
#endif
#if NBODY__HAVE_V128
static void rsqrt3_128(const nbody_real *in, nbody_real *out) { nbody__v128_store(out, nbody__v128_rsqrt3(nbody__v128_load(in))); }
#endif
static void rsqrt3_accuracy(void) {
    void (*f)(const nbody_real *, nbody_real *) = NULL;
    int w = 0, l;
    nbody_real in[16], out[16];
    double worst = 0, eps = sizeof(nbody_real) == sizeof(float) ? FLT_EPSILON : DBL_EPSILON;
    long double x = sizeof(nbody_real) == sizeof(float) ? 1e-24L : 1e-200L, hi = 1 / x;
#if NBODY__HAVE_AVX512
    if (level == NBODY_SIMD_AVX512) { f = rsqrt3_512; w = NBODY__V512_W; }
#endif
#if NBODY__HAVE_AVX2
    if (level == NBODY_SIMD_AVX2) { f = rsqrt3_256; w = NBODY__V256_W; }
#endif
#if NBODY__HAVE_V128
    if (level == NBODY_SIMD_NEON || level == NBODY_SIMD_SIMD128) { f = rsqrt3_128; w = NBODY__V128_W; }
#endif
    if (!f) return;
    while (x < hi) {
        for (l = 0; l < w; ++l) { in[l] = (nbody_real)x; x *= 1.0137L; }
        f(in, out);
        for (l = 0; l < w; ++l) {
            long double r = 1 / ((long double)in[l] * sqrtl((long double)in[l]));
            double e = (double)fabsl((out[l] - r) / r);
            if (!(e <= worst)) worst = e;
        }
    }
    CHECK(worst <= 4 * eps, "%s rsqrt3: max relative error %.3g > 4 ulp", nbody__simd_level_name(level), worst);
    printf("rsqrt3 (%s): max relative error %.3g (%.2f ulp)\n", nbody__simd_level_name(level), worst, worst / eps);
}

int main(void) {
    static const nbody_simd levels[] = {NBODY_SIMD_PORTABLE, NBODY_SIMD_AVX2, NBODY_SIMD_AVX512, NBODY_SIMD_NEON,
                                         NBODY_SIMD_SIMD128};
    size_t k;
    schedule_order();
    for (k = 0; k < sizeof levels / sizeof *levels; ++k) {
        level = levels[k];
        if (!nbody_simd_available(level)) {
            printf("BLOCK engine: %s not available here (build or CPU): skipped\n", nbody__simd_level_name(level));
            continue;
        }
        printf("BLOCK engine: %s, %s\n", nbody__simd_level_name(level), sizeof(nbody_real) == sizeof(float) ? "float" : "double");
        rsqrt3_accuracy();
        compare_sizes();
        thread_independence();
        block_sizes();
        block_size_refused();
        coincident_bodies();
        test_particles();
    }
    free_references();
    return check_finish();
}
