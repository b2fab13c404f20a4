/* Core library tests: engines agree, conservation with the direct engines, every bad input
   refused without side effects, snapshots exact and corruption refused, NaN detection, the
   figure-eight orbit. Built in double (test_core), float and long double (Makefile). */
#ifndef NBODY_TEST_LINKED   /* else linked with one object of the implementation (Makefile: LINKED_TESTS) */
#define NBODY_IMPLEMENTATION
#endif
#include "nbody.h"
#include "check.h"
#include <float.h>
#include <math.h>

#define EPS ((double)(sizeof(nbody_real) == sizeof(float) ? FLT_EPSILON : DBL_EPSILON))

static double vnorm(double x, double y, double z) { return sqrt(x * x + y * y + z * z); }

/* largest |a - b| / |b| over bodies, as 3-vectors */
static double max_rel_diff(const nbody_real *a[3], const nbody_real *b[3], size_t n) {
    double worst = 0;
    size_t i;
    for (i = 0; i < n; ++i) {
        double d = vnorm((double)(a[0][i] - b[0][i]), (double)(a[1][i] - b[1][i]), (double)(a[2][i] - b[2][i]));
        double s = vnorm((double)b[0][i], (double)b[1][i], (double)b[2][i]);
        double r = s > 0 ? d / s : d;
        if (!(r <= worst)) worst = r;
    }
    return worst;
}

static void test_engines_agree(void) {
    static const size_t sizes[] = {1, 2, 3, 1000, 4099};
    static const nbody_engine engines[] = {NBODY_ENGINE_OPENMP, NBODY_ENGINE_BLOCK, NBODY_ENGINE_DEFAULT};
    size_t k, e;
    for (k = 0; k < sizeof sizes / sizeof *sizes; ++k) {
        size_t n = sizes[k];
        nbody_system s = {0};
        nbody_real *ref[3], *got[3];
        nbody_desc d = {0};
        int i;
        CHECK(nbody_ic_plummer(&s, n, 7 + n) == NBODY_OK, "plummer %lu", (unsigned long)n);
        for (i = 0; i < 3; ++i) { ref[i] = (nbody_real *)calloc(n, sizeof(nbody_real)); got[i] = (nbody_real *)calloc(n, sizeof(nbody_real)); }
        d.engine = NBODY_ENGINE_SIMPLE;
        d.softening = (nbody_real)1e-3;
        CHECK(nbody_accelerations(&d, &s, ref[0], ref[1], ref[2]) == NBODY_OK, "simple accelerations");
        if (n == 1) CHECK(ref[0][0] == 0 && ref[1][0] == 0 && ref[2][0] == 0, "a lone body feels no force");
        for (e = 0; e < sizeof engines / sizeof *engines; ++e) {
            double diff;
            d.engine = engines[e];
            CHECK(nbody_accelerations(&d, &s, got[0], got[1], got[2]) == NBODY_OK, "accelerations %s", nbody_engine_name(engines[e]));
            diff = max_rel_diff((const nbody_real **)got, (const nbody_real **)ref, n);
            CHECK(diff <= 64 * EPS * (n > 1 ? log((double)n) + 1 : 1), "%s vs simple, n = %lu: max relative difference %g",
                  nbody_engine_name(engines[e]), (unsigned long)n, diff);
        }
        for (i = 0; i < 3; ++i) { free(ref[i]); free(got[i]); }
        nbody_system_free(&s);
    }
}

/* nbody_accelerations with a CPU engine reads the positions and writes the outputs in place,
   unless the outputs overlap the positions or each other (then through the engine's state
   buffers): the same bits either way, for positions in one block (nbody_system_alloc) or apart,
   with and without test particles */
static void test_accelerations_in_place(void) {
    static const nbody_engine engines[] = {NBODY_ENGINE_SIMPLE, NBODY_ENGINE_OPENMP, NBODY_ENGINE_BLOCK, NBODY_ENGINE_TREE};
    const size_t n = 2100;
    nbody_system s = {0}, apart, over = {0};
    nbody_real *ref = (nbody_real *)malloc(3 * n * sizeof *ref), *out[3];
    size_t e, i;
    int a, k;
    CHECK(ref != NULL && nbody_ic_plummer(&s, n, 11) == NBODY_OK, "plummer %lu", (unsigned long)n);
    apart = s;   /* the same bodies, each array its own block */
    apart.x = (nbody_real *)malloc(n * sizeof(nbody_real)); apart.y = (nbody_real *)malloc(n * sizeof(nbody_real));
    apart.z = (nbody_real *)malloc(n * sizeof(nbody_real));
    for (k = 0; k < 3; ++k) out[k] = (nbody_real *)malloc(n * sizeof(nbody_real));
    CHECK(apart.x && apart.y && apart.z && out[0] && out[1] && out[2] && nbody_system_alloc(&over, n) == NBODY_OK, "allocations");
    memcpy(apart.x, s.x, n * sizeof(nbody_real)); memcpy(apart.y, s.y, n * sizeof(nbody_real)); memcpy(apart.z, s.z, n * sizeof(nbody_real));
    for (e = 0; e < sizeof engines / sizeof *engines; ++e)
        for (a = 0; a < 2; ++a) {
            nbody_desc d = {0};
            size_t diff = 0;
            d.engine = engines[e]; d.threads = 2; d.softening = (nbody_real)0.01; d.n_active = a ? n / 2 : 0;
            CHECK(nbody_accelerations(&d, &s, ref, ref + n, ref + 2 * n) == NBODY_OK, "%s in place ran", nbody_engine_name(d.engine));
            CHECK(nbody_accelerations(&d, &apart, out[0], out[1], out[2]) == NBODY_OK, "%s apart ran", nbody_engine_name(d.engine));
            for (k = 0; k < 3; ++k) diff += memcmp(out[k], ref + (size_t)k * n, n * sizeof(nbody_real)) != 0;
            CHECK(diff == 0, "%s, n_active %lu: positions apart gave other bits", nbody_engine_name(d.engine), (unsigned long)d.n_active);
            /* the outputs over the positions: the state buffers' path */
            memcpy(over.x, s.x, n * sizeof(nbody_real)); memcpy(over.y, s.y, n * sizeof(nbody_real));
            memcpy(over.z, s.z, n * sizeof(nbody_real)); memcpy(over.m, s.m, n * sizeof(nbody_real));
            CHECK(nbody_accelerations(&d, &over, over.x, over.y, over.z) == NBODY_OK, "%s over ran", nbody_engine_name(d.engine));
            CHECK(memcmp(over.x, ref, 3 * n * sizeof(nbody_real)) == 0, "%s, n_active %lu: outputs over the positions gave other bits",
                  nbody_engine_name(d.engine), (unsigned long)d.n_active);
            for (i = 0; i < n; ++i) { out[0][i] = 0; out[1][i] = 0; out[2][i] = 0; }
            CHECK(nbody_accelerations(&d, &s, out[0], out[0], out[1]) == NBODY_OK, "%s ax = ay ran", nbody_engine_name(d.engine));
            CHECK(memcmp(out[0], ref + n, n * sizeof(nbody_real)) == 0 && memcmp(out[1], ref + 2 * n, n * sizeof(nbody_real)) == 0,
                  "%s, n_active %lu: ax = ay did not end as ay, az", nbody_engine_name(d.engine), (unsigned long)d.n_active);
        }
    for (k = 0; k < 3; ++k) free(out[k]);
    free(apart.x); free(apart.y); free(apart.z); free(ref);
    nbody_system_free(&s); nbody_system_free(&over);
}

/* two bodies: the direct engines give exactly Newton's law */
static void test_two_body_force(void) {
    nbody_system s = {0};
    nbody_real ax[2], ay[2], az[2];
    nbody_desc d = {0};
    nbody_system_alloc(&s, 2);
    s.x[1] = 2; s.m[0] = 3; s.m[1] = 5;
    d.G = 2;
    d.engine = NBODY_ENGINE_SIMPLE;
    CHECK(nbody_accelerations(&d, &s, ax, ay, az) == NBODY_OK, "two-body accelerations");
    CHECK(fabs((double)ax[0] - 2.0 * 5 / 4) <= 4 * EPS && fabs((double)ax[1] + 2.0 * 3 / 4) <= 4 * EPS && ay[0] == 0 && az[1] == 0,
          "G m / r^2: got %g %g", (double)ax[0], (double)ax[1]);
    d.softening = 1;   /* a = G m r / (r^2 + eps^2)^(3/2) = 2*5*2 / 5^1.5 */
    nbody_accelerations(&d, &s, ax, ay, az);
    CHECK(fabs((double)ax[0] - 20.0 / pow(5.0, 1.5)) <= 8 * EPS, "Plummer softening: got %g", (double)ax[0]);
    nbody_system_free(&s);
}

/* momentum is conserved to round-off by the direct engines with any pairwise-symmetric force */
static void test_momentum(void) {
    static const nbody_engine engines[] = {NBODY_ENGINE_SIMPLE, NBODY_ENGINE_OPENMP, NBODY_ENGINE_BLOCK};
    size_t e;
    for (e = 0; e < 3; ++e) {
        nbody_system s = {0}, out = {0};
        nbody_invariants a, b;
        nbody_desc d = {0};
        nbody_sim *sim = NULL;
        double scale = 0;
        size_t i;
        nbody_ic_plummer(&s, 300, 3);
        nbody_system_alloc(&out, 300);
        for (i = 0; i < s.n; ++i) scale += (double)s.m[i] * vnorm((double)s.vx[i], (double)s.vy[i], (double)s.vz[i]);
        d.engine = engines[e]; d.method = NBODY_RK4; d.dt = (nbody_real)1e-3; d.softening = (nbody_real)0.01;
        CHECK(nbody_create(&sim, &d, &s) == NBODY_OK, "create");
        CHECK(nbody_advance(sim, (nbody_real)0.1) == NBODY_OK, "advance");
        nbody_get_state(sim, &out);
        nbody_measure(&s, 1, d.softening, &a);
        nbody_measure(&out, 1, d.softening, &b);
        CHECK(vnorm((double)(b.px - a.px), (double)(b.py - a.py), (double)(b.pz - a.pz)) <= 1000 * EPS * scale,
              "%s: momentum change %g (scale %g)", nbody_engine_name(engines[e]),
              vnorm((double)(b.px - a.px), (double)(b.py - a.py), (double)(b.pz - a.pz)), scale);
        CHECK(fabs((double)(b.energy - a.energy)) <= 1e-4 * fabs((double)a.energy), "%s: energy drift %g",
              nbody_engine_name(engines[e]), (double)((b.energy - a.energy) / a.energy));
        CHECK(out.t == (nbody_real)0.1, "lands exactly on t_end: %.17g", (double)out.t);
        nbody_destroy(sim);
        nbody_system_free(&s);
        nbody_system_free(&out);
    }
}

static void test_figure_eight(void) {
    nbody_system s = {0}, out = {0};
    nbody_desc d = {0};
    nbody_sim *sim = NULL;
    double err = 0;
    size_t i;
    nbody_ic_figure_eight(&s);
    nbody_system_alloc(&out, 3);
    d.method = NBODY_RK4; d.dt = (nbody_real)1e-3; d.engine = NBODY_ENGINE_SIMPLE;
    CHECK(nbody_create(&sim, &d, &s) == NBODY_OK, "create figure-eight");
    CHECK(nbody_advance(sim, (nbody_real)6.32591398) == NBODY_OK, "one period");
    nbody_get_state(sim, &out);
    for (i = 0; i < 3; ++i) {
        double e = vnorm((double)(out.x[i] - s.x[i]), (double)(out.y[i] - s.y[i]), (double)(out.z[i] - s.z[i]));
        if (e > err) err = e;
    }
    /* the initial values carry 8 digits: the orbit closes to about 1e-7 at best */
    CHECK(err < (sizeof(nbody_real) == sizeof(float) ? 1e-3 : 1e-6), "figure-eight returns to start: error %g", err);
    nbody_destroy(sim);
    nbody_system_free(&s);
    nbody_system_free(&out);
}

static void test_kepler_energy_invariants(void) {
    nbody_system s = {0};
    nbody_invariants inv;
    nbody_system_alloc(&s, 2);
    s.m[0] = 1; s.m[1] = 1; s.x[0] = -0.5; s.x[1] = 0.5; s.vy[0] = -0.5; s.vy[1] = 0.5;
    CHECK(nbody_measure(&s, 1, 0, &inv) == NBODY_OK, "measure");
    CHECK(fabs((double)inv.potential + 1) <= 4 * EPS && fabs((double)inv.kinetic - 0.25) <= 4 * EPS, "E = K + U: %g %g",
          (double)inv.kinetic, (double)inv.potential);
    CHECK(fabs((double)inv.lz - 0.5) <= 4 * EPS && inv.px == 0 && inv.cx == 0 && inv.mass == 2, "L, p, centre of mass");
    nbody_system_free(&s);
}

/* distinct bodies at the same place with no softening: NaN at the first step, reported, state kept */
static void test_not_finite(void) {
    nbody_system s = {0}, out = {0};
    nbody_desc d = {0};
    nbody_sim *sim = NULL;
    nbody_stats st;
    nbody_system_alloc(&s, 3);
    nbody_system_alloc(&out, 3);
    s.m[0] = s.m[1] = s.m[2] = 1; s.x[2] = 1; s.vx[0] = (nbody_real)0.25;
    d.engine = NBODY_ENGINE_SIMPLE;
    CHECK(nbody_create(&sim, &d, &s) == NBODY_OK, "create");
    CHECK(nbody_step(sim) == NBODY_ERR_NOT_FINITE, "coincident bodies give NBODY_ERR_NOT_FINITE");
    CHECK(nbody_get_state(sim, &out) == NBODY_OK && memcmp(out.x, s.x, 3 * sizeof(nbody_real)) == 0 &&
              memcmp(out.vx, s.vx, 3 * sizeof(nbody_real)) == 0 && out.t == 0,
          "last good state kept");
    st = nbody_get_stats(sim);
    CHECK(st.steps == 0 && st.t == 0, "no step counted");
    nbody_destroy(sim);
    nbody_system_free(&s);
    nbody_system_free(&out);
}

static void test_bad_input(void) {
    nbody_system s = {0}, out = {0}, bad = {0}, snap = {0};
    nbody_desc d = {0}, bd;
    nbody_sim *sim = NULL, *other = (nbody_sim *)&s;
    nbody_invariants inv;
    nbody_real a[3];
    nbody_stats before, after;
    nbody_ic_figure_eight(&s);
    nbody_system_alloc(&out, 3);
    nbody_system_alloc(&bad, 3);
    nbody_system_copy(&bad, &s);
    d.method = NBODY_RK4;
    CHECK(nbody_create(&sim, &d, &s) == NBODY_OK, "create");
    CHECK(nbody_create(NULL, &d, &s) == NBODY_ERR_INVALID_ARGUMENT, "NULL out");
    CHECK(nbody_create(&other, NULL, &s) == NBODY_ERR_INVALID_ARGUMENT && other == (nbody_sim *)&s, "NULL desc, out untouched");
    CHECK(nbody_create(&other, &d, NULL) == NBODY_ERR_INVALID_ARGUMENT, "NULL system");
#define BAD_DESC(field, value) do { bd = d; bd.field = value; \
        CHECK(nbody_create(&other, &bd, &s) == NBODY_ERR_INVALID_ARGUMENT, "desc." #field " = " #value " refused"); } while (0)
    BAD_DESC(engine, (nbody_engine)99); BAD_DESC(engine, (nbody_engine)-1); BAD_DESC(method, (nbody_method)99);
    BAD_DESC(traversal, (nbody_traversal)7); BAD_DESC(visit_order, (nbody_order)7);
    BAD_DESC(dt, -1); BAD_DESC(dt, (nbody_real)NAN); BAD_DESC(G, -1); BAD_DESC(softening, -1); BAD_DESC(theta, -1);
    BAD_DESC(tolerance, (nbody_real)INFINITY); BAD_DESC(block_size, -3); BAD_DESC(threads, -1); BAD_DESC(device, -1);
    BAD_DESC(compensated, 2);
    bd = d; bd.method = NBODY_ADAMS; bd.order = 6;
    CHECK(nbody_create(&other, &bd, &s) == NBODY_ERR_INVALID_ARGUMENT, "Adams order 6 refused");
    bd = d; bd.dt_min = 1; bd.dt_max = (nbody_real)0.5;
    CHECK(nbody_create(&other, &bd, &s) == NBODY_ERR_INVALID_ARGUMENT, "dt_min > dt_max refused");
    bad.x[1] = (nbody_real)NAN;
    CHECK(nbody_create(&other, &d, &bad) == NBODY_ERR_INVALID_ARGUMENT, "NaN position refused");
    bad.x[1] = s.x[1]; bad.vz[2] = (nbody_real)INFINITY;
    CHECK(nbody_create(&other, &d, &bad) == NBODY_ERR_INVALID_ARGUMENT, "Inf velocity refused");
    bad.vz[2] = s.vz[2]; bad.m[0] = -1;
    CHECK(nbody_create(&other, &d, &bad) == NBODY_ERR_INVALID_ARGUMENT, "negative mass refused");
    bad.m[0] = (nbody_real)NAN;
    CHECK(nbody_create(&other, &d, &bad) == NBODY_ERR_INVALID_ARGUMENT, "NaN mass refused");
    bad.m[0] = s.m[0]; bad.n = 0;
    CHECK(nbody_create(&other, &d, &bad) == NBODY_ERR_INVALID_ARGUMENT, "n = 0 refused");
    bad.n = 3;
    /* calls on a live simulation with bad input leave it as it was */
    CHECK(nbody_advance(sim, (nbody_real)0.5) == NBODY_OK, "advance");
    before = nbody_get_stats(sim);
    CHECK(nbody_advance(sim, (nbody_real)0.25) == NBODY_ERR_INVALID_ARGUMENT, "advance backwards refused");
    CHECK(nbody_advance(sim, (nbody_real)NAN) == NBODY_ERR_INVALID_ARGUMENT, "advance to NaN refused");
    CHECK(nbody_advance(NULL, 1) == NBODY_ERR_INVALID_ARGUMENT && nbody_step(NULL) == NBODY_ERR_INVALID_ARGUMENT, "NULL sim");
    bad.m[2] = -5;
    CHECK(nbody_set_state(sim, &bad) == NBODY_ERR_INVALID_ARGUMENT, "set_state with a negative mass refused");
    bad.m[2] = s.m[2];
    CHECK(nbody_set_state(sim, &snap) == NBODY_ERR_INVALID_ARGUMENT, "empty system refused");
    CHECK(nbody_get_state(sim, NULL) == NBODY_ERR_INVALID_ARGUMENT, "get_state NULL");
    after = nbody_get_stats(sim);
    CHECK(memcmp(&before, &after, sizeof before) == 0 && after.t == (nbody_real)0.5, "simulation untouched");
    CHECK(nbody_get_state(sim, &out) == NBODY_OK && out.t == (nbody_real)0.5, "state still readable");
    CHECK(nbody_measure(NULL, 1, 0, &inv) == NBODY_ERR_INVALID_ARGUMENT && nbody_measure(&s, -1, 0, &inv) == NBODY_ERR_INVALID_ARGUMENT &&
              nbody_measure(&s, 1, -1, &inv) == NBODY_ERR_INVALID_ARGUMENT && nbody_measure(&s, 1, 0, NULL) == NBODY_ERR_INVALID_ARGUMENT,
          "measure validates");
    CHECK(nbody_accelerations(&d, &s, a, a, NULL) == NBODY_ERR_INVALID_ARGUMENT, "accelerations NULL output");
    CHECK(nbody_system_alloc(NULL, 3) == NBODY_ERR_INVALID_ARGUMENT && nbody_system_alloc(&bad, 0) == NBODY_ERR_INVALID_ARGUMENT &&
              bad.n == 3,
          "system_alloc validates, leaves the system alone");
    CHECK(nbody_system_alloc(&snap, (size_t)-1) != NBODY_OK, "absurd n refused");
    CHECK(nbody_ic_plummer(NULL, 10, 1) == NBODY_ERR_INVALID_ARGUMENT && nbody_ic_galaxy(&snap, 10, 1, 1) == NBODY_ERR_INVALID_ARGUMENT &&
              nbody_ic_collision(&snap, 10, (nbody_real)0.5, -1, 1) == NBODY_ERR_INVALID_ARGUMENT,
          "initial conditions validate");
    CHECK(nbody_save(NULL, &s) == NBODY_ERR_INVALID_ARGUMENT && nbody_load("x", NULL) == NBODY_ERR_INVALID_ARGUMENT &&
              nbody_write_csv("x", NULL) == NBODY_ERR_INVALID_ARGUMENT,
          "files validate");
    CHECK(strcmp(nbody_result_string((nbody_result)1234), "unknown result") == 0 && strcmp(nbody_engine_name((nbody_engine)77), "unknown") == 0,
          "names never NULL");
    nbody_destroy(NULL);
    nbody_destroy(sim);
    nbody_system_free(&s);
    nbody_system_free(&out);
    nbody_system_free(&bad);
}

static int same_system(const nbody_system *a, const nbody_system *b) {
    size_t bytes = a->n * sizeof(nbody_real);
    return a->n == b->n && a->t == b->t && !memcmp(a->x, b->x, bytes) && !memcmp(a->y, b->y, bytes) && !memcmp(a->z, b->z, bytes) &&
           !memcmp(a->vx, b->vx, bytes) && !memcmp(a->vy, b->vy, bytes) && !memcmp(a->vz, b->vz, bytes) && !memcmp(a->m, b->m, bytes);
}

static void test_snapshots(void) {
    char path[64], csv[64];        /* one name per precision: make test runs the builds side by side */
    nbody_system s = {0}, back = {0};
    FILE *f;
    long size;
    unsigned char *bytes;
    snprintf(path, sizeof path, "build/test_core_snapshot_%d.bin", (int)sizeof(nbody_real));
    snprintf(csv, sizeof csv, "build/test_core_%d.csv", (int)sizeof(nbody_real));
    nbody_ic_collision(&s, 101, (nbody_real)0.5, 4, 9);
    s.t = (nbody_real)1.25;
    CHECK(nbody_save(path, &s) == NBODY_OK, "save");
    CHECK(nbody_load(path, &back) == NBODY_OK && same_system(&s, &back), "round trip is exact");
    nbody_system_free(&back);
    CHECK(nbody_load("build/does-not-exist.bin", &back) == NBODY_ERR_IO && back.x == NULL, "missing file: NBODY_ERR_IO");
    f = fopen(path, "rb");
    fseek(f, 0, SEEK_END); size = ftell(f); fseek(f, 0, SEEK_SET);
    bytes = (unsigned char *)malloc((size_t)size);
    CHECK(fread(bytes, 1, (size_t)size, f) == (size_t)size, "read back");
    fclose(f);
    {   /* every truncation and a flipped bit anywhere are refused */
        long cut, bad_cuts = 0, bad_flips = 0, pos;
        for (cut = 0; cut < size; cut += (cut < 64 ? 1 : 97)) {
            f = fopen(path, "wb"); fwrite(bytes, 1, (size_t)cut, f); fclose(f);
            if (nbody_load(path, &back) != NBODY_ERR_FORMAT || back.x) bad_cuts++;
        }
        for (pos = 0; pos < size; pos += (pos < 64 ? 1 : 131)) {
            bytes[pos] ^= 0x10;
            f = fopen(path, "wb"); fwrite(bytes, 1, (size_t)size, f); fclose(f);
            if (nbody_load(path, &back) != NBODY_ERR_FORMAT || back.x) bad_flips++;
            bytes[pos] ^= 0x10;
        }
        CHECK(bad_cuts == 0, "%ld truncated files were not refused with NBODY_ERR_FORMAT", bad_cuts);
        CHECK(bad_flips == 0, "%ld corrupted files were not refused with NBODY_ERR_FORMAT", bad_flips);
    }
    CHECK(nbody_write_csv(csv, &s) == NBODY_OK, "csv");
    f = fopen(csv, "r");
    if (f) {
        char line[512]; int lines = 0;
        while (fgets(line, sizeof line, f)) lines++;
        fclose(f);
        CHECK(lines == 2 + 101, "csv has a comment, a header and one line a body: %d", lines);
    }
    free(bytes);
    nbody_system_free(&s);
}

static void test_initial_conditions(void) {
    nbody_system a = {0}, b = {0};
    nbody_invariants inv;
    nbody_ic_plummer(&a, 2000, 5);
    nbody_ic_plummer(&b, 2000, 5);
    CHECK(same_system(&a, &b), "same seed, same bodies");
    nbody_measure(&a, 1, 0, &inv);
    CHECK(fabs((double)inv.mass - 1) < 1e3 * EPS && fabs((double)inv.cx) < 1e3 * EPS && fabs((double)inv.px) < 1e3 * EPS,
          "plummer: unit mass, centre of mass at rest at the origin");
    CHECK(fabs((double)inv.energy + 0.25) < 0.03, "plummer: Henon units, E = -1/4 up to sampling noise: %g", (double)inv.energy);
    CHECK(fabs(2 * (double)inv.kinetic / -(double)inv.potential - 1) < 0.1, "plummer: virial ratio 2K/|U| = %g",
          2 * (double)inv.kinetic / -(double)inv.potential);
    nbody_system_free(&a); nbody_system_free(&b);
    nbody_ic_galaxy(&a, 1000, (nbody_real)0.99, 1);
    CHECK(fabs((double)a.m[0] - 0.99) < 1e3 * EPS, "galaxy: central body holds 99%% of the mass: %g", (double)a.m[0]);
    nbody_system_free(&a);
    nbody_ic_collision(&a, 1001, (nbody_real)0.1, 6, 2);
    nbody_measure(&a, 1, 0, &inv);
    CHECK(a.n == 1001 && fabs((double)inv.px) < 1e3 * EPS && (double)inv.energy < 0.5, "collision: at rest, bound-ish");
    nbody_system_free(&a);
    nbody_ic_pythagorean(&a);
    nbody_measure(&a, 1, 0, &inv);
    CHECK(inv.cx == 0 && inv.cy == 0 && inv.kinetic == 0, "pythagorean: centre of mass at the origin, at rest");
    nbody_system_free(&a);
    nbody_ic_uniform_cube(&a, 500, 11);
    CHECK(a.n == 500, "cube");
    nbody_system_free(&a);
}

int main(void) {
    test_engines_agree();
    test_accelerations_in_place();
    test_two_body_force();
    test_momentum();
    test_figure_eight();
    test_kepler_energy_invariants();
    test_not_finite();
    test_bad_input();
    test_snapshots();
    test_initial_conditions();
    return check_finish();
}
