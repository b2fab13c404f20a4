/* The same bits everywhere (docs/determinism.md). Asserts here: the initial conditions'
   own sin, cos and cube root (nbody.h >>ic) are within a stated number of ulps of the C
   library's over their range; the Plummer sphere they build still has its energy and virial
   ratio; the deterministic configurations (SIMPLE, OPENMP, and BLOCK's portable loop, with
   leapfrog and RK4) give bitwise the same trajectory for any thread count (OPENMP the same
   bits as SIMPLE). Printed: one "HASH name value" line for each
   generator's bodies and each deterministic trajectory's final state, which
   tests/test_platforms.sh compares between this program built natively and built for the
   other platforms (aarch64 under qemu, wasm32 under node, Windows under Wine). */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include "check.h"
#include <math.h>
#include <stdint.h>

/* ---- accuracy of the library's elementary functions --------------------------------- */
/* References in double-double arithmetic (Dekker 1971: a value is hi + lo, about 106 bits),
   from + - * / alone, so the accuracy is measured the same way on every platform instead of
   against C libraries that differ (glibc's cbrt is itself 2-3 ulp off in places). The
   products are exact by Veltkamp's split, which needs the -ffp-contract=off of the builds. */
typedef struct dd { double hi, lo; } dd;
static dd two_sum(double a, double b) {
    dd r;
    double v;
    r.hi = a + b; v = r.hi - a; r.lo = (a - (r.hi - v)) + (b - v);
    return r;
}
static dd two_prod(double a, double b) {
    const double split = 134217729.0;            /* 2^27 + 1 */
    double ca = split * a, cb = split * b, ah = ca - (ca - a), al = a - ah, bh = cb - (cb - b), bl = b - bh;
    dd r;
    r.hi = a * b; r.lo = ((ah * bh - r.hi) + ah * bl + al * bh) + al * bl;
    return r;
}
static dd dd_add(dd a, dd b) { dd s = two_sum(a.hi, b.hi); return two_sum(s.hi, s.lo + a.lo + b.lo); }
static dd dd_mul(dd a, dd b) { dd p = two_prod(a.hi, b.hi); return two_sum(p.hi, p.lo + a.hi * b.lo + a.lo * b.hi); }
static dd dd_scale(dd a, double b) { dd p = two_prod(a.hi, b); return two_sum(p.hi, p.lo + a.lo * b); }
static dd dd_of(double a) { dd r; r.hi = a; r.lo = 0; return r; }

/* sin(r) (odd = 1) or cos(r) (odd = 0) of a double-double |r| <= 1 by Taylor's series to r^31 */
static dd dd_sin_cos_series(dd r, int odd) {
    dd r2 = dd_mul(r, r), term = odd ? r : dd_of(1), sum = term;
    int k;
    for (k = odd ? 2 : 1; k <= 31; k += 2) {     /* term *= -r^2 / (k (k + 1)) */
        term = dd_scale(dd_mul(term, r2), -1.0);
        term.hi /= (double)(k * (k + 1)); term.lo /= (double)(k * (k + 1));
        sum = dd_add(sum, term);
    }
    return sum;
}
/* sin and cos of a double |x| <= 64: x - k pi/2 with pi/2 to 159 bits */
static void dd_sincos(double x, dd *s, dd *c) {
    static const double pio2[3] = {1.5707963267948966, 6.123233995736766e-17, -1.4973849048591698e-33};
    double k = (double)(long)(x * 0.6366197723675814 + (x < 0 ? -0.5 : 0.5));
    dd r = dd_of(x), sr, cr;
    int i;
    for (i = 0; i < 3; ++i) r = dd_add(r, dd_scale(dd_of(pio2[i]), -k));
    sr = dd_sin_cos_series(r, 1); cr = dd_sin_cos_series(r, 0);
    switch ((long)k & 3) {
    case 0: *s = sr; *c = cr; break;
    case 1: *s = cr; *c = dd_scale(sr, -1); break;
    case 2: *s = dd_scale(sr, -1); *c = dd_scale(cr, -1); break;
    default: *s = dd_scale(cr, -1); *c = sr; break;
    }
}
/* |y - ref| in units of the last place of y's binade (ref != 0) */
static double ulps_from(double y, dd ref) {
    int e;
    dd d = dd_add(dd_of(y), dd_scale(ref, -1.0));
    frexp(ref.hi, &e);
    return fabs(d.hi) / ldexp(1.0, e - 53);
}

/* a point of [lo, hi] from an integer sequence (the tests' own) */
static double spread(uint64_t *state, double lo, double hi) {
    *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
    return lo + (hi - lo) * (double)(*state >> 11) * (1.0 / 9007199254740992.0);
}

/* the library's sin and cos are within 1 ulp of the true value (measured 0.76; glibc's 0.54),
   its cube root within 1.5 (measured 1.06: the last correction's own roundings) */
#define SINCOS_ULPS 1.0
#define CBRT_ULPS 1.5

static void sincos_check(double x, double *worst, double *at) {
    double s, c, e;
    dd rs, rc;
    nbody__sincos(x, &s, &c);
    dd_sincos(x, &rs, &rc);
    e = ulps_from(s, rs); if (e > *worst) { *worst = e; *at = x; }
    e = ulps_from(c, rc); if (e > *worst) { *worst = e; *at = x; }
}
static void sincos_accuracy(void) {
    static const double ranges[2][2] = {{0, 6.283185307179586}, {-60, 60}};
    double worst = 0, at = 0, s, c;
    uint64_t st = 1;
    int r, i, k;
    for (r = 0; r < 2; ++r)
        for (i = 0; i < 20000; ++i) sincos_check(spread(&st, ranges[r][0], ranges[r][1]), &worst, &at);
    for (k = -38; k <= 38; ++k) {                /* next to multiples of pi/2: the reduction's hard cases */
        double x = k * 1.5707963267948966;
        if (k == 0) continue;
        sincos_check(x, &worst, &at);
        sincos_check(nextafter(x, 100), &worst, &at);
        sincos_check(nextafter(x, -100), &worst, &at);
    }
    nbody__sincos(0, &s, &c);
    CHECK(s == 0 && c == 1, "sin, cos of 0: %g %g", s, c);
    printf("sin, cos: largest error %.2f ulp (at x = %.17g)\n", worst, at);
    CHECK(worst <= SINCOS_ULPS, "sin, cos: %.2f ulp at x = %.17g (at most %.1f)", worst, at, SINCOS_ULPS);
}

static void cbrt_accuracy(void) {
    double worst = 0, at = 0;
    uint64_t st = 2;
    int i;
    for (i = 0; i < 40000; ++i) {                /* uniform in the exponent from 2^-1000 to 2^1000 */
        double e = spread(&st, -1000, 1000), m = spread(&st, 1, 2), x = ldexp(m, (int)e);
        double y = nbody__cbrt(x), err;
        dd y3 = dd_mul(dd_mul(dd_of(y), dd_of(y)), dd_of(y)), d = dd_add(dd_of(x), dd_scale(y3, -1.0));
        int ey;
        frexp(y, &ey);                           /* y - cbrt(x) = (y^3 - x) / (3 y^2), to first order */
        err = fabs(d.hi) / (3 * y * y) / ldexp(1.0, ey - 53);
        if (err > worst) { worst = err; at = x; }
    }
    for (i = 1; i <= 1000; ++i) {                /* exact cubes: exact roots */
        double x = (double)i * i * i;
        CHECK(nbody__cbrt(x) == (double)i, "cbrt(%d^3) = %.17g", i, nbody__cbrt(x));
    }
    printf("cbrt: largest error %.2f ulp (at x = %.17g)\n", worst, at);
    CHECK(worst <= CBRT_ULPS, "cbrt: %.2f ulp at x = %.17g (at most %.1f)", worst, at, CBRT_ULPS);
}

/* ---- hashes ------------------------------------------------------------------------ */
/* FNV-1a over the bits of each value as a double, least significant byte first: the same on
   every platform whatever its byte order */
static uint64_t hash_values(uint64_t h, const nbody_real *v, size_t n) {
    size_t i;
    int b;
    for (i = 0; i < n; ++i) {
        double d = (double)v[i];
        uint64_t u;
        memcpy(&u, &d, sizeof u);
        for (b = 0; b < 8; ++b) { h ^= (u >> (8 * b)) & 0xFF; h *= 1099511628211ULL; }
    }
    return h;
}
static uint64_t hash_system(const nbody_system *s) {
    uint64_t h = 14695981039346656037ULL;
    h = hash_values(h, s->x, s->n); h = hash_values(h, s->y, s->n); h = hash_values(h, s->z, s->n);
    h = hash_values(h, s->vx, s->n); h = hash_values(h, s->vy, s->n); h = hash_values(h, s->vz, s->n);
    return hash_values(h, s->m, s->n);
}
static void print_hash(const char *name, const nbody_system *s) {
    printf("HASH %s %016llx\n", name, (unsigned long long)hash_system(s));
}

/* ---- the generators -------------------------------------------------------------------- */
#define N_IC 200
enum { IC_CUBE, IC_PLUMMER, IC_GALAXY, IC_COLLISION, IC_FIGURE_EIGHT, IC_PYTHAGOREAN, IC_SOLAR, IC_COUNT };
static const char *ic_names[IC_COUNT] = {"cube", "plummer", "galaxy", "collision", "figure_eight", "pythagorean",
                                         "outer_solar_system"};

static nbody_result make_ic(int which, nbody_system *s) {
    memset(s, 0, sizeof *s);
    switch (which) {
    case IC_CUBE: return nbody_ic_uniform_cube(s, N_IC, 5);
    case IC_PLUMMER: return nbody_ic_plummer(s, N_IC, 5);
    case IC_GALAXY: return nbody_ic_galaxy(s, N_IC, (nbody_real)0.2, 7);
    case IC_COLLISION: return nbody_ic_collision(s, N_IC, (nbody_real)0.2, 4, 11);
    case IC_FIGURE_EIGHT: return nbody_ic_figure_eight(s);
    case IC_PYTHAGOREAN: return nbody_ic_pythagorean(s);
    default: return nbody_ic_outer_solar_system(s);
    }
}

/* the Plummer sphere from the library's own functions is still one: E = -1/4 in Henon units
   (less bound by the cut at 10 scale lengths: -0.2465), virial ratio 2T/|W| = 1, both within
   the sampling noise of 4096 bodies (a few per cent) */
static void plummer_physics(void) {
    nbody_system s;
    nbody_invariants inv;
    double e, q;
    memset(&s, 0, sizeof s);
    CHECK(nbody_ic_plummer(&s, 4096, 3) == NBODY_OK && nbody_measure(&s, 1, 0, &inv) == NBODY_OK, "plummer 4096");
    e = (double)inv.energy; q = 2 * (double)inv.kinetic / -(double)inv.potential;
    printf("plummer 4096: E = %.4f, 2T/|W| = %.4f\n", e, q);
    CHECK(fabs(e + 0.2465) < 0.02, "plummer: E = %g, not -1/4", e);
    CHECK(fabs(q - 1) < 0.06, "plummer: 2T/|W| = %g, not 1", q);
    nbody_system_free(&s);
}

/* ---- trajectories ---------------------------------------------------------------------- */
typedef struct config { const char *name; nbody_engine engine; nbody_method method; nbody_simd simd; } config;
/* the deterministic configurations (docs/determinism.md) */
static const config configs[] = {
    {"simple_leapfrog", NBODY_ENGINE_SIMPLE, NBODY_LEAPFROG, NBODY_SIMD_DEFAULT},
    {"simple_rk4", NBODY_ENGINE_SIMPLE, NBODY_RK4, NBODY_SIMD_DEFAULT},
    {"openmp_leapfrog", NBODY_ENGINE_OPENMP, NBODY_LEAPFROG, NBODY_SIMD_DEFAULT},
    {"block_portable_leapfrog", NBODY_ENGINE_BLOCK, NBODY_LEAPFROG, NBODY_SIMD_PORTABLE},
    {"block_portable_rk4", NBODY_ENGINE_BLOCK, NBODY_RK4, NBODY_SIMD_PORTABLE},
};
#define N_CONFIGS (sizeof configs / sizeof configs[0])
#define STEPS 10

static int trajectory(const config *c, int threads, const nbody_system *ic, nbody_system *out) {
    nbody_desc d;
    nbody_sim *sim = NULL;
    int ok;
    memset(&d, 0, sizeof d);
    d.engine = c->engine; d.method = c->method; d.simd = c->simd; d.threads = threads;
    d.softening = (nbody_real)0.01; d.dt = (nbody_real)(1.0 / 512);
    memset(out, 0, sizeof *out);
    ok = nbody_create(&sim, &d, ic) == NBODY_OK && nbody_advance(sim, (nbody_real)STEPS / 512) == NBODY_OK &&
         nbody_system_alloc(out, ic->n) == NBODY_OK && nbody_get_state(sim, out) == NBODY_OK;
    nbody_destroy(sim);
    return ok;
}

static void trajectories(int which, const nbody_system *ic) {
    char name[96];
    uint64_t simple = 0;
    size_t k;
    int t;
    for (k = 0; k < N_CONFIGS; ++k) {
        nbody_system out;
        uint64_t one = 0;
        for (t = 1; t <= (configs[k].engine == NBODY_ENGINE_SIMPLE ? 1 : 3); ++t) {
            CHECK(trajectory(&configs[k], t, ic, &out), "%s %s: run", ic_names[which], configs[k].name);
            if (t == 1) one = hash_system(&out);
            else CHECK(hash_system(&out) == one, "%s %s: %d threads give other bits than 1", ic_names[which], configs[k].name, t);
            if (t == 1) { snprintf(name, sizeof name, "%s_%s", ic_names[which], configs[k].name); print_hash(name, &out); }
            nbody_system_free(&out);
        }
        if (configs[k].engine == NBODY_ENGINE_SIMPLE && configs[k].method == NBODY_LEAPFROG) simple = one;
        if (configs[k].engine == NBODY_ENGINE_OPENMP) CHECK(one == simple, "%s: openmp differs from simple", ic_names[which]);
    }
}

/* BLOCK's portable loop over enough bodies to run on several threads (NBODY__BLOCK_PARALLEL_N) */
static void block_threads(void) {
    nbody_system ic, out;
    uint64_t one = 0;
    int t;
    memset(&ic, 0, sizeof ic);
    CHECK(nbody_ic_uniform_cube(&ic, NBODY__BLOCK_PARALLEL_N + 9, 3) == NBODY_OK, "cube");
    for (t = 1; t <= 3; ++t) {
        CHECK(trajectory(&configs[3], t, &ic, &out), "block: run");
        if (t == 1) { one = hash_system(&out); print_hash("cube_large_block_portable_leapfrog", &out); }
        else CHECK(hash_system(&out) == one, "block portable, %zu bodies: %d threads give other bits than 1", ic.n, t);
        nbody_system_free(&out);
    }
    nbody_system_free(&ic);
}

int main(void) {
    int i;
    block_threads();
    sincos_accuracy();
    cbrt_accuracy();
    plummer_physics();
    for (i = 0; i < IC_COUNT; ++i) {
        nbody_system s, again;
        CHECK(make_ic(i, &s) == NBODY_OK && make_ic(i, &again) == NBODY_OK, "%s", ic_names[i]);
        CHECK(hash_system(&s) == hash_system(&again), "%s: two calls give other bodies", ic_names[i]);
        print_hash(ic_names[i], &s);
        trajectories(i, &s);
        nbody_system_free(&s); nbody_system_free(&again);
    }
    return check_finish();
}
