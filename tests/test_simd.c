/* test_simd.c - the SIMD levels. At every level this build and CPU run (portable, AVX2,
   AVX-512, NEON, SIMD128, forced through desc.simd), the BLOCK engine (both kernels) and the TREE engine give
   the SIMPLE engine's answer class (NaN, +-Inf or finite, per component of every body) on
   extreme input: an infinite position, r^2 overflowing, huge finite r^2, a separation whose
   r^-3 overflows, a denormal r^2, r^2 underflowing to 0, exact zero separation with and
   without softening, and massless bodies in each. Also: choosing a level (desc.simd, the
   environment variable NBODY_SIMD, the INFO log line, nbody_simd_name, refusals).
   `test_simd --levels` prints the levels this machine runs (tests/simd_levels.sh). */
#define _POSIX_C_SOURCE 200112L           /* setenv, unsetenv */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include "tests/check.h"
#include <float.h>

/* sets an environment variable, or removes it (value NULL): POSIX setenv/unsetenv, Windows
   _putenv_s (where an empty value removes it) */
static void env_set(const char *name, const char *value) {
#if defined(_WIN32)
    _putenv_s(name, value ? value : "");
#else
    if (value) setenv(name, value, 1);
    else unsetenv(name);
#endif
}

static const nbody_simd levels[] = {NBODY_SIMD_PORTABLE, NBODY_SIMD_AVX2, NBODY_SIMD_AVX512, NBODY_SIMD_NEON, NBODY_SIMD_SIMD128};
#define NLEVELS ((int)(sizeof levels / sizeof *levels))

/* answer class of a value: 0 finite, 1 +Inf, 2 -Inf, 3 NaN */
static int klass(nbody_real v) {
    if (v != v) return 3;
    if (v - v != 0) return v > 0 ? 1 : 2;
    return 0;
}

/* accelerations by an engine at a level, through its derivative (as a step evaluates them:
   positions need not be finite there); NULL when the engine did not run */
static nbody_real *accel(nbody_engine engine, nbody_simd level, nbody_real eps, const nbody_system *s) {
    nbody_desc d;
    nbody__engine e;
    size_t n = s->n;
    nbody_real *y = (nbody_real *)calloc(6 * n, sizeof(nbody_real)), *f = (nbody_real *)calloc(6 * n, sizeof(nbody_real));
    nbody_real *a = (nbody_real *)malloc(3 * n * sizeof(nbody_real));
    int ok = 0;
    memset(&d, 0, sizeof d);
    d.engine = engine; d.threads = 2; d.softening = eps; d.simd = level;
    d = nbody__desc_defaults(&d);
    if (y && f && a && nbody__engine_start(&e, &d, n, s->m) == NBODY_OK) {
        memcpy(y, s->x, n * sizeof *y); memcpy(y + n, s->y, n * sizeof *y); memcpy(y + 2 * n, s->z, n * sizeof *y);
        ok = e.ops->derivative(&e, y, f) == NBODY_OK;
        memcpy(a, f + 3 * n, 3 * n * sizeof *a);
        nbody__engine_stop(&e);
    }
    free(y); free(f);
    if (!ok) { free(a); a = NULL; }
    return a;
}
/* one of the BLOCK kernels directly (G = 1): 0 one-sided, 1 symmetric */
static nbody_real *kernel(int symmetric, nbody_simd level, nbody_real eps, const nbody_system *s) {
    nbody_real *a = (nbody_real *)malloc(3 * s->n * sizeof(nbody_real));
    nbody__forces f;
    if (!a) return NULL;
    f.x = s->x; f.y = s->y; f.z = s->z; f.m = s->m; f.ax = a; f.ay = a + s->n; f.az = a + 2 * s->n;
    f.n = s->n; f.G = 1; f.eps2 = eps * eps;
    nbody__accel_block_kernel(&f, 2, 0, symmetric, level);
    return a;
}

typedef struct extreme {
    const char *what;
    nbody_real sep;                /* separation of the pair along x (0: same place) */
    nbody_real at;                 /* x of the pair's first body */
    nbody_real m;                  /* mass of the pair */
} extreme;

/* n bodies in a unit cube (the SIMD tiles and the symmetric rows all take part), bodies p and
   q replaced by the extreme pair; p = 3 and q = 45: one tile and the symmetric rows */
static void extreme_case(const extreme *c, nbody_simd level, nbody_real eps) {
    nbody_system s = {0};
    nbody_real *ref, *got[4], *tree0;
    const char *names[4] = {"block", "one-sided kernel", "symmetric kernel", "tree"};
    size_t n = 77, p = 3, q = 45, i;
    int v, finite_input;
    nbody_ic_uniform_cube(&s, n, 11);
    s.x[p] = c->at; s.y[p] = 0; s.z[p] = 0; s.m[p] = c->m;
    s.x[q] = c->at + c->sep; s.y[q] = 0; s.z[q] = 0; s.m[q] = c->m;
    if (c->sep < 0) s.x[q] = -c->at;           /* the pair far apart, on both sides */
    finite_input = s.x[p] - s.x[p] == 0;
    ref = accel(NBODY_ENGINE_SIMPLE, NBODY_SIMD_DEFAULT, eps, &s);
    got[0] = accel(NBODY_ENGINE_BLOCK, level, eps, &s);
    got[1] = kernel(0, level, eps, &s);
    got[2] = kernel(1, level, eps, &s);
    got[3] = accel(NBODY_ENGINE_TREE, level, eps, &s);
    tree0 = accel(NBODY_ENGINE_TREE, NBODY_SIMD_PORTABLE, eps, &s);
    for (v = 0; v < 4; ++v) {
        int bad = -1, classes[4] = {0, 0, 0, 0}, ref_finite = 1, got_finite = 1;
        /* the tree answers NaN everywhere for a non-finite position (the step reports it):
           its levels agree with its generic walk, and on finite input with SIMPLE */
        const nbody_real *cmp = v == 3 && !finite_input ? tree0 : ref;
        CHECK(cmp && got[v], "%s, %s: engines ran", c->what, names[v]);
        if (!cmp || !got[v]) continue;
        for (i = 0; i < 3 * n; ++i) {
            classes[klass(ref[i])]++;
            ref_finite &= klass(ref[i]) == 0; got_finite &= klass(got[v][i]) == 0;
            if (klass(cmp[i]) != klass(got[v][i]) && bad < 0) bad = (int)i;
        }
        CHECK(bad < 0, "%s (softening %g), %s at %s: component %d is %g, %s gives %g", c->what, (double)eps, names[v],
              nbody__simd_level_name(level), bad, bad < 0 ? 0.0 : (double)got[v][bad], cmp == ref ? "SIMPLE" : "the generic tree walk",
              bad < 0 ? 0.0 : (double)cmp[bad]);
        CHECK(ref_finite == got_finite, "%s (softening %g), %s at %s: finite %d, SIMPLE %d", c->what, (double)eps, names[v],
              nbody__simd_level_name(level), got_finite, ref_finite);
        if (v == 0 && level == NBODY_SIMD_PORTABLE)
            printf("  %-44s softening %-5g SIMPLE: %d finite, %d +Inf, %d -Inf, %d NaN\n", c->what, (double)eps,
                   classes[0], classes[1], classes[2], classes[3]);
    }
    free(tree0);
    free(ref); free(got[0]); free(got[1]); free(got[2]); free(got[3]);
    nbody_system_free(&s);
}

static void extremes(nbody_simd level) {
    const int f = sizeof(nbody_real) == sizeof(float);
    const nbody_real big = f ? (nbody_real)FLT_MAX : (nbody_real)DBL_MAX;
    /* r^-3 overflows: r^2 below MAX^(-2/3); r^2 denormal; r^2 = sep^2 underflows to 0 */
    const nbody_real s_over = (nbody_real)(f ? 1e-15 : 1e-120), s_denorm = (nbody_real)(f ? 1e-20 : 1e-155);
    const nbody_real s_zero = (nbody_real)(f ? 1e-30 : 1e-200), huge = (nbody_real)(f ? 1e15 : 1e120);
    const extreme cases[] = {
        {"an infinite position", 1, (nbody_real)HUGE_VAL, 1},
        {"r^2 overflows (pair at +-0.3 MAX)", -1, (nbody_real)0.3 * big, 1},
        {"r^2 overflows, massless pair", -1, (nbody_real)0.3 * big, 0},
        {"huge finite r^2", -1, huge, 1},
        {"huge finite r^2, heavy pair", -1, huge, (nbody_real)(f ? 1e30 : 1e300)},
        {"r^-3 overflows", s_over, 2, 1},
        {"r^-3 overflows, massless pair", s_over, 2, 0},
        {"r^-3 overflows, tiny masses", s_over, 2, (nbody_real)(f ? 1e-30 : 1e-300)},
        {"denormal r^2", s_denorm, 0, 1},
        {"denormal r^2, massless pair", s_denorm, 0, 0},
        {"r^2 underflows to 0", s_zero, 0, 1},
        {"r^2 underflows to 0, massless pair", s_zero, 0, 0},
        {"exact zero separation", 0, 1, 1},
        {"exact zero separation, massless pair", 0, 1, 0},
    };
    const nbody_real eps[] = {0, (nbody_real)0.01};
    size_t k, e;
    for (k = 0; k < sizeof cases / sizeof *cases; ++k)
        for (e = 0; e < 2; ++e) extreme_case(&cases[k], level, eps[e]);
}

/* logger that keeps the last INFO line */
static char info[256];
static void keep_info(nbody_log_level level, const char *message, void *user) {
    (void)user;
    if (level == NBODY_LOG_INFO) { strncpy(info, message, sizeof info - 1); info[sizeof info - 1] = 0; }
}

static void choosing(void) {
    nbody_system s = {0};
    nbody_desc d;
    nbody_sim *sim = NULL;
    nbody_result r;
    int k;
    nbody_ic_plummer(&s, 16, 1);
    memset(&d, 0, sizeof d);
    d.log.func = keep_info;
    CHECK(nbody_simd_available(NBODY_SIMD_DEFAULT) && nbody_simd_available(NBODY_SIMD_PORTABLE), "default and portable always run");
    CHECK(!nbody_simd_available(NBODY_SIMD_COUNT_) && !nbody_simd_available((nbody_simd)-1), "out of range levels do not");
    CHECK(strcmp(nbody_simd_name(NULL), "none") == 0, "nbody_simd_name(NULL)");
    env_set("NBODY_SIMD", NULL);
    for (k = 0; k < NLEVELS; ++k) {
        char want[64];
        d.simd = levels[k];
        d.engine = NBODY_ENGINE_BLOCK;
        info[0] = 0;
        r = nbody_create(&sim, &d, &s);
        if (!nbody_simd_available(levels[k])) {
            CHECK(r == NBODY_ERR_UNAVAILABLE, "%s lacking: %s", nbody__simd_level_name(levels[k]), nbody_result_string(r));
            continue;
        }
        CHECK(r == NBODY_OK, "create at %s: %s", nbody__simd_level_name(levels[k]), nbody_result_string(r));
        if (r != NBODY_OK) continue;
        CHECK(strcmp(nbody_simd_name(sim), nbody__simd_level_name(levels[k])) == 0, "desc.simd %s: runs %s",
              nbody__simd_level_name(levels[k]), nbody_simd_name(sim));
        snprintf(want, sizeof want, "SIMD level %s", nbody__simd_level_name(levels[k]));
        CHECK(strstr(info, want) != NULL, "INFO line names the level: '%s'", info);
        CHECK(nbody_step(sim) == NBODY_OK, "a step at %s", nbody__simd_level_name(levels[k]));
        nbody_destroy(sim); sim = NULL;
        /* the environment variable, used when desc.simd is DEFAULT */
        env_set("NBODY_SIMD", nbody__simd_level_name(levels[k]));
        d.simd = NBODY_SIMD_DEFAULT;
        d.engine = NBODY_ENGINE_TREE;
        r = nbody_create(&sim, &d, &s);
        CHECK(r == NBODY_OK && strcmp(nbody_simd_name(sim), nbody__simd_level_name(levels[k])) == 0,
              "NBODY_SIMD=%s: %s runs %s", nbody__simd_level_name(levels[k]), nbody_result_string(r), nbody_simd_name(sim));
        nbody_destroy(sim); sim = NULL;
        env_set("NBODY_SIMD", NULL);
    }
    /* default: the best level */
    d.simd = NBODY_SIMD_DEFAULT; d.engine = NBODY_ENGINE_BLOCK;
    r = nbody_create(&sim, &d, &s);
    CHECK(r == NBODY_OK, "default: %s", nbody_result_string(r));
    if (r == NBODY_OK) {
        const char *best = nbody_simd_available(NBODY_SIMD_AVX512) ? "avx512" : nbody_simd_available(NBODY_SIMD_AVX2) ? "avx2"
                           : nbody_simd_available(NBODY_SIMD_NEON) ? "neon" : nbody_simd_available(NBODY_SIMD_SIMD128) ? "simd128" : "portable";
        CHECK(strcmp(nbody_simd_name(sim), best) == 0, "default runs %s, the best is %s", nbody_simd_name(sim), best);
        printf("default SIMD level: %s\n", nbody_simd_name(sim));
    }
    nbody_destroy(sim); sim = NULL;
    /* desc.simd wins over the environment; a bad environment value and a bad desc are refused */
    env_set("NBODY_SIMD", "portable");
    d.simd = NBODY_SIMD_PORTABLE;
    r = nbody_create(&sim, &d, &s);
    CHECK(r == NBODY_OK && strcmp(nbody_simd_name(sim), "portable") == 0, "desc.simd over NBODY_SIMD");
    nbody_destroy(sim); sim = NULL;
    env_set("NBODY_SIMD", "sse9");
    d.simd = NBODY_SIMD_DEFAULT;
    CHECK(nbody_create(&sim, &d, &s) == NBODY_ERR_INVALID_ARGUMENT && sim == NULL, "NBODY_SIMD=sse9 refused");
    env_set("NBODY_SIMD", NULL);
    d.simd = NBODY_SIMD_COUNT_;
    CHECK(nbody_create(&sim, &d, &s) == NBODY_ERR_INVALID_ARGUMENT && sim == NULL, "desc.simd out of range refused");
    nbody_system_free(&s);
}

int main(int argc, char **argv) {
    int k;
    if (argc > 1 && strcmp(argv[1], "--levels") == 0) {   /* the levels this machine runs */
        for (k = 0; k < NLEVELS; ++k) if (nbody_simd_available(levels[k])) printf("%s ", nbody__simd_level_name(levels[k]));
        printf("\n");
        return 0;
    }
    choosing();
    for (k = 0; k < NLEVELS; ++k) {
        if (!nbody_simd_available(levels[k])) {
            printf("SIMD level %s: not available here (build or CPU), skipped\n", nbody__simd_level_name(levels[k]));
            continue;
        }
        printf("extreme input, SIMD level %s, %s:\n", nbody__simd_level_name(levels[k]), sizeof(nbody_real) == sizeof(float) ? "float" : "double");
        extremes(levels[k]);
    }
    return check_finish();
}
